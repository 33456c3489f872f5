//! What a sample of a collection holds, counted one document at a time: per field (at the top
//! level, and a few levels into embedded documents and arrays) the documents holding it, the
//! BSON types of its values, its arrays' lengths, its distinct values; per document its size,
//! its field set and its `_id`'s time. Every figure is independent of the order the documents
//! came in, so the same documents give the same profile on either store.

use std::collections::BTreeMap;

use bson::{Bson, RawBsonRef, RawDocument};

use super::super::histogram::Histogram;
use super::super::shapes::ShapesCounter;
use super::super::versions::version_of;
use crate::codec::order::{compare_values, value_key, ByValue};
use crate::codec::BsonType;

/// Distinct top-level field names profiled at most (past it, [`Shape::truncated`]).
pub(super) const MAX_FIELDS: usize = 1_000;
/// Embedded levels profiled below the top level (deeper documents are typed as a whole).
const MAX_DEPTH: usize = 3;
/// Distinct values a field's [`Field::values`] keeps at most (past it, none: the field has
/// too many to be a key, a reference or a discriminator of interest).
pub(super) const MAX_VALUES: usize = 10_000;
/// Strings longer than this are never kept as values.
const MAX_VALUE_BYTES: usize = 256;
/// Field names a schema version is kept under (the derive's default first); a field of one of
/// these names holding an integer is recorded per document.
pub(super) const VERSION_NAMES: [&str; 6] = [
    "schema_version",
    "schemaVersion",
    "_schema",
    "_version",
    "version",
    "_v",
];

/// The profile of one sample.
pub(super) struct Profile {
    /// Documents profiled.
    pub documents: u64,
    /// Their sizes in bytes.
    pub sizes: Histogram,
    /// The largest: its bytes and `_id` (of two as large, the smaller `_id`).
    pub largest: Option<(u64, Bson)>,
    /// The top-level fields, `_id` included.
    pub shape: Shape,
    /// Each document's field set, `_id`'s time and version, for the rules that look at which
    /// fields go together.
    pub docs: Vec<DocFields>,
    /// The field names [`DocFields::fields`] numbers.
    pub names: Vec<String>,
    ids: BTreeMap<String, u32>,
    /// The discriminators and attribute arrays, as `analyze shapes` counts them.
    pub shapes: ShapesCounter,
}

/// One document's fields.
pub(super) struct DocFields {
    /// Its `_id`'s creation time in seconds, when the `_id` is an ObjectId.
    pub time: Option<u32>,
    /// Its `_id` by value, as bytes (ties of `time` are broken by them: an ObjectId's order).
    pub id: Vec<u8>,
    /// Its top-level fields (numbers into [`Profile::names`]), sorted.
    pub fields: Vec<u32>,
    /// The integers it holds under a [`VERSION_NAMES`] name.
    pub versions: Vec<(u32, i64)>,
}

/// The fields of some documents.
#[derive(Default)]
pub(super) struct Shape {
    /// Documents seen.
    pub count: u64,
    /// Each field by name.
    pub fields: BTreeMap<String, Field>,
    /// More names than [`MAX_FIELDS`]: the others were not profiled.
    pub truncated: bool,
}

/// One field of a [`Shape`] (or the elements of an array, as one field).
#[derive(Default)]
pub(super) struct Field {
    /// Values seen (documents holding the field; for elements, the elements).
    pub present: u64,
    /// Values per BSON type (`None`: a deprecated type).
    pub types: BTreeMap<Option<BsonType>, u64>,
    /// The sum of the field's positions in its documents (0 for the first field).
    pub position: u64,
    /// The sum of its values' bytes.
    pub bytes: u64,
    /// Arrays: their lengths.
    pub lengths: Histogram,
    /// Top-level arrays: each one's length (as many as the sample's documents at most).
    pub each_length: Vec<u64>,
    /// Arrays: their bytes per element.
    pub item_bytes: Histogram,
    /// Arrays: the largest's length and its document's `_id` (top level only).
    pub longest: Option<(u64, Bson)>,
    /// Arrays: their elements, as one field.
    pub elements: Option<Box<Field>>,
    /// Documents: their fields.
    pub sub: Option<Box<Shape>>,
    /// Distinct scalar values (integers, strings up to 256 bytes, ObjectIds), by value (Int32 5
    /// and Int64 5 are one, as on the server), in MongoDB's order, with their count; empty
    /// once past [`MAX_VALUES`] or when the field also holds other values
    /// ([`Field::values_overflow`]).
    pub values: BTreeMap<ByValue, (Bson, u64)>,
    /// Too many distinct values, or other ones: [`Field::values`] is empty.
    pub values_overflow: bool,
    /// Dates: the earliest and latest, in milliseconds.
    pub dates: Option<(i64, i64)>,
    /// Strings of the form `,a,b,` (a materialized path).
    pub paths: u64,
}

impl Profile {
    pub(super) fn new() -> Self {
        Profile {
            documents: 0,
            sizes: Histogram::new(),
            largest: None,
            shape: Shape::default(),
            docs: Vec::new(),
            names: Vec::new(),
            ids: BTreeMap::new(),
            shapes: ShapesCounter::new(None),
        }
    }

    /// Counts one document.
    pub(super) fn see(&mut self, doc: &RawDocument) {
        self.documents += 1;
        let bytes = doc.as_bytes().len() as u64;
        self.sizes.record(bytes);
        let id = doc
            .get("_id")
            .ok()
            .flatten()
            .map(to_bson)
            .unwrap_or(Bson::Null);
        let larger = match &self.largest {
            None => true,
            Some((b, i)) => bytes > *b || (bytes == *b && compare_values(&id, i).is_lt()),
        };
        if larger {
            self.largest = Some((bytes, id.clone()));
        }
        self.shape.see(doc, 0, &id);
        self.shapes.see(doc);
        let mut fields = Vec::new();
        let mut versions = Vec::new();
        for (k, v) in doc.iter().flatten() {
            let Some(n) = self.id_of(k) else { continue };
            fields.push(n);
            if VERSION_NAMES.contains(&k) {
                if let Some(v) = version_of(v) {
                    versions.push((n, v));
                }
            }
        }
        fields.sort_unstable();
        let time = match doc.get("_id") {
            Ok(Some(RawBsonRef::ObjectId(o))) => Some(o.timestamp().timestamp_millis() / 1000),
            _ => None,
        };
        self.docs.push(DocFields {
            time: time.and_then(|t| u32::try_from(t).ok()),
            id: value_key(&id),
            fields,
            versions,
        });
    }

    /// The number of a field name (`None` past [`MAX_FIELDS`] names).
    fn id_of(&mut self, name: &str) -> Option<u32> {
        if let Some(n) = self.ids.get(name) {
            return Some(*n);
        }
        if self.names.len() >= MAX_FIELDS {
            return None;
        }
        let n = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), n);
        Some(n)
    }

    /// The number of a field name already seen.
    pub(super) fn number(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }
}

impl Shape {
    fn see(&mut self, doc: &RawDocument, depth: usize, id: &Bson) {
        self.count += 1;
        for (position, (k, v)) in doc.iter().flatten().enumerate() {
            if !self.fields.contains_key(k) && self.fields.len() >= MAX_FIELDS {
                self.truncated = true;
                continue;
            }
            let field = self.fields.entry(k.to_owned()).or_default();
            field.position += position as u64;
            field.see(v, depth, (depth == 0).then_some(id));
        }
    }

    /// The fields in the order documents hold them (by mean position, then name), `_id`
    /// first.
    pub(super) fn ordered(&self) -> Vec<(&String, &Field)> {
        let mut fields: Vec<(&String, &Field)> = self.fields.iter().collect();
        let mean = |f: &Field| f.position as f64 / f.present.max(1) as f64;
        fields.sort_by(|(a, x), (b, y)| {
            (b.as_str() == "_id")
                .cmp(&(a.as_str() == "_id"))
                .then(mean(x).total_cmp(&mean(y)))
                .then(a.cmp(b))
        });
        fields
    }
}

impl Field {
    /// Counts one value; `id`: its document's `_id`, at the top level.
    fn see(&mut self, v: RawBsonRef<'_>, depth: usize, id: Option<&Bson>) {
        self.present += 1;
        let ty = raw_type(v);
        *self.types.entry(ty).or_default() += 1;
        self.bytes += value_bytes(v);
        match v {
            RawBsonRef::Document(d) if depth < MAX_DEPTH => {
                (self.sub.get_or_insert_default()).see(d, depth + 1, &Bson::Null);
            }
            RawBsonRef::Array(a) => {
                let len = a.into_iter().count() as u64;
                self.lengths.record(len);
                if let Some(each) = (a.as_bytes().len() as u64).checked_div(len) {
                    self.item_bytes.record(each);
                }
                if let Some(id) = id {
                    self.each_length.push(len);
                    let longer = match &self.longest {
                        None => true,
                        Some((n, i)) => len > *n || (len == *n && compare_values(id, i).is_lt()),
                    };
                    if longer {
                        self.longest = Some((len, id.clone()));
                    }
                }
                if depth < MAX_DEPTH {
                    let elements = self.elements.get_or_insert_default();
                    for e in a.into_iter().flatten() {
                        // The elements of a top-level array keep their values too.
                        elements.see(e, depth + 1, None);
                        if depth == 0 {
                            elements.value(e);
                        }
                    }
                }
            }
            RawBsonRef::DateTime(d) => {
                let ms = d.timestamp_millis();
                self.dates = Some(match self.dates {
                    None => (ms, ms),
                    Some((lo, hi)) => (lo.min(ms), hi.max(ms)),
                });
            }
            RawBsonRef::String(s) if s.len() >= 2 && s.starts_with(',') && s.ends_with(',') => {
                self.paths += 1;
            }
            _ => {}
        }
        if depth == 0 {
            self.value(v);
        }
    }

    /// Keeps a scalar value among [`Field::values`].
    fn value(&mut self, v: RawBsonRef<'_>) {
        if self.values_overflow {
            return;
        }
        let kept = match v {
            RawBsonRef::Int32(_) | RawBsonRef::Int64(_) | RawBsonRef::ObjectId(_) => true,
            RawBsonRef::String(s) => s.len() <= MAX_VALUE_BYTES,
            RawBsonRef::Null => return,
            _ => false,
        };
        let b = to_bson(v);
        let key = ByValue(b.clone());
        if !kept || (!self.values.contains_key(&key) && self.values.len() >= MAX_VALUES) {
            self.values_overflow = true;
            self.values.clear();
            return;
        }
        self.values.entry(key).or_insert((b, 0)).1 += 1;
    }

    /// Values of type `t`.
    pub(super) fn count(&self, t: BsonType) -> u64 {
        self.types.get(&Some(t)).copied().unwrap_or(0)
    }

    /// Values that are not null.
    pub(super) fn non_null(&self) -> u64 {
        self.present - self.count(BsonType::Null)
    }

    /// Whether every value that is not null is of one of `types`.
    pub(super) fn only(&self, types: &[BsonType]) -> bool {
        let of: u64 = types.iter().map(|t| self.count(*t)).sum();
        of == self.non_null() && of > 0
    }
}

/// The BSON type of a raw value (`None` for the deprecated types).
pub(super) fn raw_type(v: RawBsonRef<'_>) -> Option<BsonType> {
    Some(match v {
        RawBsonRef::Double(_) => BsonType::Double,
        RawBsonRef::String(_) => BsonType::String,
        RawBsonRef::Document(_) => BsonType::Object,
        RawBsonRef::Array(_) => BsonType::Array,
        RawBsonRef::Binary(_) => BsonType::BinData,
        RawBsonRef::ObjectId(_) => BsonType::ObjectId,
        RawBsonRef::Boolean(_) => BsonType::Bool,
        RawBsonRef::DateTime(_) => BsonType::Date,
        RawBsonRef::Null => BsonType::Null,
        RawBsonRef::RegularExpression(_) => BsonType::Regex,
        RawBsonRef::JavaScriptCode(_) => BsonType::JavaScript,
        RawBsonRef::Int32(_) => BsonType::Int,
        RawBsonRef::Timestamp(_) => BsonType::Timestamp,
        RawBsonRef::Int64(_) => BsonType::Long,
        RawBsonRef::Decimal128(_) => BsonType::Decimal,
        RawBsonRef::MinKey => BsonType::MinKey,
        RawBsonRef::MaxKey => BsonType::MaxKey,
        _ => return None,
    })
}

/// The bytes a value takes in its document (its type's payload).
fn value_bytes(v: RawBsonRef<'_>) -> u64 {
    match v {
        RawBsonRef::Document(d) => d.as_bytes().len() as u64,
        RawBsonRef::Array(a) => a.as_bytes().len() as u64,
        RawBsonRef::String(s) => s.len() as u64 + 5,
        RawBsonRef::Binary(b) => b.bytes.len() as u64 + 5,
        RawBsonRef::Int32(_) => 4,
        RawBsonRef::Boolean(_) => 1,
        RawBsonRef::ObjectId(_) => 12,
        RawBsonRef::Decimal128(_) => 16,
        RawBsonRef::Null | RawBsonRef::MinKey | RawBsonRef::MaxKey => 0,
        _ => 8,
    }
}

/// A raw value as BSON (`Null` for what does not convert).
pub(super) fn to_bson(v: RawBsonRef<'_>) -> Bson {
    Bson::try_from(v.to_raw_bson()).unwrap_or(Bson::Null)
}
