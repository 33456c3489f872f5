//! The outlier rule: a top-level array whose length has a long tail (most documents hold a few
//! items, a few hold very many), in a collection whose `_id` the derive can key.

use bson::Bson;
use serde::Serialize;

use super::super::analyze::{nice_up, MAIN_ARRAY_BUDGET};
use super::profile::Field;
use super::rust::{key_type, singular, snake_case, string_literal, type_ident, Code, Item};
use super::{percent, Confidence, Evidence, Finding, Read, Sample, ADVISE_READ};
use crate::adopt::histogram::{Distribution, Histogram};
use crate::adopt::Suggestion;
use crate::codec::BsonType;
use crate::store::query::Filter;
use crate::store::Store;
use crate::Result;

/// The longest sampled array holds at least this many items.
pub const OUTLIER_MIN_ITEMS: u64 = 100;
/// ... and at least this many times the median document's.
pub const OUTLIER_TAIL: u64 = 10;
/// Documents of at least this many bytes are near the 16 MiB limit (half of it).
pub const NEAR_LIMIT: u64 = 8 * 1024 * 1024;
/// Arrays (the longest sampled first) whose long documents are counted across the whole
/// collection when the sample is not all of it.
pub const PROBED_ARRAYS: usize = 3;

/// The figures of an outlier finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutlierEvidence {
    /// The array field.
    pub array: String,
    /// Sampled documents holding it as an array.
    pub documents: u64,
    /// Items per document.
    pub lengths: Distribution,
    /// The sampled document with the longest array: its `_id`.
    pub longest_id: Bson,
    /// When the sample is not the whole collection: the documents of the whole collection
    /// whose array reaches the tail, counted.
    pub long_arrays: Option<LongArrays>,
    /// The BSON types of the items.
    pub item_types: Vec<String>,
    /// Bytes per item (the 99th percentile of each array's mean).
    pub item_bytes_p99: u64,
    /// Sampled documents of at least [`NEAR_LIMIT`] bytes.
    pub near_limit: u64,
    /// The suggested threshold (`analyze outlier`'s rule, on the sample).
    pub threshold: u32,
    /// Why that threshold.
    pub threshold_reason: String,
    /// Sampled documents with more items than the threshold.
    pub over_threshold: u64,
    /// The overflow collection suggested (a name the database does not use).
    pub overflow: String,
}

/// The documents of a whole collection whose array holds at least `at_least` items.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LongArrays {
    /// The tail's start: [`OUTLIER_MIN_ITEMS`], or [`OUTLIER_TAIL`] times the sampled median
    /// if more.
    pub at_least: u64,
    /// Documents holding that many items or more.
    pub documents: u64,
}

/// Each array that fits, with its finding, its field name and its longest array's items (the
/// sample's, or the tail's start when the long ones were counted and none was sampled). Reads: when the sample is not the whole
/// collection, one count of the documents whose array reaches the tail, for up to
/// [`PROBED_ARRAYS`] arrays (a rare outlier is in no sample of a thousand).
pub(super) async fn find<S: Store>(
    store: &S,
    s: &Sample<'_>,
    reads: &mut Vec<Read>,
) -> Result<Vec<(Finding, String, u64)>> {
    let shape = &s.profile.shape;
    let Some(id_type) = shape.fields.get("_id").and_then(key_type) else {
        return Ok(Vec::new());
    };
    let near_limit = s.profile.sizes.above(NEAR_LIMIT - 1);
    let mut arrays: Vec<(&String, &Field)> = (shape.fields.iter())
        .filter(|(name, f)| *name != "_id" && f.only(&[BsonType::Array]))
        .collect();
    // The longest first: those are counted across the collection.
    arrays.sort_by(|(a, x), (b, y)| y.lengths.max().cmp(&x.lengths.max()).then(a.cmp(b)));
    let mut out = Vec::new();
    for (i, (array, field)) in arrays.into_iter().enumerate() {
        let lengths = &field.lengths;
        let (p50, p99, max) = (
            lengths.percentile(50.0),
            lengths.percentile(99.0),
            lengths.max(),
        );
        // The tail: at least OUTLIER_MIN_ITEMS, and OUTLIER_TAIL times the median.
        let at_least = OUTLIER_MIN_ITEMS.max(OUTLIER_TAIL * p50.max(1));
        let counted = if s.whole || i >= PROBED_ARRAYS {
            None
        } else {
            let reach = Filter::Exists(format!("{array}.{}", at_least - 1).into(), true);
            let documents = (store.count_matching(s.coll.name, &reach, ADVISE_READ)).await?;
            reads.push(Read::new(
                "count",
                &format!("the documents whose `{array}` holds {at_least} items or more"),
                documents,
            ));
            Some(LongArrays {
                at_least,
                documents,
            })
        };
        let long = counted.as_ref().map_or(0, |c| c.documents);
        if max < at_least && long == 0 {
            continue;
        }
        // A counted tail holds `at_least` items at least.
        let longest = if long > 0 { max.max(at_least) } else { max };
        let suggestion = threshold(field, at_least);
        if u64::from(suggestion.value) >= longest {
            continue;
        }
        let documents = lengths.count();
        let ratio = longest / p50.max(1);
        let confidence =
            if (ratio >= 5 * OUTLIER_TAIL && documents >= 100) || near_limit > 0 || long > 0 {
                Confidence::High
            } else if documents >= 20 {
                Confidence::Medium
            } else {
                Confidence::Low
            };
        let over = lengths.above(u64::from(suggestion.value));
        let near = if near_limit > 0 {
            format!("; {near_limit} sampled document(s) of 8 MiB or more, near the 16 MiB limit")
        } else {
            String::new()
        };
        let tail = match &counted {
            Some(c) if c.documents > 0 => format!(
                "; across the whole collection, {} documents hold {at_least} items or more",
                c.documents
            ),
            _ => String::new(),
        };
        let past = if over > 0 {
            format!(
                "the items past it in the {over} longer sampled documents ({} of the sample) go to the overflow \
                 collection",
                percent(over, documents)
            )
        } else {
            "every sampled document stays whole, and the items past it in the counted ones go to the overflow \
             collection"
                .to_owned()
        };
        let reason = format!(
            "`{array}` has a long tail: the median sampled document holds {p50} items, the 99th percentile {p99}, \
             the longest {max}{tail}{near}; at a threshold of {}, {past}",
            suggestion.value
        );
        let name = type_ident(&singular(s.coll.name));
        let overflow = s.coll.new_collection(&format!("{}_extra", s.coll.name));
        let reference = format!("{}_id", snake_case(&name));
        let evidence = OutlierEvidence {
            array: array.clone(),
            documents,
            lengths: lengths.distribution(),
            longest_id: field
                .longest
                .as_ref()
                .map_or(Bson::Null, |(_, id)| id.clone()),
            long_arrays: counted,
            item_types: item_types(field),
            item_bytes_p99: field.item_bytes.percentile(99.0),
            near_limit,
            threshold: suggestion.value,
            threshold_reason: suggestion.reason.clone(),
            over_threshold: over,
            overflow: overflow.clone(),
        };
        let mut f = Finding::new(Evidence::Outlier(evidence), confidence, reason);
        f.code = Some(code(
            s,
            &name,
            id_type,
            array,
            field,
            suggestion.value,
            &overflow,
        ));
        let threshold = suggestion.value.to_string();
        let layout = [
            "--collection",
            s.coll.name,
            "--array",
            array,
            "--threshold",
            &threshold,
        ];
        let mut migrate = vec!["migrate", "outlier"];
        migrate.extend(layout);
        migrate.extend(["--overflow", &overflow, "--owner", &reference]);
        let mut analyze = vec!["analyze", "outlier"];
        analyze.extend(layout);
        let mut dry = migrate.clone();
        dry.push("--dry-run");
        f.commands = vec![
            s.coll.command(&analyze),
            s.coll.command(&dry),
            s.coll.command(&migrate),
        ];
        f.notes.push(format!(
            "Push through `{name}::push` before migrating: the migration moves what each array holds when it \
             reads it, and items pushed past the threshold by another writer stay in the main document \
             until the next run."
        ));
        out.push((f, array.clone(), longest));
    }
    Ok(out)
}

/// The threshold that keeps the sampled documents under the tail (`at_least` items) whole:
/// `analyze outlier`'s rule over them alone (their 99th percentile rounded up to 1, 2, 5, 10,
/// 20, 50..., short of the tail; lowered when that many items would take more than 4 MiB of
/// the main document). Over every document, a tail document or two in a small sample would be
/// the 99th percentile.
fn threshold(field: &Field, at_least: u64) -> Suggestion {
    let mut under = Histogram::new();
    (field.each_length.iter().copied())
        .filter(|n| *n < at_least)
        .for_each(|n| under.record(n));
    let p99 = under.percentile(99.0).max(1);
    let item = field.item_bytes.percentile(99.0).max(1);
    let cap = (MAIN_ARRAY_BUDGET / item).max(1);
    let rounded = match nice_up(p99) {
        n if n < at_least => n,
        _ => p99,
    };
    let value = rounded.min(cap).min(i32::MAX as u64) as u32;
    let over = field.lengths.above(u64::from(value));
    let how = if u64::from(value) < p99 {
        format!(
            "lowered from their 99th percentile, {p99}: at {item} bytes per item (99th percentile), {value} items \
             keep the main array under {} KiB",
            MAIN_ARRAY_BUDGET / 1024
        )
    } else if u64::from(value) == p99 {
        format!("their 99th percentile, {p99}")
    } else {
        format!("their 99th percentile, {p99}, rounded up")
    };
    Suggestion {
        value,
        reason: format!(
            "{value} items ({how}) keep the {} sampled documents under the tail ({at_least} items) whole; {over} \
             sampled documents hold more",
            under.count()
        ),
    }
}

/// The BSON types of an array's items.
pub(super) fn item_types(field: &Field) -> Vec<String> {
    field.elements.as_ref().map_or(Vec::new(), |e| {
        (e.types.keys())
            .map(|t| t.map_or("other", |t| t.alias()).to_owned())
            .collect()
    })
}

/// The struct: every sampled field, the `_id` as `#[outlier(id)]`, the array as
/// `#[outlier(items)]` (a `Vec`, with `#[serde(default)]` when some documents lack it).
fn code(
    s: &Sample<'_>,
    name: &str,
    id_type: &str,
    array: &str,
    field: &Field,
    threshold: u32,
    overflow: &str,
) -> String {
    let shape = &s.profile.shape;
    let mut code = Code::default();
    let name = code.type_name(name);
    code.uses("pattern_core::Outlier");
    code.uses("serde::{Deserialize, Serialize}");
    let mut fields = Vec::new();
    for (stored, mut f) in code.fields(shape, &["has_extras"]) {
        if stored == "_id" {
            f.ty = id_type.to_owned();
            f.attrs.insert(0, "#[outlier(id)]".into());
        } else if stored == array {
            let item = match &field.elements {
                Some(e) if e.present > 0 => code.base_type(e, &singular(array)),
                _ => "bson::Bson".into(),
            };
            f.ty = format!("Vec<{item}>");
            f.attrs.insert(0, "#[outlier(items)]".into());
            if field.present < shape.count || field.non_null() < field.present {
                f.attrs.push("#[serde(default)]".into());
            }
        }
        fields.push(f);
    }
    code.push_struct(&Item {
        doc: vec![format!(
            "`{}`: at most {threshold} items of `{array}` in each document, the rest in `{overflow}`.",
            s.coll.name
        )],
        derives: vec!["Outlier", "Serialize", "Deserialize"],
        attrs: vec![format!(
            "#[outlier(collection = {}, threshold = {threshold}, overflow = {})]",
            string_literal(s.coll.name),
            string_literal(overflow)
        )],
        name,
        fields,
    });
    code.render()
}
