//! [`verify_archive`]: a bucket collection and its archive checked together.

use std::collections::{BTreeMap, HashSet};

use bson::Bson;
use futures::StreamExt;

use super::{archive_spec, ArchiveAt};
use crate::bucket::Bucket;
use crate::codec::as_int;
use crate::codec::order::{value_key, ByValue};
use crate::codec::raw::raw_value;
use crate::layout::LayoutDefect;
use crate::series;
use crate::spec::{BucketSpec, SeriesSpec};
use crate::store::query::{Filter, FindOptions, Path};
use crate::store::Store;
use crate::Result;

/// Checks `B`'s live collection and its archive together: no bucket in both (a move in flight,
/// which [`archive`](super::archive) completes), and each key's buckets numbered 1, 2, 3... across both (a
/// missing number is a bucket in neither). Reads both collections once.
pub async fn verify_archive<B, S, A>(live: &S, to: ArchiveAt<'_, A>) -> Result<Vec<LayoutDefect>>
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
    to: ArchiveAt<'_, A>,
) -> Result<Vec<LayoutDefect>> {
    crate::observe::traced_op!(bucket.verify_archive, live, spec.collection, async {
        let spec = spec.series();
        let target = archive_spec(&spec, to.collection);
        // Per key (by value: an Int32 5 and an Int64 5 are one key): its pages and items, and
        // where each `_id` is.
        let mut pages: BTreeMap<ByValue, (Bson, Vec<i64>, u64)> = BTreeMap::new();
        let mut live_ids: HashSet<Vec<u8>> = HashSet::new();
        let mut defects = Vec::new();
        // Other archives of the collection on the live store (its mark records each): their
        // buckets count in the numbers and the roll-ups too.
        let others = if spec.keeps.rollup.is_some() {
            super::super::rollup::archives_counted(live, &spec, Some(to.collection)).await?
        } else {
            Vec::new()
        };
        let mut sides = vec![
            (0, read_heads(live, &spec).await?),
            (1, read_heads(to.store, &target).await?),
        ];
        for other in &others {
            sides.push((2, read_heads(live, &archive_spec(&spec, other)).await?));
        }
        for (side, store_docs) in sides {
            for (id, key, page, count) in store_docs {
                let id_text = value_key(&id);
                if side == 0 {
                    live_ids.insert(id_text);
                } else if side == 1 && live_ids.contains(&id_text) {
                    defects.push(LayoutDefect::InBoth {
                        collection: spec.collection.to_owned(),
                        archive: to.collection.to_owned(),
                        id: id.clone(),
                    });
                    continue;
                }
                let entry = pages
                    .entry(ByValue(key.clone()))
                    .or_insert_with(|| (key.clone(), Vec::new(), 0));
                entry.1.extend(page);
                entry.2 += count;
            }
        }
        // Each key's roll-up counts its items on both sides.
        if spec.keeps.rollup.is_some() {
            let keys: Vec<Bson> = pages.values().map(|p| p.0.clone()).collect();
            for (key, rolled) in rollup_counts(live, &spec, keys).await? {
                let buckets = pages.get(&ByValue(key.clone())).map_or(0, |p| p.2);
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

/// The roll-up count of each of `keys` that has one, stale ones and those an ingest batch's
/// pending mark lists left out: by `_id` in the
/// roll-ups' collection, a batch of keys at a time.
async fn rollup_counts<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    keys: Vec<Bson>,
) -> Result<Vec<(Bson, u64)>> {
    let mut out = Vec::new();
    // Listed by an ingest batch's pending mark: reads count the buckets, left out too.
    let pending = series::pending::read(store, spec).await?.keys;
    for chunk in keys.chunks(1_000) {
        let filter = Filter::In(Path::from("_id"), chunk.to_vec());
        let docs = (store.find(spec.rollups(), &filter, &FindOptions::default())).await?;
        out.extend(
            (docs.into_iter())
                .filter(|d| d.get_bool(series::ROLLUP_STALE) != Ok(true))
                .filter(|d| {
                    d.get("_id")
                        .is_some_and(|k| !pending.contains(&value_key(k)))
                })
                .filter_map(|d| {
                    let n = d.get(series::ROLLUP_ITEMS).and_then(as_int)?;
                    Some((d.get("_id")?.clone(), u64::try_from(n).unwrap_or(0)))
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
