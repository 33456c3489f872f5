//! The attribute rule: many sparse top-level fields of one type, each in few documents (a
//! product's specifications), which one array of `{k, v}` pairs under one index would hold.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::profile::Field;
use super::rust::{integer_type, singular, string_literal, type_ident, Code, Item, RustField};
use super::{percent, Confidence, Evidence, Finding, Sample};
use crate::codec::BsonType;

/// At least this many sparse fields of one type.
pub const ATTRIBUTE_MIN_FIELDS: usize = 5;
/// A field is sparse when it is in at most this percentage of the sampled documents.
pub const ATTRIBUTE_MAX_SHARE: u64 = 30;
/// The sparse fields together are in at least this percentage of the sampled documents.
pub const ATTRIBUTE_MIN_COVER: u64 = 10;

/// The figures of an attribute finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttributeEvidence {
    /// The sparse fields, by name.
    pub fields: Vec<SparseField>,
    /// Sampled documents holding at least one of them.
    pub documents: u64,
    /// The mean number of them a document holding any holds.
    pub per_document: f64,
    /// The values' Rust type (`Attributes<V>`'s `V`).
    pub value_type: String,
    /// The array suggested to hold them (`[{k, v}, ...]`).
    pub array: String,
    /// Its index, as `#[document(attributes)]` names and creates it.
    pub index: String,
}

/// One sparse field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SparseField {
    /// Its name.
    pub name: String,
    /// Sampled documents holding it.
    pub documents: u64,
    /// Its values' BSON types.
    pub types: Vec<String>,
}

/// The kinds of value an attribute array holds, one `V` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Integer,
    Number,
    Text,
    Flag,
    Date,
}

fn class(f: &Field) -> Option<Class> {
    use BsonType::*;
    if f.only(&[Int, Long]) {
        Some(Class::Integer)
    } else if f.only(&[Int, Long, Double]) {
        Some(Class::Number)
    } else if f.only(&[String]) {
        Some(Class::Text)
    } else if f.only(&[Bool]) {
        Some(Class::Flag)
    } else if f.only(&[Date]) {
        Some(Class::Date)
    } else {
        None
    }
}

/// The sparse fields that fit, if any; `explained`: fields a discriminator's values account
/// for (present under one value, so sparse for another reason).
pub(super) fn find(s: &Sample<'_>, explained: &BTreeSet<String>) -> Option<Finding> {
    let shape = &s.profile.shape;
    let n = s.profile.documents;
    let mut groups: BTreeMap<Class, Vec<(&String, &Field)>> = BTreeMap::new();
    for (name, f) in &shape.fields {
        if name == "_id" || explained.contains(name) || f.present * 100 > n * ATTRIBUTE_MAX_SHARE {
            continue;
        }
        if let Some(c) = class(f) {
            // Integers join the numbers when the numbers are the larger group.
            groups.entry(c).or_default().push((name, f));
        }
    }
    if let Some(ints) = groups.get(&Class::Integer).cloned() {
        if groups
            .get(&Class::Number)
            .is_some_and(|nums| nums.len() >= ints.len())
        {
            groups.remove(&Class::Integer);
            groups.entry(Class::Number).or_default().extend(ints);
        }
    }
    let (class, fields) = groups
        .into_iter()
        .filter(|(_, fs)| fs.len() >= ATTRIBUTE_MIN_FIELDS)
        .max_by_key(|(c, fs)| (fs.len(), std::cmp::Reverse(*c)))?;
    let numbers: BTreeSet<u32> = fields
        .iter()
        .filter_map(|(name, _)| s.profile.number(name))
        .collect();
    let (mut holding, mut held) = (0u64, 0u64);
    for d in &s.profile.docs {
        let k = d.fields.iter().filter(|f| numbers.contains(f)).count() as u64;
        if k > 0 {
            holding += 1;
            held += k;
        }
    }
    if holding * 100 < n * ATTRIBUTE_MIN_COVER {
        return None;
    }
    let per_document = held as f64 / holding.max(1) as f64;
    let value_type = match class {
        // The values' one type: `i32` when every field holds `int`s alone.
        Class::Integer if fields.iter().all(|(_, f)| integer_type(f) == Some("i32")) => "i32",
        Class::Integer => "i64",
        Class::Number => "f64",
        Class::Text => "String",
        Class::Flag => "bool",
        Class::Date => "bson::DateTime",
    };
    let array = ["attributes", "attrs", "specs", "pattern_attributes"]
        .into_iter()
        .find(|a| !shape.fields.contains_key(*a))
        .unwrap_or("attributes_");
    let index = format!("pattern_attributes_{array}");
    let most = fields.iter().map(|(_, f)| f.present).max().unwrap_or(0);
    let confidence = if fields.len() >= 2 * ATTRIBUTE_MIN_FIELDS && holding * 2 >= n {
        Confidence::High
    } else if n >= 100 {
        Confidence::Medium
    } else {
        Confidence::Low
    };
    let reason = format!(
        "{} {} fields are each in at most {} of the sampled documents; {} of the documents hold at least one \
         ({per_document:.1} each): one array of `{{k, v}}` under one index `{{{array}.k: 1, {array}.v: 1}}` \
         holds them all, where each field would need an index of its own",
        fields.len(),
        match class {
            Class::Integer => "integer",
            Class::Number => "number",
            Class::Text => "string",
            Class::Flag => "boolean",
            Class::Date => "date",
        },
        percent(most, n),
        percent(holding, n),
    );
    let names: Vec<&str> = fields.iter().map(|(name, _)| name.as_str()).collect();
    let evidence = AttributeEvidence {
        fields: (fields.iter())
            .map(|(name, f)| SparseField {
                name: (*name).clone(),
                documents: f.present,
                types: (f.types.keys())
                    .map(|t| t.map_or("other", |t| t.alias()).to_owned())
                    .collect(),
            })
            .collect(),
        documents: holding,
        per_document,
        value_type: value_type.to_owned(),
        array: array.to_owned(),
        index,
    };
    let mut f = Finding::new(Evidence::Attribute(evidence), confidence, reason);
    f.code = Some(code(s, &names, array, value_type));
    let list = names.join(",");
    let migrate = [
        "migrate",
        "attributes",
        "--collection",
        s.coll.name,
        "--fields",
        &list,
        "--into",
        array,
    ];
    let mut dry = migrate.to_vec();
    dry.push("--dry-run");
    f.commands = vec![
        s.coll.command(&dry),
        s.coll.command(&migrate),
        s.coll
            .command(&["analyze", "shapes", "--collection", s.coll.name]),
    ];
    f.notes.push(format!(
        "The migration rewrites each document holding one of the fields (one conditional update each: \
         a stopped run is resumed by running it again); switch the writers to the new type first, or run \
         it again after the last old writer stopped. `#[document(attributes)]` creates the index \
         `{{{array}.k: 1, {array}.v: 1}}` on its first use."
    ));
    Some(f)
}

/// The struct: every other sampled field, and the attributes.
fn code(s: &Sample<'_>, sparse: &[&str], array: &str, value_type: &str) -> String {
    let mut code = Code::default();
    let name = code.type_name(&type_ident(&singular(s.coll.name)));
    code.uses("pattern_core::document::Attributes");
    code.uses("pattern_core::Document");
    code.uses("serde::{Deserialize, Serialize}");
    let mut fields: Vec<RustField> = (code.fields(&s.profile.shape, sparse).into_iter())
        .map(|(_, f)| f)
        .collect();
    fields.push(RustField {
        doc: vec![format!(
            "Was {}: one `{{k, v}}` per field a document holds.",
            sparse
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )],
        attrs: vec![
            "#[document(attributes)]".into(),
            "#[serde(default)] // a document without any has no array".into(),
        ],
        name: array.to_owned(),
        ty: format!("Attributes<{value_type}>"),
    });
    code.push_struct(&Item {
        doc: vec![format!(
            "`{}`: its sparse fields as attributes, under the index `{{{array}.k: 1, {array}.v: 1}}`.",
            s.coll.name
        )],
        derives: vec!["Document", "Serialize", "Deserialize"],
        attrs: vec![format!(
            "#[document(collection = {})]",
            string_literal(s.coll.name)
        )],
        name,
        fields,
    });
    code.render()
}
