//! An ingest's roll-ups (`#[bucket(rollup)]`): each key's items of the batch added to its
//! roll-up by one more write per key at the end of the same ordered batch, in the roll-ups'
//! collection ([`Store::write_batch_then`](crate::store::Store::write_batch_then)); when the batch stops
//! early, the keys' written items are added afterwards, and a roll-up whose fate is unknown is
//! marked stale (reads then count the key's buckets).

use super::{Group, Planned};
use crate::series::rollup::{mark_stale, roll_up};
use crate::series::Kept;
use crate::spec::SeriesSpec;
use crate::store::Error as StoreError;
use crate::store::{Store, WriteOp};
use crate::Result;

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
    let mut rolls = Vec::new();
    if spec.keeps.rollup.is_none() {
        return Ok(rolls);
    }
    // Each group's planned writes, in one pass (not one pass per group: a batch may hold
    // 10,000 keys).
    let mut of_group: Vec<Vec<&Planned>> = vec![Vec::new(); groups.len()];
    for p in &planned[..upto] {
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

/// The roll-ups as writes of the batch.
pub(super) fn ops(spec: &SeriesSpec<'_>, groups: &[Group<'_>], rolls: &[Roll]) -> Vec<WriteOp> {
    (rolls.iter())
        .map(|r| WriteOp::Update {
            filter: spec.rollup_of(groups[r.group].key),
            update: Box::new(spec.rollup_update(&r.kept, r.items)),
            upsert: true,
        })
        .collect()
}

/// After the batch: what it did not apply of the roll-ups. `writes` planned writes came
/// first, then `rolls`; `applied` of all of them applied, then `error` (`None`: all did);
/// `unknown`: the batch's fate was unknown, and `writes_applied` were found applied by reading
/// the documents back.
#[allow(clippy::too_many_arguments)]
pub(super) async fn settle<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    groups: &[Group<'_>],
    planned: &[Planned],
    rolls: &[Roll],
    applied: usize,
    error: Option<&StoreError>,
    unknown: Option<usize>,
) -> Result<()> {
    if rolls.is_empty() || error.is_none() {
        return Ok(());
    }
    if let Some(writes_applied) = unknown {
        // Whether the roll-ups applied is not known: not to be trusted. (None applied when
        // some bucket write did not.)
        if writes_applied < planned.len() {
            return add_written(store, spec, groups, planned, writes_applied).await;
        }
        let mut first = Ok(());
        for r in rolls {
            let marked = mark_stale(store, spec, groups[r.group].key).await;
            first = first.and(marked);
        }
        return first;
    }
    let writes = planned.len();
    if applied < writes {
        // Stopped at a bucket write: no roll-up was sent. The keys' written items, now.
        return add_written(store, spec, groups, planned, applied).await;
    }
    // Stopped at roll-up `applied - writes`: that one failed, those after were not sent. Each
    // is sent, whatever the others' fate (a roll-up left behind and not marked stale would be
    // trusted); the first error is returned.
    let mut first = Ok(());
    for (i, r) in rolls.iter().enumerate().skip(applied - writes) {
        let failed = (i == applied - writes).then(|| Err(clone_refusal(error)));
        let key = groups[r.group].key;
        let rolled = roll_up(store, spec, key, &r.kept, r.items, failed).await;
        first = first.and(rolled);
    }
    first
}

/// Adds to the roll-ups the items of the first `applied` planned writes.
async fn add_written<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    groups: &[Group<'_>],
    planned: &[Planned],
    applied: usize,
) -> Result<()> {
    let mut first = Ok(());
    for r in rolls(spec, groups, planned, applied)? {
        let rolled = roll_up(store, spec, groups[r.group].key, &r.kept, r.items, None).await;
        first = first.and(rolled);
    }
    first
}

/// The batch's error as `roll_up` reads it: a refusal on a unique index is retried without
/// the upsert; anything else marks the roll-up stale.
fn clone_refusal(error: Option<&StoreError>) -> StoreError {
    match error {
        Some(StoreError::DuplicateKey {
            collection,
            message,
        }) => StoreError::DuplicateKey {
            collection: collection.clone(),
            message: message.clone(),
        },
        Some(e) => StoreError::Server {
            message: e.to_string(),
            source: None,
        },
        None => StoreError::invalid("no error"),
    }
}
