//! Adopting the outlier layout: migrating a collection with unbounded arrays into it, in place
//! ([`migrate_outlier`]), and the typed forms of the adoption functions that
//! `#[derive(Outlier)]`'s `analyze` and `migrate` call ([`analyze`], [`migrate`]).

use crate::store::Error as StoreError;
use std::collections::{HashMap, VecDeque};

use bson::oid::ObjectId;
use bson::{doc, Bson, Document};

use super::preflight::{require_collection, require_exists, require_field};
use super::MigrateReport;
use crate::codec::order::value_key;
use crate::outlier::Outlier;
use crate::pass::checkpoint::Checkpoint;
use crate::pass::scan::{array_len, id, scan, sorted, MIGRATE};
use crate::pass::Options;
use crate::series::take_array;
use crate::series::Kept;
use crate::spec::OutlierSpec;
use crate::store::query::{Filter, FindOptions, Path, Update};
use crate::store::Store;
use crate::Result;

/// Main documents read per transaction at most.
const DOCS_PER_BATCH: usize = 100;

/// The documents that break the layout: their array holds more than `threshold` items (an
/// element at index `threshold` exists).
fn over_threshold(spec: &OutlierSpec<'_>) -> Filter {
    Filter::Exists(
        format!("{}.{}", spec.items_field, spec.threshold).into(),
        true,
    )
}

/// The settings that shape an outlier migration's result, pinned by its checkpoint.
fn settings(spec: &OutlierSpec<'_>) -> Document {
    let ov = &spec.overflow;
    doc! {
        "array": spec.items_field, "threshold": i64::from(spec.threshold), "flag": spec.flag_field,
        "overflow": ov.collection, "reference": ov.key_field, "extra": ov.items_field,
        "chunk": i64::from(ov.size), "count": ov.count_field, "seq": ov.order.field(),
    }
}

/// How to start an outlier migration over with other settings.
const RESTART: &str = "run the migration with the new settings: documents it migrated already keep \
                       their items (main array and overflow), only documents over the new threshold are rewritten";

/// Refuses a first run pointed at data that is not there: the collection, a document with
/// the array, and (when the overflow collection holds documents) one with the reference.
async fn preflight<S: Store>(store: &S, spec: &OutlierSpec<'_>) -> Result<()> {
    let ov = &spec.overflow;
    require_collection(store, spec.collection).await?;
    require_exists(store, spec.collection, spec.items_field, "the array to cap").await?;
    let has_ref = Filter::Exists(Path::from(ov.key_field), true);
    let what = "the reference to the main document";
    require_field(store, ov.collection, has_ref, ov.key_field, what, true).await
}

/// Brings `spec.collection` into the outlier layout in place: each document whose array holds
/// more than `threshold` items keeps the first `threshold`, is flagged, and the rest move to
/// overflow chunks numbered from 1, in their order, followed by whatever overflow the document
/// had (seed-layout overflow documents and chunks written by pushes that raced the migration,
/// renumbered). Documents at or under the threshold are not touched.
///
/// Each batch of documents is one transaction (the documents are re-read inside it, so a push
/// that landed since is kept, after the moved items) that also advances the checkpoint; a run
/// resumes after the last committed batch. A second run finds nothing over the threshold and
/// writes nothing.
///
/// Refused before anything is written ([`Error::SettingsChanged`](crate::Error::SettingsChanged)): a run whose settings
/// (array, threshold, flag, overflow collection, reference, extra array, chunk size, count and
/// sequence fields) differ from those of the checkpoint of an earlier run, part-way or
/// finished. A first run refuses a collection that does not exist or where no document has
/// the array, and an overflow collection with documents of which none has the reference
/// ([`Error::SourceNotFound`](crate::Error::SourceNotFound)). The overflow collection's indexes are created (and the
/// library's stale ones for another reference dropped) only when a document is to be
/// rewritten: a run that moves nothing creates nothing.
pub async fn migrate_outlier<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
    opts: &Options<'_>,
) -> Result<MigrateReport> {
    crate::observe::traced_op!(
        outlier.migrate,
        store,
        spec.collection,
        migrate_outlier_in::<S>(store, spec, opts)
    )
}

async fn migrate_outlier_in<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
    opts: &Options<'_>,
) -> Result<MigrateReport> {
    spec.check()?;
    let coll = spec.collection;
    let mut report = MigrateReport {
        kind: "outlier".into(),
        source: coll.to_owned(),
        target: coll.to_owned(),
        dry_run: opts.dry_run,
        ..MigrateReport::default()
    };
    let mut ckpt = Checkpoint::load(store, format!("outlier:{coll}")).await?;
    ckpt.pin(settings(spec), &[], RESTART)?;
    if !ckpt.exists() {
        preflight(store, spec).await?;
    }
    report.already_finished = ckpt.state() == Some("finished");
    let after = match ckpt.state() {
        Some("running") => ckpt.get("after").cloned(),
        _ => None,
    };
    report.resumed_from = after.clone();
    if !opts.dry_run {
        report.ended_sessions = ckpt.end_earlier_sessions(store).await?;
    }
    let mut filter = vec![over_threshold(spec)];
    if let Some(a) = &after {
        filter.push(Filter::Gt("_id".into(), a.clone()));
    }
    let filter = Filter::And(filter);
    let sort: Vec<(Path, i32)> = vec![("_id".into(), 1)];
    if opts.dry_run {
        let chunk = u64::from(spec.overflow.size);
        let thr = u64::from(spec.threshold);
        report.scanned = scan(
            store,
            coll,
            &filter,
            sorted(MIGRATE, sort, vec![]),
            opts,
            "migrate",
            |doc| {
                if let Some((n, _)) = array_len(&doc, spec.items_field) {
                    if n > thr {
                        report.changed += 1;
                        report.moved_items += n - thr;
                        report.written += (n - thr).div_ceil(chunk);
                    }
                }
                Ok(())
            },
        )
        .await?;
        return Ok(report);
    }
    // The ids to migrate, read ahead in one stream; each batch re-reads its documents.
    let mut ids = Vec::new();
    report.scanned = scan(
        store,
        coll,
        &filter,
        sorted(MIGRATE, sort, vec!["_id".into()]),
        opts,
        "scan",
        |doc| {
            ids.push(id(coll, &doc)?);
            Ok(())
        },
    )
    .await?;
    let total = ids.len() as u64;
    if total > 0 {
        spec.overflow.ensure_indexes(store).await?;
    }
    let mut pending: VecDeque<Bson> = ids.into();
    let mut done = 0u64;
    opts.report("migrate", 0, Some(total));
    // Documents re-read per transaction: as many as the last one handled before its item
    // budget ran out, times two (large arrays: few; small ones: up to DOCS_PER_BATCH).
    let mut per_batch = DOCS_PER_BATCH;
    while !pending.is_empty() {
        let take: Vec<Bson> = pending.iter().take(per_batch).cloned().collect();
        let budget = opts.batch_items.max(1) as u64;
        let mut work = (take, Outcome::default(), *spec);
        let (_, retries) = ckpt
            .batch(store, &mut work, |tx, (take, out, spec)| {
                Box::pin(async move {
                    *out = migrate_batch(tx, spec, take, budget).await?;
                    let last = out.last.clone().unwrap_or(Bson::Null);
                    Ok((
                        (),
                        doc! {"state": "running", "after": last, "kind": "outlier"},
                    ))
                })
            })
            .await?;
        let out = work.1;
        report.retries += retries;
        report.batches += 1;
        report.changed += out.changed;
        report.moved_items += out.moved;
        report.written += out.written;
        for _ in 0..out.processed {
            pending.pop_front();
        }
        for parent in &out.touched {
            crate::series::memo(store).take_next_number(spec.overflow.collection, parent);
        }
        done += out.processed as u64;
        per_batch = if out.processed < per_batch {
            (out.processed * 2).clamp(1, DOCS_PER_BATCH)
        } else {
            (per_batch * 2).min(DOCS_PER_BATCH)
        };
        opts.report("migrate", done, Some(total));
    }
    if report.batches > 0 || ckpt.state() == Some("running") {
        ckpt.set(store, doc! {"state": "finished"}).await?;
    }
    if opts.verify {
        report.verified = Some(super::verify_outlier(store, spec, opts).await?);
    }
    Ok(report)
}

#[derive(Default)]
struct Outcome {
    /// Documents of the batch handled (a prefix of those asked for).
    processed: usize,
    last: Option<Bson>,
    changed: u64,
    moved: u64,
    written: u64,
    touched: Vec<Bson>,
}

/// One transaction's work: the documents `ids` (in order) re-read, each over the threshold
/// rewritten, until `budget` items moved.
async fn migrate_batch<T: Store>(
    tx: &T,
    spec: &OutlierSpec<'_>,
    ids: &[Bson],
    budget: u64,
) -> Result<Outcome> {
    let coll = spec.collection;
    let ov = &spec.overflow;
    let in_order = FindOptions {
        sort: vec![("_id".into(), 1)],
        ..FindOptions::default()
    };
    let mains = tx
        .find(coll, &Filter::In("_id".into(), ids.to_vec()), &in_order)
        .await?;
    let mut by_id: HashMap<Vec<u8>, Document> = mains
        .into_iter()
        .map(|d| (value_key(d.get("_id").unwrap_or(&Bson::Null)), d))
        .collect();
    let threshold = spec.threshold as usize;
    let mut out = Outcome::default();
    // Which documents this batch moves, with their items beyond the threshold.
    let mut moves: Vec<(Bson, Vec<Bson>)> = Vec::new();
    for id in ids {
        out.processed += 1;
        out.last = Some(id.clone());
        let Some(mut doc) = by_id.remove(&value_key(id)) else {
            continue; // deleted since the scan
        };
        let items = take_array(coll, spec.items_field, &mut doc)?;
        if items.len() <= threshold {
            continue; // in the layout (pushed to, or migrated, since the scan)
        }
        let mut items = items;
        let beyond = items.split_off(threshold);
        out.moved += beyond.len() as u64;
        let mut set = Update {
            set: vec![
                (Path::from(spec.items_field), Bson::Array(items)),
                (Path::from(spec.flag_field), Bson::Boolean(true)),
            ],
            ..Update::default()
        };
        tx.update_one(coll, &Filter::Eq("_id".into(), id.clone()), &mut set, false)
            .await?;
        moves.push((id.clone(), beyond));
        if out.moved >= budget {
            break;
        }
    }
    if moves.is_empty() {
        return Ok(out);
    }
    // What overflow the moved documents had: the seed's unnumbered documents first, then the
    // chunks in order, as the reads take them.
    let parents: Vec<Bson> = moves.iter().map(|(id, _)| id.clone()).collect();
    let of_parents = Filter::In(Path::from(ov.key_field), parents.clone());
    let existing = tx
        .find(
            ov.collection,
            &of_parents,
            &FindOptions {
                sort: ov.sort_by_key(),
                ..FindOptions::default()
            },
        )
        .await?;
    let mut had: HashMap<Vec<u8>, Vec<Bson>> = HashMap::new();
    for doc in existing {
        let parent = doc.get(ov.key_field).cloned().unwrap_or(Bson::Null);
        let items = crate::series::take_items(ov.collection, ov.items_field, doc)?;
        had.entry(value_key(&parent)).or_default().extend(items);
    }
    if !had.is_empty() {
        tx.delete_many(ov.collection, &of_parents).await?;
    }
    let mut chunks = Vec::new();
    let size = ov.size as usize;
    for (parent, mut items) in moves {
        items.extend(had.remove(&value_key(&parent)).unwrap_or_default());
        for (i, part) in items.chunks(size).enumerate() {
            chunks.push(ov.new_doc(
                &parent,
                Bson::ObjectId(ObjectId::new()),
                i as i64 + 1,
                part.to_vec(),
                &Kept::NONE,
            ));
        }
        out.changed += 1;
        out.touched.push(parent);
    }
    out.written = chunks.len() as u64;
    tx.insert_many(ov.collection, chunks)
        .await
        .map_err(|e| match e {
            StoreError::DuplicateKey {
                collection,
                message,
            } => StoreError::DuplicateKey {
                collection,
                message: format!("{message} (an overflow chunk written during the migration?)"),
            },
            e => e,
        })?;
    Ok(out)
}

#[doc = crate::__outlier_doc!(analyze)]
///
/// The analysis: [`adopt::analyze_outlier`](crate::adopt::analyze_outlier).
pub async fn analyze<T: Outlier, S: Store>(store: &S) -> Result<super::OutlierAnalysis> {
    super::analyze_outlier(store, &T::SPEC, &Options::default()).await
}

#[doc = crate::__outlier_doc!(migrate)]
///
/// The migration: [`adopt::migrate_outlier`](crate::adopt::migrate_outlier).
pub async fn migrate<T: Outlier, S: Store>(store: &S, opts: &Options<'_>) -> Result<MigrateReport> {
    crate::outlier::validated::<T, S>(store).await?;
    migrate_outlier(store, &T::SPEC, opts).await
}
