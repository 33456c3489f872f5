//! The attribute pattern: many similar fields (a product's technical specifications, a film's
//! release dates per country) kept as one field of `{k, v}` pairs under one compound index,
//! `#[document(attributes)] specs: Attributes<V>`.
//!
//! [`Attributes`] is a map from names to values, stored as an array of `{k: name, v: value}`
//! documents (by name, ascending). A query on one attribute ([`Field::attribute`]) is always one
//! `$elemMatch` on that array, so the name and the condition on the value hold in one element:
//! the pitfall of two separate conditions (`{"specs.k": "voltage", "specs.v": {$gt: 200}}`,
//! which a document matches with `voltage` in one element and a value over 200 in another) cannot
//! be written. The index `{specs.k: 1, specs.v: 1}` (multikey) answers it.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use bson::Bson;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use super::{Document, Field, Filter};
use crate::store::query::{self, IndexSpec};

/// Names and values stored as an array of `{k, v}` documents, by name: the attribute pattern's
/// field. Dereferences to its `BTreeMap`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Attributes<V>(pub BTreeMap<String, V>);

impl<V> Attributes<V> {
    /// No attributes.
    pub fn new() -> Self {
        Attributes(BTreeMap::new())
    }
}

impl<V> std::ops::Deref for Attributes<V> {
    type Target = BTreeMap<String, V>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<V> std::ops::DerefMut for Attributes<V> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl<K: Into<String>, V> FromIterator<(K, V)> for Attributes<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Attributes(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

#[derive(Serialize)]
struct PairRef<'a, V> {
    k: &'a str,
    v: &'a V,
}

#[derive(Deserialize)]
struct Pair<V> {
    k: String,
    v: V,
}

impl<V: Serialize> Serialize for Attributes<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            seq.serialize_element(&PairRef { k, v })?;
        }
        seq.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Attributes<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Pairs<V> {
            type Value = Attributes<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of {k, v} documents (attributes)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(Pair { k, v }) = seq.next_element::<Pair<V>>()? {
                    if out.contains_key(&k) {
                        return Err(serde::de::Error::custom(format!(
                            "the attribute `{k}` appears twice (a document written by another \
                             tool?): keep one of its values"
                        )));
                    }
                    out.insert(k, v);
                }
                Ok(Attributes(out))
            }
        }
        deserializer.deserialize_seq(Pairs(PhantomData))
    }
}

/// The field `f`, holding attributes (the derive's check for `#[document(attributes)]`).
pub const fn attributes_field<D, V>(f: Field<D, Attributes<V>>) -> &'static str {
    f.name()
}

/// The compound index of an attributes field: `{<field>.k: 1, <field>.v: 1}`.
pub(crate) fn index(field: &str) -> IndexSpec {
    IndexSpec {
        name: format!("pattern_attributes_{field}"),
        keys: vec![(format!("{field}.k"), 1), (format!("{field}.v"), 1)],
        unique: false,
        partial: None,
    }
}

/// One attribute of an attributes field, to query: [`Field::attribute`].
pub struct Attribute<D, V> {
    field: &'static str,
    key: String,
    of: PhantomData<fn() -> (D, V)>,
}

impl<D: Document, V: Serialize> Field<D, Attributes<V>> {
    /// The attribute `key` of this field, to query (each condition one `$elemMatch`).
    pub fn attribute(self, key: impl Into<String>) -> Attribute<D, V> {
        Attribute {
            field: self.name(),
            key: key.into(),
            of: PhantomData,
        }
    }
}

impl<D: Document, V: Serialize> Attribute<D, V> {
    fn matching(self, cond: Result<Option<query::Filter>, String>) -> Filter<D> {
        let field = self.field;
        let filter = cond.map(|cond| {
            let mut inner = vec![query::Filter::Eq("k".into(), Bson::String(self.key))];
            inner.extend(cond);
            query::Filter::ElemMatch(field.into(), inner)
        });
        Filter::leaf(field, filter)
    }

    fn value(&self, v: &V) -> Result<Bson, String> {
        bson::to_bson(v).map_err(|e| {
            format!(
                "a value of the attribute `{}` of `{}`'s field `{}` does not serialize: {e}",
                self.key,
                D::COLLECTION,
                self.field
            )
        })
    }

    fn cond(self, value: &V, leaf: fn(query::Path, Bson) -> query::Filter) -> Filter<D> {
        let v = self.value(value).map(|v| Some(leaf("v".into(), v)));
        self.matching(v)
    }

    /// The document has the attribute: `{field: {$elemMatch: {k: key}}}`.
    pub fn exists(self) -> Filter<D> {
        self.matching(Ok(None))
    }
    /// The attribute equals `value`: `{field: {$elemMatch: {k: key, v: value}}}`.
    pub fn eq(self, value: impl Into<V>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Eq)
    }
    /// The attribute is over `value` (values of the same BSON type bracket only).
    pub fn gt(self, value: impl Into<V>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Gt)
    }
    /// The attribute is `value` or over.
    pub fn gte(self, value: impl Into<V>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Gte)
    }
    /// The attribute is under `value`.
    pub fn lt(self, value: impl Into<V>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Lt)
    }
    /// The attribute is `value` or under.
    pub fn lte(self, value: impl Into<V>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Lte)
    }
    /// The attribute is between `low` and `high`, both included, in one element.
    pub fn between(self, low: impl Into<V>, high: impl Into<V>) -> Filter<D> {
        let (low, high) = (self.value(&low.into()), self.value(&high.into()));
        let both = low.and_then(|l| {
            let h = high?;
            Ok(Some(query::Filter::And(vec![
                query::Filter::Gte("v".into(), l),
                query::Filter::Lte("v".into(), h),
            ])))
        });
        self.matching(both)
    }
    /// The attribute equals one of `values` (none: matches nothing).
    pub fn is_in<T: Into<V>>(self, values: impl IntoIterator<Item = T>) -> Filter<D> {
        let values: Result<Vec<Bson>, String> =
            values.into_iter().map(|v| self.value(&v.into())).collect();
        let cond = values.map(|vs| Some(query::Filter::In("v".into(), vs)));
        self.matching(cond)
    }
}
