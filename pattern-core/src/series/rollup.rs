//! The roll-ups of a bucket series (`#[bucket(rollup)]`): one document per key in a collection
//! of their own, `<collection>.rollups`, keeps the summary of the key's whole history,
//! `{_id: <key>, rollup_items: n, rollup_summarized: [...], <aggregate fields>...}` (the
//! aggregates under the buckets' names). Every write of items adds them to it: a push in the
//! same command (one round trip, [`Store::push_open_then`]); each write of a `push_many` in the
//! ordered batch right after the key's writes ([`Store::write_batch_over`], [`write_rolled`]);
//! an ingest batch's all in one batch after its buckets, between the insert and the delete of
//! its pending mark (`series::pending`). Found by `_id` alone, in a collection with no other index: the cheapest
//! write a server has (an upsert by key and order among the buckets, as an older version kept
//! them, costs about three times as much on the test server: BENCHMARKS section 8).
//!
//! A roll-up is trusted only while the collection's mark in
//! [`BOUNDED_COLLECTIONS`](crate::spec::BOUNDED_COLLECTIONS) lists the same aggregates: set by a
//! writer that creates the collection (so every item went through a roll-up), and by
//! `backfill`, which computes the roll-ups from the buckets (the archived ones too: a roll-up
//! counts the key's whole history, and an archive's move leaves it as it is); cleared by a
//! writer that keeps none or others. A roll-up a write could not update is marked stale.

use crate::store::Error as StoreError;
use bson::Bson;

use crate::series::Kept;
use crate::spec::SeriesSpec;
use crate::store::query::{Filter, Path, Update};
use crate::store::{BatchOutcome, KeptOps, Store, WriteOp};
use crate::{Error, Result};

/// The order field's value of a roll-up an older version kept among the buckets (not part
/// of the series; `backfill` deletes it).
pub(crate) const ROLLUP: &str = "rollup";
/// Items counted by a roll-up.
pub(crate) const ROLLUP_ITEMS: &str = "rollup_items";
/// The aggregates a roll-up was created with.
pub(crate) const ROLLUP_SUMMARIZED: &str = "rollup_summarized";
/// Set when a write could not update the roll-up: not to be trusted.
pub(crate) const ROLLUP_STALE: &str = "rollup_stale";

impl<'a> SeriesSpec<'a> {
    /// The key's roll-up, in [`Keeps::rollup`](crate::spec::Keeps::rollup)'s collection.
    pub(crate) fn rollup_of(&self, key: &Bson) -> Filter {
        Filter::Eq(Path::from("_id"), key.clone())
    }

    /// The roll-ups' collection ([`Keeps::rollup`](crate::spec::Keeps::rollup)); the series'
    /// own when it keeps none (no roll-up is read or written then).
    pub(crate) fn rollups(&self) -> &'a str {
        self.keeps.rollup.unwrap_or(self.collection)
    }

    /// What adds `items` items whose kept values are `kept` to a roll-up (creating it).
    pub(crate) fn rollup_update(&self, kept: &Kept, items: u64) -> Update {
        let mut update = Update::default();
        let n = i64::try_from(items).unwrap_or(i64::MAX);
        update.sum.push((Path::from(ROLLUP_ITEMS), Bson::Int64(n)));
        let mut summary = KeptOps::default();
        self.summary_ops(kept, &mut summary);
        update.sum.extend(summary.sum);
        update.min.extend(summary.min);
        update.max.extend(summary.max);
        update.set_on_insert = vec![(Path::from(ROLLUP_SUMMARIZED), self.rollup_fields())];
        update
    }

    /// The aggregates' fields a roll-up of this spec keeps, as the mark lists them.
    pub(crate) fn rollup_fields(&self) -> Bson {
        Bson::Array(
            (self.keeps.summary.iter())
                .map(|a| Bson::String(a.field.into()))
                .collect(),
        )
    }

    /// This spec's roll-up fingerprint (0: it keeps none).
    pub(crate) fn rollup_print(&self) -> u64 {
        if self.keeps.rollup.is_none() {
            return 0;
        }
        fingerprint(self.keeps.summary.iter().map(|a| a.field))
    }
}

/// A fingerprint of a list of aggregate fields, never 0.
pub(crate) fn fingerprint<'f>(fields: impl Iterator<Item = &'f str>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in fields {
        for b in f.bytes().chain([0]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h.max(1)
}

/// After a write of `items` items (kept values `kept`) applied: adds them to the key's
/// roll-up. `sent`: the roll-up's outcome when it went in the same command as the write;
/// `None` when it is still to send. A roll-up another writer created meanwhile is updated
/// again without the upsert; any other failure marks it stale (best effort) and is
/// [`Error::RollupBehind`]: the items are written, the roll-up is not.
pub(crate) async fn roll_up<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    kept: &Kept,
    items: u64,
    sent: Option<pattern_store::Result<()>>,
) -> Result<()> {
    if spec.keeps.rollup.is_none() || items == 0 {
        return Ok(());
    }
    if let Some(Ok(())) = sent {
        return Ok(()); // sent with the push, and applied
    }
    // Boxed: rarer, and every push's future would carry it. A roll-up not sent with the push,
    // or refused.
    Box::pin(async move {
        let (coll, filter) = (spec.rollups(), spec.rollup_of(key));
        let update = || spec.rollup_update(kept, items);
        let outcome = match sent {
            Some(outcome) => outcome,
            None => (store.update_one(coll, &filter, &mut update(), true).await).map(|_| ()),
        };
        // Refused on the unique `_id`: another writer created it meanwhile.
        let outcome = match outcome {
            Err(StoreError::DuplicateKey { .. }) => {
                (store.update_one(coll, &filter, &mut update(), false).await).map(|_| ())
            }
            other => other,
        };
        match outcome {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = mark_stale(store, spec, key).await;
                Err(Error::RollupBehind {
                    collection: spec.collection.to_owned(),
                    key: crate::error::display_bson(key),
                    source: Box::new(e.into()),
                })
            }
        }
    })
    .await
}

/// Sends `writes` on the series' collection, then the write adding `items` items (kept values
/// `kept`) to the key's roll-up, in one ordered batch ([`Store::write_batch_over`]): the roll-up
/// applies only once every write before it did, even should this process die once the batch is
/// sent. Returns the writes' outcome (the roll-up not counted), and the roll-up's when the batch
/// reached it, for [`roll_up`]'s `sent`. A batch stopped before it leaves the roll-up to the
/// caller: [`roll_up`] of the items of the writes that applied (or, their fate unknown,
/// [`mark_stale`]).
pub(crate) async fn write_rolled<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    writes: Vec<WriteOp>,
    kept: &Kept,
    items: u64,
) -> (BatchOutcome, Option<pattern_store::Result<()>>) {
    let n = writes.len();
    let mut ops: Vec<(usize, WriteOp)> = writes.into_iter().map(|op| (0, op)).collect();
    ops.push((
        1,
        WriteOp::Update {
            filter: spec.rollup_of(key),
            update: Box::new(spec.rollup_update(kept, items)),
            upsert: true,
        },
    ));
    let colls = [spec.collection, spec.rollups()];
    let outcome = store.write_batch_over(&colls, ops).await;
    let whole = |error| BatchOutcome { applied: n, error };
    match outcome.error {
        None => (whole(None), Some(Ok(()))),
        Some(e) if outcome.applied == n => (whole(None), Some(Err(e))),
        error => (
            BatchOutcome {
                applied: outcome.applied,
                error,
            },
            None,
        ),
    }
}

/// Marks the key's roll-up stale: reads count the key's buckets until `backfill` recomputes
/// it.
pub(crate) async fn mark_stale<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
) -> Result<()> {
    let mut stale = Update {
        set: vec![(Path::from(ROLLUP_STALE), Bson::Boolean(true))],
        ..Update::default()
    };
    let filter = spec.rollup_of(key);
    store
        .update_one(spec.rollups(), &filter, &mut stale, true)
        .await?;
    Ok(())
}
