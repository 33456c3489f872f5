//! The single-collection features (schema versioning with and without `write_back`, history,
//! history with versioning, keywords, the approximate counter, the archive, and a type with
//! its validator alone): one generic runner over every write path each supports, against a
//! model of the stored documents, the history records and the archive.

use pattern_core::store;
use std::collections::BTreeMap;

use bson::{doc, Bson, DateTime, Document as BsonDocument};
use futures::TryStreamExt;
use pattern_core::adopt::Options;
use pattern_core::document::{self, ArchiveAt, Filter};
use pattern_core::store::transaction;
use pattern_core::Error;
use serde::Deserialize;

use super::schema::*;
use super::{validates, Cells};
use crate::documents::*;

/// What the model says is stored.
pub(super) struct Model<T> {
    /// The live documents: as stored (without `revised_at`), as `T` reads them, and whether
    /// an older build wrote them.
    pub(super) live: BTreeMap<i64, (BsonDocument, T, bool)>,
    /// The history records, `{id, revision, state}`.
    pub(super) past: Vec<BsonDocument>,
    /// The archived documents.
    pub(super) archived: BTreeMap<i64, BsonDocument>,
    /// Increments counted and not yet written (the approximate counter).
    pub(super) pending: BTreeMap<i64, i64>,
    /// The names of the sources of a holder's copies (`critic`), by `_id`: what a write of
    /// this build fills the copy with.
    pub(super) names: BTreeMap<i64, String>,
    /// The holders of copies of these documents (a pin's `_id`, and the document its copy
    /// names: `None` once that one is deleted).
    pub(super) pins: BTreeMap<i64, Option<i64>>,
}

impl<T: Clone> Clone for Model<T> {
    fn clone(&self) -> Self {
        Model {
            live: self.live.clone(),
            past: self.past.clone(),
            archived: self.archived.clone(),
            pending: self.pending.clone(),
            names: self.names.clone(),
            pins: self.pins.clone(),
        }
    }
}

impl<T> Default for Model<T> {
    fn default() -> Self {
        Model {
            live: BTreeMap::new(),
            past: Vec::new(),
            archived: BTreeMap::new(),
            pending: BTreeMap::new(),
            // The critics as `prepare` leaves them.
            names: (0..2).map(|id| (id, critic(id, 0).name)).collect(),
            pins: BTreeMap::new(),
        }
    }
}

/// The stored form of `v` this build writes: its fields, and the version of a versioned type.
fn current<T: Simple>(v: &T) -> BsonDocument {
    let mut d = v.plain();
    if let Some(ver) = T::VERSIONING {
        d.insert(ver.field, Bson::Int32(ver.current as i32));
    }
    d
}

/// An older build's document: version 1, its field absent when `unversioned`.
pub(super) fn older(id: i64, label: &str, n: i64, unversioned: bool) -> BsonDocument {
    let mut d = doc! {"_id": id, "label": label, "n": n};
    if !unversioned {
        d.insert("schema_version", 1_i32);
    }
    d
}

impl<T: Simple> Model<T> {
    /// The document `id` replaced by `new` (stored form without a revision), or deleted:
    /// with history, the state replaced recorded and the revision bumped (after the last one
    /// recorded, for a document inserted again).
    pub(super) fn put(&mut self, id: i64, new: Option<(BsonDocument, T, bool)>) {
        let cur = self.live.remove(&id);
        if new.is_none() {
            // A deleted source: its optional copies become null.
            for of in self.pins.values_mut().filter(|of| **of == Some(id)) {
                *of = None;
            }
        }
        let Some(_) = T::HISTORY else {
            if let Some(n) = new {
                self.live.insert(id, n);
            }
            return;
        };
        let last = (self.past.iter())
            .filter(|r| r.get_i64("id") == Ok(id))
            .filter_map(|r| r.get_i64("revision").ok())
            .max()
            .unwrap_or(0);
        let next = match cur {
            Some((mut state, _, _)) => {
                // Without a revision (an older build's): recorded after the last one recorded.
                let rev = match state.remove("revision") {
                    Some(r) => r.as_i64().unwrap(),
                    None if self.past.iter().any(|r| r.get_i64("id") == Ok(id)) => last + 1,
                    None => 0,
                };
                self.past
                    .push(doc! {"id": id, "revision": rev, "state": state});
                rev + 1
            }
            None => last + 1,
        };
        if let Some((mut d, v, old)) = new {
            d.insert("revision", next);
            self.live.insert(id, (d, v, old));
        }
    }

    /// `v` written by this build: stored in its current form, read back as that form decodes
    /// (a keyword array lowercased).
    pub(super) fn write(&mut self, v: &T) {
        let mut stored = current(v);
        let mut plain = v.plain();
        self.fill(&mut stored);
        self.fill(&mut plain);
        let read: T = bson::from_document(plain).unwrap();
        self.put(*v.id(), Some((stored, read, false)));
    }

    /// The copy in `d` (`critic`) holding its source's name, as a write fills it.
    fn fill(&self, d: &mut BsonDocument) {
        if let Ok(copy) = d.get_document_mut("critic") {
            let name = &self.names[&copy.get_i64("_id").unwrap()];
            copy.insert("name", name.clone());
        }
    }

    /// The source `id` of the copies renamed `name`: every copy of it a document of this
    /// build holds follows (an older build's holds none), with no revision of its holder.
    pub(super) fn rename(&mut self, id: i64, name: &str) {
        self.names.insert(id, name.to_owned());
        for (d, v, old) in self.live.values_mut().filter(|(_, _, old)| !*old) {
            let _ = old;
            if let Ok(copy) = d.get_document_mut("critic") {
                if copy.get_i64("_id") == Ok(id) {
                    copy.insert("name", name);
                    let mut typed = bson::to_document(&*v).unwrap();
                    typed.insert("critic", copy.clone());
                    *v = bson::from_document(typed).unwrap();
                }
            }
        }
    }

    /// An older build's document inserted by it (no revision: adopted by its next write).
    pub(super) fn older(&mut self, d: BsonDocument) {
        let old: Old = bson::from_document(d.clone()).unwrap();
        self.live.insert(old.id, (d, T::upgraded(&old), true));
    }

    pub(super) fn value(&self, id: i64) -> T {
        self.live[&id].1.clone()
    }

    pub(super) fn is_old(&self, id: i64) -> bool {
        self.live[&id].2
    }

    /// The update paths' `$inc` of `n` by 1 on `id`: an older document upgraded first (a
    /// revision of its own, with history).
    pub(super) fn bump(&mut self, id: i64) {
        let v = self.value(id);
        if self.is_old(id) {
            self.write(&v);
        }
        let mut d = bson::to_document(&v).unwrap();
        let n = d.get_i64("n").unwrap() + 1;
        d.insert("n", n);
        self.write(&bson::from_document::<T>(d).unwrap());
    }
}

/// The projection every check reads: `_id` and `n`, nothing else allowed.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdN {
    #[serde(rename = "_id")]
    id: i64,
    n: i64,
}

/// The row's checks after each write: the stored documents and history records equal the
/// model's, every read gives the model's values (a projection too, of the documents at the
/// current version), the validator accepts every stored document, and the feature's own check.
pub(super) async fn check<T: Simple>(store: &AnyStore, m: &Model<T>) {
    let raw = mine::<T>(documents(store, T::COLLECTION).await);
    let mut stored = raw.clone();
    for d in &mut stored {
        let id = d.get_i64("_id").unwrap();
        if T::HISTORY.is_some() && m.live.get(&id).is_some_and(|(_, _, old)| !old) {
            let at = d.remove("revised_at");
            assert!(matches!(at, Some(Bson::DateTime(_))), "revised_at of {d}");
        }
    }
    let want: Vec<&BsonDocument> = m.live.values().map(|(d, _, _)| d).collect();
    assert_eq!(stored.iter().collect::<Vec<_>>(), want, "stored documents");
    if let Some(h) = T::HISTORY {
        let records = documents(store, h).await;
        let mut records: Vec<BsonDocument> = (records.into_iter())
            .filter(|r| {
                r.get_document("state")
                    .is_ok_and(|s| !mine::<T>(vec![s.clone()]).is_empty())
            })
            .map(|r| {
                doc! {
                    "id": r.get("id").cloned().unwrap(),
                    "revision": r.get("revision").cloned().unwrap(),
                    "state": r.get("state").cloned().unwrap(),
                }
            })
            .collect();
        let mut past = m.past.clone();
        let key = |r: &BsonDocument| (r.get_i64("id").unwrap(), r.get_i64("revision").unwrap());
        records.sort_by_key(key);
        past.sort_by_key(key);
        assert_eq!(records, past, "history records");
        validates::<T>(store, h, &documents(store, h).await).await;
    }
    // Reads: a stream never writes back; `get` and a projection of the current documents.
    let all = document::find::<T>(Filter::everything());
    let read: Vec<T> = all.stream(store).try_collect().await.unwrap();
    let mut read: Vec<(i64, T)> = read.into_iter().map(|v| (*v.id(), v)).collect();
    read.sort_by_key(|(id, _)| *id);
    let values: Vec<(i64, T)> = (m.live.iter())
        .map(|(id, (_, v, _))| (*id, v.clone()))
        .collect();
    assert_eq!(read, values, "the documents read");
    let fresh: Vec<i64> = (m.live.iter())
        .filter(|(_, (_, _, old))| !old)
        .map(|(id, _)| *id)
        .collect();
    for id in &fresh {
        let got = document::get::<T, _, _>(store, id).await.unwrap();
        assert_eq!(got.as_ref(), Some(&m.live[id].1));
    }
    if !fresh.is_empty() {
        let projected = document::find::<T>(in_ids::<T>(&fresh))
            .project(T::N)
            .all_as::<IdN, _>(store)
            .await
            .unwrap();
        let mut projected: Vec<(i64, i64)> = projected.iter().map(|p| (p.id, p.n)).collect();
        projected.sort();
        let want: Vec<(i64, i64)> = (fresh.iter())
            .map(|id| (*id, m.live[id].0.get_i64("n").unwrap()))
            .collect();
        assert_eq!(projected, want, "the projection of `n`");
    }
    // What this build wrote passes the validator (an older build's documents, stored before
    // it, need not).
    let written: Vec<BsonDocument> = (raw.into_iter())
        .filter(|d| fresh.contains(&d.get_i64("_id").unwrap()))
        .collect();
    validates::<T>(store, T::COLLECTION, &written).await;
    extra_checks::<T>(store, m).await;
}

/// The documents of `docs` that are `T`'s: on a variant's type, those of its variant (a
/// sibling variant's documents share the collection).
fn mine<T: Simple>(docs: Vec<BsonDocument>) -> Vec<BsonDocument> {
    match T::POLYMORPHIC {
        Some(pattern_core::document::Polymorphic::Variant { field, value }) => (docs.into_iter())
            .filter(|d| d.get_str(field) == Ok(value))
            .collect(),
        _ => docs,
    }
}

/// `{_id: {$in: ids}}`, typed.
fn in_ids<T: Simple>(ids: &[i64]) -> Filter<T> {
    (ids.iter()).fold(Filter::id(&ids[0]), |f, id| f.or(Filter::id(id)))
}

/// The feature's own checks.
async fn extra_checks<T: Simple>(store: &AnyStore, m: &Model<T>) {
    if let Some(tags) = T::TAGS {
        // The keyword search, in any case, finds exactly the documents holding the word.
        for word in ["Ann", "NEW", "lee"] {
            let mut found: Vec<i64> = document::find::<T>(tags.contains(word))
                .all(store)
                .await
                .unwrap()
                .iter()
                .map(|t| *t.id())
                .collect();
            found.sort();
            // An older build's document holds no keyword array until it is upgraded: a
            // search, which reads what is stored, does not find it.
            let want: Vec<i64> = (m.live.iter())
                .filter(|(_, (_, _, old))| !old)
                .filter(|(_, (_, v, _))| {
                    let v = bson::to_document(v).unwrap();
                    (v.get_array("tags").unwrap().iter())
                        .any(|t| t.as_str().unwrap().eq_ignore_ascii_case(word))
                })
                .map(|(id, _)| *id)
                .collect();
            assert_eq!(found, want, "keyword {word}");
        }
    }
    if T::ARCHIVE.is_some() {
        let mut archived = documents(store, T::ARCHIVE_AT).await;
        if T::HISTORY.is_some() {
            // Moved as stored: with the time of its last revision.
            for d in &mut archived {
                let at = d.remove("revised_at");
                assert!(matches!(at, Some(Bson::DateTime(_))), "revised_at of {d}");
            }
        }
        let want: Vec<&BsonDocument> = m.archived.values().collect();
        assert_eq!(
            archived.iter().collect::<Vec<_>>(),
            want,
            "archived documents"
        );
        let at = ArchiveAt {
            store,
            collection: T::ARCHIVE_AT,
        };
        assert_eq!(
            document::verify_archive::<T, _, _>(store, at)
                .await
                .unwrap(),
            []
        );
        for id in m.archived.keys() {
            let found = document::get_with_archive::<T, _, _, _>(store, at, id)
                .await
                .unwrap();
            assert!(found.is_some(), "archived {id}");
        }
    }
    let any: &dyn std::any::Any = m;
    if let Some(m) = any.downcast_ref::<Model<Everything>>() {
        check_everything(store, m).await;
    }
    if !T::APPROXIMATE.is_empty() {
        for id in m.live.keys() {
            let pending = document::pending::<T, _, _>(store, "views", id).unwrap();
            assert_eq!(
                pending as i64,
                m.pending.get(id).copied().unwrap_or(0),
                "{id}"
            );
        }
    }
}

/// The archive's move of `T` at [`CUT_OFF`], in the model: each live document placed before
/// it and not pinned moves (as a delete, with history: its state recorded), what it was stored
/// as kept in the archive; its pending increments dropped.
pub(super) async fn archive_in_model<T: Simple>(store: &AnyStore, m: &mut Model<T>) {
    let at = ArchiveAt {
        store,
        collection: T::ARCHIVE_AT,
    };
    let cut = DateTime::from_millis(CUT_OFF);
    document::archive::<T, _, _>(store, at, cut, &Options::default())
        .await
        .unwrap();
    // An older build's document has no `placed`: it stays.
    // A source a pin copies stays (counted `still_copied`).
    let copied = |id: &i64| m.pins.values().any(|of| *of == Some(*id));
    let moving: Vec<i64> = (m.live.iter())
        .filter(|(id, (d, _, _))| d.get_datetime("placed").is_ok_and(|p| *p < cut) && *id % 5 != 0)
        .filter(|(id, _)| !copied(id))
        .map(|(id, _)| *id)
        .collect();
    for id in moving {
        let (d, _, _) = m.live[&id].clone();
        m.put(id, None);
        m.pending.remove(&id);
        // An archived `_id` inserted again, then archived again: the newer.
        m.archived.insert(id, d);
    }
}

/// Every write path `T` supports, each a cell: the write, then [`check`]. A cell that fails is
/// reported and the row starts again from empty collections.
pub(super) async fn row<T: Simple>(store: &AnyStore, cells: &mut Cells) {
    document::ensure_validator::<T, _>(store).await.unwrap();
    prepare::<T>(store).await;
    let versioned = T::VERSIONING.is_some();
    let history = T::HISTORY.is_some();
    let counted = !T::APPROXIMATE.is_empty();
    let archive = T::ARCHIVE.is_some();
    let mut m = Model::<T>::default();
    let mut next = 100;
    let mut fresh = || {
        next += 10;
        next
    };
    macro_rules! cell {
        ($path:expr, async $body:block) => {
            let ok = cells
                .cell(T::ROW, $path, async {
                    async $body.await;
                    check::<T>(store, &m).await;
                })
                .await;
            if !ok {
                reset::<T>(store).await;
                m = Model::default();
                let _ = &m;
            }
        };
    }
    let id = fresh();
    cell!("insert", async {
        document::insert(store, &T::make(id, "Ann Lee", 1))
            .await
            .unwrap();
        m.write(&T::make(id, "Ann Lee", 1));
        let dup = document::insert(store, &T::make(id, "Other", 2)).await;
        assert!(
            matches!(dup, Err(Error::Store(store::Error::DuplicateKey { .. }))),
            "{dup:?}"
        );
    });
    let id = fresh();
    cell!("save (new)", async {
        document::save(store, &T::make(id, "Ann Lee", 1))
            .await
            .unwrap();
        m.write(&T::make(id, "Ann Lee", 1));
    });
    let id = fresh();
    cell!("save (existing)", async {
        document::insert(store, &T::make(id, "Ann Lee", 1))
            .await
            .unwrap();
        m.write(&T::make(id, "Ann Lee", 1));
        document::save(store, &T::make(id, "New Name", 5))
            .await
            .unwrap();
        m.write(&T::make(id, "New Name", 5));
    });
    let id = fresh();
    cell!("update_one (typed)", async {
        document::insert(store, &T::make(id, "Ann Lee", 1))
            .await
            .unwrap();
        m.write(&T::make(id, "Ann Lee", 1));
        let inc = document::Update::new().inc(T::N, 1);
        assert!(document::update_one::<T, _>(store, Filter::id(&id), inc)
            .await
            .unwrap());
        m.bump(id);
    });
    let id = fresh();
    cell!("update_one (conditional)", async {
        document::insert(store, &T::make(id, "Ann Lee", 1))
            .await
            .unwrap();
        m.write(&T::make(id, "Ann Lee", 1));
        let inc = || document::Update::new().inc(T::N, 1);
        let no = Filter::id(&id).and(T::N.gte(100));
        assert!(!document::update_one::<T, _>(store, no, inc())
            .await
            .unwrap());
        let yes = Filter::id(&id).and(T::N.lt(100));
        assert!(document::update_one::<T, _>(store, yes, inc())
            .await
            .unwrap());
        m.bump(id);
    });
    let id = fresh();
    cell!("delete", async {
        document::insert(store, &T::make(id, "Ann Lee", 1))
            .await
            .unwrap();
        m.write(&T::make(id, "Ann Lee", 1));
        assert!(document::delete::<T, _, _>(store, &id).await.unwrap());
        m.put(id, None);
        assert!(!document::delete::<T, _, _>(store, &id).await.unwrap());
        if history {
            // Inserted again: its revisions go on from the last recorded.
            document::insert(store, &T::make(id, "Again", 0))
                .await
                .unwrap();
            m.write(&T::make(id, "Again", 0));
        }
    });
    let id = fresh();
    cell!("transaction (committed)", async {
        transaction(store, |tx| {
            Box::pin(async move {
                document::insert(tx, &T::make(id, "Ann Lee", 1)).await?;
                let inc = document::Update::new().inc(T::N, 1);
                document::update_one::<T, _>(tx, Filter::id(&id), inc).await?;
                document::save(tx, &T::make(id + 1, "Bo Wu", 3)).await?;
                Ok(())
            })
        })
        .await
        .unwrap();
        m.write(&T::make(id, "Ann Lee", 1));
        m.bump(id);
        m.write(&T::make(id + 1, "Bo Wu", 3));
    });
    let id = fresh();
    cell!("transaction (aborted)", async {
        document::insert(store, &T::make(id, "Ann Lee", 1))
            .await
            .unwrap();
        m.write(&T::make(id, "Ann Lee", 1));
        let aborted = transaction(store, |tx| {
            Box::pin(async move {
                document::insert(tx, &T::make(id + 1, "Bo Wu", 3)).await?;
                let inc = document::Update::new().inc(T::N, 1);
                document::update_one::<T, _>(tx, Filter::id(&id), inc).await?;
                document::delete::<T, _, _>(tx, &id).await?;
                Err::<(), _>(Error::Store(store::Error::InvalidInput(
                    "the test aborts it".into(),
                )))
            })
        })
        .await;
        assert!(
            matches!(aborted, Err(Error::Store(store::Error::InvalidInput(_)))),
            "{aborted:?}"
        );
    });
    if history {
        let id = fresh();
        cell!("save_if / update_if / delete_if", async {
            document::insert(store, &T::make(id, "Ann Lee", 1))
                .await
                .unwrap();
            m.write(&T::make(id, "Ann Lee", 1));
            let read = document::get_revision::<T, _, _>(store, &id)
                .await
                .unwrap()
                .unwrap();
            document::save_if(store, &T::make(id, "New Name", 2), read.revision)
                .await
                .unwrap();
            m.write(&T::make(id, "New Name", 2));
            let stale = document::save_if(store, &T::make(id, "Stale", 9), read.revision).await;
            assert!(matches!(stale, Err(Error::Conflict { .. })), "{stale:?}");
            let inc = || document::Update::new().inc(T::N, 1);
            let stale = document::update_if::<T, _, _>(store, &id, read.revision, inc()).await;
            assert!(matches!(stale, Err(Error::Conflict { .. })), "{stale:?}");
            let now = read.revision + 1;
            document::update_if::<T, _, _>(store, &id, now, inc())
                .await
                .unwrap();
            m.bump(id);
            let stale = document::delete_if::<T, _, _>(store, &id, now).await;
            assert!(matches!(stale, Err(Error::Conflict { .. })), "{stale:?}");
            document::delete_if::<T, _, _>(store, &id, now + 1)
                .await
                .unwrap();
            m.put(id, None);
        });
    }
    if versioned {
        let id = fresh();
        cell!("writes over an older build's documents", async {
            let docs = [false, true, false, true]
                .into_iter()
                .enumerate()
                .map(|(i, unversioned)| older(id + i as i64, "Old Name", 1, unversioned));
            by_an_older_build::<T>(store, &mut m, docs).await;
            document::save(store, &T::make(id, "New Name", 5))
                .await
                .unwrap();
            m.write(&T::make(id, "New Name", 5));
            let inc = document::Update::new().inc(T::N, 1);
            assert!(
                document::update_one::<T, _>(store, Filter::id(&(id + 1)), inc)
                    .await
                    .unwrap()
            );
            m.bump(id + 1);
            assert!(document::delete::<T, _, _>(store, &(id + 2)).await.unwrap());
            m.put(id + 2, None);
            if history {
                let read = document::get_revision::<T, _, _>(store, &(id + 3))
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(read.revision, 0);
                let inc = document::Update::new().inc(T::N, 1);
                document::update_if::<T, _, _>(store, &(id + 3), 0, inc)
                    .await
                    .unwrap();
                m.bump(id + 3);
            }
        });
        let id = fresh();
        cell!("a read of an older build's document (write_back)", async {
            by_an_older_build::<T>(store, &mut m, [older(id, "Old Name", 4, false)]).await;
            let got = document::get::<T, _, _>(store, &id).await.unwrap().unwrap();
            assert_eq!(got, m.value(id));
            if T::VERSIONING.is_some_and(|v| v.write_back) {
                m.write(&got);
            }
        });
        let id = fresh();
        cell!("the sweep", async {
            let docs = (0..3).map(|i| older(id + i, "Old Name", i, i == 1));
            by_an_older_build::<T>(store, &mut m, docs).await;
            let report = document::migrate::<T, _>(store, &Options::default())
                .await
                .unwrap();
            let old: Vec<i64> = (m.live.iter())
                .filter(|(_, (_, _, old))| *old)
                .map(|(id, _)| *id)
                .collect();
            assert_eq!(report.upgraded, old.len() as u64);
            for id in old {
                let v = m.value(id);
                m.write(&v);
            }
        });
    }
    if !T::REFERENCED_BY.is_empty() {
        let id = fresh();
        cell!("a source of copies (a pin's, followed, then null)", async {
            document::insert(store, &T::make(id, "Ann Lee", 1))
                .await
                .unwrap();
            m.write(&T::make(id, "Ann Lee", 1));
            let pin = Pin {
                id,
                of: Some(EverythingRef {
                    id,
                    name: UNFILLED.into(),
                }),
            };
            pin.save(store).await.unwrap();
            m.pins.insert(id, Some(id));
            document::save(store, &T::make(id, "New Name", 2))
                .await
                .unwrap();
            m.write(&T::make(id, "New Name", 2));
            let inc = document::Update::new().inc(T::N, 1);
            assert!(document::update_one::<T, _>(store, Filter::id(&id), inc)
                .await
                .unwrap());
            m.bump(id);
            assert!(document::delete::<T, _, _>(store, &id).await.unwrap());
            m.put(id, None);
        });
    }
    if counted {
        let id = fresh();
        cell!("approximate increments and flush", async {
            document::insert(store, &T::make(id, "Ann Lee", 1))
                .await
                .unwrap();
            m.write(&T::make(id, "Ann Lee", 1));
            for i in 1..=4 {
                let wrote = document::increment::<T, _, _>(store, "views", &id)
                    .await
                    .unwrap();
                assert_eq!(wrote, i == 3);
            }
            bump_views(&mut m, id, 3, 1);
            // A save writes the struct's views; the increment counted still comes.
            document::save(store, &T::make(id, "New Name", 2))
                .await
                .unwrap();
            m.write(&T::make(id, "New Name", 2));
            assert_eq!(document::flush::<T, _>(store).await.unwrap(), 1);
            bump_views(&mut m, id, 1, -1);
        });
    }
    if archive {
        let id = fresh();
        cell!("the archive's move", async {
            for i in 0..6 {
                document::insert(store, &T::make(id + i, "Ann Lee", i))
                    .await
                    .unwrap();
                m.write(&T::make(id + i, "Ann Lee", i));
            }
            archive_in_model::<T>(store, &mut m).await;
            // A write after the move: an update of an archived order matches nothing live.
            let inc = document::Update::new().inc(T::N, 1);
            assert!(
                !document::update_one::<T, _>(store, Filter::id(&(id + 1)), inc)
                    .await
                    .unwrap()
            );
        });
    }
}

/// The counter's views as written: `written` more on the stored document, `pending` more (or
/// fewer) counted in the process.
pub(super) fn bump_views<T: Simple>(m: &mut Model<T>, id: i64, written: i64, pending: i64) {
    let (d, v, old) = m.live.get_mut(&id).unwrap();
    let views = d.get_i64("views").unwrap() + written;
    d.insert("views", views);
    let mut typed = bson::to_document(&*v).unwrap();
    typed.insert("views", views);
    *v = bson::from_document(typed).unwrap();
    let _ = old;
    *m.pending.entry(id).or_default() += pending;
}

/// `docs` written by an older build, before this build's validator was installed (the
/// validator requires what that build did not write: the version, the revision).
pub(super) async fn by_an_older_build<T: Simple>(
    store: &AnyStore,
    m: &mut Model<T>,
    docs: impl IntoIterator<Item = BsonDocument>,
) {
    let anything = pattern_core::store::query::Schema::default();
    store.set_validator(T::COLLECTION, &anything).await.unwrap();
    for mut d in docs {
        // A variant's older documents hold its discriminator (they are its documents).
        if let Some(pattern_core::document::Polymorphic::Variant { field, value }) = T::POLYMORPHIC
        {
            d.insert(field, value);
        }
        store.insert_one(T::COLLECTION, d.clone()).await.unwrap();
        m.older(d);
    }
    document::ensure_validator::<T, _>(store).await.unwrap();
}

/// Empties the row's collections (after a failed cell).
async fn reset<T: Simple>(store: &AnyStore) {
    let all = pattern_core::store::query::Filter::And(vec![]);
    let mut colls = vec![T::COLLECTION];
    colls.extend(T::HISTORY);
    if T::ARCHIVE.is_some() {
        colls.push(T::ARCHIVE_AT);
    }
    for c in colls {
        let _ = store.delete_many(c, &all).await;
    }
    prepare::<T>(store).await;
}

// ----- Every feature at once: the parents and the source of `Everything` ----------------------

/// What `T`'s writes need besides its collection: for [`Everything`], its boards, empty, and
/// its critics, in their first state (their history emptied).
pub(super) async fn prepare<T: Simple>(store: &AnyStore) {
    if !T::REFERENCES.iter().any(|r| r.source == Critic::COLLECTION) {
        return;
    }
    let all = pattern_core::store::query::Filter::And(vec![]);
    for c in [
        "p_everything_boards",
        "p_critics",
        "p_critics_past",
        "p_pins",
    ] {
        store.delete_many(c, &all).await.unwrap();
    }
    for id in 0..EBOARDS {
        let board = EBoard {
            id,
            count: 0,
            total: 0,
            recent: Vec::new(),
        };
        board.insert(store).await.unwrap();
    }
    for id in 0..2 {
        critic(id, 0).insert(store).await.unwrap();
    }
    // The sibling variant's notes: on every board, with the fields a child has, counted by
    // nothing, embedded in no subset, archived, swept and found by no keyword.
    for id in 0..EBOARDS {
        let note = Things::Note {
            id: 1_000 + id,
            name: "Ann Lee".into(),
            n: 1_000,
            board: id,
        };
        note.insert(store).await.unwrap();
    }
}

/// Critic `id`'s name after `renames` renames.
pub(super) fn critic(id: i64, renames: i64) -> Critic {
    Critic {
        id,
        name: format!("Critic {id}, take {renames}"),
    }
}

/// [`Everything`]'s parents and copies: each board's count and total those of its live
/// children as stored, its subset their first 2 (by `n`, then `_id`, descending), and every
/// check of the library's own clean (`verify`, `verify_subsets`, `verify_copies`).
async fn check_everything(store: &AnyStore, m: &Model<Everything>) {
    for b in documents(store, "p_everything_boards").await {
        let id = b.get_i64("_id").unwrap();
        let mut children: Vec<(i64, i64)> = (m.live.iter())
            .filter(|(_, (d, _, _))| d.get_i64("board") == Ok(id))
            .map(|(cid, (d, _, _))| (d.get_i64("n").unwrap(), *cid))
            .collect();
        let count = children.len() as i64;
        let total: i64 = children.iter().map(|(n, _)| n).sum();
        assert_eq!(b.get_i64("count").ok(), Some(count), "board {b}");
        assert_eq!(b.get_i64("total").ok(), Some(total), "board {b}");
        children.sort_by(|a, b| b.cmp(a));
        let want: Vec<i64> = children.iter().take(2).map(|(_, cid)| *cid).collect();
        let recent: Vec<i64> = (b.get_array("recent").unwrap().iter())
            .map(|e| e.as_document().unwrap().get_i64("_id").unwrap())
            .collect();
        assert_eq!(recent, want, "board {b}'s subset");
    }
    // Each pin holds its document's name as read (an older build's upgraded), or null.
    let pins = documents(store, "p_pins").await;
    let want: Vec<BsonDocument> = (m.pins.iter())
        .map(|(p, of)| {
            let of = of.map(|id| doc! {"_id": id, "name": m.live[&id].1.name.clone()});
            doc! {"_id": *p, "of": of}
        })
        .collect();
    assert_eq!(pins, want, "pins");
    let copies = document::verify_copies::<Pin, _>(store).await.unwrap();
    assert!(copies.is_empty(), "verify_copies of the pins: {copies:?}");
    let drift = document::verify::<Everything, _>(store).await.unwrap();
    assert!(drift.is_empty(), "verify: {drift:?}");
    let subsets = document::verify_subsets::<Everything, _>(store)
        .await
        .unwrap();
    assert!(subsets.is_empty(), "verify_subsets: {subsets:?}");
    let copies = document::verify_copies::<Everything, _>(store)
        .await
        .unwrap();
    assert!(copies.is_empty(), "verify_copies: {copies:?}");
}
