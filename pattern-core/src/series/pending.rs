//! An ingest batch's pending mark (`#[bucket(rollup)]`): the keys whose roll-ups a batch has
//! not yet brought up to its buckets. An ingest with roll-ups sends its buckets as one command
//! and their roll-ups as the next (the fastest the server takes them: BENCHMARKS section 8),
//! so a process that dies between the two would leave the roll-ups behind their buckets. Before
//! the buckets it inserts one document into
//! [`BOUNDED_COLLECTIONS`](crate::spec::BOUNDED_COLLECTIONS), `{_id: {rollup_pending_of:
//! <collection>, batch: <ObjectId>}, rollup_pending: [<keys>]}`, and deletes it once every
//! roll-up of the batch is written or marked stale. While it stands:
//! - a whole-history read of one of its keys counts the key's buckets ([`of_key`], read after
//!   the roll-up in the same round trip);
//! - `verify` leaves those roll-ups out, and reports a mark older than [`LEFT_AFTER`];
//! - a follower leaves those keys to the batch (its roll-up's change comes next);
//! - `backfill` (which recomputes every roll-up) deletes the collection's marks.
//!
//! So a writer that dies between its buckets and their roll-ups leaves no read behind the
//! buckets, and a batch costs one small document more, not a write per key. A read beside a
//! batch in flight gives the key's totals before the batch or after it.
//!
//! The marks' collection is not sharded (its name starts with `pattern_`): the mark of any
//! batch is one shard's read away from every reader.

use std::collections::HashSet;

use bson::{doc, oid::ObjectId, Bson, Document};

use crate::spec::{SeriesSpec, BOUNDED_COLLECTIONS};
use crate::store::query::{Filter, FindOptions, Path};
use crate::store::Store;
use crate::Result;

/// The field of a pending mark's `_id` that names its collection.
const PENDING_OF: &str = "rollup_pending_of";
/// The field of a pending mark's `_id` that tells its batch.
const BATCH: &str = "batch";
/// The keys whose roll-ups the batch has not yet written.
const PENDING_KEYS: &str = "rollup_pending";

/// A batch's pending mark, inserted: its `_id`.
pub(crate) struct Pending {
    id: Bson,
}

/// The `_id` of a pending mark of `coll` with batch `batch`.
fn id_of(coll: &str, batch: Bson) -> Bson {
    Bson::Document(doc! {PENDING_OF: coll, BATCH: batch})
}

/// Every pending mark of `spec`'s collection, and nothing else: an `_id` range (the marks of
/// the collections are strings, which sort before every document).
fn of_collection(spec: &SeriesSpec<'_>) -> Vec<Filter> {
    let coll = spec.collection;
    vec![
        Filter::Gte(Path::from("_id"), id_of(coll, Bson::MinKey)),
        Filter::Lte(Path::from("_id"), id_of(coll, Bson::MaxKey)),
    ]
}

/// The pending marks of `spec`'s collection that list `key` (by value, as MongoDB matches an
/// array's elements).
pub(crate) fn of_key(spec: &SeriesSpec<'_>, key: &Bson) -> Filter {
    let mut all = of_collection(spec);
    all.push(Filter::Eq(Path::from(PENDING_KEYS), key.clone()));
    Filter::and(all)
}

/// Inserts a pending mark of `spec`'s collection listing `keys`.
pub(crate) async fn open<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    keys: Vec<Bson>,
) -> Result<Pending> {
    let id = id_of(spec.collection, Bson::ObjectId(ObjectId::new()));
    let mark: Document = doc! {"_id": id.clone(), PENDING_KEYS: keys};
    store.insert_one(BOUNDED_COLLECTIONS, mark).await?;
    Ok(Pending { id })
}

/// Deletes the batch's pending mark: its roll-ups are all written (or marked stale).
pub(crate) async fn close<S: Store>(store: &S, pending: Pending) -> Result<()> {
    let by_id = Filter::Eq(Path::from("_id"), pending.id);
    store.delete_many(BOUNDED_COLLECTIONS, &by_id).await?;
    Ok(())
}

/// How long a batch's mark may stand before `verify` reports it as left by a writer that died
/// (a batch takes well under a second; its mark's `batch` is an ObjectId, whose first bytes are
/// the seconds of the writer's clock when it began).
pub(crate) const LEFT_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// What the pending marks of a collection say.
#[derive(Default)]
pub(crate) struct Marks {
    /// The keys some mark lists, by value ([`value_key`](crate::codec::order::value_key)).
    pub(crate) keys: HashSet<Vec<u8>>,
    /// The marks older than [`LEFT_AFTER`]: each one's batch's start, and how many keys it lists.
    pub(crate) left: Vec<(bson::DateTime, usize)>,
}

/// The pending marks of `spec`'s collection (one `find`).
pub(crate) async fn read<S: Store>(store: &S, spec: &SeriesSpec<'_>) -> Result<Marks> {
    let marks = (store.find(
        BOUNDED_COLLECTIONS,
        &Filter::and(of_collection(spec)),
        &FindOptions::default(),
    ))
    .await?;
    let now = std::time::SystemTime::now();
    let mut out = Marks::default();
    for mark in &marks {
        let keys = mark.get_array(PENDING_KEYS).map_or(&[][..], Vec::as_slice);
        out.keys
            .extend(keys.iter().map(crate::codec::order::value_key));
        let batch = (mark.get_document("_id").ok()).and_then(|id| id.get_object_id(BATCH).ok());
        if let Some(began) = batch.map(|b| b.timestamp()) {
            let age = now
                .duration_since(began.to_system_time())
                .unwrap_or_default();
            if age > LEFT_AFTER {
                out.left.push((began, keys.len()));
            }
        }
    }
    Ok(out)
}

/// Deletes every pending mark of `spec`'s collection (`backfill`, once the roll-ups are
/// recomputed from the buckets); how many.
pub(crate) async fn clear<S: Store>(store: &S, spec: &SeriesSpec<'_>) -> Result<u64> {
    let all = Filter::and(of_collection(spec));
    Ok(store.delete_many(BOUNDED_COLLECTIONS, &all).await?)
}
