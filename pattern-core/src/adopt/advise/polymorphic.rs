//! The polymorphic rule: a discriminator, a string field whose values tell the documents'
//! field sets apart (found as `analyze shapes` finds it, on the sample).

use std::collections::BTreeSet;

use serde::Serialize;

use super::super::shapes::{separation, ValueShape, USUAL};
use super::rust::{singular, string_literal, type_ident, Code, Item, RustField};
use super::{Confidence, Evidence, Finding, Sample};

/// At least this many fields are in every document of one value and in none of another.
pub const POLYMORPHIC_MIN_APART: usize = 1;
/// At most this many values (variants).
pub const POLYMORPHIC_MAX_VALUES: usize = 32;

/// The figures of a polymorphic finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolymorphicEvidence {
    /// The discriminator field.
    pub discriminator: String,
    /// The fields in every document of one value and in none of another.
    pub told_apart: Vec<String>,
    /// Each value with its sampled documents and field sets, by count descending.
    pub values: Vec<ValueShape>,
    /// Sampled documents without the discriminator (or not a string there): no variant
    /// reads them (`verify_variants` lists them).
    pub missing: u64,
}

/// The discriminator that fits, if any, with the fields its values account for.
pub(super) fn find(s: &Sample<'_>) -> Option<(Finding, BTreeSet<String>)> {
    let n = s.profile.documents;
    let analysis = s.profile.shapes.clone().finish(s.coll.name, n);
    let d = analysis.discriminator?;
    let apart = separation(&d);
    if d.values.len() < 2
        || d.values.len() > POLYMORPHIC_MAX_VALUES
        || apart < POLYMORPHIC_MIN_APART
    {
        return None;
    }
    let never = |v: &ValueShape, f: &String| {
        !v.always.contains(f) && !v.sometimes.iter().any(|(s, _)| s == f)
    };
    let told_apart: Vec<String> = (d.values.iter())
        .flat_map(|v| v.always.iter())
        .filter(|f| d.values.iter().any(|v| never(v, f)))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // The fields a value accounts for: those of some values only.
    let explained: BTreeSet<String> = (d.values.iter())
        .flat_map(|v| v.always.iter().chain(v.sometimes.iter().map(|(f, _)| f)))
        .filter(|f| d.values.iter().any(|v| never(v, f)))
        .cloned()
        .chain([d.field.clone()])
        .collect();
    let usual = USUAL.contains(&d.field.as_str());
    let confidence = if d.missing == 0 && (apart >= 2 || usual) {
        Confidence::High
    } else if d.missing * 20 <= n {
        Confidence::Medium
    } else {
        Confidence::Low
    };
    let values: Vec<String> = (d.values.iter())
        .map(|v| format!("`{}` ({})", v.value, v.count))
        .collect();
    let missing = if d.missing > 0 {
        format!("; {} sampled documents have none", d.missing)
    } else {
        String::new()
    };
    let reason = format!(
        "`{}` tells {} shapes apart: {}; {} field(s) are in every document of one value and in none of \
         another ({}){missing}",
        d.field,
        d.values.len(),
        values.join(", "),
        told_apart.len(),
        told_apart
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let code = code(s, &d.field, &d.values);
    let evidence = PolymorphicEvidence {
        discriminator: d.field.clone(),
        told_apart,
        values: d.values,
        missing: d.missing,
    };
    let mut f = Finding::new(Evidence::Polymorphic(evidence), confidence, reason);
    f.code = Some(code);
    f.commands = vec![s.coll.command(&[
        "analyze",
        "shapes",
        "--collection",
        s.coll.name,
        "--field",
        &d.field,
    ])];
    f.notes.push(
        "Nothing to move: the enum reads the documents as they are stored. `verify_variants` lists the \
         documents no variant reads (no discriminator, an unknown value, a field of the wrong type)."
            .to_owned(),
    );
    Some((f, explained))
}

/// The enum: a struct-like variant per value, its fields those of the value's documents
/// (`Option` where only some have them), the fields every variant has `shared`.
fn code(s: &Sample<'_>, tag: &str, values: &[ValueShape]) -> String {
    let shape = &s.profile.shape;
    let mut code = Code::default();
    let name = code.type_name(&type_ident(&singular(s.coll.name)));
    code.uses("pattern_core::Document");
    code.uses("serde::{Deserialize, Serialize}");
    let order: Vec<&String> = shape.ordered().into_iter().map(|(n, _)| n).collect();
    let always_everywhere = |f: &String| f == "_id" || values.iter().all(|v| v.always.contains(f));
    let mut variants = Vec::new();
    let mut taken_variants = BTreeSet::new();
    let mut shared: Vec<(String, String)> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let mut names = BTreeSet::new();
        let mut fields: Vec<RustField> = Vec::new();
        for stored in &order {
            let sometimes = v.sometimes.iter().any(|(f, _)| f == *stored);
            if stored.as_str() != "_id" && !v.always.contains(stored) && !sometimes {
                continue;
            }
            if stored.as_str() == tag {
                continue;
            }
            let field = &shape.fields[stored.as_str()];
            let base = code.base_type(field, stored);
            let ty = if sometimes || field.non_null() < field.present {
                format!("Option<{base}>")
            } else {
                base
            };
            let f = code.field(stored, ty, &mut names);
            if i == 0 && always_everywhere(stored) {
                shared.push((f.name.clone(), f.ty.clone()));
            }
            fields.push(f);
        }
        let mut variant = type_ident(&v.value);
        while !taken_variants.insert(variant.clone()) {
            variant.push('_');
        }
        let attrs = if variant == v.value {
            Vec::new()
        } else {
            vec![format!("#[serde(rename = {})]", string_literal(&v.value))]
        };
        variants.push(Item {
            doc: vec![format!(
                "`{tag}: {}`: {} sampled document(s).",
                string_literal(&v.value),
                v.count
            )],
            derives: Vec::new(),
            attrs,
            name: variant,
            fields,
        });
    }
    let shared = shared
        .iter()
        .map(|(n, t)| format!("{n}: {t}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = format!(
        "/// `{}`: one variant per value of `{tag}`.\n#[derive(Document, Serialize, Deserialize)]\n\
         #[serde(tag = {})]\n#[document(collection = {}, shared({shared}))]\nenum {name} {{\n",
        s.coll.name,
        string_literal(tag),
        string_literal(s.coll.name),
    );
    for v in &variants {
        out.push_str(&v.render_variant());
    }
    out.push_str("}\n");
    code.push(out);
    code.render()
}
