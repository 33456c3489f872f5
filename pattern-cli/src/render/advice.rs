//! `advise`: one section per collection, its findings first (each with its evidence, small
//! histograms where there is a distribution, its code and its commands), then the sample's
//! document sizes, the indexes and the reads made.

use pattern_core::adopt::advise::{
    Advice, AttributeEvidence, BucketEvidence, CollectionAdvice, Evidence, Finding,
    OutlierEvidence, PolymorphicEvidence, TreeEvidence, VersioningEvidence,
};
use pattern_core::adopt::Distribution;

use super::analysis::value_shapes;
use super::{n, percentiles};

/// Bars of the histograms, at most.
const WIDTH: usize = 24;

pub(crate) fn render_advice(a: &Advice) -> String {
    let db = a
        .database
        .as_deref()
        .map_or(String::new(), |d| format!("Database `{d}`: "));
    let mut out = format!(
        "{db}{} collection(s), up to {} documents sampled from each\n",
        a.collections.len(),
        n(u64::from(a.sample))
    );
    if !a.skipped.is_empty() {
        out.push_str(&format!(
            "Not read (the library's own): {}\n",
            a.skipped.join(", ")
        ));
    }
    for c in &a.collections {
        out.push('\n');
        collection(&mut out, c);
    }
    out
}

fn collection(out: &mut String, c: &CollectionAdvice) {
    let whole = if c.whole {
        "the whole collection".to_owned()
    } else {
        format!("{} sampled", n(c.sampled))
    };
    out.push_str(&format!(
        "== `{}`: {} documents ({whole}) ==\n",
        c.collection,
        n(c.documents)
    ));
    if c.findings.is_empty() {
        out.push_str("No pattern fits: no rule of `pattern advise` matches this sample.\n");
    } else {
        for f in &c.findings {
            out.push_str(&format!("  [{}] {}\n", confidence(f), f.pattern.name()));
        }
        for (i, f) in c.findings.iter().enumerate() {
            out.push('\n');
            finding(out, i + 1, f);
        }
    }
    out.push('\n');
    histogram(out, "Document sizes (bytes)", &c.sizes, "  ");
    if let Some(l) = &c.largest {
        out.push_str(&format!(
            "  Largest: _id {}, {} bytes ({:.2}% of the 16 MiB limit)\n",
            l.id,
            n(l.bytes),
            l.share_of_limit * 100.0
        ));
    }
    out.push_str(&format!("  Indexes: {}\n", c.indexes.join(", ")));
    let reads: Vec<String> = (c.reads.iter())
        .map(|r| format!("{} ({}): {}", r.command, r.what, n(r.result)))
        .collect();
    out.push_str(&format!("  Reads: {}\n", reads.join("; ")));
}

fn confidence(f: &Finding) -> &'static str {
    match f.confidence {
        pattern_core::adopt::Confidence::High => "high",
        pattern_core::adopt::Confidence::Medium => "medium",
        pattern_core::adopt::Confidence::Low => "low",
    }
}

fn finding(out: &mut String, i: usize, f: &Finding) {
    out.push_str(&format!(
        "{i}. {} ({} confidence)\n  {}\n",
        f.pattern.name(),
        confidence(f),
        f.reason
    ));
    match &f.evidence {
        Evidence::Outlier(e) => outlier(out, e),
        Evidence::Bucket(e) => bucket(out, e),
        Evidence::Attribute(e) => attribute(out, e),
        Evidence::Polymorphic(e) => polymorphic(out, e),
        Evidence::SchemaVersioning(e) => versioning(out, e),
        Evidence::Tree(e) => tree(out, e),
        Evidence::Index(e) => {
            if let Some(i) = &e.index {
                out.push_str(&format!(
                    "  Index `{i}`: {} entries for the longest array\n",
                    n(e.entries_longest)
                ));
            }
        }
        Evidence::Size(e) => {
            out.push_str(&format!(
                "  p50 {} bytes, p99 {}, max {} (_id {}); {} of 8 MiB or more\n",
                n(e.p50),
                n(e.p99),
                n(e.max),
                e.largest_id,
                n(e.near_limit)
            ));
            let heavy: Vec<String> = (e.heaviest.iter())
                .map(|(f, b)| format!("`{f}` {} bytes", n(*b)))
                .collect();
            out.push_str(&format!(
                "  Heaviest fields (mean per document): {}\n",
                heavy.join(", ")
            ));
        }
    }
    if let Some(code) = &f.code {
        out.push_str("\n  Code:\n");
        for line in code.lines() {
            if line.is_empty() {
                out.push('\n');
            } else {
                out.push_str(&format!("    {line}\n"));
            }
        }
    }
    if !f.commands.is_empty() {
        let dry = f.commands.iter().any(|c| c.contains("--dry-run"));
        out.push_str(if dry {
            "\n  Commands (the dry run before the migration):\n"
        } else {
            "\n  Command:\n"
        });
        for c in &f.commands {
            out.push_str(&format!("    $ {c}\n"));
        }
    }
    for note in &f.notes {
        out.push_str(&format!("\n  Note: {note}\n"));
    }
}

/// A distribution's percentiles, then its bars, indented.
fn histogram(out: &mut String, title: &str, d: &Distribution, indent: &str) {
    out.push_str(&format!("{indent}{title}: {}\n", percentiles(d)));
    for line in d.render(WIDTH).lines() {
        out.push_str(&format!("{indent}{line}\n"));
    }
}

fn outlier(out: &mut String, e: &OutlierEvidence) {
    histogram(out, "Items per document", &e.lengths, "  ");
    out.push_str(&format!(
        "  Longest: _id {}; items {} of about {} bytes (p99)\n",
        e.longest_id,
        e.item_types.join(", "),
        n(e.item_bytes_p99)
    ));
    if let Some(l) = &e.long_arrays {
        out.push_str(&format!(
            "  Counted across the collection: {} documents hold {} items or more\n",
            n(l.documents),
            n(l.at_least)
        ));
    }
    out.push_str(&format!(
        "  Threshold {}: {}\n  Overflow collection: `{}`\n",
        e.threshold, e.threshold_reason, e.overflow
    ));
}

fn bucket(out: &mut String, e: &BucketEvidence) {
    let date = |d: &bson::DateTime| d.try_to_rfc3339_string().unwrap_or_default();
    out.push_str(&format!(
        "  Key `{}` ({} values in the sample), time `{}` from {} to {}\n",
        e.key,
        n(e.keys_in_sample),
        e.time,
        date(&e.first),
        date(&e.last)
    ));
    histogram(out, "Sampled documents per key", &e.per_key_in_sample, "  ");
    if let Some((keys, docs)) = e.counted {
        out.push_str(&format!(
            "  Counted: {} documents of {} sampled keys ({} per key)\n",
            n(docs),
            n(keys),
            n(e.typical_per_key)
        ));
    }
    out.push_str(&format!("  Size {}: {}\n", e.size, e.size_reason));
    match &e.span {
        Some(s) => out.push_str(&format!("  Span {s}: {}\n", e.span_reason)),
        None => out.push_str(&format!("  No span: {}\n", e.span_reason)),
    }
    out.push_str(&format!("  Bucket collection: `{}`\n", e.target));
}

fn attribute(out: &mut String, e: &AttributeEvidence) {
    out.push_str(&format!(
        "  {} documents hold at least one ({:.1} each); as `{}: [{{k, v}}]` of `{}`, index `{}`\n",
        n(e.documents),
        e.per_document,
        e.array,
        e.value_type,
        e.index
    ));
    for f in &e.fields {
        out.push_str(&format!(
            "    {:<24} {:>10}  {}\n",
            f.name,
            n(f.documents),
            f.types.join(", ")
        ));
    }
}

fn polymorphic(out: &mut String, e: &PolymorphicEvidence) {
    let missing = format!("(no `{}`)", e.discriminator);
    value_shapes(out, &e.values, e.missing, &missing);
}

fn versioning(out: &mut String, e: &VersioningEvidence) {
    for c in &e.changes {
        out.push_str(&format!(
            "  Change at {}: +{} -{} ({} before, {} after, {:.1}% agree)\n",
            c.at.try_to_rfc3339_string().unwrap_or_default(),
            c.added.join(" +"),
            c.removed.join(" -"),
            n(c.before),
            n(c.after),
            c.agreement * 100.0
        ));
    }
    for v in &e.versions {
        let mut diff = String::new();
        if !v.added.is_empty() {
            diff.push_str(&format!("  added: {}", v.added.join(", ")));
        }
        if !v.removed.is_empty() {
            diff.push_str(&format!("  removed: {}", v.removed.join(", ")));
        }
        out.push_str(&format!(
            "    version {:<4} {:>10}  fields: {}{diff}\n",
            v.version,
            n(v.documents),
            v.always.join(", ")
        ));
    }
    if e.field.is_some() && e.unversioned > 0 {
        out.push_str(&format!(
            "    {:<12} {:>10}  (read as the oldest version)\n",
            "unversioned",
            n(e.unversioned)
        ));
    }
}

fn tree(out: &mut String, e: &TreeEvidence) {
    let fields: Vec<String> = (e.fields.iter())
        .map(|f| format!("{} `{}` ({})", f.role, f.name, n(f.documents)))
        .collect();
    out.push_str(&format!(
        "  Model `{}`: {}; {} of {} referenced `_id`s found\n",
        e.model,
        fields.join(", "),
        n(e.resolved),
        n(e.looked_up)
    ));
    if let Some(d) = &e.depth {
        histogram(out, "Ancestors per node", d, "  ");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_database() {
        let a = Advice {
            database: Some("shop".into()),
            sample: 1000,
            collections: Vec::new(),
            skipped: vec!["pattern_migrations".into()],
        };
        assert_eq!(
            render_advice(&a),
            "Database `shop`: 0 collection(s), up to 1,000 documents sampled from each\n\
             Not read (the library's own): pattern_migrations\n"
        );
    }
}
