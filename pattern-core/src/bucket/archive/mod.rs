//! The archive pattern for buckets: [`archive`] moves whole buckets whose items are all older
//! than a cut-off into an archive collection, on the same store or another, beside live
//! pushes; [`History`] reads a key's history (`range`, `items`, `summary`) across the live
//! collection and its archive, and completes both (`backfill`); [`verify_archive`] checks
//! that no bucket is in both or in neither.
//!
//! A bucket moves when it carries complete time bounds, its latest item is before the cut-off,
//! and it is not its key's newest bucket (which stays live, so numbering and pushes go on
//! unchanged). Each move is a copy (an upsert by `_id`: the same document however often it is
//! sent) and then a delete of the live bucket conditional on its count: a push that reached
//! the bucket meanwhile makes the delete miss, and the bucket is copied again. So a move
//! applies exactly once, and a run killed at any point is completed by running it again (a
//! bucket found in both places is the copy of a move in flight: `verify_archive` reports it,
//! the next run deletes the live one).
//!
//! A roll-up (`#[bucket(rollup)]`) counts a key's archived items as well as its live ones: a
//! move leaves it as it is, and [`backfill`](super::backfill) recomputes it from the buckets
//! on both sides (those of every archive the live collection's mark records on the same store;
//! [`History::backfill`] reads one on another store).
//!
//! Resumable: the scan walks `_id` upwards a batch at a time (one BSON type bracket after
//! another: `_id`s of several types are all scanned), and the batch's checkpoint
//! (`archive:<live>:<archive>` in [`CHECKPOINTS`](crate::adopt::CHECKPOINTS) on the live
//! store) records, before its moves, the `_id`s of the buckets it is about to move, and after
//! them its last `_id` and the buckets and items moved so far: compare-and-set updates
//! outside any transaction (no bucket operation uses one; each move is exactly once on its
//! own, so the checkpoint need not be written with them). A run killed part-way is resumed by
//! the next after the last batch recorded, with the same cut-off only
//! ([`Error::SettingsChanged`](crate::Error::SettingsChanged) otherwise): the batch it was in
//! is done again, its moves completed, what it had moved already no longer a candidate; those
//! (the listed buckets now in the archive and no longer live) are counted from the archive
//! side first, so the pass's totals include them. A bucket behind the position that became a
//! candidate meanwhile (a key's newest that is no longer) waits for the next pass: once
//! finished, a run with any cut-off starts from the start. A killed run leaves no transaction
//! open (it runs none): the next run goes on at once.

use crate::store::Error as StoreError;
use std::collections::{HashMap, HashSet};
use std::ops::RangeBounds;

use bson::{doc, Bson, DateTime, Document, RawDocumentBuf};
use futures::stream::Stream;

use super::rollup::Rollup;
use super::summary::totals_in;
use super::time::{bounds_of, items_in, overlapping, Span};
use super::Bucket;
use crate::codec::as_int;
use crate::codec::order::value_key;
use crate::codec::raw::raw_value;
use crate::key::KeyRef;
use crate::pass::archive_run::{ArchiveRun, IdScan};
use crate::pass::Options;
use crate::series;
use crate::spec::{BucketSpec, SeriesSpec, BOUNDED_FIELD};
use crate::store::query::{Filter, FindOptions, Path};
pub use crate::store::ArchiveAt;
use crate::store::Store;
use crate::{Error, Result};

mod verify;

pub use verify::{verify_archive, verify_archive_layout};

/// What [`archive`] did (or, in a dry run, would do).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ArchiveReport {
    /// Buckets this run read (those whose latest item is before the cut-off).
    pub read: u64,
    /// Buckets this run moved.
    pub moved: u64,
    /// Items in the buckets this run moved.
    pub items: u64,
    /// Buckets left live because they are their key's newest.
    pub newest_kept: u64,
    /// This run went on from the checkpoint of a run killed part-way: after this bucket
    /// `_id` (the last of the last batch it recorded).
    pub resumed_from: Option<Bson>,
    /// Buckets moved by the pass this run finished (or, killed, left part-way): every bucket
    /// the runs before it in the pass moved, those of the batch a killed run died in included
    /// (counted from the archive side by the run after it), and this run's.
    pub total_moved: u64,
    /// Items in them (each bucket's count as archived).
    pub total_items: u64,
}

/// Buckets read per batch at most (fewer when [`Options::batch_items`] says so).
const BATCH: usize = 1_000;
/// Copies of one bucket before [`store::Error::Contention`](crate::store::Error::Contention) (each after a push to it).
const ATTEMPTS: u32 = 100;

fn archive_spec<'a>(spec: &SeriesSpec<'a>, collection: &'a str) -> SeriesSpec<'a> {
    SeriesSpec {
        collection,
        ..*spec
    }
}

/// Moves every bucket of `B` whose items are all before `before` (and that is not its key's
/// newest) into `to`'s collection, exactly once, beside live pushes, in batches of
/// `opts.batch_items` buckets (at most 1,000), each recorded in the archive's checkpoint. With
/// `opts.dry_run`, reads and counts, writes nothing (no checkpoint either); `opts.progress` is
/// called after each batch (phase `"archive"`). Run again after a kill: it resumes after the
/// last batch recorded and completes the moves in flight (see the module's documentation).
/// Refused before anything is written ([`Error::SettingsChanged`]): another cut-off while a
/// run is part-way; two runs of one archive at once stop the second ([`store::Error::Contention`](crate::store::Error::Contention)).
///
/// Buckets without complete time bounds are not moved (run [`backfill`](super::backfill)
/// first). The live collection is marked archived from: from then on a whole-history
/// [`summary`](super::summary) of it reads its buckets (a roll-up counts the archived items
/// too); [`History::summary`] reads the roll-up. Its mark also records the archive, and
/// whether it is in the live store's database (a token written on the archive's mark is read
/// back through the live store), before any bucket moves: a later `backfill` of the live store
/// counts the archived buckets in the roll-ups it recomputes, or refuses when it cannot read
/// them ([`History::backfill`] can).
pub async fn archive<B, S, A>(
    live: &S,
    to: ArchiveAt<'_, A>,
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
    to: ArchiveAt<'_, A>,
    before: DateTime,
    opts: &Options<'_>,
) -> Result<ArchiveReport> {
    crate::observe::traced_op!(
        bucket.archive,
        live,
        spec.collection,
        archive_layout_in::<S, A>(live, spec, &to, before, opts)
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
    // Pinned while a pass is part-way: what moves.
    let settings = doc! {"before": before, "time": max};
    let colls = (spec.collection, to.collection);
    let mut run =
        ArchiveRun::start(live, colls, settings, ["moved", "items"], opts.dry_run).await?;
    let mut report = ArchiveReport {
        resumed_from: run.resumed_from.clone(),
        ..ArchiveReport::default()
    };
    if !run.moving().is_empty() {
        let counted = moved_of(live, &spec, to, run.moving()).await?;
        run.counted(counted);
    }
    let batch = opts.batch_items.clamp(1, BATCH) as i64;
    if !opts.dry_run {
        // The live collection's indexes are left as they are (the layout given may be another
        // writer's); the archive's are the layout's.
        target.ensure_indexes(to.store).await?;
        record_archive(live, &spec, to).await?;
    }
    let mut scan = IdScan::after(run.resumed_from.clone());
    let mut after: Option<Bson> = None;
    while let Some(ids) = scan.filter() {
        let filter = vec![
            spec.in_series(),
            Filter::Eq(BOUNDED_FIELD.into(), Bson::Boolean(true)),
            Filter::Lt(Path::from(max), Bson::DateTime(before)),
            ids,
        ];
        let batch_opts = FindOptions {
            sort: vec![("_id".into(), 1)],
            limit: Some(batch),
            comment: Some("pattern scatter: bucket archive"),
            ..FindOptions::default()
        };
        let docs = live
            .find_raw(spec.collection, &Filter::and(filter), &batch_opts)
            .await?;
        let read = docs.len() as u64;
        let full = read as i64 == batch;
        report.read += read;
        let so_far = (report.moved, report.items);
        let newest = newest_pages(live, &spec, &docs).await?;
        let mut moving = Vec::with_capacity(docs.len());
        for raw in docs {
            let doc = Document::try_from(raw.as_ref())
                .map_err(|e| Error::decode(spec.collection, None, e.to_string()))?;
            after = doc.get("_id").cloned();
            let key = doc.get(spec.key_field).cloned().unwrap_or(Bson::Null);
            let page = doc.get(spec.order.field()).and_then(as_int);
            if page.is_some() && newest.get(&value_key(&key)) == page.as_ref() {
                report.newest_kept += 1;
                continue;
            }
            moving.push(doc);
        }
        let ids: Vec<Bson> = (moving.iter())
            .filter_map(|d| d.get("_id").cloned())
            .collect();
        run.batch_begins(live, &ids).await?;
        for doc in moving {
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
        if let (true, Some(last)) = (read > 0, &after) {
            let done = [report.moved - so_far.0, report.items - so_far.1];
            run.batch_done(live, last, done).await?;
        }
        opts.report("archive", report.read, None);
        scan.read(after.take().filter(|_| read > 0).as_ref(), full);
    }
    run.finish(live).await?;
    [report.total_moved, report.total_items] = run.totals();
    Ok(report)
}

/// Before any bucket moves: marks the archive collection (bounded, cut as the live buckets
/// are: by their span, if every live one is) with a new token, reads it back through the live
/// store (the same token there: the archive is in the live store's database), and records the
/// archive, and where it is, on the live collection's mark, which is marked archived from. A
/// `backfill` of the live store then knows which archives its roll-ups count and whether it
/// can read them. Three commands (and the live mark's read, once per process).
async fn record_archive<S: Store, A: Store>(
    live: &S,
    spec: &SeriesSpec<'_>,
    to: &ArchiveAt<'_, A>,
) -> Result<()> {
    let mark = spec.bounds_mark(live).await?;
    let token = bson::oid::ObjectId::new();
    let span = Some(mark.span.filter(|_| mark.all_bounded));
    series::mark_bounded_probed(to.store, to.collection, span, Some(token)).await?;
    let marks = series::read_marks(live, &[spec.collection, to.collection]).await?;
    let id = |m: &Document, c: &str| m.get_str("_id") == Ok(c);
    let here = (marks.iter())
        .any(|m| id(m, to.collection) && m.get_object_id(series::PROBE_FIELD) == Ok(token));
    let recorded = series::archives_in(marks.iter().find(|m| id(m, spec.collection)));
    let archive = series::ArchiveRecord {
        collection: Some(to.collection.to_owned()),
        here,
    };
    series::mark_archived(live, spec.collection, archive, recorded).await
}

fn count_of(spec: &SeriesSpec<'_>, doc: &Document) -> u64 {
    (doc.get(spec.count_field).and_then(as_int)).map_or(0, |c| u64::try_from(c).unwrap_or(0))
}

/// Of `ids`, the buckets a run killed part-way was moving, how many it moved and their items:
/// those in the archive and no longer live (a bucket in both is a move in flight, which this
/// run finishes and counts), with their counts as archived. Two reads by `_id` (collection-wide
/// on a cluster sharded by the key: once a resumed run).
async fn moved_of<S: Store, A: Store>(
    live: &S,
    spec: &SeriesSpec<'_>,
    to: &ArchiveAt<'_, A>,
    ids: &[Bson],
) -> Result<[u64; 2]> {
    let listed = Filter::In("_id".into(), ids.to_vec());
    let read = |fields: &[&str]| FindOptions {
        projection: fields.iter().map(|f| Path::from(*f)).collect(),
        comment: Some("pattern scatter: bucket archive resume"),
        ..FindOptions::default()
    };
    let archived = (to.store)
        .find(to.collection, &listed, &read(&["_id", spec.count_field]))
        .await?;
    let still = live.find(spec.collection, &listed, &read(&["_id"])).await?;
    let live_ids: HashSet<Vec<u8>> = (still.iter())
        .filter_map(|d| Some(value_key(d.get("_id")?)))
        .collect();
    let mut counted = [0, 0];
    for doc in &archived {
        if doc
            .get("_id")
            .is_some_and(|id| !live_ids.contains(&value_key(id)))
        {
            counted[0] += 1;
            counted[1] += count_of(spec, doc);
        }
    }
    Ok(counted)
}

/// The newest page of each key of `docs`, by the key's value: one read for the batch.
async fn newest_pages<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    docs: &[RawDocumentBuf],
) -> Result<HashMap<Vec<u8>, i64>> {
    let mut keys: Vec<Bson> = Vec::new();
    let mut seen = HashSet::new();
    for raw in docs {
        if let Ok(Some(v)) = raw.get(spec.key_field) {
            let key = raw_value(spec.collection, v)?;
            if seen.insert(value_key(&key)) {
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
            Some((value_key(key), d.get(page).and_then(as_int)?))
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
    Err(Error::Store(StoreError::Contention {
        attempts: ATTEMPTS,
        what: "moving a bucket to its archive".into(),
    }))
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
    pub fn range<B: Bucket + ?Sized, Q: KeyRef<B::Key> + ?Sized>(
        &self,
        key: &Q,
        range: impl RangeBounds<DateTime>,
    ) -> impl Stream<Item = Result<B::Item>> + Send + 'a
    where
        B::Item: 'a,
    {
        let (spec, key, span) = (B::SPEC.series(), key.to_key_bson(), Span::of(&range));
        let (live, archive) = (self.live, self.archive);
        let op = crate::observe::op_span!(bucket.range, live, spec.collection);
        items_in::<B>(op, spec, span, async move {
            let target = archive_spec(&spec, archive.collection);
            let (a, b) = overlapping(live, &spec, &key, span, Vec::new()).await?;
            let (c, d) = overlapping(archive.store, &target, &key, span, Vec::new()).await?;
            ordered(&spec, [a, b, c, d].concat())
        })
    }

    /// Every item of `key`, live and archived, in push order. Two finds.
    pub async fn items<B: Bucket + ?Sized, Q: KeyRef<B::Key> + ?Sized>(
        &self,
        key: &Q,
    ) -> Result<Vec<B::Item>> {
        let (spec, key) = (B::SPEC.series(), key.to_key_bson());
        let op = crate::observe::op_span!(bucket.items, self.live, spec.collection);
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

    /// [`backfill`](super::backfill) of both sides: completes the buckets of the live
    /// collection and of the archive, then, with `#[bucket(rollup)]`, recomputes every key's
    /// roll-up from its buckets on both sides (and in any other archive on the live store the
    /// live collection's mark records) and marks them trusted. What `backfill` of the live
    /// store alone does when the archive is on the same store; it is refused when an archive
    /// is on another store, which this reads through its own. Returns how many buckets it
    /// completed, on both sides. Run it with writers and archive runs stopped (see `backfill`).
    pub async fn backfill<B: Bucket + ?Sized>(&self) -> Result<u64> {
        let spec = B::SPEC.series();
        let op = crate::observe::op_span!(bucket.backfill, self.live, spec.collection);
        let other = Some((self.archive.store, self.archive.collection));
        crate::observe::traced!(
            op,
            super::summary::backfill_with::<B, S, A>(self.live, other)
        )
    }

    /// [`summary`](super::summary) over both. The whole history is the key's roll-up when
    /// it keeps one (`#[bucket(rollup)]`: one find), otherwise both sides' buckets.
    pub async fn summary<B: Bucket + ?Sized, Q: KeyRef<B::Key> + ?Sized>(
        &self,
        key: &Q,
        range: impl RangeBounds<DateTime>,
    ) -> Result<B::Summary> {
        let (spec, key, span) = (B::SPEC.series(), key.to_key_bson(), Span::of(&range));
        let op = crate::observe::op_span!(bucket.summary, self.live, spec.collection);
        crate::observe::traced!(op, self.summary_of::<B>(spec, key, span))
    }

    async fn summary_of<B: Bucket + ?Sized>(
        &self,
        spec: SeriesSpec<'_>,
        key: Bson,
        span: Span,
    ) -> Result<B::Summary> {
        let target = archive_spec(&spec, self.archive.collection);
        if span.is_all() && spec.keeps.rollup.is_some() {
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
            Ok(Some(v)) => value_key(&raw_value(spec.collection, v)?),
            _ => Vec::new(),
        };
        if seen.insert(id) {
            unique.push(raw);
        }
    }
    super::time::in_push_order(spec, unique, Vec::new())
}
