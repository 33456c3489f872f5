//! The collection's bucket width: how far from the second its bucket's `_id` names (the
//! second of the bucket's first item) any item of a time-named collection may lie, kept in the
//! collection's mark (`width`, milliseconds) so that a time-range read of buckets not cut by
//! span bounds its scan at both ends: a bucket holding an item of `[from, to)` is named from
//! `from - width` to `to + width`, one `_id` range ([`Span::width_ids`](crate::bucket::time)).
//!
//! The rule, on every store and under any number of writers: **an item's push returns only
//! once the mark covers it, and the mark only grows.** A writer that knows the bucket its
//! items join raises the mark first (`$max`) when they need more (a fill by compare-and-set,
//! new buckets); a push into the open bucket carries the width in its filter ([`window`]: the
//! open bucket takes the item only within it) and, when the bucket does not take it, pushes
//! through the read that returns the bucket's `_id`, then raises the mark to what the item
//! needs before it returns. A bucket's other items keep their distance from its `_id`, so a
//! push never moves an item out of a read's reach.
//!
//! A read scans the `_id` range of the width it knows, then reads the mark after it in the
//! same command ([`Store::find_raw_then`](crate::store::Store::find_raw_then)): every push that
//! returned before the read began is covered by that mark, so when it is wider than the
//! scan's, the read scans again with it.

use bson::{Bson, Document};

use super::memo::BoundsMark;
use crate::codec::as_int;
use crate::spec::{SeriesOrder, SeriesSpec, BOUNDED_COLLECTIONS};
use crate::store::query::{Filter, Path, Update};
use crate::store::{Store, Window};
use crate::Result;

/// The mark's field holding the width, in milliseconds.
pub(crate) const WIDTH_FIELD: &str = "width";

/// The width a mark document holds.
pub(crate) fn of_mark(mark: &Document) -> Option<i64> {
    mark.get(WIDTH_FIELD).and_then(as_int).filter(|w| *w >= 0)
}

/// Whether the width is kept for the series' collection: buckets with time bounds and
/// time-named `_id`s.
pub(crate) fn kept_for(spec: &SeriesSpec<'_>) -> bool {
    spec.keeps.bounds.is_some() && matches!(spec.order, SeriesOrder::TimeId(_))
}

/// The collection's width, once it is at least `need` (raised when it is less): `None` when the
/// collection keeps no width (then nothing is asked of a write).
/// One write, only when the width grows: to twice what is needed (and at least twice what it
/// was), so that a collection's first buckets raise it a few times and the rest never.
pub(crate) async fn admit<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    need: i64,
) -> Result<Option<i64>> {
    if !kept_for(spec) {
        return Ok(None);
    }
    let Some(width) = spec.bounds_mark(store).await?.width else {
        return Ok(None);
    };
    if need <= width {
        return Ok(Some(width));
    }
    let wider = need.max(width).saturating_mul(2);
    raise(store, spec.collection, wider).await?;
    Ok(Some(wider))
}

/// Raises `coll`'s width to at least `wider` (one write; the mark keeps the larger).
pub(crate) async fn raise<S: Store>(store: &S, coll: &str, wider: i64) -> Result<()> {
    let update = Update {
        max: vec![(WIDTH_FIELD.into(), Bson::Int64(wider))],
        ..Update::default()
    };
    write_known_mark(store, coll, update, |m| BoundsMark {
        width: m.width.map(|w| w.max(wider)),
        ..m
    })
    .await
}

/// Stops keeping `coll`'s width (a write that cannot keep its buckets within one): reads then
/// scan as for a collection that never kept it. One write, before that write.
pub(crate) async fn forget<S: Store>(store: &S, coll: &str) -> Result<()> {
    let update = Update {
        unset: vec![WIDTH_FIELD.into()],
        ..Update::default()
    };
    write_known_mark(store, coll, update, |m| BoundsMark { width: None, ..m }).await
}

/// How far the times `lo..=hi` lie from the second `start` (epoch milliseconds of a bucket's
/// `_id` second): the width the collection needs for a read to find them in that bucket.
pub(crate) fn from_start(start: i64, (lo, hi): (i64, i64)) -> i64 {
    let last = start.saturating_add(999);
    (hi.saturating_sub(last))
        .max(start.saturating_sub(lo))
        .max(0)
}

/// The width a bucket holding times `min..=max` spans with times `with` (earliest, latest)
/// added.
pub(crate) fn spread(bounds: Option<(i64, i64)>, with: (i64, i64)) -> i64 {
    let (lo, hi) = bounds.map_or(with, |(a, b)| (a.min(with.0), b.max(with.1)));
    hi.saturating_sub(lo)
}

/// The fields of a bucket's earliest and latest times.
pub(crate) fn fields(spec: &SeriesSpec<'_>) -> Result<(Path, Path)> {
    let (min, max) = spec.keeps.bounds.ok_or_else(|| {
        crate::Error::invalid(format!("`{}` keeps no time bounds", spec.collection))
    })?;
    Ok((Path::from(min), Path::from(max)))
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
/// earliest time at least `time - width` and its latest at most `time + width`. Its `_id`
/// second lies from its earliest time's second to its latest time, so the item lies within
/// `width` of it.
pub(crate) fn window<'a>(spec: &SeriesSpec<'a>, time: i64, width: i64) -> Option<Window<'a>> {
    let (min_field, max_field) = spec.keeps.bounds?;
    Some(Window {
        min_field,
        max_field,
        start: time.saturating_sub(width),
        end: time.saturating_add(width).saturating_add(1),
    })
}

/// Writes `update` to `coll`'s mark (no `upsert`: the collection's creator wrote it), then
/// remembers the change over what this process knows of it, when it knows it (not over a mark
/// it forgot meanwhile, which its next use reads again).
async fn write_known_mark<S: Store>(
    store: &S,
    coll: &str,
    mut update: Update,
    change: impl FnOnce(BoundsMark) -> BoundsMark,
) -> Result<()> {
    let mark = Filter::Eq("_id".into(), Bson::String(coll.into()));
    (store.update_one(BOUNDED_COLLECTIONS, &mark, &mut update, false)).await?;
    super::memo(store).change_bounds_mark(coll, change);
    Ok(())
}
