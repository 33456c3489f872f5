//! The collection's bucket width: how far from the second its bucket's `_id` names (the
//! second of the bucket's first item) the items of a time-named collection lie, after it and
//! before it, kept in the collection's mark (`width_after`, `width_before`, milliseconds) so that a
//! time-range read of buckets not cut by span bounds its scan at both ends: a bucket holding an
//! item of `[from, to)` is named from `from - after` to `to + before`, one `_id` range
//! ([`Span::width_ids`](crate::bucket::time)). Items pushed in time order lie after their
//! bucket's first: `before` stays 0, and the scan ends at `to`.
//!
//! The rule, on every store and under any number of writers: **an item's push returns only
//! once the mark covers it, and the mark only grows.** A writer that knows the bucket its
//! items join raises the mark first (`$max`) when they need more (a fill by compare-and-set,
//! new buckets); a push into the open bucket carries the width in its filter ([`window`]: the
//! open bucket takes the item only within it) and, when the bucket does not take it, pushes
//! through the read that returns the bucket's `_id` and bounds, then raises the mark to what
//! the item needs before it returns. A bucket's other items keep their distance from its `_id`,
//! so a push never moves an item out of a read's reach.
//!
//! A read scans the `_id` range of the width it knows, then reads the mark after it in the
//! same command ([`Store::find_raw_then`](crate::store::Store::find_raw_then)): every push that
//! returned before the read began is covered by that mark, so when it is wider than the
//! scan's, the read scans again with it.

use bson::{Bson, Document};

use super::lease::LEASE_FIELD;
use super::memo::BoundsMark;
pub(crate) use super::memo::Width;
use crate::codec::as_int;
use crate::spec::{SeriesOrder, SeriesSpec, BOUNDED_COLLECTIONS};
use crate::store::query::{Filter, Update};
use crate::store::{Store, Window};
use crate::Result;

/// The mark's fields holding the width, after and before a bucket's `_id` second.
pub(crate) const WIDTH_FIELDS: [&str; 2] = ["width_after", "width_before"];

impl Width {
    /// The same on both sides (a span's: every item of a window lies within it of another).
    pub(crate) fn both(ms: i64) -> Width {
        Width {
            after: ms,
            before: ms,
        }
    }

    /// Whether items `need` apart are within it.
    pub(crate) fn covers(&self, need: Width) -> bool {
        need.after <= self.after && need.before <= self.before
    }

    /// The larger on each side.
    pub(crate) fn max(self, other: Width) -> Width {
        Width {
            after: self.after.max(other.after),
            before: self.before.max(other.before),
        }
    }

    /// Grown to hold `need`: each side that does not, to half as much again as it needs (or as
    /// it was, when more), so that a collection's first buckets raise it a few times and the
    /// rest never.
    fn grown(self, need: Width) -> Width {
        let side = |have: i64, need: i64| match need <= have {
            true => have,
            false => need.max(have).saturating_mul(3) / 2,
        };
        Width {
            after: side(self.after, need.after),
            before: side(self.before, need.before),
        }
    }
}

/// The width a mark document holds.
pub(crate) fn of_mark(mark: &Document) -> Option<Width> {
    let side = |k: &str| mark.get(k).and_then(as_int).filter(|n| *n >= 0);
    Some(Width {
        after: side(WIDTH_FIELDS[0])?,
        before: side(WIDTH_FIELDS[1])?,
    })
}

/// The mark update that makes its width at least `width` on each side (`$max`).
pub(crate) fn at_least(update: &mut Update, width: Width) {
    for (field, ms) in WIDTH_FIELDS.into_iter().zip([width.after, width.before]) {
        update.max.push((field.into(), Bson::Int64(ms)));
    }
}

/// Whether the width is kept for the series' collection: buckets with time bounds and
/// time-named `_id`s.
pub(crate) fn kept_for(spec: &SeriesSpec<'_>) -> bool {
    spec.keeps.bounds.is_some() && matches!(spec.order, SeriesOrder::TimeId(_))
}

/// The collection's width, once it covers `need` (raised when it does not: one write, only
/// when it grows): `None` when the collection keeps no width (then nothing is asked of a
/// write).
pub(crate) async fn admit<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    need: Width,
) -> Result<Option<Width>> {
    if !kept_for(spec) {
        return Ok(None);
    }
    let mark = spec.bounds_mark(store).await?;
    let Some(width) = mark.width else {
        return Ok(None);
    };
    let (width, raised) = match width.covers(need) {
        true => (width, false),
        false => {
            let wider = width.grown(need);
            raise(store, spec.collection, wider).await?;
            (wider, true)
        }
    };
    // Where the width is leased (known with it, or learned by the raise), not before every
    // reader that may trust a narrower one has stopped (`series::lease`).
    if raised || mark.lease.ms > 0 {
        super::lease::settle(store, spec.collection, width).await;
    }
    Ok(Some(width))
}

/// Raises `coll`'s width to at least `wider` (one write; the mark keeps the larger).
pub(crate) async fn raise<S: Store>(store: &S, coll: &str, wider: Width) -> Result<()> {
    let mut update = Update::default();
    at_least(&mut update, wider);
    write_known_mark(store, coll, update, |m| BoundsMark {
        width: m.width.map(|w| w.max(wider)),
        ..m
    })
    .await?;
    Ok(())
}

/// Stops keeping `coll`'s width (a write that cannot keep its buckets within one): reads then
/// scan as for a collection that never kept it. One write, before that write.
pub(crate) async fn forget<S: Store>(store: &S, coll: &str) -> Result<()> {
    let update = Update {
        unset: WIDTH_FIELDS.map(Into::into).to_vec(),
        ..Update::default()
    };
    let lease = write_known_mark(store, coll, update, |m| BoundsMark { width: None, ..m }).await?;
    // No reader trusts the width once this returns (`series::lease`).
    super::lease::wait_out(lease).await;
    Ok(())
}

/// How far the times `lo..=hi` lie from the second `start` (epoch milliseconds of a bucket's
/// `_id` second): the width the collection needs for a read to find them in that bucket.
pub(crate) fn from_start(start: i64, (lo, hi): (i64, i64)) -> Width {
    let last = start.saturating_add(999);
    Width {
        after: hi.saturating_sub(last).max(0),
        before: start.saturating_sub(lo).max(0),
    }
}

/// The width an open bucket holding times `min..=max` needs for its push [`window`] to take an
/// item at `time`: the item that far after its earliest time and before its latest.
pub(crate) fn to_join((min, max): (i64, i64), time: i64) -> Width {
    Width {
        after: time.saturating_sub(min).max(0),
        before: max.saturating_sub(time).max(0),
    }
}

/// A bucket's time bounds (`min`, `max` fields), in epoch milliseconds.
pub(crate) fn bounds_of(spec: &SeriesSpec<'_>, doc: &Document) -> Option<(i64, i64)> {
    let (min, max) = spec.keeps.bounds?;
    match (doc.get(min), doc.get(max)) {
        (Some(Bson::DateTime(a)), Some(Bson::DateTime(b))) => {
            Some((a.timestamp_millis(), b.timestamp_millis()))
        }
        _ => None,
    }
}

/// The open bucket a push of an item at `time` may join in a collection of `width`: its
/// earliest time at least `time - after` and its latest at most `time + before`. Its `_id`
/// second lies from its earliest time's second to its latest time, so the item lies within
/// the width of it.
pub(crate) fn window<'a>(spec: &SeriesSpec<'a>, time: i64, width: Width) -> Option<Window<'a>> {
    let (min_field, max_field) = spec.keeps.bounds?;
    Some(Window {
        min_field,
        max_field,
        start: time.saturating_sub(width.after),
        end: time.saturating_add(width.before).saturating_add(1),
    })
}

/// In a transaction of a follower (`follow_buckets`): the collection's width raised to cover
/// `key`'s buckets as another program left them. Committed with the transaction, and not
/// remembered by this process until it reads the mark again (a transaction that aborts must
/// leave no wider width in its memory than in the mark). One `find` of the key's buckets'
/// `_id`s and bounds, and one `update` of the mark only when they need more.
pub(crate) async fn cover_buckets<T: Store>(
    tx: &T,
    spec: &SeriesSpec<'_>,
    key: &Bson,
) -> Result<()> {
    let Some(width) = known(tx, spec).await? else {
        return Ok(());
    };
    let (min, max) = spec.keeps.bounds.unwrap_or_default();
    let opts = crate::store::query::FindOptions {
        projection: vec![min.into(), max.into()],
        ..Default::default()
    };
    let prefix = crate::key::id_prefix(spec.collection, key)?;
    let mut need = Width::default();
    for doc in tx
        .find(spec.collection, &spec.docs_of(key, []), &opts)
        .await?
    {
        let named = match doc.get("_id") {
            Some(Bson::String(id)) => super::parse_bucket_id(&prefix, id),
            _ => None,
        };
        if let (Some(named), Some(b)) = (named, bounds_of(spec, &doc)) {
            need = need.max(from_start(named.start_ms(), b));
        }
    }
    if !width.covers(need) {
        let mut update = Update::default();
        at_least(&mut update, width.grown(need));
        let mark = Filter::Eq("_id".into(), Bson::String(spec.collection.into()));
        (tx.update_one(BOUNDED_COLLECTIONS, &mark, &mut update, false)).await?;
    }
    Ok(())
}

/// The collection's width as its mark holds it now (one `find`, not remembered), when it
/// keeps one.
pub(crate) async fn read<S: Store>(store: &S, spec: &SeriesSpec<'_>) -> Result<Option<Width>> {
    let mark = Filter::Eq("_id".into(), Bson::String(spec.collection.into()));
    let found = crate::store::find_one(store, BOUNDED_COLLECTIONS, &mark).await?;
    let bounded = |m: &Document| m.get_bool(crate::spec::BOUNDED_FIELD) == Ok(true);
    Ok(found.filter(bounded).as_ref().and_then(of_mark))
}

/// The width this process knows for the series' collection, when it keeps one.
async fn known<S: Store>(store: &S, spec: &SeriesSpec<'_>) -> Result<Option<Width>> {
    match kept_for(spec) && spec.span_bounds().is_none() {
        true => Ok(spec.bounds_mark(store).await?.width),
        false => Ok(None),
    }
}

/// Writes `update` to `coll`'s mark (no `upsert`: the collection's creator wrote it), then
/// remembers the change over what this process knows of it, when it knows it (not over a mark
/// it forgot meanwhile, which its next use reads again), with the lease the mark holds after
/// it (`series::lease`: learned with every width). Returns that lease (the larger of the
/// mark's and what this process knew).
async fn write_known_mark<S: Store>(
    store: &S,
    coll: &str,
    mut update: Update,
    change: impl FnOnce(BoundsMark) -> BoundsMark,
) -> Result<i64> {
    let mark = Filter::Eq("_id".into(), Bson::String(coll.into()));
    let fields = [LEASE_FIELD];
    let after = store.update_returning(BOUNDED_COLLECTIONS, &mark, &mut update, &fields);
    let lease = (after.await?).as_ref().map_or(0, super::lease::of_mark);
    let memo = super::memo(store);
    memo.change_bounds_mark(coll, change);
    super::lease::learned(store, coll, lease);
    let known = memo.bounds_mark(coll).map_or(0, |m| m.lease.ms);
    Ok(lease.max(known))
}

#[cfg(test)]
mod tests {
    use super::{from_start, Width};

    /// An item's distance from its bucket's `_id` second, on each side: none within the
    /// second, after it past its last millisecond, before it from its first.
    #[test]
    fn distances_from_the_named_second() {
        let s = 1_700_000_000_000;
        assert_eq!(from_start(s, (s, s + 999)), Width::default());
        assert_eq!(from_start(s, (s + 1_500, s + 1_500)).after, 501);
        assert_eq!(from_start(s, (s - 20, s + 999)).before, 20);
    }

    /// A mark's width read as MongoDB compares numbers: another program may have written it
    /// as an Int32 or a whole Double.
    #[test]
    fn a_mark_written_in_another_number_type_reads_alike() {
        let mark = bson::doc! {"width_after": 5_000_i32, "width_before": 2.0};
        let want = Width {
            after: 5_000,
            before: 2,
        };
        assert_eq!(super::of_mark(&mark), Some(want));
        assert_eq!(
            super::of_mark(&bson::doc! {"width_after": 1.5, "width_before": 0}),
            None
        );
    }

    /// Only the sides that need it grow, to half as much again.
    #[test]
    fn a_width_grows_where_it_must() {
        let w = Width {
            after: 1_000,
            before: 0,
        };
        assert!(w.covers(Width {
            after: 1_000,
            before: 0
        }));
        let need = Width {
            after: 2_000,
            before: 0,
        };
        assert_eq!(
            w.grown(need),
            Width {
                after: 3_000,
                before: 0
            }
        );
    }
}
