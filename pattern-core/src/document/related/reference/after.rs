//! A source's update known from the document after it (stage 7 of `update_one` on a type
//! whose only linked feature is `referenced_by`): the write read nothing before it (one
//! `findAndModify` returned the copied fields as they are now), so the copies are brought in
//! line by filter, without reading them first: the source's entry bumped and every stale copy
//! set, in one write across collections ([`Store::write_across`]: one round trip on MongoDB
//! 8.0). Three commands with the commit, as hand-written driver code sends
//! (BENCHMARKS.md, section 11).
//!
//! The fan-out still bounds the source's transaction: when a referencing collection holds more
//! stale copies than the fan-out, the transaction is abandoned (nothing of it commits), the
//! source is remembered for this process as one with many copies, and the write runs again
//! the way it does past the fan-out (copies found, then batches after the commit). A source
//! remembered so goes that way directly.

use std::collections::HashSet;
use std::sync::Mutex;

use bson::Bson;

use super::{entry_id, propagate_later, set_stale, touch_op, REFERENCES, REFERENCE_COPIES};
use crate::codec::order::value_key;
use crate::document::Document;
use crate::store::query::Update;
use crate::store::{Extension, ExtensionKey, Store};
use crate::Result;

/// Whether `D`'s `update_one` takes this path: a source whose writes change nothing but its
/// copies (no history, computed values, subset or copies of its own to fill), each copy a field of
/// its own (copies set by filter) and no holder a subset's child (whose parents embed it).
pub(crate) fn applies<D: Document>() -> bool {
    !D::REFERENCED_BY.is_empty()
        && D::REFERENCED_BY
            .iter()
            .all(|r| r.field.flat() && r.field.subset.is_none())
        && D::REFERENCES.is_empty()
        && D::COMPUTED.is_none()
        && D::SUBSET.is_none()
        && D::HISTORY.is_none()
}

/// The fields of `D` its copies hold (where `D` stores them).
pub(crate) fn copied<D: Document>() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for f in D::REFERENCED_BY.iter().flat_map(|r| r.field.fields) {
        if !out.contains(&f.from) {
            out.push(f.from);
        }
    }
    out
}

/// Whether `update` may change a field copied from `D` (it writes the field, a field in it, or
/// a field holding it). One that cannot needs no transaction.
pub(crate) fn may_change<D: Document>(update: &Update) -> bool {
    let copied = copied::<D>();
    update.written().iter().any(|w| {
        copied.iter().any(|c| {
            w == c
                || (w.len() > c.len() && w.starts_with(c) && w.as_bytes()[c.len()] == b'.')
                || (c.len() > w.len() && c.starts_with(w) && c.as_bytes()[w.len()] == b'.')
        })
    })
}

/// What [`bring_in_line_after`] did.
pub(crate) enum Followed {
    /// Every copy is in line; `true` when a propagation past the fan-out was recorded for
    /// after the commit.
    Done(bool),
    /// A referencing collection held more stale copies than the fan-out, and the transaction
    /// wrote them all: it must be abandoned and run again (the source is now remembered).
    PastFanOut,
}

/// In a source's update transaction, after the update: the copies of the source `id` brought
/// in line with `after` (its `_id` and copied fields as they are now).
pub(crate) async fn bring_in_line_after<D: Document, T: Store>(
    tx: &T,
    id: &Bson,
    after: &bson::Document,
) -> Result<Followed> {
    let fan_out = D::PROPAGATION.fan_out.max(1) as usize;
    let many = tx.extensions().get(&MANY);
    let key = value_key(&entry_id(D::COLLECTION, id));
    if many.holds(&key) {
        // The way past the fan-out: copies found first, batches after the commit.
        let recorded =
            propagate_later::<D, T>(tx, D::REFERENCED_BY, id, Some(after), fan_out).await?;
        if !recorded {
            many.drop_key(&key);
        }
        return Ok(Followed::Done(recorded));
    }
    let mut writes = vec![(REFERENCES, touch_op(D::COLLECTION, id))];
    for r in D::REFERENCED_BY {
        writes.push((r.collection, set_stale(&r.field, id, Some(after))));
    }
    let matched = tx.write_across(writes, Some(REFERENCE_COPIES)).await?;
    if matched.iter().skip(1).any(|n| *n as usize > fan_out) {
        many.hold(key);
        return Ok(Followed::PastFanOut);
    }
    Ok(Followed::Done(false))
}

/// The sources of this store found with more stale copies than their fan-out, by entry.
#[derive(Default)]
struct Many(Mutex<HashSet<Vec<u8>>>);

/// How many sources [`Many`] remembers; past it, it starts again (a source forgotten costs one
/// abandoned transaction on its next update).
const MANY_HELD: usize = 4_096;

static MANY: ExtensionKey<Many> = ExtensionKey::new();

impl Many {
    fn set(&self) -> std::sync::MutexGuard<'_, HashSet<Vec<u8>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn holds(&self, key: &[u8]) -> bool {
        self.set().contains(key)
    }

    fn hold(&self, key: Vec<u8>) {
        let mut set = self.set();
        if set.len() >= MANY_HELD {
            set.clear();
        }
        set.insert(key);
    }

    fn drop_key(&self, key: &[u8]) {
        self.set().remove(key);
    }
}

impl Extension for Many {
    fn forget(&self) {
        self.set().clear();
    }
}
