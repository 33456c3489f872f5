//! The series' indexes, created once per store and collection: the library's indexes of
//! another size or key dropped first.

use crate::store::Error as StoreError;
use bson::oid::ObjectId;
use bson::{doc, Bson, Document};

use super::memo;
use super::memo::BoundsMark;
use crate::codec::as_int;
use crate::spec::{SeriesSpec, BOUNDED_COLLECTIONS, BOUNDED_FIELD};
use crate::store::query::{Filter, FindOptions, Update};
use crate::store::{find_one, Store};
use crate::{Error, Result};

impl SeriesSpec<'_> {
    /// Creates the indexes once per store; an open-document index for another `size` is
    /// dropped first. Runs before every push and read: once done, it is one set lookup.
    pub(crate) async fn ensure_indexes<S: Store>(&self, store: &S) -> Result<()> {
        if memo(store).contains(self) {
            return Ok(());
        }
        // Boxed: once per series and process, and large (every push's future would carry it).
        Box::pin(self.create_indexes(store)).await
    }

    /// [`SeriesSpec::ensure_indexes`] past its memo.
    async fn create_indexes<S: Store>(&self, store: &S) -> Result<()> {
        if self.size == 0 || self.size > i32::MAX as u32 {
            return Err(Error::invalid(format!(
                "series size must be in 1..=2^31-1, got {}",
                self.size
            )));
        }
        let stale = |name: &str| self.is_stale(name);
        let created = async {
            let existed = drop_stale(store, self.collection, &stale).await?;
            // A collection this process creates: its mark before its indexes, so that another
            // process that finds the indexes finds the mark too (and the width its writes keep).
            if !existed {
                self.mark_new(store).await?;
            }
            for index in &self.indexes() {
                store.create_index(self.collection, index).await?;
            }
            Ok::<_, Error>(existed)
        };
        match created.await {
            Ok(existed) => {
                if existed {
                    // The collection's mark, read once per process (whether its documents are
                    // all numbered and none archived, which a key's first push asks; the bounds,
                    // the roll-ups).
                    let mark = self.bounds_mark(store).await?;
                    // An older version's readers trust the roll-ups it keeps among the buckets,
                    // which this version's writes leave as they are: not from now on (they
                    // count the buckets; a process that read the mark before keeps it, as
                    // for every change of the mark).
                    if mark.old_rollup {
                        let mut unset = Update::default();
                        unset.unset.push(OLD_ROLLUP_MARK.into());
                        let coll = self.collection;
                        write_mark(store, coll, unset, false, |m| BoundsMark {
                            old_rollup: false,
                            ..m
                        })
                        .await?;
                    }
                    // Items written without this spec's roll-ups from now on: those there are
                    // no longer exact for another spec's aggregates.
                    if !self.keeps.is_none() && mark.rollup != 0 && mark.rollup != self.rollup_print()
                    {
                        mark_rollup(store, self, false).await?;
                    }
                    // Buckets cut by another span (or none) from now on: the collection's
                    // span no longer holds for every bucket.
                    if self.keeps.bounds.is_some()
                        && mark.span.is_some()
                        && mark.span != self.keeps.span
                    {
                        let mut unset = Update::default();
                        unset.unset.push(SPAN_FIELD.into());
                        let coll = self.collection;
                        write_mark(store, coll, unset, false, |m| BoundsMark { span: None, ..m })
                            .await?;
                    }
                    // Cut by a span wider than the collection's width: the width first takes
                    // it (a bucket of the span spans less).
                    if let (Some(width), Some(span)) = (mark.width, self.span_bounds()) {
                        let span = super::width::Width::both(span.2);
                        if !width.covers(span) && super::width::kept_for(self) {
                            super::width::raise(store, self.collection, span).await?;
                            // Its buckets rely on it (`series::lease`).
                            super::lease::settle(store, self.collection, span).await;
                        }
                    }
                }
                memo(store).insert(self);
                Ok(())
            }
            Err(Error::Store(StoreError::DuplicateKey { message, .. })) => Err(Error::invalid(format!(
                "cannot create the indexes of `{}`: two of its documents have the same key and sequence number \
                 (written by another tool?): {message}",
                self.collection
            ))),
            Err(e) => Err(e),
        }
    }
}

impl SeriesSpec<'_> {
    /// The mark of the collection this process just created, in one write: it holds only
    /// documents the library numbers; with bounds, only buckets written with them (and cut by
    /// its span); with roll-ups, only items they counted.
    async fn mark_new<S: Store>(&self, store: &S) -> Result<()> {
        let mut update = Update {
            set: vec![(NUMBERED_FIELD.into(), Bson::Boolean(true))],
            ..Update::default()
        };
        let bounded = self.keeps.bounds.is_some();
        if bounded {
            set_bounded(&mut update, Some(self.keeps.span));
        }
        // Time-named buckets: the width they keep to, from none (a bucket of one item) or the
        // span (`$max`: another process may have raised it already).
        let width = (super::width::kept_for(self))
            .then(|| super::width::Width::both(self.keeps.span.unwrap_or(0).max(0)));
        if let Some(w) = width {
            super::width::at_least(&mut update, w);
        }
        if self.keeps.rollup.is_some() {
            set_rollup(&mut update, self, true);
        }
        write_mark(store, self.collection, update, true, |m| BoundsMark {
            all_bounded: m.all_bounded || bounded,
            span: if bounded { self.keeps.span } else { m.span },
            rollup: if self.keeps.rollup.is_some() {
                self.rollup_print()
            } else {
                m.rollup
            },
            numbered: true,
            width: width.map(|w| m.width.map_or(w, |k| k.max(w))),
            ..m
        })
        .await
    }

    /// The collection's mark in [`BOUNDED_COLLECTIONS`]: whether every bucket carries complete
    /// time bounds, and the span every bucket keeps to. Read once per process (one find) and
    /// remembered.
    pub(crate) async fn bounds_mark<S: Store>(&self, store: &S) -> Result<BoundsMark> {
        let coll = self.collection;
        if let Some(known) = memo(store).bounds_mark(coll) {
            return Ok(known);
        }
        let filter = Filter::Eq("_id".into(), Bson::String(coll.into()));
        let found = find_one(store, BOUNDED_COLLECTIONS, &filter).await?;
        let mark = found.as_ref().map_or_else(BoundsMark::default, |m| {
            let all_bounded = m.get_bool(BOUNDED_FIELD) == Ok(true);
            let rollup = match m.get_array(ROLLUP_MARK) {
                Ok(fields) => super::rollup::fingerprint(fields.iter().filter_map(Bson::as_str)),
                Err(_) => 0,
            };
            BoundsMark {
                all_bounded,
                span: (m.get(SPAN_FIELD).and_then(as_int)).filter(|s| all_bounded && *s > 0),
                rollup,
                archived: m.get_bool(ARCHIVED_FIELD) == Ok(true),
                numbered: m.get_bool(NUMBERED_FIELD) == Ok(true),
                old_rollup: m.get(OLD_ROLLUP_MARK).is_some(),
                width: super::width::of_mark(m).filter(|_| all_bounded),
                lease: super::memo::Lease {
                    ms: super::lease::of_mark(m),
                    ..Default::default()
                },
            }
        });
        memo(store).set_bounds_mark(coll, mark);
        Ok(mark)
    }
}

/// Writes `update` to `coll`'s mark in [`BOUNDED_COLLECTIONS`] (creating it with `upsert`),
/// then remembers the mark as `change` makes it of what this process knew.
pub(crate) async fn write_mark<S: Store>(
    store: &S,
    coll: &str,
    mut update: Update,
    upsert: bool,
    change: impl FnOnce(BoundsMark) -> BoundsMark,
) -> Result<()> {
    let mark = Filter::Eq("_id".into(), Bson::String(coll.into()));
    store
        .update_one(BOUNDED_COLLECTIONS, &mark, &mut update, upsert)
        .await?;
    let known = memo(store).bounds_mark(coll).unwrap_or_default();
    memo(store).set_bounds_mark(coll, change(known));
    Ok(())
}

/// The mark's field listing the aggregates every roll-up of the collection is exact for (its
/// roll-ups in `<collection>.rollups`).
pub(crate) const ROLLUP_MARK: &str = "rollups";
/// The field an older version's mark listed them in, its roll-ups kept among the buckets:
/// not trusted (a `backfill` writes them in their collection), cleared with the new one.
const OLD_ROLLUP_MARK: &str = "rollup";

/// Sets (`Some`: this spec's aggregates) or clears `coll`'s roll-up mark.
pub(crate) async fn mark_rollup<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    on: bool,
) -> Result<()> {
    let mut update = Update::default();
    set_rollup(&mut update, spec, on);
    let rollup = if on { spec.rollup_print() } else { 0 };
    write_mark(store, spec.collection, update, on, |m| BoundsMark {
        rollup,
        ..m
    })
    .await
}

/// Sets (`on`: `spec`'s aggregates) or clears the roll-up mark in a mark's `update`.
fn set_rollup(update: &mut Update, spec: &SeriesSpec<'_>, on: bool) {
    if on {
        update.set.push((ROLLUP_MARK.into(), spec.rollup_fields()));
    } else {
        update.unset.push(ROLLUP_MARK.into());
    }
    update.unset.push(OLD_ROLLUP_MARK.into());
}

/// The field of a collection's mark saying buckets were moved from it to an archive.
pub(crate) const ARCHIVED_FIELD: &str = "archived";

/// The field of a collection's mark listing the archives its buckets were moved to,
/// `[{collection: "<archive>", here: true}]`: `here` when the archive is in the live store's
/// database (what a `backfill` of the live store alone can read). `collection: null`: buckets
/// were moved to an archive no mark recorded (a version before the list).
pub(crate) const ARCHIVES_FIELD: &str = "archives";

/// The field of an archive collection's mark holding the token of the last archive run into
/// it, which the run reads back through the live store: the same token there, the same
/// database.
pub(crate) const PROBE_FIELD: &str = "probe";

/// An archive of a collection, as the collection's mark records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArchiveRecord {
    /// The archive collection (`None`: one no mark recorded).
    pub(crate) collection: Option<String>,
    /// In the live store's database.
    pub(crate) here: bool,
}

/// The marks of `colls` in [`BOUNDED_COLLECTIONS`] as stored, those that exist: one find, not
/// remembered.
pub(crate) async fn read_marks<S: Store>(store: &S, colls: &[&str]) -> Result<Vec<Document>> {
    let ids = colls.iter().map(|c| Bson::String((*c).into())).collect();
    let filter = Filter::In("_id".into(), ids);
    Ok(store
        .find(BOUNDED_COLLECTIONS, &filter, &FindOptions::default())
        .await?)
}

/// The archives a collection's mark records: none when it was never archived from; one with
/// no collection when it was, by a version that recorded none.
pub(crate) fn archives_in(mark: Option<&Document>) -> Vec<ArchiveRecord> {
    let Some(mark) = mark else {
        return Vec::new();
    };
    let Ok(list) = mark.get_array(ARCHIVES_FIELD) else {
        return match mark.get_bool(ARCHIVED_FIELD) {
            Ok(true) => vec![ArchiveRecord {
                collection: None,
                here: false,
            }],
            _ => Vec::new(),
        };
    };
    (list.iter())
        .filter_map(Bson::as_document)
        .map(|a| ArchiveRecord {
            collection: a.get_str("collection").ok().map(str::to_owned),
            here: a.get_bool("here") == Ok(true),
        })
        .collect()
}

/// Marks `coll` as archived from into `archive` (its roll-ups count more than its buckets),
/// adding `archive` to the archives the mark records (`recorded`, read before) when it is not
/// there yet.
pub(crate) async fn mark_archived<S: Store>(
    store: &S,
    coll: &str,
    archive: ArchiveRecord,
    recorded: Vec<ArchiveRecord>,
) -> Result<()> {
    let mut update = Update {
        set: vec![(ARCHIVED_FIELD.into(), Bson::Boolean(true))],
        ..Update::default()
    };
    if !recorded.contains(&archive) {
        let record = |a: ArchiveRecord| {
            let name = a.collection.map_or(Bson::Null, Bson::String);
            Bson::Document(doc! {"collection": name, "here": a.here})
        };
        // A mark archived from before the list: the list starts with that archive, unknown
        // (still counted: a `backfill` of the live store alone refuses).
        let mut new: Vec<Bson> = match recorded.as_slice() {
            [a] if a.collection.is_none() => vec![record(a.clone())],
            _ => Vec::new(),
        };
        new.push(record(archive));
        update.push.push((ARCHIVES_FIELD.into(), new));
    }
    write_mark(store, coll, update, true, |m| BoundsMark {
        archived: true,
        ..m
    })
    .await
}

/// The field of a collection's mark saying the library created it: its every document carries
/// its number.
pub(crate) const NUMBERED_FIELD: &str = "numbered";

/// The field of a collection's mark holding the span its every bucket keeps to.
const SPAN_FIELD: &str = "span";

/// Marks every bucket of `coll` as carrying complete time bounds; with `span`, also as cut by
/// that span (`Some(None)`: by none); without, the mark's span is left as it is.
pub(crate) async fn mark_bounded<S: Store>(
    store: &S,
    coll: &str,
    span: Option<Option<i64>>,
) -> Result<()> {
    mark_bounded_probed(store, coll, span, None).await
}

/// [`mark_bounded`], the mark of an archive collection: with the archive run's token in its
/// [`PROBE_FIELD`].
pub(crate) async fn mark_bounded_probed<S: Store>(
    store: &S,
    coll: &str,
    span: Option<Option<i64>>,
    probe: Option<ObjectId>,
) -> Result<()> {
    let mut set = Update::default();
    set_bounded(&mut set, span);
    if let Some(token) = probe {
        set.set.push((PROBE_FIELD.into(), Bson::ObjectId(token)));
        // An archive receives the live collection's buckets as they are, numbered or not,
        // and of any width.
        set.unset.push(NUMBERED_FIELD.into());
        (set.unset).extend(super::width::WIDTH_FIELDS.map(Into::into));
    }
    write_mark(store, coll, set, true, |m| BoundsMark {
        all_bounded: true,
        span: span.unwrap_or(m.span),
        numbered: m.numbered && probe.is_none(),
        width: m.width.filter(|_| probe.is_none()),
        ..m
    })
    .await
}

/// Marks every bucket as carrying complete time bounds in a mark's `update`; with `span`, also
/// as cut by that span (`Some(None)`: by none).
fn set_bounded(update: &mut Update, span: Option<Option<i64>>) {
    update.set.push((BOUNDED_FIELD.into(), Bson::Boolean(true)));
    match span {
        Some(Some(ms)) => update.set.push((SPAN_FIELD.into(), Bson::Int64(ms))),
        Some(None) => update.unset.push(SPAN_FIELD.into()),
        None => {}
    }
}

/// Drops the indexes of `coll` that `stale` names (an older `size`, another key). Returns
/// whether the collection existed (had any index).
async fn drop_stale<S: Store>(
    store: &S,
    coll: &str,
    stale: &(dyn Fn(&str) -> bool + Sync),
) -> Result<bool> {
    let names = store.index_names(coll).await?;
    let existed = !names.is_empty();
    for name in names {
        if stale(&name) {
            store.drop_index(coll, &name).await?;
        }
    }
    Ok(existed)
}
