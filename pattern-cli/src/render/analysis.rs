//! `analyze outlier` and `analyze bucket`: the distributions, the largest document, the
//! suggestion.

use pattern_core::adopt::{BucketAnalysis, OutlierAnalysis};

use super::{distribution, largest, n};

pub(crate) fn render_outlier_analysis(r: &OutlierAnalysis, with_overflow: bool) -> String {
    let mut out = format!(
        "Collection `{}`, array `{}`: {} documents\n\n",
        r.collection,
        r.array,
        n(r.documents)
    );
    let title = if with_overflow {
        "Items per document (array + overflow of flagged documents)"
    } else {
        "Items per document"
    };
    distribution(&mut out, title, &r.lengths);
    out.push('\n');
    distribution(&mut out, "Document sizes (bytes)", &r.sizes);
    out.push('\n');
    largest(&mut out, &r.largest);
    out.push_str(&format!(
        "Over the threshold of {}: {} documents\nFlagged already: {}\nWithout the array: {}\n\n",
        r.threshold,
        n(r.over_threshold),
        n(r.flagged),
        n(r.without_array)
    ));
    out.push_str(&format!(
        "Suggested threshold: {}\n  {}\n",
        r.suggestion.value, r.suggestion.reason
    ));
    out
}

pub(crate) fn render_bucket_analysis(r: &BucketAnalysis, buckets: bool) -> String {
    let layout = if buckets {
        "bucket collection"
    } else {
        "flat collection"
    };
    let mut out = format!(
        "Collection `{}` ({layout}), key `{}`: {} documents, {} keys, {} items\n\n",
        r.collection,
        r.key,
        n(r.documents),
        n(r.keys),
        n(r.items)
    );
    distribution(&mut out, "Items per key", &r.per_key);
    out.push('\n');
    distribution(&mut out, "Item sizes (bytes)", &r.item_sizes);
    out.push('\n');
    distribution(&mut out, "Document sizes (bytes)", &r.sizes);
    out.push('\n');
    largest(&mut out, &r.largest);
    out.push_str(&format!(
        "Buckets at size {}: {}\nDocuments without the key: {}\n\n",
        r.size,
        n(r.buckets_at_size),
        n(r.without_key)
    ));
    out.push_str(&format!(
        "Suggested bucket size: {}\n  {}\n",
        r.suggestion.value, r.suggestion.reason
    ));
    out
}
