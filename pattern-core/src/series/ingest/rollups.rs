//! An ingest's roll-ups (`#[bucket(rollup)]`): each key's items of the batch added to its
//! roll-up by one write per key in the roll-ups' collection, all sent as one ordered batch
//! after the batch's buckets (on MongoDB an `insert` command for the buckets, then an `update`
//! for the roll-ups: the fastest the server takes them). The batch's pending mark
//! (`series::pending`), inserted before the buckets and deleted after the roll-ups, keeps reads
//! from trusting a roll-up that a writer dying between the two would leave behind its buckets.
//! A batch that stops early rolls up the items of the writes that applied.

use super::{Group, Planned};
use crate::series::pending::{self, Pending};
use crate::series::rollup::roll_up;
use crate::series::Kept;
use crate::spec::SeriesSpec;
use crate::store::Error as StoreError;
use crate::store::{Store, WriteOp};
use crate::{Error, Result};

/// One key's roll-up write: its group, and what the batch's first `upto` writes add for it.
pub(super) struct Roll {
    pub(super) group: usize,
    kept: Kept,
    items: u64,
}

/// The roll-ups of the keys the first `upto` planned writes write to, in group order.
pub(super) fn rolls(
    spec: &SeriesSpec<'_>,
    groups: &[Group<'_>],
    planned: &[Planned],
    upto: usize,
) -> Result<Vec<Roll>> {
    let writes: Vec<&Planned> = planned[..upto].iter().collect();
    rolls_of(spec, groups, &writes)
}

/// The roll-ups of the keys `writes` write to, in group order.
fn rolls_of(spec: &SeriesSpec<'_>, groups: &[Group<'_>], writes: &[&Planned]) -> Result<Vec<Roll>> {
    let mut rolls = Vec::new();
    if spec.keeps.rollup.is_none() {
        return Ok(rolls);
    }
    // Each group's planned writes, in one pass (not one pass per group: a batch may hold
    // 10,000 keys).
    let mut of_group: Vec<Vec<&Planned>> = vec![Vec::new(); groups.len()];
    for p in writes {
        of_group[p.group].push(p);
    }
    for (g, group) in groups.iter().enumerate() {
        let (mut items, mut millis): (Vec<&bson::Bson>, Vec<i64>) = (Vec::new(), Vec::new());
        for p in &of_group[g] {
            for e in &group.entries[p.items.clone()] {
                items.push(&e.item);
                millis.push(e.millis);
            }
        }
        if !items.is_empty() {
            let kept = spec.kept(&items, &millis)?;
            let n = items.len() as u64;
            rolls.push(Roll {
                group: g,
                kept,
                items: n,
            });
        }
    }
    Ok(rolls)
}

/// After the batch's writes, of which the first `applied` applied: the roll-ups of their items
/// (`all`: those of every planned write, computed before the batch), as one ordered batch on
/// the roll-ups' collection, then the batch's pending mark deleted. A roll-up refused goes
/// through [`roll_up`] (retried without the upsert when another writer created it meanwhile,
/// otherwise marked stale) and the batch goes on after it. The mark stays when a roll-up's fate
/// is unknown, or one could be neither written nor marked stale: reads then count those keys'
/// buckets until `backfill`, and the error is the first such roll-up's
/// ([`Error::RollupBehind`](crate::Error::RollupBehind): the items are written).
pub(super) async fn send<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    groups: &[Group<'_>],
    planned: &[Planned],
    applied: usize,
    all: Vec<Roll>,
    pending: Pending,
) -> Result<()> {
    let rolls = match applied == planned.len() {
        true => all,
        false => rolls(spec, groups, planned, applied)?,
    };
    let op = |r: &Roll| WriteOp::Update {
        filter: spec.rollup_of(groups[r.group].key),
        update: Box::new(spec.rollup_update(&r.kept, r.items)),
        upsert: true,
    };
    let mut failed: Option<Error> = None;
    let mut from = 0;
    while from < rolls.len() {
        let ops = rolls[from..].iter().map(op).collect();
        let outcome = store.write_batch(spec.rollups(), ops).await;
        let Some(e) = outcome.error else { break };
        let at = from + outcome.applied;
        let Some(r) = rolls.get(at) else { break };
        let key = groups[r.group].key;
        if let StoreError::Unavailable { .. } = e {
            // Which of the rest applied is unknown: the mark stays.
            return Err(behind(spec, key, e));
        }
        if let Err(e) = roll_up(store, spec, key, &r.kept, r.items, Some(Err(e))).await {
            failed.get_or_insert(e);
        }
        from = at + 1;
    }
    match failed {
        None => {
            // Every roll-up written: a mark left by a failed delete only slows reads of these
            // keys (they count the buckets) until `backfill`.
            let _ = pending::close(store, pending).await;
            Ok(())
        }
        Some(e) => Err(e),
    }
}

/// [`Error::RollupBehind`] of `key`'s roll-up, refused with `e`.
fn behind(spec: &SeriesSpec<'_>, key: &bson::Bson, e: StoreError) -> Error {
    Error::RollupBehind {
        collection: spec.collection.to_owned(),
        key: crate::error::display_bson(key),
        source: Box::new(e.into()),
    }
}
