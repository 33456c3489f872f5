//! Document versioning (`#[document(history = "...")]`): every write through the library bumps
//! the document's [`REVISION`] and records the state it replaces in the history collection,
//! in one transaction; reads of past states ([`history`], [`at_revision`], [`as_of`]);
//! writes conditioned on the revision read ([`save_if`](super::save_if), [`update_if`](super::update_if), [`delete_if`](super::delete_if)), whose
//! refusal is [`Error::Conflict`].
//!
//! A history document: `{_id: {id, revision}, id, revision, since, until, state}`: the stored
//! document `state` (its schema version kept, the revision fields left out) was the current one
//! from `since` (`null` for a document written before history was turned on) until `until`.

use bson::{doc, Bson, DateTime, Document as BsonDocument};
use futures::stream::{self, Stream, StreamExt};

use super::{decode_stored, id_bson, polymorphic, Document, Polymorphic};
use crate::error::display_bson;
use crate::key::IdRef;
use crate::spec::ShardKey;
use crate::store::query::{Filter, FindOptions, Path};
use crate::store::{find_one, Store};
use crate::{Error, Result};

/// The field of a document with history holding its revision: an Int64, 1 for a document
/// inserted through the library, bumped by every write; a document without it (written before
/// history was turned on) is at revision 0.
pub const REVISION: &str = "revision";
/// The field holding when the current revision was written (the writing process's clock).
pub const REVISED_AT: &str = "revised_at";
/// The shard keys of `D`'s collections: `{_id: 1}` for its documents (every write the library
/// sends names one `_id`, or is a find), and, with history, `{id: 1}` for the history
/// collection (`id`: the document's `_id`): every read and write of a document's history
/// carries an equality on `id`, so each goes to one shard.
pub fn shard_keys<D: Document>() -> Vec<ShardKey<'static>> {
    let mut keys = vec![ShardKey {
        collection: D::COLLECTION,
        field: "_id",
    }];
    if let Some(h) = D::HISTORY {
        keys.push(ShardKey {
            collection: h,
            field: "id",
        });
    }
    keys
}

/// One revision of a document: what [`history`] streams and [`get_revision`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Revision<D> {
    /// Its number (0: written before history was turned on).
    pub revision: u64,
    /// When it was written; `None` when unknown (revision 0).
    pub since: Option<DateTime>,
    /// When a later write replaced it or a delete removed it; `None` for the current one.
    pub until: Option<DateTime>,
    /// The document as it was (upgraded to the current schema version).
    pub document: D,
}

/// The revision a stored document is at (0 without the field).
fn revision_of(doc: &BsonDocument) -> u64 {
    doc.get(REVISION)
        .and_then(crate::codec::as_int)
        .map_or(0, |n| u64::try_from(n).unwrap_or(0))
}

fn revised_at(doc: &BsonDocument) -> Option<DateTime> {
    doc.get_datetime(REVISED_AT).ok().copied()
}

fn conflict<D: Document>(id: &Bson, expected: u64, found: Option<u64>) -> Error {
    Error::Conflict {
        collection: D::COLLECTION.to_owned(),
        id: display_bson(id),
        expected,
        found,
    }
}

/// The write pipeline's guard for the `_if` writes: the document read (`None`: there is none)
/// must be at revision `expected`; else [`Error::Conflict`] with the revision found.
pub(super) fn expect<D: Document>(
    id: &Bson,
    cur: Option<&BsonDocument>,
    expected: Option<u64>,
) -> Result<()> {
    let Some(e) = expected else {
        return Ok(());
    };
    match cur.map(revision_of) {
        Some(found) if found == e => Ok(()),
        found => Err(conflict::<D>(id, e, found)),
    }
}

/// The revision fields a write stamps on the document (none without history).
pub(super) struct Stamp(Option<(u64, DateTime)>);

impl Stamp {
    /// No revision fields: a type without history.
    pub(super) const NONE: Stamp = Stamp(None);

    /// [`REVISION`] and [`REVISED_AT`], as written.
    pub(super) fn fields(&self) -> impl Iterator<Item = (&'static str, Bson)> {
        self.0.into_iter().flat_map(|(rev, at)| {
            [
                (REVISION, Bson::Int64(rev as i64)),
                (REVISED_AT, Bson::DateTime(at)),
            ]
        })
    }
}

/// The write pipeline's record stage: on a type with history, `cur` (the state the write
/// replaces or deletes, read in its transaction) recorded in the history collection, and the
/// revision the write stamps: the one after `cur`'s, or, for a document with no state to
/// record (a new one), the one after the last revision recorded of its `_id` (1 for an `_id`
/// never seen).
pub(super) async fn record<D: Document, T: Store>(
    t: &T,
    id: &Bson,
    cur: Option<&BsonDocument>,
) -> Result<Stamp> {
    let Some(history) = D::HISTORY else {
        return Ok(Stamp(None));
    };
    let Some(cur) = cur else {
        let rev = last_recorded(t, history, id).await?.unwrap_or(0) + 1;
        return Ok(Stamp(Some((rev, DateTime::now()))));
    };
    let rev = match cur.get(REVISION) {
        Some(_) => revision_of(cur),
        // Written without a revision (before history, or by another tool or build): recorded
        // at 0, or after the last revision recorded when its `_id` has a history already (a
        // document of the same `_id` deleted before).
        None => last_recorded(t, history, id).await?.map_or(0, |r| r + 1),
    };
    let since = revised_at(cur);
    // Never before the revision it replaces, whatever the clocks of the writers say.
    let now = DateTime::now().max(since.unwrap_or(DateTime::MIN));
    let mut state = cur.clone();
    state.remove(REVISION);
    state.remove(REVISED_AT);
    let entry = doc! {
        "_id": {"id": id.clone(), "revision": rev as i64},
        "id": id.clone(),
        "revision": rev as i64,
        "since": since.map_or(Bson::Null, Bson::DateTime),
        "until": now,
        "state": state,
    };
    t.insert_one(history, entry).await?;
    Ok(Stamp(Some((rev + 1, now))))
}

/// The last revision `history` recorded of the document `id`, if any.
async fn last_recorded<S: Store>(store: &S, history: &str, id: &Bson) -> Result<Option<u64>> {
    let opts = FindOptions {
        sort: vec![(REVISION.into(), -1)],
        limit: Some(1),
        projection: vec![REVISION.into()],
        ..FindOptions::default()
    };
    let found = store
        .find(history, &Filter::Eq("id".into(), id.clone()), &opts)
        .await?;
    Ok(found.first().map(revision_of))
}

/// The document `id` as stored, of `D` (on a variant's type: while it is that variant).
async fn current<D: Document, S: Store>(store: &S, id: &Bson) -> Result<Option<BsonDocument>> {
    let by_id = polymorphic::scope::<D>(Filter::Eq("_id".into(), id.clone()));
    Ok(find_one(store, D::COLLECTION, &by_id).await?)
}

/// The history records of `id` matching `more`, of `D`'s states (on a variant's type, those
/// recorded while the document was that variant: a polymorphic collection's history is its
/// enum's, one revision sequence per `_id` whatever its variant).
fn records_of<D: Document>(id: Bson, more: Vec<Filter>) -> Filter {
    let mut all = vec![Filter::Eq("id".into(), id)];
    if let Some(Polymorphic::Variant { field, value }) = D::POLYMORPHIC {
        all.push(Filter::Eq(format!("state.{field}").into(), value.into()));
    }
    all.extend(more);
    Filter::And(all)
}

pub(super) fn history_of<D: Document>() -> Result<&'static str> {
    D::HISTORY.ok_or_else(|| {
        Error::invalid(format!(
            "`{}` keeps no history: declare #[document(history = \"...\")]",
            D::COLLECTION
        ))
    })
}

#[doc = crate::__document_doc!(get_revision)]
pub async fn get_revision<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<Option<Revision<D>>> {
    crate::observe::traced_op!(document.get_revision, store, D::COLLECTION, async {
        history_of::<D>()?;
        let Some(cur) = current::<D, S>(store, &id_bson(id)?).await? else {
            return Ok(None);
        };
        current_revision(cur).map(Some)
    })
}

fn current_revision<D: Document>(cur: BsonDocument) -> Result<Revision<D>> {
    let (revision, since) = (revision_of(&cur), revised_at(&cur));
    let (document, _) = decode_stored::<D>(cur)?;
    Ok(Revision {
        revision,
        since,
        until: None,
        document,
    })
}

fn recorded<D: Document>(entry: BsonDocument) -> Result<Revision<D>> {
    let revision = revision_of(&entry);
    let since = entry.get_datetime("since").ok().copied();
    let until = entry.get_datetime("until").ok().copied();
    let state = match entry.get("state") {
        Some(Bson::Document(d)) => d.clone(),
        _ => {
            return Err(Error::decode(
                D::HISTORY.unwrap_or_default(),
                entry.get("_id"),
                "a history record without its `state` document",
            ))
        }
    };
    let (document, _) = decode_stored::<D>(state)?;
    Ok(Revision {
        revision,
        since,
        until: Some(until.unwrap_or(DateTime::MIN)),
        document,
    })
}

/// History records read per `find`.
const HISTORY_PAGE: i64 = 100;

#[doc = crate::__document_doc!(history)]
pub fn history<'a, D: Document + 'a, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &'a S,
    id: &Q,
) -> impl Stream<Item = Result<Revision<D>>> + Send + 'a {
    enum Next {
        Current,
        Before(Option<u64>),
        Done,
    }
    let start = history_of::<D>().and(id_bson(id));
    let span = crate::observe::op_span!(document.history, store, D::COLLECTION);
    let revisions = stream::unfold((start, Next::Current), move |(id, next)| async move {
        let id_value = match &id {
            Ok(v) => v.clone(),
            Err(e) => {
                return match next {
                    Next::Done => None,
                    _ => Some((vec![Err(Error::invalid(e.to_string()))], (id, Next::Done))),
                }
            }
        };
        let history = D::HISTORY.unwrap_or_default();
        match next {
            Next::Done => None,
            Next::Current => {
                let found = current::<D, S>(store, &id_value).await;
                let (items, next) = match found {
                    Err(e) => (vec![Err(e)], Next::Done),
                    Ok(None) => (Vec::new(), Next::Before(None)),
                    Ok(Some(cur)) => {
                        let rev = revision_of(&cur);
                        (vec![current_revision::<D>(cur)], Next::Before(Some(rev)))
                    }
                };
                Some((items, (id, next)))
            }
            Next::Before(below) => {
                let mut below_current = Vec::new();
                if let Some(b) = below {
                    below_current.push(Filter::Lt(REVISION.into(), Bson::Int64(b as i64)));
                }
                let filter = records_of::<D>(id_value, below_current);
                let opts = FindOptions {
                    sort: vec![(REVISION.into(), -1)],
                    limit: Some(HISTORY_PAGE),
                    ..FindOptions::default()
                };
                match store.find(history, &filter, &opts).await {
                    Err(e) => Some((vec![Err(e.into())], (id, Next::Done))),
                    Ok(found) if found.is_empty() => None,
                    Ok(found) => {
                        let last = found.last().map(revision_of);
                        let next = match last {
                            Some(l) if found.len() as i64 == HISTORY_PAGE && l > 0 => {
                                Next::Before(Some(l))
                            }
                            _ => Next::Done,
                        };
                        let items = found.into_iter().map(recorded::<D>).collect();
                        Some((items, (id, next)))
                    }
                }
            }
        }
    })
    .flat_map(stream::iter);
    crate::observe::traced_stream(span, revisions)
}

#[doc = crate::__document_doc!(at_revision)]
pub async fn at_revision<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    id: &Q,
    n: u64,
) -> Result<Option<D>> {
    crate::observe::traced_op!(document.at_revision, store, D::COLLECTION, async {
        let is_current = |cur: &BsonDocument| revision_of(cur) == n;
        let revision = Filter::Eq(REVISION.into(), Bson::Int64(n as i64));
        let past = (revision, vec![]);
        state_at::<D, S>(store, id_bson(id), is_current, past, |_| true).await
    })
}

#[doc = crate::__document_doc!(as_of)]
pub async fn as_of<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    id: &Q,
    time: DateTime,
) -> Result<Option<D>> {
    crate::observe::traced_op!(document.as_of, store, D::COLLECTION, async {
        let is_current = |cur: &BsonDocument| revised_at(cur).is_none_or(|since| since <= time);
        // The earliest revision still current after `time`: the one current at `time` if it had
        // begun by then.
        let after = Filter::Gt("until".into(), Bson::DateTime(time));
        let began = |entry: &BsonDocument| match entry.get("since") {
            Some(Bson::DateTime(since)) => *since <= time,
            _ => true,
        };
        let past = (after, vec![(REVISION.into(), 1)]);
        state_at::<D, S>(store, id_bson(id), is_current, past, began).await
    })
}

/// The document `id` in a state a reader asks for: as stored when `is_current` accepts it (one
/// `find`), else as the first history record matching `past` (a filter and a sort) recorded
/// it, when `began` accepts that record (one more); `None` otherwise.
async fn state_at<D: Document, S: Store>(
    store: &S,
    id: Result<Bson>,
    is_current: impl FnOnce(&BsonDocument) -> bool,
    (past, sort): (Filter, Vec<(Path, i32)>),
    began: impl FnOnce(&BsonDocument) -> bool,
) -> Result<Option<D>> {
    let history = history_of::<D>()?;
    let id = id?;
    if let Some(cur) = current::<D, S>(store, &id).await? {
        if is_current(&cur) {
            return Ok(Some(decode_stored::<D>(cur)?.0));
        }
    }
    let filter = records_of::<D>(id, vec![past]);
    let opts = FindOptions {
        sort,
        limit: Some(1),
        ..FindOptions::default()
    };
    match store.find(history, &filter, &opts).await?.pop() {
        Some(entry) if began(&entry) => Ok(Some(recorded::<D>(entry)?.document)),
        _ => Ok(None),
    }
}
