//! Time-range reads over buckets that keep their time bounds (`#[bucket(time = "...")]`):
//! [`range`] reads only the buckets whose bounds overlap the range, [`latest`] the newest
//! buckets only.

use std::future::Future;
use std::ops::{Bound, RangeBounds};

use bson::{Bson, DateTime, RawDocumentBuf};
use futures::stream::{self, Stream, StreamExt, TryStreamExt};

use super::Bucket;
use crate::key::KeyRef;
use crate::observe::OpSpan;
use crate::series;
use crate::series::bucket_id;
use crate::spec::{SeriesOrder, SeriesSpec, BOUNDED_COLLECTIONS, BOUNDED_FIELD};
use crate::store::query::eval::compare_by;
use crate::store::query::{Filter, FindOptions, Path};
use crate::store::Store;
use crate::{Error, Result};

/// A half-open time range `[from, to)` in epoch milliseconds; `None`: unbounded on that side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) from: Option<i64>,
    pub(crate) to: Option<i64>,
}

impl Span {
    /// The range of dates as milliseconds: `a..b`, `a..=b`, `a..`, `..b`, `..`.
    pub(crate) fn of(r: &impl RangeBounds<DateTime>) -> Span {
        let ms = |d: &DateTime| d.timestamp_millis();
        let from = match r.start_bound() {
            Bound::Included(d) => Some(ms(d)),
            Bound::Excluded(d) => Some(ms(d).saturating_add(1)),
            Bound::Unbounded => None,
        };
        let to = match r.end_bound() {
            Bound::Included(d) => ms(d).checked_add(1),
            Bound::Excluded(d) => Some(ms(d)),
            Bound::Unbounded => None,
        };
        Span { from, to }
    }

    pub(crate) fn is_all(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    pub(crate) fn is_empty(&self) -> bool {
        matches!((self.from, self.to), (Some(a), Some(b)) if a >= b)
    }

    pub(crate) fn contains(&self, ms: i64) -> bool {
        self.from.is_none_or(|f| ms >= f) && self.to.is_none_or(|t| ms < t)
    }

    /// Whether every time in `[min, max]` is in the range.
    pub(crate) fn covers(&self, min: i64, max: i64) -> bool {
        self.contains(min) && self.contains(max)
    }

    /// The conditions on a bucket's bounds that overlap the range (beside `bounded: true`):
    /// `max >= from` and `min < to`, served by the index `{key, bounded, max, min}`.
    ///
    /// In a collection whose every bucket keeps to windows of `span` (its mark), a bucket
    /// holding a time before `to` ends before the end of the window of `to`'s last
    /// millisecond: `max < window(to - 1) + span` bounds the scan of `max` on the other side
    /// too, so that it reads the overlapping buckets, and at most those of that one window
    /// that start at `to` or later (none when `to` starts a window).
    pub(crate) fn overlap(&self, spec: &SeriesSpec<'_>, span: Option<i64>) -> Result<Vec<Filter>> {
        let (min, max) = bounds_of(spec)?;
        let date = |ms: i64| Bson::DateTime(DateTime::from_millis(ms));
        let mut all = vec![Filter::Eq(BOUNDED_FIELD.into(), Bson::Boolean(true))];
        if let Some(f) = self.from {
            all.push(Filter::Gte(Path::from(max), date(f)));
        }
        if let Some(t) = self.to {
            if let Some(span) = span.filter(|s| *s > 0) {
                let last = t.saturating_sub(1);
                let end = (last.div_euclid(span) * span).saturating_add(span);
                all.push(Filter::Lt(Path::from(max), date(end)));
            }
            all.push(Filter::Lt(Path::from(min), date(t)));
        }
        Ok(all)
    }

    /// The `_id`s of `key`'s buckets that may overlap the range, in a collection whose every
    /// bucket is bounded and kept to windows of `span` (its mark) and named by time
    /// (`<key>_<seconds of its first item>`): a bucket's first item lies in the bucket's
    /// window, and a bucket overlapping `[from, to)` lies in a window from `from`'s to that of
    /// `to`'s last millisecond, so its `_id` is at least `<key>_<start of from's window>` and
    /// below `<key>_<end of to's window>`. One index (`_id`'s) serves that range alone.
    /// `None` for an unbounded side and for a collection without such a span, and as
    /// [`Span::ids_between`] says.
    pub(crate) fn window_ids(
        &self,
        spec: &SeriesSpec<'_>,
        span: Option<i64>,
        key: &Bson,
    ) -> Result<Option<Filter>> {
        let (Some(from), Some(to), Some(span)) = (self.from, self.to, span.filter(|s| *s > 0))
        else {
            return Ok(None);
        };
        let first = from.div_euclid(span).saturating_mul(span);
        let end = (to.saturating_sub(1).div_euclid(span) * span).saturating_add(span);
        ids_between(spec, key, first, end.saturating_sub(1))
    }

    /// The `_id`s of `key`'s buckets that may hold items of the range, in a collection that
    /// keeps its width (`series::width`): every item lies at most `width.after` after the
    /// second its bucket's `_id` names and `width.before` before it, so a bucket holding an item
    /// of `[from, to)` is named from `from - after` to `to - 1 + before`. `None` for an
    /// unbounded side, and as [`ids_between`] says.
    pub(crate) fn width_ids(
        &self,
        spec: &SeriesSpec<'_>,
        width: series::width::Width,
        key: &Bson,
    ) -> Result<Option<Filter>> {
        let (Some(from), Some(to)) = (self.from, self.to) else {
            return Ok(None);
        };
        let last = to.saturating_sub(1).saturating_add(width.before);
        ids_between(spec, key, from.saturating_sub(width.after), last)
    }
}

/// The `_id` range of `key`'s time-named buckets whose first second is from that of `first` to
/// that of `last` (epoch milliseconds, both included).
///
/// `_id`s compare as text, which orders the seconds as numbers only when they have the same
/// number of digits: `None` when the two ends do not (a range across 2001-09-09, or before
/// 1970), and for a series whose `_id`s are not time-named. The range may hold other
/// documents (another key whose text starts the same): the overlap filter is checked on what
/// it returns.
fn ids_between(spec: &SeriesSpec<'_>, key: &Bson, first: i64, last: i64) -> Result<Option<Filter>> {
    if !matches!(spec.order, SeriesOrder::TimeId(_)) {
        return Ok(None);
    }
    let first = first.div_euclid(1000);
    // Exclusive: one past the last second.
    let past = last.div_euclid(1000).saturating_add(1);
    let digits = |s: i64| s.checked_ilog10().unwrap_or(0);
    if first < 0 || digits(first) != digits(past) {
        return Ok(None);
    }
    let prefix = crate::key::id_prefix(spec.collection, key)?;
    let id = |s: i64| Bson::String(bucket_id(&prefix, s, 0));
    Ok(Some(Filter::And(vec![
        Filter::Gte("_id".into(), id(first)),
        Filter::Lt("_id".into(), id(past)),
    ])))
}

/// The bound fields of a series that keeps them; an error naming the attribute otherwise.
pub(crate) fn bounds_of<'a>(spec: &SeriesSpec<'a>) -> Result<(&'a str, &'a str)> {
    spec.keeps.bounds.ok_or_else(|| {
        Error::invalid(format!(
            "time-range reads of collection `{}` need time bounds: #[bucket(time = \"...\")]",
            spec.collection
        ))
    })
}

/// The buckets of `key` that may hold items in `span`, in push order: those whose bounds
/// overlap it, and those without complete bounds (written before bounds were kept, or by
/// other tools), which may hold anything. Two finds sent together: the overlap (on the bounds
/// index) and the buckets without bounds (an equality on the same index).
pub(crate) async fn overlapping<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    span: Span,
    projection: Vec<crate::store::query::Path>,
) -> Result<(Vec<RawDocumentBuf>, Vec<RawDocumentBuf>)> {
    spec.ensure_indexes(store).await?;
    // No sort on the server: sorted by number, a planner may walk the key's whole history on
    // the `{key, seq}` index rather than the bounds index (test server, T5); the overlap is
    // sorted here instead.
    let opts = FindOptions {
        projection,
        ..FindOptions::default()
    };
    let mark = spec.bounds_mark(store).await?;
    let bounded = spec.docs_of(key, span.overlap(spec, mark.span)?);
    // Every bucket of the collection bounded (its mark): the overlap alone, by the buckets'
    // `_id`s where the collection is cut by span and no router needs the key.
    if mark.all_bounded {
        // Not cut by span, in a collection that keeps its width: one `_id` range and the
        // mark after it.
        if let (None, Some(width)) = (mark.span, mark.width) {
            if !store.routes_by_shard_key().await? {
                let read = by_width(store, spec, key, span, &bounded, &opts, width);
                if let Some(docs) = Box::pin(read).await? {
                    return Ok((docs, Vec::new()));
                }
                // Not an `_id` range, or the width no longer kept: the overlap alone, which
                // needs no width.
            }
        }
        if let Some(ids) = span.window_ids(spec, mark.span, key)? {
            if !store.routes_by_shard_key().await? {
                let docs = by_window_ids(store, spec, &ids, &bounded, opts).await?;
                return Ok((docs, Vec::new()));
            }
        }
        let docs = store.find_raw(spec.collection, &bounded, &opts).await?;
        return Ok((docs, Vec::new()));
    }
    let unbounded = spec.docs_of(key, [Filter::Eq(BOUNDED_FIELD.into(), Bson::Null)]);
    let whole = FindOptions::default();
    let (a, b) = futures::join!(
        store.find_raw(spec.collection, &bounded, &opts),
        store.find_raw(spec.collection, &unbounded, &whole)
    );
    Ok((a?, b?))
}

/// The key's buckets overlapping `span` in a collection whose buckets span at most `width`
/// (`series::width`): the `_id` range [`Span::width_ids`] and the collection's mark read after
/// it, in one command where the store can ([`Store::find_raw_then`]). Should the mark now hold
/// a wider width, a bucket may have grown past the one scanned by: the range is read again with
/// it. Every item pushed before this read began was pushed within a width the mark held then,
/// so the read that ends finds it. `None`: the range cannot be an `_id` range, or the
/// collection's width is no longer kept.
async fn by_width<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    span: Span,
    overlap: &Filter,
    opts: &FindOptions,
    mut width: series::width::Width,
) -> Result<Option<Vec<RawDocumentBuf>>> {
    let coll = spec.collection;
    let mark = Filter::Eq("_id".into(), Bson::String(coll.into()));
    let (opts, fields) = with_overlap_fields(spec, opts.clone())?;
    // Within a lease on the width (`series::lease`): the range alone, counted only when its
    // reply arrives while the lease is trusted still.
    if let Some(trust) = series::lease::trusted(store, coll) {
        let Some(ids) = span.width_ids(spec, width, key)? else {
            return Ok(None);
        };
        let docs = store.find_raw(coll, &ids, &opts).await?;
        if trust.holds() {
            return Ok(Some(keep_overlapping(coll, docs, overlap, fields)?));
        }
    }
    loop {
        let Some(ids) = span.width_ids(spec, width, key)? else {
            return Ok(None);
        };
        let sent = series::lease::Sent::now();
        let (docs, then) =
            (store.find_raw_then(coll, &ids, &opts, BOUNDED_COLLECTIONS, &mark)).await?;
        let now = then.as_ref().and_then(series::width::of_mark);
        let lease = then.as_ref().map_or(0, series::lease::of_mark);
        let memo = series::memo(store);
        match now {
            Some(now) if width.covers(now) => {
                series::lease::trust(store, coll, sent, lease);
                return Ok(Some(keep_overlapping(coll, docs, overlap, fields)?));
            }
            Some(now) => {
                let now = now.max(width);
                memo.change_bounds_mark(coll, |m| series::BoundsMark {
                    width: Some(now),
                    ..m
                });
                series::lease::learned(store, coll, lease);
                width = now;
            }
            // The width no longer kept (or the mark not read): the overlap alone. This
            // process's memory is left as it is: its writers go on keeping the width, which
            // costs nothing where no read uses it.
            None => return Ok(None),
        }
    }
}

/// `opts` with the fields an overlap check reads added to its projection (when it has one),
/// and those fields.
fn with_overlap_fields<'a>(
    spec: &SeriesSpec<'a>,
    mut opts: FindOptions,
) -> Result<(FindOptions, [&'a str; 5])> {
    let (min, max) = bounds_of(spec)?;
    let fields = [spec.key_field, spec.order.field(), BOUNDED_FIELD, min, max];
    if !opts.projection.is_empty() {
        opts.projection.extend(fields.map(Path::from));
    }
    Ok((opts, fields))
}

/// The documents of `docs` that pass `overlap`, checked on `fields`.
fn keep_overlapping(
    coll: &str,
    docs: Vec<RawDocumentBuf>,
    overlap: &Filter,
    fields: [&str; 5],
) -> Result<Vec<RawDocumentBuf>> {
    let mut kept = Vec::with_capacity(docs.len());
    for raw in docs {
        if overlap.matches(&head_of(coll, &raw, fields)?) {
            kept.push(raw);
        }
    }
    Ok(kept)
}

/// The documents in the `_id` range `ids` ([`Span::window_ids`]) that pass `overlap` (the
/// key's overlapping buckets), checked here on the fields it names (added to a projection).
async fn by_window_ids<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    ids: &Filter,
    overlap: &Filter,
    opts: FindOptions,
) -> Result<Vec<RawDocumentBuf>> {
    let (opts, fields) = with_overlap_fields(spec, opts)?;
    let docs = store.find_raw(spec.collection, ids, &opts).await?;
    keep_overlapping(spec.collection, docs, overlap, fields)
}

/// The `fields` of a raw document that it has, as a document (what a filter or a sort on them
/// reads).
fn head_of<'f>(
    coll: &str,
    raw: &RawDocumentBuf,
    fields: impl IntoIterator<Item = &'f str>,
) -> Result<bson::Document> {
    let mut head = bson::Document::new();
    for f in fields {
        if let Ok(Some(v)) = raw.get(f) {
            head.insert(f, crate::codec::raw::raw_value(coll, v)?);
        }
    }
    Ok(head)
}

#[doc = crate::__bucket_doc!(range)]
pub fn range<'a, B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &'a S,
    key: &Q,
    range: impl RangeBounds<DateTime>,
) -> impl Stream<Item = Result<B::Item>> + Send + 'a
where
    B::Item: 'a,
{
    let (spec, key, span) = (B::SPEC.series(), key.to_key_bson(), Span::of(&range));
    let op = crate::observe::op_span!(bucket.range, store, spec.collection);
    items_in::<B>(op, spec, span, async move {
        let (bounded, unbounded) = overlapping(store, &spec, &key, span, Vec::new()).await?;
        in_push_order(&spec, bounded, unbounded)
    })
}

#[doc = crate::__bucket_doc!(lease_width)]
///
/// Kept in the collection's mark as `width_lease`: a shorter lease than the mark's changes
/// nothing, and none can be taken back. A reader whose machine slept, or whose wall clock was
/// set back, reads the mark again. pattern-core/docs/time-series.md has the whole rule.
pub async fn lease_width<B: Bucket + ?Sized, S: Store>(
    store: &S,
    lease: std::time::Duration,
) -> Result<()> {
    crate::observe::traced_op!(bucket.lease_width, store, B::SPEC.collection, async {
        let spec = B::SPEC.series();
        if !series::width::kept_for(&spec) || spec.span_bounds().is_some() {
            return Err(Error::invalid(format!(
                "`{}` keeps no width to lease: only buckets with `time` and no `span` are read \
                 by it",
                spec.collection
            )));
        }
        let ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
        if !(1..=series::lease::MAX_LEASE_MS).contains(&ms) {
            return Err(Error::invalid(format!(
                "a width lease must be from 1 ms to 60 s, got {lease:?}"
            )));
        }
        super::ensure_indexes::<B, S>(store).await?;
        series::lease::set(store, spec.collection, ms).await
    })
}

/// A range read's items, in `op`'s span: the items within `span` of the buckets `read` finds
/// (in its order), as a stream; nothing read when `span` is empty.
pub(crate) fn items_in<'a, B: Bucket + ?Sized>(
    op: OpSpan,
    spec: SeriesSpec<'static>,
    span: Span,
    read: impl Future<Output = Result<Vec<RawDocumentBuf>>> + Send + 'a,
) -> impl Stream<Item = Result<B::Item>> + Send + 'a
where
    B::Item: 'a,
{
    stream::once(crate::observe::traced_in(op, async move {
        if span.is_empty() {
            return Ok(Vec::new());
        }
        items_within::<B>(&spec, read.await?, span)
    }))
    .map_ok(|items| stream::iter(items.into_iter().map(Ok)))
    .try_flatten()
    .boxed()
}

/// The items of `docs` (in their order) whose time is in `span`.
fn items_within<B: Bucket + ?Sized>(
    spec: &SeriesSpec<'_>,
    docs: Vec<RawDocumentBuf>,
    span: Span,
) -> Result<Vec<B::Item>> {
    let mut out = Vec::new();
    for raw in docs {
        let items: Vec<B::Item> =
            series::decode_raw_items(spec.collection, spec.items_field, &raw)?;
        let within = |i: &B::Item| B::item_millis(i).is_some_and(|t| span.contains(t));
        out.extend(items.into_iter().filter(within));
    }
    Ok(out)
}

/// Two sets of a key's documents merged in the series' order (unnumbered first by `_id`,
/// then by number).
pub(crate) fn in_push_order(
    spec: &SeriesSpec<'_>,
    a: Vec<RawDocumentBuf>,
    b: Vec<RawDocumentBuf>,
) -> Result<Vec<RawDocumentBuf>> {
    let mut all: Vec<(bson::Document, RawDocumentBuf)> = Vec::with_capacity(a.len() + b.len());
    for raw in a.into_iter().chain(b) {
        let head = head_of(spec.collection, &raw, ["_id", spec.order.field()])?;
        all.push((head, raw));
    }
    all.sort_by(|x, y| compare_by(&x.0, &y.0, &spec.sort()));
    Ok(all.into_iter().map(|(_, raw)| raw).collect())
}

#[doc = crate::__bucket_doc!(latest)]
///
/// When this process wrote to the key, the finds are bounded by the bucket numbers they want.
/// [`History::range`](super::History::range) reads across the live collection and its archive.
pub async fn latest<B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &S,
    key: &Q,
    n: usize,
) -> Result<Vec<B::Item>> {
    crate::observe::traced_op!(
        bucket.latest,
        store,
        B::SPEC.collection,
        latest_in::<B, S>(store, key.to_key_bson(), n)
    )
}

async fn latest_in<B, S>(store: &S, key: Bson, n: usize) -> Result<Vec<B::Item>>
where
    B: Bucket + ?Sized,
    S: Store,
{
    let spec = B::SPEC.series();
    if n == 0 {
        return Ok(Vec::new());
    }
    spec.ensure_indexes(store).await?;
    let size = spec.size as usize;
    // Newest bucket first, then older ones.
    let mut newest_first: Vec<Vec<B::Item>> = Vec::new();
    let (mut have, mut read, mut want) = (0usize, 0u64, 1i64);
    // The number of the key's newest bucket, when this process wrote it: the queries are then
    // bounded below by the numbers they want, which a server that reads a sorted query's whole
    // index range before its limit (test server, T1) needs to stay fast on a long history. Should
    // the bound cut anything off (a gap, buckets without numbers), the same query runs
    // unbounded.
    let newest = (crate::series::memo(store).next_number(spec.collection, &key))
        .map(|next| next.number - 1)
        .filter(|n| *n >= 1);
    loop {
        let opts = FindOptions {
            sort: spec.newest_first().to_vec(),
            skip: read,
            limit: Some(want),
            ..FindOptions::default()
        };
        let all = spec.docs_of(&key, []);
        let lowest = newest.map(|n| n.saturating_sub(read as i64 + want - 1));
        let mut docs = match lowest {
            Some(low) if low > 1 => {
                // A bare range on the number: only numbers pass it (so no other guard, which
                // would keep the test server from bounding its index scan by it: T6).
                let page = Filter::Gte(spec.order.field().into(), Bson::Int64(low));
                let bounded = Filter::And(vec![spec.by_key(&key), page]);
                store.find_raw(spec.collection, &bounded, &opts).await?
            }
            _ => store.find_raw(spec.collection, &all, &opts).await?,
        };
        if (docs.len() as i64) < want && lowest.is_some_and(|low| low > 1) {
            docs = store.find_raw(spec.collection, &all, &opts).await?;
        }
        let got = docs.len() as i64;
        read += got as u64;
        for raw in docs {
            let items: Vec<B::Item> =
                series::decode_raw_items(spec.collection, spec.items_field, &raw)?;
            have += items.len();
            newest_first.push(items);
        }
        if have >= n || got < want {
            break;
        }
        // Enough buckets for the rest when they are full.
        want = i64::try_from((n - have).div_ceil(size)).unwrap_or(i64::MAX);
    }
    let mut items: Vec<B::Item> = newest_first.into_iter().rev().flatten().collect();
    let extra = items.len().saturating_sub(n);
    items.drain(..extra);
    Ok(items)
}
