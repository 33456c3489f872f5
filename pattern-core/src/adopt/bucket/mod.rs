//! Adopting the bucket layout: migrating a flat collection (one document per item) into a
//! bucket collection ([`migrate_bucket`]), and the typed forms of the adoption functions that
//! `#[derive(Bucket)]`'s `analyze`, `analyze_source` and `migrate` call ([`analyze`],
//! [`analyze_source`], [`migrate`]).

use bson::{doc, Bson, Document};
use futures::StreamExt;

use super::preflight::{require_collection, require_exists, require_field};
use super::{MigrateReport, Source};
use crate::bucket::Bucket;
use crate::codec::as_int;
use crate::codec::order::values_equal;
use crate::key::id_prefix;
use crate::key::EpochSeconds;
use crate::pass::checkpoint::Checkpoint;
use crate::pass::scan::{count, sorted, MIGRATE, SCAN_BATCH};
use crate::pass::Options;
use crate::spec::{BucketSpec, SeriesSpec};
use crate::store::query::{Filter, Path};
use crate::store::Store;
use crate::{Error, Result};

mod write;
use write::write_parts;

/// An item's time in epoch milliseconds: a BSON date, or a number of epoch seconds (as the
/// typed time fields read them, [`EpochSeconds`]).
fn millis_of(v: Option<&Bson>) -> Option<i64> {
    match v? {
        Bson::DateTime(d) => d.epoch_millis(),
        Bson::Int32(n) => i64::from(*n).epoch_millis(),
        Bson::Int64(n) => n.epoch_millis(),
        Bson::Double(f) if f.is_finite() => Some((f * 1000.0) as i64),
        _ => None,
    }
}

/// Where a key's migration stands: the buckets written from the source so far.
#[derive(Clone, Debug, Default)]
struct KeyState {
    /// Source items of the key migrated before.
    done: i64,
    /// Buckets holding them (all full).
    pages: i64,
    /// Seconds and suffix of the `_id` of bucket `pages`.
    last_id: Option<(i64, u32)>,
}

/// A run of one key's source items written in one transaction.
struct Part {
    key: Bson,
    prefix: String,
    items: Vec<Bson>,
    millis: Vec<i64>,
    source_ids: Vec<Bson>,
    state: KeyState,
    /// The key's last source items: the migration of the key ends with this part.
    last: bool,
}

impl Part {
    /// Takes the first `n` items (`buckets` closed buckets) as a part that does not end the key;
    /// this part keeps the rest, its state moved past them (the `_id` of its last bucket is
    /// learned when they are written).
    fn take_head(&mut self, n: usize, buckets: usize) -> Part {
        let next = KeyState {
            done: self.state.done + n as i64,
            pages: self.state.pages + buckets as i64,
            last_id: None,
        };
        let rest = (
            self.items.split_off(n),
            self.millis.split_off(n),
            self.source_ids.split_off(n),
        );
        Part {
            key: self.key.clone(),
            prefix: self.prefix.clone(),
            items: std::mem::replace(&mut self.items, rest.0),
            millis: std::mem::replace(&mut self.millis, rest.1),
            source_ids: std::mem::replace(&mut self.source_ids, rest.2),
            state: std::mem::replace(&mut self.state, next),
            last: false,
        }
    }
}

/// The settings a checkpoint was written with: a resume with others is refused (buckets of
/// one migration must not mix sizes, bounds or summaries).
fn fingerprint(spec: &BucketSpec<'_>, from: &Source<'_>, remove_source: bool) -> Document {
    let bounds = match spec.keeps.bounds {
        Some((min, max)) => Bson::Array(vec![min.into(), max.into()]),
        None => Bson::Null,
    };
    let summary: Vec<Bson> = spec
        .keeps
        .summary
        .iter()
        .map(|a| Bson::String(format!("{}({})={}", a.op.name(), a.item_field, a.field)))
        .collect();
    let mut print = doc! {
        "source": from.collection, "key": from.key_field, "time": from.time_field,
        "target": spec.collection, "target_key": spec.key_field, "size": spec.size as i64, "items": spec.items_field,
        "count": spec.count_field, "page": spec.page_field, "remove_source": remove_source,
        "bounds": bounds, "summary": summary,
    };
    // Only when set: a checkpoint of a migration without a span resumes as before.
    if let Some(span) = spec.keeps.span {
        print.insert("span", span);
    }
    print
}

/// How to start a bucket migration over with other settings.
const RESTART: &str =
    "drop the bucket collection (its buckets hold the items migrated so far: a new run \
                       would add them again) and run the migration with the new settings";

/// Refuses a first run pointed at data that is not there: the source collection, a document
/// with the key and one with the time, and (when the bucket collection holds documents) one
/// with the key there.
async fn preflight<S: Store>(store: &S, spec: &BucketSpec<'_>, from: &Source<'_>) -> Result<()> {
    let src = from.collection;
    require_collection(store, src).await?;
    require_exists(store, src, from.key_field, "the key").await?;
    require_exists(store, src, from.time_field, "the item's time").await?;
    let has_key = Filter::Exists(Path::from(spec.key_field), true);
    let (key, what) = (spec.key_field, "the key of the buckets");
    require_field(store, spec.collection, has_key, key, what, true).await
}

/// Moves the items of a flat collection (`from`: one document per item, the bucket page's
/// "before" layout) into `spec`'s buckets: each key's items in time order (then `_id`), `size`
/// per bucket, numbered from 1, with the time bounds and summary the spec keeps. An item is
/// the source document without its `_id` and key. The source is left as it was unless
/// [`Options::remove_source`] (then each batch deletes the documents it migrated).
///
/// Each batch (up to [`Options::batch_items`] items: whole keys, or the full buckets of a key
/// that holds more) is one transaction that also advances the checkpoint. Items the application
/// pushed to a key meanwhile (through the library's push) are re-bucketed after the migrated
/// ones inside the same transaction, in their order.
///
/// The source is read once, in key, time and `_id` order: through an index `{key: 1, time: 1,
/// _id: 1}` when it has one, else sorted by the server (`allowDiskUse`). The migration creates
/// no index on the source: building one over a large collection can take long on a busy
/// server (`TEST-SERVER.md` in the repository, T11).
///
/// Source documents without a key (an integer, string or ObjectId) or a time are not migrated:
/// counted in `skipped`... (reported as `scanned - moved_items`).
pub async fn migrate_bucket<S: Store>(
    store: &S,
    spec: &BucketSpec<'_>,
    from: &Source<'_>,
    opts: &Options<'_>,
) -> Result<MigrateReport> {
    crate::observe::traced_op!(
        bucket.migrate,
        store,
        spec.collection,
        migrate_bucket_in::<S>(store, spec, from, opts)
    )
}

async fn migrate_bucket_in<S: Store>(
    store: &S,
    spec: &BucketSpec<'_>,
    from: &Source<'_>,
    opts: &Options<'_>,
) -> Result<MigrateReport> {
    let series = spec.series();
    let mut report = MigrateReport {
        kind: "bucket".into(),
        source: from.collection.to_owned(),
        target: spec.collection.to_owned(),
        dry_run: opts.dry_run,
        ..MigrateReport::default()
    };
    if spec.size == 0 || spec.size > i32::MAX as u32 {
        return Err(Error::invalid(format!(
            "bucket size must be in 1..=2^31-1, got {}",
            spec.size
        )));
    }
    let mut ckpt = Checkpoint::load(
        store,
        format!("bucket:{}->{}", from.collection, spec.collection),
    )
    .await?;
    let print = fingerprint(spec, from, opts.remove_source);
    ckpt.pin(print, &[], RESTART)?;
    if !ckpt.exists() {
        preflight(store, spec, from).await?;
    }
    if ckpt.state() == Some("finished") {
        report.already_finished = true;
        if !opts.dry_run && opts.verify {
            report.verified = Some(super::verify_bucket(store, spec, opts).await?);
        }
        return Ok(report);
    }
    // Where to resume: the last key a batch wrote, and how far.
    let resume = match ckpt.state() {
        Some("running") => ckpt.get("key").cloned().map(|key| {
            let complete = ckpt
                .get("complete")
                .and_then(Bson::as_bool)
                .unwrap_or(false);
            let state = KeyState {
                done: ckpt.get("key_done").and_then(as_int).unwrap_or(0),
                pages: ckpt.get("pages").and_then(as_int).unwrap_or(0),
                last_id: match (
                    ckpt.get("last_secs").and_then(as_int),
                    ckpt.get("last_suffix").and_then(as_int),
                ) {
                    (Some(s), Some(x)) => Some((s, x as u32)),
                    _ => None,
                },
            };
            (key, complete, state)
        }),
        _ => None,
    };
    report.resumed_from = resume.as_ref().map(|(k, _, _)| k.clone());
    if !opts.dry_run {
        report.ended_sessions = ckpt.end_earlier_sessions(store).await?;
    }
    let filter = match &resume {
        Some((k, true, _)) => Filter::Gt(from.key_field.to_owned().into(), k.clone()),
        Some((k, false, _)) => Filter::Gte(from.key_field.to_owned().into(), k.clone()),
        None => Filter::and([]),
    };
    // Items of the resumed key to pass over: migrated already (unless they were removed).
    let (resumed, mut skip) = match &resume {
        Some((k, false, st)) if !opts.remove_source => (Some(k), st.done),
        Some((k, false, _)) => (Some(k), 0),
        _ => (None, 0),
    };
    // Keys by value: the sort has an Int32 5 and an Int64 5 as one key.
    let is_resumed = |key: &Bson| resumed.is_some_and(|r| values_equal(r, key));
    let resume_state = match &resume {
        Some((_, false, st)) => st.clone(),
        _ => KeyState::default(),
    };
    let total = if opts.progress.is_some() {
        Some(count(store, from.collection, &filter, MIGRATE).await?)
    } else {
        None
    };
    opts.report("migrate", 0, total);
    let sort: Vec<(Path, i32)> = vec![
        (from.key_field.to_owned().into(), 1),
        (from.time_field.to_owned().into(), 1),
        ("_id".into(), 1),
    ];
    let find = sorted(MIGRATE, sort, vec![]);
    let budget = opts.batch_items.max(spec.size as usize);
    let mut docs = store.scan(from.collection, &filter, &find, SCAN_BATCH);
    let mut done_parts: Vec<Part> = Vec::new();
    let mut current: Option<Part> = None;
    let mut pending = 0usize;
    let mut read = 0u64;
    while let Some(doc) = docs.next().await {
        let raw = doc?;
        read += 1;
        if read.is_multiple_of(u64::from(SCAN_BATCH)) {
            opts.report("migrate", read, total);
        }
        let mut doc = crate::codec::raw::from_raw(from.collection, &raw)?;
        let source_id = doc.remove("_id").unwrap_or(Bson::Null);
        let key = doc.remove(from.key_field).unwrap_or(Bson::Null);
        let (Ok(prefix), Some(millis)) = (
            id_prefix(from.collection, &key),
            millis_of(doc.get(from.time_field)),
        ) else {
            continue;
        };
        if skip > 0 && is_resumed(&key) {
            skip -= 1;
            continue;
        }
        if !current.as_ref().is_some_and(|p| values_equal(&p.key, &key)) {
            if let Some(mut part) = current.take() {
                part.last = true;
                done_parts.push(part);
            }
            let state = if is_resumed(&key) {
                resume_state.clone()
            } else {
                KeyState::default()
            };
            current = Some(Part {
                key,
                prefix,
                items: Vec::new(),
                millis: Vec::new(),
                source_ids: Vec::new(),
                state,
                last: false,
            });
        }
        let part = current.as_mut().expect("set above");
        part.items.push(Bson::Document(doc));
        part.millis.push(millis);
        part.source_ids.push(source_id);
        pending += 1;
        if pending >= budget {
            // The open key's full buckets go with the batch; its remainder waits for more.
            let part = current.as_mut().expect("set above");
            let (full, buckets) = series.closed_prefix(&part.millis);
            let mut batch = std::mem::take(&mut done_parts);
            if full > 0 {
                batch.push(part.take_head(full, buckets));
            }
            pending = current.as_ref().map_or(0, |p| p.items.len());
            let last_id =
                write_batch(store, &series, from, &mut ckpt, batch, opts, &mut report).await?;
            opts.report("migrate", read, total);
            if let (Some(id), Some(p)) = (last_id, current.as_mut()) {
                if p.state.last_id.is_none() && p.state.pages > 0 {
                    p.state.last_id = Some(id);
                }
            }
        }
    }
    drop(docs);
    opts.report("migrate", read, total);
    report.scanned = read;
    if let Some(mut part) = current.take() {
        part.last = true;
        done_parts.push(part);
    }
    if !done_parts.is_empty() {
        write_batch(
            store,
            &series,
            from,
            &mut ckpt,
            done_parts,
            opts,
            &mut report,
        )
        .await?;
    }
    if !opts.dry_run {
        if report.batches > 0 || ckpt.state() == Some("running") {
            ckpt.set(store, doc! {"state": "finished"}).await?;
        }
        if opts.verify {
            report.verified = Some(super::verify_bucket(store, spec, opts).await?);
        }
    }
    Ok(report)
}

/// Writes `parts` in one transaction (nothing with `dry_run`: counted only). Returns the
/// `_id` (seconds, suffix) of the last full bucket of the last part when that part does not
/// end its key (the next part of the key numbers its `_id`s after it).
#[allow(clippy::too_many_arguments)] // one batch's whole context, each used
async fn write_batch<'s, S: Store>(
    store: &S,
    series: &SeriesSpec<'_>,
    from: &Source<'s>,
    ckpt: &mut Checkpoint,
    parts: Vec<Part>,
    opts: &Options<'_>,
    report: &mut MigrateReport,
) -> Result<Option<(i64, u32)>> {
    let Some(tail) = parts.last() else {
        return Ok(None);
    };
    let items: u64 = parts.iter().map(|p| p.items.len() as u64).sum();
    let keys_done = parts.iter().filter(|p| p.last).count() as u64;
    if opts.dry_run {
        report.moved_items += items;
        report.changed += keys_done;
        report.written += parts
            .iter()
            .map(|p| series.cut(&p.millis).len() as u64)
            .sum::<u64>();
        return Ok(None);
    }
    // The bucket collection's indexes before its first write (once per store: a lookup after).
    series.ensure_indexes(store).await?;
    // Buckets written without roll-ups: the collection's are not trusted until `backfill`
    // recomputes them.
    if series.keeps.rollup.is_some() && series.bounds_mark(store).await?.rollup != 0 {
        crate::series::mark_rollup(store, series, false).await?;
    }
    // Buckets cut inside transactions, of any width: the collection's width is no longer
    // kept (its range reads scan as a collection's that never kept one), before the first.
    if series.bounds_mark(store).await?.width.is_some() && series.span_bounds().is_none() {
        crate::series::width::forget(store, series.collection).await?;
    }
    let (tail_key, tail_last, tail_done, tail_pages) = (
        tail.key.clone(),
        tail.last,
        tail.state.done + tail.items.len() as i64,
        tail.state.pages + series.closed_prefix(&tail.millis).1 as i64,
    );
    struct Ctx<'s> {
        series: SeriesSpec<'s>,
        parts: Vec<Part>,
        set: Document,
        written: u64,
        last_full: Option<(i64, u32)>,
    }
    let set = doc! {
        "state": "running", "kind": "bucket", "key": tail_key,
        "key_done": tail_done, "complete": tail_last, "pages": tail_pages,
    };
    let mut ctx = Ctx {
        series: *series,
        parts,
        set,
        written: 0,
        last_full: None,
    };
    let remove_from = opts.remove_source.then_some(from.collection);
    let time_field = from.time_field;
    let (_, retries) = ckpt
        .batch(store, &mut ctx, |tx, c| {
            let time_field = time_field.to_owned();
            let remove_from = remove_from.map(str::to_owned);
            Box::pin(async move {
                let (w, last) =
                    write_parts(tx, &c.series, &c.parts, &time_field, remove_from.as_deref())
                        .await?;
                c.written = w;
                c.last_full = last;
                let mut set = c.set.clone();
                if let Some((s, x)) = last {
                    set.insert("last_secs", s);
                    set.insert("last_suffix", i64::from(x));
                }
                Ok(((), set))
            })
        })
        .await?;
    let Ctx {
        parts,
        written,
        last_full,
        ..
    } = ctx;
    for p in &parts {
        crate::series::memo(store).take_next_number(series.collection, &p.key);
    }
    report.retries += retries;
    report.batches += 1;
    report.moved_items += items;
    report.changed += keys_done;
    report.written += written;
    Ok(last_full)
}

#[doc = crate::__bucket_doc!(analyze)]
///
/// The analysis: [`adopt::analyze_bucket`](crate::adopt::analyze_bucket).
pub async fn analyze<B: Bucket + ?Sized, S: Store>(store: &S) -> Result<super::BucketAnalysis> {
    super::analyze_bucket(store, &B::SPEC, None, &Options::default()).await
}

#[doc = crate::__bucket_doc!(analyze_source)]
///
/// The analysis: [`adopt::analyze_bucket`](crate::adopt::analyze_bucket).
pub async fn analyze_source<B: Bucket + ?Sized, S: Store>(
    store: &S,
    from: &Source<'_>,
) -> Result<super::BucketAnalysis> {
    super::analyze_bucket(store, &B::SPEC, Some(from), &Options::default()).await
}

#[doc = crate::__bucket_doc!(migrate)]
///
/// The migration: [`adopt::migrate_bucket`](crate::adopt::migrate_bucket).
pub async fn migrate<B: Bucket + ?Sized, S: Store>(
    store: &S,
    from: &Source<'_>,
    opts: &Options<'_>,
) -> Result<MigrateReport> {
    crate::bucket::validated::<B, S>(store).await?;
    migrate_bucket(store, &B::SPEC, from, opts).await
}
