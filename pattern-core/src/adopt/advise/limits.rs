//! The index and size findings the advice depends on: a multikey index on an array the
//! outlier rule flags (one entry per item), more indexes than a collection should carry, and
//! documents large enough to matter (near the 16 MiB limit).

use bson::Bson;
use serde::Serialize;

use super::outlier::NEAR_LIMIT;
use super::{Confidence, Evidence, Finding, Sample};

/// More indexes than this on one collection is a finding (Atlas's schema advice flags the
/// same).
pub const TOO_MANY_INDEXES: usize = 30;
/// Documents whose 99th percentile is at least this many bytes are large (or any document at
/// [`NEAR_LIMIT`]).
pub const LARGE_DOCUMENT: u64 = 2 * 1024 * 1024;
/// The fields [`SizeEvidence::heaviest`] lists at most.
const HEAVIEST: usize = 3;

/// The figures of an index finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IndexEvidence {
    /// The collection's indexes.
    pub indexes: u64,
    /// The index concerned, when one is (by name).
    pub index: Option<String>,
    /// The array it indexes, when it indexes one.
    pub array: Option<String>,
    /// Index entries the longest array seen makes (one per item; when the long ones were
    /// counted and none was sampled, the tail's start: at least that many).
    pub entries_longest: u64,
}

/// The figures of a size finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeEvidence {
    /// The median sampled document, in bytes.
    pub p50: u64,
    /// The 99th percentile.
    pub p99: u64,
    /// The largest.
    pub max: u64,
    /// Its `_id`.
    pub largest_id: Bson,
    /// Sampled documents of at least [`NEAR_LIMIT`] bytes.
    pub near_limit: u64,
    /// The fields taking the most bytes, with their mean bytes per sampled document.
    pub heaviest: Vec<(String, u64)>,
}

/// Whether index `name`, named as MongoDB names an index by default (`a_1_b_-1`), has a key on
/// `field` or on a path into it (`field.x`).
pub(super) fn index_on(name: &str, field: &str) -> bool {
    let parts: Vec<&str> = name.split('_').collect();
    // A default name alternates keys and directions; a key may itself hold `_`: try every
    // way of cutting the name into `<key>_<dir>` pairs that starts at a pair boundary.
    let dirs = ["1", "-1", "hashed", "2d", "2dsphere", "text"];
    let mut boundaries = vec![0usize];
    for (i, p) in parts.iter().enumerate() {
        if dirs.contains(p) {
            boundaries.push(i + 1);
        }
    }
    boundaries.iter().any(|&start| {
        (start + 1..parts.len()).any(|end| {
            dirs.contains(&parts[end]) && {
                let key = parts[start..end].join("_");
                key == field || key.starts_with(&format!("{field}."))
            }
        })
    })
}

/// An index finding per array the outlier rule flagged that a default-named index keys.
pub(super) fn array_indexes(s: &Sample<'_>, outliers: &[(Finding, String, u64)]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (_, array, longest) in outliers {
        let Some(index) = s.indexes.iter().find(|i| index_on(i, array)) else {
            continue;
        };
        let longest = *longest;
        let reason = format!(
            "`{index}` indexes `{array}`, an array: one entry per item, {longest} for the longest document \
             seen, rewritten as it grows; once the outlier layout moves the items past the threshold to \
             the overflow collection, this index finds only those kept in the main document (index the \
             overflow's array too, or query the items through `items`/`all_items`)"
        );
        out.push(Finding::new(
            Evidence::Index(IndexEvidence {
                indexes: s.indexes.len() as u64,
                index: Some(index.clone()),
                array: Some(array.clone()),
                entries_longest: longest,
            }),
            Confidence::High,
            reason,
        ));
    }
    out
}

/// A finding when the collection has more than [`TOO_MANY_INDEXES`] indexes.
pub(super) fn too_many_indexes(s: &Sample<'_>) -> Option<Finding> {
    let n = s.indexes.len();
    if n <= TOO_MANY_INDEXES {
        return None;
    }
    let reason = format!(
        "{n} indexes (more than {TOO_MANY_INDEXES}): every insert, and every update of an indexed field, writes \
         each; sparse fields indexed one by one are what the attribute pattern folds into one index"
    );
    Some(Finding::new(
        Evidence::Index(IndexEvidence {
            indexes: n as u64,
            index: None,
            array: None,
            entries_longest: 0,
        }),
        Confidence::Medium,
        reason,
    ))
}

/// A finding when the sampled documents are large: a 99th percentile of at least
/// [`LARGE_DOCUMENT`], or a document at [`NEAR_LIMIT`].
pub(super) fn sizes(s: &Sample<'_>) -> Option<Finding> {
    let p = s.profile;
    let (p50, p99, max) = (
        p.sizes.percentile(50.0),
        p.sizes.percentile(99.0),
        p.sizes.max(),
    );
    let near_limit = p.sizes.above(NEAR_LIMIT - 1);
    if p99 < LARGE_DOCUMENT && near_limit == 0 {
        return None;
    }
    let mut heaviest: Vec<(String, u64)> = (p.shape.fields.iter())
        .map(|(name, f)| (name.clone(), f.bytes / p.documents.max(1)))
        .collect();
    heaviest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    heaviest.truncate(HEAVIEST);
    let kib = |b: u64| b.div_ceil(1024);
    let fields: Vec<String> = (heaviest.iter())
        .map(|(f, b)| format!("`{f}` {} KiB", kib(*b)))
        .collect();
    let near = if near_limit > 0 {
        format!(", {near_limit} of 8 MiB or more (half the 16 MiB limit)")
    } else {
        String::new()
    };
    let reason = format!(
        "large documents: the median sampled document is {} KiB, the 99th percentile {} KiB, the largest {} KiB{near}; \
         every read of one moves it whole (the heaviest fields per document: {})",
        kib(p50),
        kib(p99),
        kib(max),
        fields.join(", ")
    );
    let confidence = if near_limit > 0 {
        Confidence::High
    } else {
        Confidence::Medium
    };
    Some(Finding::new(
        Evidence::Size(SizeEvidence {
            p50,
            p99,
            max,
            largest_id: p.largest.as_ref().map_or(Bson::Null, |(_, id)| id.clone()),
            near_limit,
            heaviest,
        }),
        confidence,
        reason,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_index_names() {
        assert!(index_on("customers_purchased_1", "customers_purchased"));
        assert!(index_on(
            "title_1_customers_purchased_-1",
            "customers_purchased"
        ));
        assert!(index_on("tags.name_1", "tags"));
        assert!(!index_on("customers_1", "customers_purchased"));
        assert!(!index_on("purchased_1", "customers_purchased"));
        assert!(!index_on("_id_", "customers_purchased"));
        assert!(!index_on("my_index", "my"));
    }
}
