//! Summaries kept on write (the computed pattern): each bucket keeps aggregates of its items
//! (`#[bucket(summary(sum = "qty", min = "price", max = "price"))]`), updated by the push
//! itself; [`summary`] combines whole buckets from them and computes the buckets at the edges
//! of a time range, and those without a complete summary, from their items. [`backfill`]
//! completes the buckets written before the attribute (or time bounds) existed.

use crate::store::Error as StoreError;
use std::ops::RangeBounds;

use bson::{Bson, DateTime, RawBsonRef, RawDocument, RawDocumentBuf};

use super::rollup::Rollup;
use super::time::{bounds_of, in_push_order, overlapping, Span};
use super::totals::Totals;
use super::Bucket;
use crate::codec::raw::raw_value;
use crate::key::KeyRef;
use crate::series;
use crate::spec::{SeriesSpec, BOUNDED_FIELD, SUMMARIZED_FIELD};
use crate::store::query::{Filter, FindOptions, Path, Update};
use crate::store::Store;
use crate::{Error, Result};

#[doc = crate::__bucket_doc!(summary)]
pub async fn summary<B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &S,
    key: &Q,
    range: impl RangeBounds<DateTime>,
) -> Result<B::Summary> {
    let (spec, key, span) = (B::SPEC.series(), key.to_key_bson(), Span::of(&range));
    let op = crate::observe::op_span!(bucket.summary, store, spec.collection);
    let totals = crate::observe::traced!(op, async {
        totals_in::<B, S>(store, &spec, &key, span, Rollup::LiveOnly).await
    })?;
    Ok(totals.into())
}

/// [`summary`] of the buckets of `spec`'s collection (the live one or an archive).
pub(super) async fn totals_in<B: Bucket + ?Sized, S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    span: Span,
    rollup: Rollup,
) -> Result<Totals> {
    let n = spec.keeps.summary.len();
    if n == 0 {
        return Err(Error::invalid(format!(
            "collection `{}` keeps no summary: #[bucket(summary(...))]",
            spec.collection
        )));
    }
    let mut totals = Totals::new(n);
    if span.is_empty() {
        return Ok(totals);
    }
    let mut wanted: Vec<Path> = vec![spec.count_field.into(), SUMMARIZED_FIELD.into()];
    wanted.extend(spec.keeps.summary.iter().map(|a| Path::from(a.field)));
    if let Some((min, max)) = spec.keeps.bounds {
        wanted.extend([Path::from(min), Path::from(max)]);
    }
    // The buckets that may hold items in range, light (their kept values only), and those
    // without bounds, whole.
    let (light, mut whole) = if span.is_all() {
        spec.ensure_indexes(store).await?;
        // `#[bucket(rollup)]`: the key's roll-up, one document.
        if let Some(totals) = super::rollup::rolled_up(store, spec, key, rollup).await? {
            return Ok(totals);
        }
        let opts = FindOptions {
            projection: wanted,
            ..FindOptions::default()
        };
        let all = spec.docs_of(key, []);
        let docs = store.find_raw(spec.collection, &all, &opts).await?;
        (docs, Vec::new())
    } else {
        bounds_of(spec)?;
        overlapping(store, spec, key, span, wanted).await?
    };
    let mut itemized: Vec<Bson> = Vec::new();
    for doc in &light {
        match summarized(spec, doc, span)? {
            Some(count) => {
                totals.items += count;
                let id = id_of(spec, doc)?;
                for (i, agg) in spec.keeps.summary.iter().enumerate() {
                    match doc.get(agg.field) {
                        Ok(None) | Ok(Some(RawBsonRef::Null)) | Err(_) => {}
                        Ok(Some(v)) => {
                            totals.add(spec, i, &raw_value(spec.collection, v)?, id.as_ref())?
                        }
                    }
                }
            }
            None => itemized.push(id_of(spec, doc)?.unwrap_or(Bson::Null)),
        }
    }
    if !itemized.is_empty() {
        let by_id = Filter::and([spec.by_key(key), Filter::In("_id".into(), itemized)]);
        let docs = (store.find_raw(spec.collection, &by_id, &FindOptions::default())).await?;
        whole = in_push_order(spec, docs, whole)?;
    }
    for raw in whole {
        add_items::<B>(spec, &raw, span, &mut totals)?;
    }
    Ok(totals)
}

/// A bucket's count when its kept summary covers the range's part of it: complete (marked
/// for every aggregate) and wholly inside the range; `None` when its items must be read.
fn summarized(spec: &SeriesSpec<'_>, doc: &RawDocument, span: Span) -> Result<Option<u64>> {
    let complete = match doc.get(SUMMARIZED_FIELD) {
        Ok(Some(RawBsonRef::Array(a))) => {
            let marked: Vec<&str> = a.into_iter().filter_map(|v| v.ok()?.as_str()).collect();
            spec.keeps
                .summary
                .iter()
                .all(|agg| marked.contains(&agg.field))
        }
        _ => false,
    };
    if !complete {
        return Ok(None);
    }
    if !span.is_all() {
        let Some((min, max)) = spec.keeps.bounds else {
            return Ok(None);
        };
        let date = |f: &str| match doc.get(f) {
            Ok(Some(RawBsonRef::DateTime(d))) => Some(d.timestamp_millis()),
            _ => None,
        };
        match (date(min), date(max)) {
            (Some(a), Some(b)) if span.covers(a, b) => {}
            _ => return Ok(None),
        }
    }
    let count = match doc.get(spec.count_field) {
        Ok(Some(v)) => crate::codec::as_int(&raw_value(spec.collection, v)?),
        _ => None,
    };
    Ok(count.and_then(|c| u64::try_from(c).ok()))
}

fn id_of(spec: &SeriesSpec<'_>, doc: &RawDocument) -> Result<Option<Bson>> {
    match doc.get("_id") {
        Ok(Some(v)) => Ok(Some(raw_value(spec.collection, v)?)),
        _ => Ok(None),
    }
}

/// Adds the items of bucket `raw` whose time is in `span` to `totals`.
fn add_items<B: Bucket + ?Sized>(
    spec: &SeriesSpec<'_>,
    raw: &RawDocumentBuf,
    span: Span,
    totals: &mut Totals,
) -> Result<()> {
    let id = id_of(spec, raw)?;
    let items: Vec<B::Item> = series::decode_raw_items(spec.collection, spec.items_field, raw)?;
    for item in &items {
        let inside = span.is_all() || B::item_millis(item).is_some_and(|t| span.contains(t));
        if !inside {
            continue;
        }
        totals.items += 1;
        let Bson::Document(doc) = crate::codec::ser::item(item)? else {
            continue;
        };
        for (i, agg) in spec.keeps.summary.iter().enumerate() {
            match doc.get(agg.item_field) {
                None | Some(Bson::Null) => {}
                Some(v) => totals.add(spec, i, v, id.as_ref())?,
            }
        }
    }
    Ok(())
}

#[doc = crate::__bucket_doc!(backfill)]
///
/// The roll-ups' step is exact only with no push meanwhile (after adopting a collection, or after
/// [`Error::RollupBehind`](crate::Error::RollupBehind)).
///
/// Once buckets were moved to an archive ([`archive`](super::archive)), a roll-up counts the
/// archived items too: the archives on the same store (which the collection's mark records)
/// have their buckets completed the same way and counted in every key's roll-up, and no
/// archive run may go on meanwhile either. An archive on another store cannot be read from
/// here: then nothing is written and the call is refused ([`store::Error::InvalidInput`](crate::store::Error::InvalidInput));
/// [`History::backfill`](super::History::backfill) reads it.
pub async fn backfill<B: Bucket + ?Sized, S: Store>(store: &S) -> Result<u64> {
    crate::observe::traced_op!(
        bucket.backfill,
        store,
        B::SPEC.collection,
        backfill_with::<B, S, S>(store, None)
    )
}

/// [`backfill`], and with `other` (the archive a [`History`](super::History) reads, on its
/// own store) its buckets too, counted in the roll-ups.
pub(super) async fn backfill_with<B: Bucket + ?Sized, S: Store, A: Store>(
    store: &S,
    other: Option<(&A, &str)>,
) -> Result<u64> {
    let spec = B::SPEC.series();
    if spec.keeps.is_none() {
        return Ok(0);
    }
    super::validated::<B, S>(store).await?;
    spec.ensure_indexes(store).await?;
    // The archives the roll-ups count, before anything is written (refused when one cannot be
    // read from here).
    let archives = if spec.keeps.rollup.is_some() {
        super::rollup::archives_counted(store, &spec, other.map(|(_, c)| c)).await?
    } else {
        Vec::new()
    };
    let mut done = complete_all::<B, S>(store, &spec).await?;
    if let Some((a, coll)) = other {
        done += complete_all::<B, A>(
            a,
            &SeriesSpec {
                collection: coll,
                ..spec
            },
        )
        .await?;
    }
    if spec.keeps.rollup.is_some() {
        for coll in &archives {
            done += complete_all::<B, S>(
                store,
                &SeriesSpec {
                    collection: coll,
                    ..spec
                },
            )
            .await?;
        }
        // Every bucket complete: the keys' roll-ups from them, on every side.
        let here: Vec<&str> = archives.iter().map(String::as_str).collect();
        super::rollup::recompute_all(store, &spec, &here, other).await?;
    }
    Ok(done)
}

/// The completing pass of [`backfill`] over `spec`'s collection; then marks every bucket
/// bounded.
async fn complete_all<B: Bucket + ?Sized, S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
) -> Result<u64> {
    let mut done = 0u64;
    let mut after: Option<Bson> = None;
    loop {
        let mut filter = vec![
            spec.in_series(),
            Filter::Exists(spec.key_field.into(), true),
        ];
        if let Some(a) = &after {
            filter.push(Filter::Gt("_id".into(), a.clone()));
        }
        let opts = FindOptions {
            sort: vec![("_id".into(), 1)],
            limit: Some(series::STREAM_BATCH),
            comment: Some("pattern scatter: bucket backfill"),
            ..FindOptions::default()
        };
        let docs = (store.find_raw(spec.collection, &Filter::and(filter), &opts)).await?;
        let full = docs.len() as i64 == series::STREAM_BATCH;
        for raw in &docs {
            after = id_of(spec, raw)?;
            if complete(spec, raw) {
                continue;
            }
            if complete_one::<B, S>(store, spec, raw.clone()).await? {
                done += 1;
            }
        }
        if !full {
            // Every bucket now carries its bounds: range reads need not look for others.
            if spec.keeps.bounds.is_some() {
                series::mark_bounded(store, spec.collection, None).await?;
            }
            return Ok(done);
        }
    }
}

/// Whether a bucket carries every mark the spec keeps.
fn complete(spec: &SeriesSpec<'_>, raw: &RawDocument) -> bool {
    let bounded = spec.keeps.bounds.is_none()
        || matches!(raw.get(BOUNDED_FIELD), Ok(Some(RawBsonRef::Boolean(true))));
    bounded
        && (spec.keeps.summary.is_empty()
            || matches!(
                summarized(
                    spec,
                    raw,
                    Span {
                        from: None,
                        to: None
                    }
                ),
                Ok(Some(_))
            ))
}

/// Sets one bucket's bounds and summary from its items, conditional on its count; re-reads
/// and retries when a push changed it meanwhile. `false` when the bucket is gone.
async fn complete_one<B: Bucket + ?Sized, S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    mut raw: RawDocumentBuf,
) -> Result<bool> {
    for _ in 0..1_000 {
        let id = id_of(spec, &raw)?.unwrap_or(Bson::Null);
        // The key too: on a collection sharded by it, the write reaches one shard.
        let key = match raw.get(spec.key_field) {
            Ok(Some(v)) => raw_value(spec.collection, v)?,
            _ => Bson::Null,
        };
        let count = match raw.get(spec.count_field) {
            Ok(Some(v)) => raw_value(spec.collection, v)?,
            _ => Bson::Null,
        };
        let items: Vec<B::Item> =
            series::decode_raw_items(spec.collection, spec.items_field, &raw)?;
        let values = items
            .iter()
            .map(crate::codec::ser::item)
            .collect::<Result<Vec<_>>>()?;
        let millis: Vec<i64> = items.iter().filter_map(B::item_millis).collect();
        let mut update = Update::default();
        if let Some((min, max)) = spec.keeps.bounds {
            if millis.len() != items.len() {
                return Err(Error::decode(
                    spec.collection,
                    Some(&id),
                    "an item has no time: its bucket cannot be bounded",
                ));
            }
            let date = |ms: Option<&i64>| ms.map(|m| Bson::DateTime(DateTime::from_millis(*m)));
            let (lo, hi) = (date(millis.iter().min()), date(millis.iter().max()));
            // An empty bucket holds no time: bounds that no range overlaps... none at all.
            match (lo, hi) {
                (Some(lo), Some(hi)) => {
                    update.set.push((Path::from(min), lo));
                    update.set.push((Path::from(max), hi));
                }
                // No item: no bounds (no range overlaps the bucket); a later push's `$min` /
                // `$max` starts them.
                _ => update.unset.extend([Path::from(min), Path::from(max)]),
            }
        }
        let kept = spec.kept(&values, &millis)?;
        for (agg, v) in spec.keeps.summary.iter().zip(kept.summary) {
            match v {
                Some(v) => update.set.push((Path::from(agg.field), v)),
                // No item has a number there: removed (a stale partial value must not stay,
                // and a null would win every later `$min`).
                None => update.unset.push(Path::from(agg.field)),
            }
        }
        update
            .set
            .extend(spec.marks().into_iter().map(|(k, v)| (Path::from(k), v)));
        let cas = Filter::and([
            spec.by_key(&key),
            Filter::Eq("_id".into(), id.clone()),
            Filter::Eq(Path::from(spec.count_field), count),
        ]);
        if store
            .update_one(spec.collection, &cas, &mut update, false)
            .await?
            .matched
        {
            return Ok(true);
        }
        let one = FindOptions {
            limit: Some(1),
            ..FindOptions::default()
        };
        let by_id = Filter::and([spec.by_key(&key), Filter::Eq("_id".into(), id)]);
        match store.find_raw(spec.collection, &by_id, &one).await?.pop() {
            Some(again) => raw = again,
            None => return Ok(false),
        }
    }
    Err(Error::Store(StoreError::Contention {
        attempts: 1_000,
        what: "completing a bucket's summary".into(),
    }))
}
