//! The outlier rule: a top-level array whose length has a long tail (most documents hold a few
//! items, a few hold very many), in a collection whose `_id` the derive can key.

use bson::Bson;
use serde::Serialize;

use super::super::analyze::suggest_threshold;
use super::profile::Field;
use super::rust::{key_type, singular, snake_case, string_literal, type_ident, Code, Item};
use super::{percent, Confidence, Evidence, Finding, Sample};
use crate::adopt::histogram::Distribution;
use crate::codec::BsonType;

/// The longest sampled array holds at least this many items.
pub const OUTLIER_MIN_ITEMS: u64 = 100;
/// ... and at least this many times the median document's.
pub const OUTLIER_TAIL: u64 = 10;
/// Documents of at least this many bytes are near the 16 MiB limit (half of it).
pub const NEAR_LIMIT: u64 = 8 * 1024 * 1024;

/// The figures of an outlier finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutlierEvidence {
    /// The array field.
    pub array: String,
    /// Sampled documents holding it as an array.
    pub documents: u64,
    /// Items per document.
    pub lengths: Distribution,
    /// The document with the longest array: its `_id`.
    pub longest_id: Bson,
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

/// Each array that fits, with its finding and its field name.
pub(super) fn find(s: &Sample<'_>) -> Vec<(Finding, String)> {
    let shape = &s.profile.shape;
    let Some(id_type) = shape.fields.get("_id").and_then(key_type) else {
        return Vec::new();
    };
    let near_limit = s.profile.sizes.above(NEAR_LIMIT - 1);
    let mut out = Vec::new();
    for (array, field) in &shape.fields {
        if array == "_id" || !field.only(&[BsonType::Array]) {
            continue;
        }
        let lengths = &field.lengths;
        let (p50, p99, max) = (
            lengths.percentile(50.0),
            lengths.percentile(99.0),
            lengths.max(),
        );
        let ratio = max / p50.max(1);
        if max < OUTLIER_MIN_ITEMS || ratio < OUTLIER_TAIL {
            continue;
        }
        let suggestion = suggest_threshold(lengths, &field.item_bytes);
        if u64::from(suggestion.value) >= max {
            continue;
        }
        let documents = lengths.count();
        let confidence = if (ratio >= 5 * OUTLIER_TAIL && documents >= 100) || near_limit > 0 {
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
        let reason = format!(
            "`{array}` has a long tail: the median document holds {p50} items, the 99th percentile {p99}, \
             the longest {max} ({ratio} times the median){near}; at a threshold of {} the {over} longer \
             ({} of the sample) keep the rest apart",
            suggestion.value,
            percent(over, documents)
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
        migrate.extend(["--overflow", &overflow, "--reference", &reference]);
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
        out.push((f, array.clone()));
    }
    out
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
