//! `analyze`: reads a collection once and reports how its arrays or series are distributed,
//! with a suggested threshold or bucket size.

use std::collections::HashMap;

use bson::{Bson, RawDocumentBuf};

use super::histogram::Histogram;
use super::{BucketAnalysis, Largest, OutlierAnalysis, Source, Suggestion};
use crate::codec::order::value_key;
use crate::error::MAX_DOCUMENT_BYTES;
use crate::pass::scan::{array_len, field, id, scan, sorted, ANALYZE};
use crate::pass::Options;
use crate::spec::{BucketSpec, OutlierSpec};
use crate::store::query::{Filter, Path};
use crate::store::Store;
use crate::Result;

/// Bytes an outlier's main array may take at the suggested threshold at most.
pub(super) const MAIN_ARRAY_BUDGET: u64 = 4 * 1024 * 1024;
/// Bytes a full bucket may take at the suggested size at most.
const BUCKET_BUDGET: u64 = 256 * 1024;
/// The sizes [`analyze_bucket`] picks from.
const NICE_SIZES: [u32; 10] = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

/// The documents' sizes, and the largest document.
#[derive(Default)]
struct Sizes {
    all: Histogram,
    largest: Option<(Bson, u64)>,
}

impl Sizes {
    /// `doc` (of `coll`) counted; its size in bytes.
    fn see(&mut self, coll: &str, doc: &RawDocumentBuf) -> Result<u64> {
        let bytes = doc.as_bytes().len() as u64;
        self.all.record(bytes);
        if self.largest.as_ref().is_none_or(|(_, b)| bytes > *b) {
            self.largest = Some((id(coll, doc)?, bytes));
        }
        Ok(bytes)
    }

    fn largest(self) -> Option<Largest> {
        self.largest.map(|(id, bytes)| Largest {
            id,
            bytes,
            share_of_limit: bytes as f64 / MAX_DOCUMENT_BYTES as f64,
        })
    }
}

/// Reads `spec`'s main collection once (and its overflow collection, for the items of
/// documents already flagged) and reports the items per document, the document sizes, how many
/// exceed `spec.threshold`, and a suggested threshold: the 99th percentile of the items per
/// document (99% of documents stay whole), lowered when that many items of the 99th percentile's
/// size would take more than 4 MiB of the main document.
pub async fn analyze_outlier<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
    opts: &Options<'_>,
) -> Result<OutlierAnalysis> {
    crate::observe::traced_op!(outlier.analyze, store, spec.collection, async {
        let ov = &spec.overflow;
        // Items in the overflow per parent (only parents that have some: the outliers).
        let mut extra: HashMap<Vec<u8>, u64> = HashMap::new();
        let all = Filter::and([]);
        scan(
            store,
            ov.collection,
            &all,
            sorted(
                ANALYZE,
                vec![],
                vec![Path::from(ov.key_field), Path::from(ov.items_field)],
            ),
            opts,
            "scan overflow",
            |doc| {
                if let (Some(parent), Some((n, _))) = (
                    field(ov.collection, &doc, ov.key_field)?,
                    array_len(&doc, ov.items_field),
                ) {
                    *extra.entry(value_key(&parent)).or_default() += n;
                }
                Ok(())
            },
        )
        .await?;
        let coll = spec.collection;
        let (mut lengths, mut item_bytes) = (Histogram::new(), Histogram::new());
        let (mut flagged, mut without_array) = (0u64, 0u64);
        let mut sizes = Sizes::default();
        let documents = scan(
            store,
            coll,
            &all,
            sorted(ANALYZE, vec![("_id".into(), 1)], vec![]),
            opts,
            "analyze",
            |doc| {
                sizes.see(coll, &doc)?;
                let Some((n, array_bytes)) = array_len(&doc, spec.items_field) else {
                    without_array += 1;
                    return Ok(());
                };
                if let Some(each) = array_bytes.checked_div(n) {
                    item_bytes.record(each);
                }
                let is_flagged = matches!(
                    doc.get(spec.flag_field),
                    Ok(Some(bson::RawBsonRef::Boolean(true)))
                );
                let more = if is_flagged {
                    flagged += 1;
                    extra
                        .get(&value_key(&id(coll, &doc)?))
                        .copied()
                        .unwrap_or(0)
                } else {
                    0
                };
                lengths.record(n + more);
                Ok(())
            },
        )
        .await?;
        let over_threshold = lengths.above(u64::from(spec.threshold));
        let suggestion = suggest_threshold(&lengths, &item_bytes);
        Ok(OutlierAnalysis {
            collection: coll.to_owned(),
            array: spec.items_field.to_owned(),
            documents,
            lengths: lengths.distribution(),
            sizes: sizes.all.distribution(),
            largest: sizes.largest(),
            threshold: spec.threshold,
            over_threshold,
            flagged,
            without_array,
            suggestion,
        })
    })
}

/// The smallest of 1, 2, 5, 10, 20, 50, 100... at least `n`.
pub(super) fn nice_up(n: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if step.saturating_mul(m) >= n {
                return step.saturating_mul(m);
            }
        }
        if step > u64::MAX / 10 {
            return n;
        }
        step *= 10;
    }
}

fn suggest_threshold(lengths: &Histogram, item_bytes: &Histogram) -> Suggestion {
    let p99 = lengths.percentile(99.0).max(1);
    let p50 = lengths.percentile(50.0);
    let max = lengths.max();
    let item = item_bytes.percentile(99.0).max(1);
    let cap = (MAIN_ARRAY_BUDGET / item).max(1);
    // Rounded up to 1, 2, 5, 10, 20, 50..., unless that passes the largest document.
    let rounded = match nice_up(p99) {
        n if n > max => p99,
        n => n,
    };
    let value = rounded.min(cap).min(u64::from(i32::MAX as u32)) as u32;
    let over = lengths.above(u64::from(value));
    let share = if lengths.count() == 0 {
        0.0
    } else {
        100.0 * (lengths.count() - over) as f64 / lengths.count() as f64
    };
    let mut reason = if u64::from(value) < p99 {
        format!(
            "the 99th percentile is {p99} items, but at {item} bytes per item (99th percentile) that many would take {} KiB \
             of the main document: {value} items keep it under {} KiB",
            p99 * item / 1024,
            MAIN_ARRAY_BUDGET / 1024
        )
    } else {
        let how = if u64::from(value) == p99 {
            ""
        } else {
            ", rounded up"
        };
        format!(
            "{value} items (the 99th percentile, {p99}{how}) keep {share:.1}% of documents whole"
        )
    };
    reason.push_str(&format!(
        "; {over} documents would overflow (median {p50} items, largest {max})"
    ));
    if max <= u64::from(value) {
        reason.push_str("; no document has more: the pattern is not needed yet");
    }
    Suggestion { value, reason }
}

/// Reads a bucket collection (`from: None`: `spec`'s own, counting each document's items) or
/// a flat source (one document per item, keyed by `from.key_field`) once, and reports the
/// items per key, item and document sizes, and a suggested bucket size: the largest of 10, 20,
/// 50, 100, 200, 500, 1000... that keeps a full bucket under 256 KiB at the 99th percentile's
/// item size and is not above the median key's items (so a typical key fills its buckets).
///
/// Memory: one counter per distinct key.
pub async fn analyze_bucket<S: Store>(
    store: &S,
    spec: &BucketSpec<'_>,
    from: Option<&Source<'_>>,
    opts: &Options<'_>,
) -> Result<BucketAnalysis> {
    crate::observe::traced_op!(bucket.analyze, store, spec.collection, async {
        let (coll, key_field) = match from {
            Some(s) => (s.collection, s.key_field),
            None => (spec.collection, spec.key_field),
        };
        let mut per_key: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut item_sizes = Histogram::new();
        let mut sizes = Sizes::default();
        let mut without_key = 0u64;
        let all = Filter::and([]);
        let documents = scan(
            store,
            coll,
            &all,
            sorted(ANALYZE, vec![], vec![]),
            opts,
            "analyze",
            |doc| {
                let bytes = sizes.see(coll, &doc)?;
                let Some(key) = field(coll, &doc, key_field)?.filter(|k| !matches!(k, Bson::Null))
                else {
                    without_key += 1;
                    return Ok(());
                };
                let n = match from {
                    Some(_) => {
                        item_sizes.record(bytes);
                        1
                    }
                    None => match array_len(&doc, spec.items_field) {
                        Some((n, array_bytes)) => {
                            if let Some(each) = array_bytes.checked_div(n) {
                                item_sizes.record(each);
                            }
                            n
                        }
                        None => 0,
                    },
                };
                *per_key.entry(value_key(&key)).or_default() += n;
                Ok(())
            },
        )
        .await?;
        let mut keys = Histogram::new();
        let size = u64::from(spec.size.max(1));
        let mut buckets_at_size = 0u64;
        for n in per_key.values() {
            keys.record(*n);
            buckets_at_size += n.div_ceil(size);
        }
        let items = keys.sum() as u64;
        let suggestion = suggest_size(&keys, &item_sizes);
        Ok(BucketAnalysis {
            collection: coll.to_owned(),
            key: key_field.to_owned(),
            documents,
            keys: keys.count(),
            items,
            per_key: keys.distribution(),
            item_sizes: item_sizes.distribution(),
            sizes: sizes.all.distribution(),
            largest: sizes.largest(),
            size: spec.size,
            buckets_at_size,
            without_key,
            suggestion,
        })
    })
}

pub(super) fn suggest_size(per_key: &Histogram, item_sizes: &Histogram) -> Suggestion {
    let item = item_sizes.percentile(99.0).max(1);
    let median = per_key.percentile(50.0);
    let fits = |s: u32| u64::from(s) * item <= BUCKET_BUDGET;
    let by_bytes = NICE_SIZES
        .iter()
        .copied()
        .filter(|s| fits(*s))
        .max()
        .unwrap_or(NICE_SIZES[0]);
    let by_keys = NICE_SIZES
        .iter()
        .copied()
        .filter(|s| u64::from(*s) <= median.max(u64::from(NICE_SIZES[0])))
        .max()
        .unwrap_or(NICE_SIZES[0]);
    let value = by_bytes.min(by_keys);
    let buckets: u64 = median.div_ceil(u64::from(value));
    let reason = format!(
        "a full bucket of {value} items takes about {} KiB at {item} bytes per item (99th percentile; at most {} KiB \
         suggested), and the median key's {median} items fill {buckets} bucket(s)",
        (u64::from(value) * item).div_ceil(1024),
        BUCKET_BUDGET / 1024,
    );
    Suggestion { value, reason }
}
