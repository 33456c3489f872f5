//! The archive pattern for buckets: [`archive`] moves whole buckets whose items are all older
//! than a cut-off into an archive collection, on the same store or another, beside live
//! pushes; [`History`] reads a key's history (`range`, `items`, `summary`) across the live
//! collection and its archive; [`verify_archive`] checks that no bucket is in both or in
//! neither.
//!
//! A bucket moves when it carries complete time bounds, its latest item is before the cut-off,
//! and it is not its key's newest bucket (which stays live, so numbering and pushes go on
//! unchanged). Each move is a copy (an upsert by `_id`: the same document however often it is
//! sent) and then a delete of the live bucket conditional on its count: a push that reached
//! the bucket meanwhile makes the delete miss, and the bucket is copied again. So a move
//! applies exactly once, and a run killed at any point is completed by running it again (a
//! bucket found in both places is the copy of a move in flight: `verify_archive` reports it,
//! the next run deletes the live one).

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::RangeBounds;

use bson::{Bson, DateTime, Document, RawDocumentBuf};
use futures::stream::{self, Stream, StreamExt, TryStreamExt};

use super::rollup::Rollup;
use super::summary::totals_in;
use super::time::{bounds_of, items_within, overlapping, Span};
use super::Bucket;
use crate::adopt::{key_text, LayoutDefect, Options};
use crate::codec::as_int;
use crate::codec::raw::raw_value;
use crate::key::KeyPart;
use crate::series;
use crate::spec::{BucketSpec, SeriesSpec, BOUNDED_FIELD};
use crate::store::query::{Filter, FindOptions, Path};
pub use crate::store::ArchiveAt;
use crate::store::Store;
use crate::{Error, Result};

/// What [`archive`] did (or, in a dry run, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ArchiveReport {
    /// Buckets read (those whose latest item is before the cut-off).
    pub read: u64,
    /// Buckets moved.
    pub moved: u64,
    /// Items in the buckets moved.
    pub items: u64,
    /// Buckets left live because they are their key's newest.
    pub newest_kept: u64,
}

/// Buckets read per batch.
const BATCH: i64 = 1_000;
/// Copies of one bucket before [`Error::Contention`] (each after a push to it).
const ATTEMPTS: u32 = 100;

fn archive_spec<'a>(spec: &SeriesSpec<'a>, collection: &'a str) -> SeriesSpec<'a> {
    SeriesSpec {
        collection,
        ..*spec
    }
}

/// Moves every bucket of `B` whose items are all before `before` (and that is not its key's
/// newest) into `to`'s collection, exactly once, beside live pushes. With `opts.dry_run`,
/// reads and counts, writes nothing; `opts.progress` is called after each batch (phase
/// `"archive"`). Run again after a kill: it completes the moves in flight.
///
/// Buckets without complete time bounds are not moved (run [`backfill`](super::backfill)
/// first). The live collection is marked archived from: from then on a whole-history
/// [`summary`](super::summary) of it reads its buckets (a roll-up counts the archived items
/// too); [`History::summary`] reads the roll-up.
pub async fn archive<B, S, A>(
    live: &S,
    to: &ArchiveAt<'_, A>,
    before: DateTime,
    opts: &Options<'_>,
) -> Result<ArchiveReport>
where
    B: Bucket + ?Sized,
    S: Store,
    A: Store,
{
    archive_layout(live, &B::SPEC, to, before, opts).await
}

/// [`archive`] of a layout given as data (what the `pattern archive bucket` command builds):
/// the same moves. `spec` must keep time bounds.
pub async fn archive_layout<S: Store, A: Store>(
    live: &S,
    spec: &BucketSpec<'_>,
    to: &ArchiveAt<'_, A>,
    before: DateTime,
    opts: &Options<'_>,
) -> Result<ArchiveReport> {
    let span = crate::observe::op_span!("bucket.archive", "archive", live, spec.collection);
    crate::observe::traced!(
        span,
        archive_layout_in::<S, A>(live, spec, to, before, opts)
    )
}

async fn archive_layout_in<S: Store, A: Store>(
    live: &S,
    spec: &BucketSpec<'_>,
    to: &ArchiveAt<'_, A>,
    before: DateTime,
    opts: &Options<'_>,
) -> Result<ArchiveReport> {
    let spec = spec.series();
    let (_, max) = bounds_of(&spec)?;
    if to.collection == spec.collection {
        return Err(Error::invalid(format!(
            "the archive of `{}` must be another collection",
            spec.collection
        )));
    }
    let target = archive_spec(&spec, to.collection);
    let mut report = ArchiveReport::default();
    if !opts.dry_run {
        // The live collection's indexes are left as they are (the layout given may be another
        // writer's); the archive's are the layout's.
        target.ensure_indexes(to.store).await?;
        // Only bounded buckets move, cut as the live ones are (by its span, if every live one is).
        let mark = spec.bounds_mark(live).await?;
        series::mark_bounded(
            to.store,
            to.collection,
            Some(mark.span.filter(|_| mark.all_bounded)),
        )
        .await?;
        series::mark_archived(live, spec.collection).await?;
    }
    let mut after: Option<Bson> = None;
    loop {
        let mut filter = vec![
            spec.in_series(),
            Filter::Eq(BOUNDED_FIELD.into(), Bson::Boolean(true)),
            Filter::Lt(Path::from(max), Bson::DateTime(before)),
        ];
        if let Some(a) = &after {
            filter.push(Filter::Gt("_id".into(), a.clone()));
        }
        let batch_opts = FindOptions {
            sort: vec![("_id".into(), 1)],
            limit: Some(BATCH),
            comment: Some("pattern scatter: bucket archive"),
            ..FindOptions::default()
        };
        let docs = live
            .find_raw(spec.collection, &Filter::and(filter), &batch_opts)
            .await?;
        let full = docs.len() as i64 == BATCH;
        report.read += docs.len() as u64;
        let newest = newest_pages(live, &spec, &docs).await?;
        for raw in docs {
            let doc = Document::try_from(raw.as_ref())
                .map_err(|e| Error::decode(spec.collection, None, e.to_string()))?;
            after = doc.get("_id").cloned();
            let key = doc.get(spec.key_field).cloned().unwrap_or(Bson::Null);
            let page = doc.get(spec.order.field()).and_then(as_int);
            if page.is_some() && newest.get(&key_text(&key)) == page.as_ref() {
                report.newest_kept += 1;
                continue;
            }
            if opts.dry_run {
                report.moved += 1;
                report.items += count_of(&spec, &doc);
                continue;
            }
            if let Some(items) = move_one(live, to, &spec, doc, (max, before)).await? {
                report.moved += 1;
                report.items += items;
            }
        }
        opts.report("archive", report.read, None);
        if !full {
            return Ok(report);
        }
    }
}

fn count_of(spec: &SeriesSpec<'_>, doc: &Document) -> u64 {
    (doc.get(spec.count_field).and_then(as_int)).map_or(0, |c| u64::try_from(c).unwrap_or(0))
}

/// The newest page of each key of `docs`, by key text: one read for the batch.
async fn newest_pages<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    docs: &[RawDocumentBuf],
) -> Result<HashMap<String, i64>> {
    let mut keys: Vec<Bson> = Vec::new();
    let mut seen = HashSet::new();
    for raw in docs {
        if let Ok(Some(v)) = raw.get(spec.key_field) {
            let key = raw_value(spec.collection, v)?;
            if seen.insert(key_text(&key)) {
                keys.push(key);
            }
        }
    }
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let page = spec.order.field();
    let filter = Filter::and([
        Filter::In(Path::from(spec.key_field), keys),
        Filter::Exists(Path::from(page), true),
        spec.in_series(),
    ]);
    let sort = [(Path::from(page), -1)];
    let projection = [Path::from(spec.key_field), Path::from(page)];
    let firsts = store
        .first_per(spec.collection, &filter, spec.key_field, &sort, &projection)
        .await?;
    Ok(firsts
        .iter()
        .filter_map(|d| {
            let key = d.get(spec.key_field)?;
            Some((key_text(key), d.get(page).and_then(as_int)?))
        })
        .collect())
}

/// Moves one bucket: the copy, then the delete conditional on its count; again with what a
/// push left in it when the delete missed. `None` when the bucket is gone (another run moved
/// it).
async fn move_one<S: Store, A: Store>(
    live: &S,
    to: &ArchiveAt<'_, A>,
    spec: &SeriesSpec<'_>,
    mut doc: Document,
    (max, before): (&str, DateTime),
) -> Result<Option<u64>> {
    for _ in 0..ATTEMPTS {
        let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
        let key = doc.get(spec.key_field).cloned().unwrap_or(Bson::Null);
        let count = doc.get(spec.count_field).cloned().unwrap_or(Bson::Null);
        // The key too: on a cluster sharded by it, each write reaches one shard.
        let by_id = Filter::and([spec.by_key(&key), Filter::Eq("_id".into(), id)]);
        let items = count_of(spec, &doc);
        (to.store)
            .replace_one(to.collection, &by_id, doc, true)
            .await?;
        let unchanged = Filter::and([
            by_id.clone(),
            Filter::Eq(Path::from(spec.count_field), count),
        ]);
        if live.delete_many(spec.collection, &unchanged).await? == 1 {
            return Ok(Some(items));
        }
        // A push reached it after the copy (copied again, with its items), or another run
        // moved it (its copy is this one).
        let one = FindOptions {
            limit: Some(1),
            ..FindOptions::default()
        };
        match live.find(spec.collection, &by_id, &one).await?.pop() {
            // A push moved its latest item past the cut-off: it stays live, the copy goes.
            Some(now) if !matches!(now.get(max), Some(Bson::DateTime(d)) if *d < before) => {
                to.store.delete_many(to.collection, &by_id).await?;
                return Ok(None);
            }
            Some(now) => doc = now,
            None => return Ok(None),
        }
    }
    Err(Error::Contention {
        attempts: ATTEMPTS,
        what: "moving a bucket to its archive".into(),
    })
}

/// A key's history across the live collection and its archive: what [`archive`] moved is
/// read as if it had stayed.
#[derive(Debug)]
pub struct History<'a, S, A> {
    /// The live store.
    pub live: &'a S,
    /// The archive.
    pub archive: ArchiveAt<'a, A>,
}

impl<S, A> Clone for History<'_, S, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S, A> Copy for History<'_, S, A> {}

impl<'a, S: Store, A: Store> History<'a, S, A> {
    /// The history of `live` with its archive `archive`.
    pub fn new(live: &'a S, archive: ArchiveAt<'a, A>) -> Self {
        History { live, archive }
    }

    /// [`range`](super::range) over both: the items of `key` whose time is in `range`, in push
    /// order (by bucket number). Two finds (one on each side).
    pub fn range<B, Q>(
        &self,
        key: &Q,
        range: impl RangeBounds<DateTime>,
    ) -> impl Stream<Item = Result<B::Item>> + Send + 'a
    where
        B: Bucket + ?Sized,
        B::Key: Borrow<Q>,
        B::Item: 'a,
        Q: KeyPart + ?Sized,
    {
        let (spec, key, span) = (B::SPEC.series(), key.to_key_bson(), Span::of(&range));
        let (live, archive) = (self.live, self.archive);
        let op = crate::observe::op_span!("bucket.range", "range", live, spec.collection);
        stream::once(crate::observe::traced_in(op, async move {
            if span.is_empty() {
                return Ok(Vec::new());
            }
            let target = archive_spec(&spec, archive.collection);
            let (a, b) = overlapping(live, &spec, &key, span, Vec::new()).await?;
            let (c, d) = overlapping(archive.store, &target, &key, span, Vec::new()).await?;
            let docs = ordered(&spec, [a, b, c, d].concat())?;
            items_within::<B>(&spec, docs, span)
        }))
        .map_ok(|items| stream::iter(items.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
    }

    /// Every item of `key`, live and archived, in push order. Two finds.
    pub async fn items<B, Q>(&self, key: &Q) -> Result<Vec<B::Item>>
    where
        B: Bucket + ?Sized,
        B::Key: Borrow<Q>,
        Q: KeyPart + ?Sized,
    {
        let (spec, key) = (B::SPEC.series(), key.to_key_bson());
        let op = crate::observe::op_span!("bucket.items", "items", self.live, spec.collection);
        crate::observe::traced!(op, self.items_of::<B>(spec, key))
    }

    async fn items_of<B: Bucket + ?Sized>(
        &self,
        spec: SeriesSpec<'_>,
        key: Bson,
    ) -> Result<Vec<B::Item>> {
        let target = archive_spec(&spec, self.archive.collection);
        spec.ensure_indexes(self.live).await?;
        target.ensure_indexes(self.archive.store).await?;
        let live = series::all_docs(self.live, &spec, &key).await?;
        let archived = series::all_docs(self.archive.store, &target, &key).await?;
        let mut out = Vec::new();
        for raw in ordered(&spec, [live, archived].concat())? {
            out.extend(series::decode_raw_items::<B::Item>(
                spec.collection,
                spec.items_field,
                &raw,
            )?);
        }
        Ok(out)
    }

    /// [`summary`](super::summary) over both. The whole history is the key's roll-up when
    /// it keeps one (`#[bucket(rollup)]`: one find), otherwise both sides' buckets.
    pub async fn summary<B, Q>(
        &self,
        key: &Q,
        range: impl RangeBounds<DateTime>,
    ) -> Result<B::Summary>
    where
        B: Bucket + ?Sized,
        B::Key: Borrow<Q>,
        Q: KeyPart + ?Sized,
    {
        let (spec, key, span) = (B::SPEC.series(), key.to_key_bson(), Span::of(&range));
        let op = crate::observe::op_span!("bucket.summary", "summary", self.live, spec.collection);
        crate::observe::traced!(op, self.summary_of::<B>(spec, key, span))
    }

    async fn summary_of<B: Bucket + ?Sized>(
        &self,
        spec: SeriesSpec<'_>,
        key: Bson,
        span: Span,
    ) -> Result<B::Summary> {
        let target = archive_spec(&spec, self.archive.collection);
        if span.is_all() && spec.keeps.rollup {
            spec.ensure_indexes(self.live).await?;
            if let Some(t) = super::rollup::rolled_up(self.live, &spec, &key, Rollup::Whole).await?
            {
                return Ok(t.into());
            }
        }
        let live = totals_in::<B, S>(self.live, &spec, &key, span, Rollup::Never).await?;
        let archived =
            totals_in::<B, A>(self.archive.store, &target, &key, span, Rollup::Never).await?;
        Ok(live.merged(&spec, archived)?.into())
    }
}

/// Buckets of one key from both sides in push order, each once (a move in flight leaves the
/// same bucket on both sides: its live copy is kept).
fn ordered(spec: &SeriesSpec<'_>, docs: Vec<RawDocumentBuf>) -> Result<Vec<RawDocumentBuf>> {
    let mut seen = HashSet::new();
    let mut unique = Vec::with_capacity(docs.len());
    for raw in docs {
        let id = match raw.get("_id") {
            Ok(Some(v)) => key_text(&raw_value(spec.collection, v)?),
            _ => String::new(),
        };
        if seen.insert(id) {
            unique.push(raw);
        }
    }
    super::time::in_push_order(spec, unique, Vec::new())
}

/// Checks `B`'s live collection and its archive together: no bucket in both (a move in flight,
/// which [`archive`] completes), and each key's buckets numbered 1, 2, 3... across both (a
/// missing number is a bucket in neither). Reads both collections once.
pub async fn verify_archive<B, S, A>(live: &S, to: &ArchiveAt<'_, A>) -> Result<Vec<LayoutDefect>>
where
    B: Bucket + ?Sized,
    S: Store,
    A: Store,
{
    verify_archive_layout(live, &B::SPEC, to).await
}

/// [`verify_archive`] of a layout given as data.
pub async fn verify_archive_layout<S: Store, A: Store>(
    live: &S,
    spec: &BucketSpec<'_>,
    to: &ArchiveAt<'_, A>,
) -> Result<Vec<LayoutDefect>> {
    let span = crate::observe::op_span!(
        "bucket.verify_archive",
        "verify_archive",
        live,
        spec.collection
    );
    crate::observe::traced!(span, async {
        let spec = spec.series();
        let target = archive_spec(&spec, to.collection);
        // Per key: its pages and items, and where each `_id` is.
        let mut pages: BTreeMap<String, (Bson, Vec<i64>, u64)> = BTreeMap::new();
        let mut live_ids: HashSet<String> = HashSet::new();
        let mut defects = Vec::new();
        for (side, store_docs) in [
            (0, read_heads(live, &spec).await?),
            (1, read_heads(to.store, &target).await?),
        ] {
            for (id, key, page, count) in store_docs {
                let id_text = key_text(&id);
                if side == 0 {
                    live_ids.insert(id_text);
                } else if live_ids.contains(&id_text) {
                    defects.push(LayoutDefect::InBoth {
                        collection: spec.collection.to_owned(),
                        archive: to.collection.to_owned(),
                        id: id.clone(),
                    });
                    continue;
                }
                let entry = pages
                    .entry(key_text(&key))
                    .or_insert_with(|| (key.clone(), Vec::new(), 0));
                entry.1.extend(page);
                entry.2 += count;
            }
        }
        // Each key's roll-up counts its items on both sides.
        if spec.keeps.rollup {
            let keys: Vec<Bson> = pages.values().map(|p| p.0.clone()).collect();
            for (key, rolled) in rollup_counts(live, &spec, keys).await? {
                let buckets = pages.get(&key_text(&key)).map_or(0, |p| p.2);
                if rolled != buckets {
                    defects.push(LayoutDefect::RollupDrift {
                        collection: format!("{} + {}", spec.collection, to.collection),
                        key,
                        rollup: rolled,
                        buckets,
                    });
                }
            }
        }
        for (_, (key, mut numbers, _)) in pages {
            numbers.sort_unstable();
            if let Some((i, n)) = (numbers.iter().enumerate()).find(|(i, n)| **n != *i as i64 + 1) {
                defects.push(LayoutDefect::NotDense {
                    collection: format!("{} + {}", spec.collection, to.collection),
                    key,
                    expected: i as i64 + 1,
                    found: *n,
                });
            }
        }
        Ok(defects)
    })
}

/// The roll-up count of each of `keys` that has one, stale ones left out. By key, a batch at
/// a time (by the number alone, the test server finds none: T15).
async fn rollup_counts<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    keys: Vec<Bson>,
) -> Result<Vec<(Bson, u64)>> {
    let mut out = Vec::new();
    for chunk in keys.chunks(1_000) {
        let filter = Filter::and([
            Filter::In(Path::from(spec.key_field), chunk.to_vec()),
            Filter::Eq(
                Path::from(spec.order.field()),
                Bson::String(series::ROLLUP.into()),
            ),
        ]);
        let docs = (store.find(spec.collection, &filter, &FindOptions::default())).await?;
        out.extend(
            (docs.into_iter())
                .filter(|d| d.get_bool(series::ROLLUP_STALE) != Ok(true))
                .filter_map(|d| {
                    let n = d.get(series::ROLLUP_ITEMS).and_then(as_int)?;
                    Some((
                        d.get(spec.key_field)?.clone(),
                        u64::try_from(n).unwrap_or(0),
                    ))
                }),
        );
    }
    Ok(out)
}

/// Every bucket's `_id`, key, number and count.
async fn read_heads<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
) -> Result<Vec<(Bson, Bson, Option<i64>, u64)>> {
    let page = spec.order.field();
    let opts = FindOptions {
        sort: spec.sort_by_key(),
        projection: vec![
            Path::from(spec.key_field),
            Path::from(page),
            Path::from(spec.count_field),
        ],
        comment: Some("pattern scatter: bucket archive verify"),
        ..FindOptions::default()
    };
    let filter = Filter::and([
        spec.in_series(),
        Filter::Exists(spec.key_field.into(), true),
    ]);
    let mut docs = store.scan(spec.collection, &filter, &opts, series::STREAM_BATCH as u32);
    let mut out = Vec::new();
    while let Some(doc) = docs.next().await {
        let doc = doc?;
        let get = |f: &str| match doc.get(f) {
            Ok(Some(v)) => raw_value(spec.collection, v).map(Some),
            _ => Ok(None),
        };
        let (id, key) = (get("_id")?, get(spec.key_field)?);
        let number = get(page)?.as_ref().and_then(as_int);
        let count = get(spec.count_field)?.as_ref().and_then(as_int);
        let count = count.map_or(0, |c| u64::try_from(c).unwrap_or(0));
        if let (Some(id), Some(key)) = (id, key) {
            out.push((id, key, number, count));
        }
    }
    Ok(out)
}
