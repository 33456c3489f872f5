//! `analyze shapes`: the shapes of a collection's documents, counted in one read, without any
//! type of the application: the discriminator (given, or found: the string field whose values
//! best tell the documents' field sets apart), each of its values with its count and field
//! set, and the attribute arrays (arrays of `{k, v}` documents) with the keys in use.
//!
//! What `#[derive(Document)]` on an enum (the polymorphic pattern) and
//! `#[document(attributes)]` (the attribute pattern) need to know of data written before.

use std::collections::{BTreeMap, BTreeSet};

use bson::{RawBsonRef, RawDocument};
use serde::Serialize;

use super::preflight::require_collection;
use crate::codec::BsonType;
use crate::pass::scan::{scan, sorted};
use crate::pass::Options;
use crate::store::query::Filter;
use crate::store::Store;
use crate::{Error, Result};

/// The `comment` of [`analyze_shapes`]' read of the whole collection.
pub const SHAPES_SCAN: &str = "pattern scatter: shapes";

/// Distinct values of a string field past which it is no discriminator (and is no longer
/// counted).
pub const SHAPES_MAX_VALUES: usize = 64;

/// Keys of an attribute array past which they are no longer counted
/// ([`AttributeArray::truncated`]).
pub const SHAPES_MAX_KEYS: usize = 1_000;

/// Names a discriminator usually has (other tools' defaults): preferred among fields that tell
/// the shapes apart equally well.
pub(super) const USUAL: [&str; 9] = [
    "kind",
    "type",
    "_t",
    "__t",
    "_type",
    "_cls",
    "_class",
    "__typename",
    "discriminator",
];

/// What [`analyze_shapes`] found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShapesAnalysis {
    /// The collection read.
    pub collection: String,
    /// Documents read.
    pub documents: u64,
    /// The discriminator: the field given, or the one found (`None`: none given, and no
    /// string field with 2 to [`SHAPES_MAX_VALUES`] values in 90% of the documents).
    pub discriminator: Option<Discriminator>,
    /// The attribute arrays: top-level arrays whose elements are all documents with a string
    /// `k` and a `v`.
    pub attributes: Vec<AttributeArray>,
}

/// A discriminator field and the shape of each of its values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Discriminator {
    /// The field.
    pub field: String,
    /// Whether it was found rather than given.
    pub found: bool,
    /// Documents without it, or with a value that is not a string.
    pub missing: u64,
    /// Each value, by count descending.
    pub values: Vec<ValueShape>,
}

/// The documents of one discriminator value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ValueShape {
    /// The value.
    pub value: String,
    /// Documents holding it.
    pub count: u64,
    /// The fields every one of them has (`_id` and the discriminator left out).
    pub always: Vec<String>,
    /// The fields some of them have, with how many.
    pub sometimes: Vec<(String, u64)>,
}

/// An attribute array and the keys its elements use.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttributeArray {
    /// The array field.
    pub field: String,
    /// Documents holding it.
    pub documents: u64,
    /// Each key (`k`), the documents using it and the BSON types of its values, by count
    /// descending.
    pub keys: Vec<(String, u64, Vec<String>)>,
    /// More than [`SHAPES_MAX_KEYS`] keys: the others were not counted.
    pub truncated: bool,
}

/// Per string field: its values and, per value, the documents and the count of each field.
#[derive(Clone, Default)]
struct Candidate {
    /// Documents holding a string there.
    present: u64,
    /// Too many values: no longer counted.
    overflow: bool,
    values: BTreeMap<String, (u64, BTreeMap<String, u64>)>,
}

#[derive(Clone, Default)]
struct Attrs {
    documents: u64,
    keys: BTreeMap<String, (u64, BTreeSet<&'static str>)>,
    truncated: bool,
}

/// Reads every document of `collection` once and reports its shapes ([`ShapesAnalysis`]):
/// with `field`, the documents per value of that field and each value's field set; without,
/// the field found to tell the shapes apart: a field of a usual name (`kind`, `type`, `_t`,
/// `_cls`...) whose values tell some fields apart, else the one whose values do so for the most
/// fields (always present under one value and never under another), the fewer values first;
/// and every attribute array with the keys in use.
///
/// Writes nothing. A collection that does not exist is refused ([`Error::SourceNotFound`]);
/// an empty `field` is [`store::Error::InvalidInput`](crate::store::Error::InvalidInput). Memory: per string field up to
/// [`SHAPES_MAX_VALUES`] values with their field counts, per attribute array up to
/// [`SHAPES_MAX_KEYS`] keys.
pub async fn analyze_shapes<S: Store>(
    store: &S,
    collection: &str,
    field: Option<&str>,
    options: &Options<'_>,
) -> Result<ShapesAnalysis> {
    crate::observe::traced_op!(document.analyze_shapes, store, collection, async {
        if field == Some("") {
            return Err(Error::invalid("the discriminator field's name is empty"));
        }
        require_collection(store, collection).await?;
        let mut counter = ShapesCounter::new(field);
        let all = Filter::and([]);
        let documents = scan(
            store,
            collection,
            &all,
            sorted(SHAPES_SCAN, vec![], vec![]),
            options,
            "shapes",
            |doc| {
                counter.see(&doc);
                Ok(())
            },
        )
        .await?;
        Ok(counter.finish(collection, documents))
    })
}

/// The counts behind a [`ShapesAnalysis`], one document at a time (in any order: the result
/// does not depend on it): [`analyze_shapes`] feeds it the whole collection, `advise` a sample.
#[derive(Clone)]
pub(super) struct ShapesCounter {
    field: Option<String>,
    candidates: BTreeMap<String, Candidate>,
    attributes: BTreeMap<String, Attrs>,
}

impl ShapesCounter {
    /// Counting the values of `field` only, or (`None`) of every string field.
    pub(super) fn new(field: Option<&str>) -> Self {
        ShapesCounter {
            field: field.map(str::to_owned),
            candidates: BTreeMap::new(),
            attributes: BTreeMap::new(),
        }
    }

    /// Counts one document.
    pub(super) fn see(&mut self, doc: &RawDocument) {
        let keys: Vec<String> = (doc.iter().flatten())
            .map(|(k, _)| k.to_owned())
            .filter(|k| k != "_id")
            .collect();
        for (k, v) in doc.iter().flatten() {
            match v {
                RawBsonRef::String(s) if self.field.as_deref().is_none_or(|f| f == k) => {
                    see_value(
                        self.candidates.entry(k.to_owned()).or_default(),
                        s,
                        &keys,
                        k,
                    );
                }
                RawBsonRef::Array(a) => see_array(&mut self.attributes, k, a),
                _ => {}
            }
        }
    }

    /// The analysis of the `documents` counted.
    pub(super) fn finish(mut self, collection: &str, documents: u64) -> ShapesAnalysis {
        let discriminator = match self.field.take() {
            Some(f) => {
                let c = self.candidates.remove(&f).unwrap_or_default();
                Some(shape_of(&f, false, c, documents))
            }
            None => best(self.candidates, documents),
        };
        let attributes = (self.attributes.into_iter())
            .map(|(field, a)| {
                let mut keys: Vec<(String, u64, Vec<String>)> = (a.keys.into_iter())
                    .map(|(k, (n, types))| (k, n, types.into_iter().map(str::to_owned).collect()))
                    .collect();
                keys.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
                AttributeArray {
                    field,
                    documents: a.documents,
                    keys,
                    truncated: a.truncated,
                }
            })
            .collect();
        ShapesAnalysis {
            collection: collection.to_owned(),
            documents,
            discriminator,
            attributes,
        }
    }
}

fn see_value(c: &mut Candidate, value: &str, keys: &[String], field: &str) {
    c.present += 1;
    if c.overflow {
        return;
    }
    if !c.values.contains_key(value) && c.values.len() == SHAPES_MAX_VALUES {
        c.overflow = true;
        c.values.clear();
        return;
    }
    let (n, fields) = c.values.entry(value.to_owned()).or_default();
    *n += 1;
    for k in keys.iter().filter(|k| *k != field) {
        *fields.entry(k.clone()).or_default() += 1;
    }
}

/// An array of documents each with a string `k` and a `v`: its keys counted once per
/// document.
fn see_array(attributes: &mut BTreeMap<String, Attrs>, field: &str, a: &bson::RawArray) {
    let mut pairs: Vec<(&str, RawBsonRef)> = Vec::new();
    for e in a.into_iter() {
        let Ok(RawBsonRef::Document(d)) = e else {
            return;
        };
        match pair(d) {
            Some(p) => pairs.push(p),
            None => return,
        }
    }
    if pairs.is_empty() {
        return;
    }
    let at = attributes.entry(field.to_owned()).or_default();
    at.documents += 1;
    let mut seen = BTreeSet::new();
    for (k, v) in pairs {
        let ty = BsonType::of(&bson::Bson::try_from(v).unwrap_or(bson::Bson::Null))
            .map_or("other", BsonType::alias);
        if !at.keys.contains_key(k) && at.keys.len() == SHAPES_MAX_KEYS {
            at.truncated = true;
            continue;
        }
        let (n, types) = at.keys.entry(k.to_owned()).or_default();
        if seen.insert(k) {
            *n += 1;
        }
        types.insert(ty);
    }
}

fn pair(d: &RawDocument) -> Option<(&str, RawBsonRef<'_>)> {
    match (d.get("k").ok()??, d.get("v").ok()??) {
        (RawBsonRef::String(k), v) => Some((k, v)),
        _ => None,
    }
}

/// A candidate as reported.
fn shape_of(field: &str, found: bool, c: Candidate, documents: u64) -> Discriminator {
    let mut values: Vec<ValueShape> = (c.values.into_iter())
        .map(|(value, (count, fields))| {
            let always = (fields.iter())
                .filter(|(_, n)| **n == count)
                .map(|(k, _)| k.clone())
                .collect();
            let sometimes = (fields.into_iter()).filter(|(_, n)| *n < count).collect();
            ValueShape {
                value,
                count,
                always,
                sometimes,
            }
        })
        .collect();
    values.sort_by(|a, b| b.count.cmp(&a.count).then(a.value.cmp(&b.value)));
    Discriminator {
        field: field.to_owned(),
        found,
        missing: documents - c.present,
        values,
    }
}

/// The field that tells the shapes apart best, if any.
fn best(candidates: BTreeMap<String, Candidate>, documents: u64) -> Option<Discriminator> {
    let shapes = (candidates.into_iter())
        .filter(|(_, c)| !c.overflow && c.values.len() >= 2 && c.present * 10 >= documents * 9)
        .map(|(f, c)| shape_of(&f, true, c, documents));
    shapes.max_by_key(|d| {
        let apart = separation(d);
        let usual = USUAL.contains(&d.field.as_str()) && apart > 0;
        (usual, apart, std::cmp::Reverse(d.values.len()))
    })
}

/// How many fields are always present under one value and never under another.
pub(super) fn separation(d: &Discriminator) -> usize {
    let fields: BTreeSet<&String> = d.values.iter().flat_map(|v| &v.always).collect();
    let never = |v: &ValueShape, f: &String| {
        !v.always.contains(f) && !v.sometimes.iter().any(|(s, _)| s == f)
    };
    (fields.into_iter())
        .filter(|f| d.values.iter().any(|v| never(v, f)))
        .count()
}
