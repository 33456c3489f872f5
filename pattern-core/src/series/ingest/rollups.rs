//! An ingest's roll-ups (`#[bucket(rollup)]`): each key's items of the batch added to its
//! roll-up by one more write per key, in the roll-ups' collection, right after the key's
//! writes in the same ordered batch
//! ([`Store::write_batch_over`](crate::store::Store::write_batch_over)). A batch that stops
//! early leaves the keys before the stop whole, roll-ups included; the key it stopped in gets
//! the items of its writes that applied afterwards, and a roll-up whose fate is unknown is
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

/// What a place of an ingest batch with roll-ups holds: a planned write, in their order, or
/// the roll-up `rolls[n]`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Slot {
    Write,
    Roll(usize),
}

/// The batch with each key's roll-up right after the key's last write (`ops` on collection 0,
/// the roll-ups on 1), and what each place holds. `planned` holds each key's writes together,
/// the keys in the order of `rolls`; a roll-up whose key's writes were not found together goes
/// at the end.
pub(super) fn interleave(
    spec: &SeriesSpec<'_>,
    groups: &[Group<'_>],
    planned: &[Planned],
    ops: Vec<WriteOp>,
    rolls: &[Roll],
) -> (Vec<(usize, WriteOp)>, Vec<Slot>) {
    let roll_op = |r: &Roll| WriteOp::Update {
        filter: spec.rollup_of(groups[r.group].key),
        update: Box::new(spec.rollup_update(&r.kept, r.items)),
        upsert: true,
    };
    let mut batch = Vec::with_capacity(ops.len() + rolls.len());
    let mut slots = Vec::with_capacity(ops.len() + rolls.len());
    let mut sent = vec![false; rolls.len()];
    let mut next = rolls.iter().enumerate().peekable();
    for (i, op) in ops.into_iter().enumerate() {
        batch.push((0, op));
        slots.push(Slot::Write);
        let g = planned[i].group;
        if planned.get(i + 1).is_some_and(|p| p.group == g) {
            continue;
        }
        if let Some((n, r)) = next.next_if(|(_, r)| r.group == g) {
            batch.push((1, roll_op(r)));
            slots.push(Slot::Roll(n));
            sent[n] = true;
        }
    }
    for (n, r) in rolls.iter().enumerate().filter(|(n, _)| !sent[*n]) {
        batch.push((1, roll_op(r)));
        slots.push(Slot::Roll(n));
    }
    (batch, slots)
}

/// After the batch: what it did not apply of the roll-ups. It stopped at place `stop` of
/// `slots` with `error` (`None`: all applied); `unknown`: its fate was unknown, and that many
/// planned writes were found applied by reading the documents back. A key's roll-up follows
/// its writes in the batch, so the keys before the stop are whole; the key the batch stopped
/// in gets the items of its writes that applied, or, when its roll-up was the write refused,
/// is retried or marked stale.
#[allow(clippy::too_many_arguments)]
pub(super) async fn settle<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    groups: &[Group<'_>],
    planned: &[Planned],
    rolls: &[Roll],
    slots: &[Slot],
    stop: usize,
    error: Option<&StoreError>,
    unknown: Option<usize>,
) -> Result<()> {
    let Some(error) = error.filter(|_| !rolls.is_empty()) else {
        return Ok(());
    };
    let key = |g: usize| groups[g].key;
    // The roll-up of key `g`'s items in the first `upto` planned writes.
    let roll_of = |g: usize, upto: usize| -> Result<Option<Roll>> {
        let of_g: Vec<&Planned> = planned[..upto].iter().filter(|p| p.group == g).collect();
        Ok(rolls_of(spec, groups, &of_g)?.pop())
    };
    if let Some(written) = unknown {
        // The last key written to: stopped inside its writes (its roll-up not sent), or after
        // them (its roll-up's fate unknown).
        let Some(last) = written.checked_sub(1).map(|w| planned[w].group) else {
            return Ok(());
        };
        if planned.get(written).is_some_and(|p| p.group == last) {
            return match roll_of(last, written)? {
                Some(r) => roll_up(store, spec, key(last), &r.kept, r.items, None).await,
                None => Ok(()),
            };
        }
        return mark_stale(store, spec, key(last)).await;
    }
    match slots.get(stop) {
        // Refused: that key's roll-up (retried without the upsert, or marked stale).
        Some(Slot::Roll(n)) => {
            let r = &rolls[*n];
            let failed = Some(Err(clone_refusal(Some(error))));
            roll_up(store, spec, key(r.group), &r.kept, r.items, failed).await
        }
        // Refused: a write of a key whose earlier writes applied. Their items, now.
        Some(Slot::Write) => {
            let i = (slots[..stop].iter())
                .filter(|s| matches!(s, Slot::Write))
                .count();
            match roll_of(planned[i].group, i)? {
                Some(r) => roll_up(store, spec, key(r.group), &r.kept, r.items, None).await,
                None => Ok(()),
            }
        }
        None => Ok(()),
    }
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
