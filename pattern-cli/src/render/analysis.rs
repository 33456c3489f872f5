//! `analyze outlier` and `analyze bucket`: the distributions, the largest document, the
//! suggestion; `analyze versions`: the documents per schema version.

use pattern_core::adopt::{
    shapes::{ShapesAnalysis, ValueShape},
    versions::VersionsAnalysis,
    BucketAnalysis, OutlierAnalysis, Suggestion,
};

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
    suggestion(&mut out, "threshold", &r.suggestion);
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
    suggestion(&mut out, "bucket size", &r.suggestion);
    out
}

/// The suggested threshold or bucket size (`what`), and why on the line below.
fn suggestion(out: &mut String, what: &str, s: &Suggestion) {
    out.push_str(&format!("Suggested {what}: {}\n  {}\n", s.value, s.reason));
}

/// One line per version stored (its documents and their share), then the documents without
/// the field and those whose field holds no number (with example `_id`s).
pub(crate) fn render_versions_analysis(r: &VersionsAnalysis) -> String {
    let mut out = format!(
        "Collection `{}`, version field `{}`: {} documents\n\n",
        r.collection,
        r.field,
        n(r.documents)
    );
    let share = |count: u64| {
        if r.documents == 0 {
            0.0
        } else {
            100.0 * count as f64 / r.documents as f64
        }
    };
    let mut line = |label: &str, count: u64, note: &str| {
        out.push_str(&format!(
            "  {label:<16} {:>12} {:>6.1}%{note}\n",
            n(count),
            share(count)
        ));
    };
    for (version, count) in &r.versions {
        line(&format!("version {version}"), *count, "");
    }
    line(
        "unversioned",
        r.unversioned,
        &format!(
            "  (no `{}`: read as the type's `unversioned` version)",
            r.field
        ),
    );
    let examples = if r.examples.is_empty() {
        String::new()
    } else {
        let more = if r.not_numbers > r.examples.len() as u64 {
            ", ..."
        } else {
            ""
        };
        format!("  (_id {}{more})", r.examples.join(", "))
    };
    line("not a number", r.not_numbers, &examples);
    out
}

/// `analyze shapes`: the discriminator's values with their field sets, then the attribute
/// arrays' keys.
pub(crate) fn render_shapes_analysis(r: &ShapesAnalysis) -> String {
    let mut out = format!(
        "Collection `{}`: {} documents\n\n",
        r.collection,
        n(r.documents)
    );
    match &r.discriminator {
        None => out.push_str(
            "  no discriminator: no string field with 2 to 64 values in 90% of the documents\n",
        ),
        Some(d) => {
            let how = if d.found { "found" } else { "given" };
            out.push_str(&format!("  discriminator `{}` ({how})\n", d.field));
            let missing = format!("(no `{}`, or not a string)", d.field);
            value_shapes(&mut out, &d.values, d.missing, &missing);
        }
    }
    for a in &r.attributes {
        out.push_str(&format!(
            "\n  attributes `{}`: {} documents\n",
            a.field,
            n(a.documents)
        ));
        for (k, count, types) in &a.keys {
            out.push_str(&format!(
                "    {k:<20} {:>12}  {}\n",
                n(*count),
                types.join(", ")
            ));
        }
        if a.truncated {
            out.push_str("    (more keys, not counted)\n");
        }
    }
    out
}

/// A discriminator's values, each with its documents and its fields (always, then
/// sometimes), then the documents without one (`missing`, explained by `why`).
pub(super) fn value_shapes(out: &mut String, values: &[ValueShape], missing: u64, why: &str) {
    for v in values {
        out.push_str(&format!(
            "    {:<20} {:>12}  fields: {}\n",
            v.value,
            n(v.count),
            v.always.join(", ")
        ));
        if !v.sometimes.is_empty() {
            let some: Vec<String> = (v.sometimes.iter())
                .map(|(f, c)| format!("{f} ({})", n(*c)))
                .collect();
            out.push_str(&format!(
                "    {:<20} {:>12}  sometimes: {}\n",
                "",
                "",
                some.join(", ")
            ));
        }
    }
    if missing > 0 {
        out.push_str(&format!(
            "    {:<20} {:>12}  {why}\n",
            "missing",
            n(missing)
        ));
    }
}
