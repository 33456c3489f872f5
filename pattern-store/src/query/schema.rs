//! The subset of MongoDB's `$jsonSchema` the layouts' validators use ([`Schema`]), its
//! document, and how the in-memory store evaluates it.
//!
//! Only these keywords: `bsonType` (one type or several), `required`, `properties`,
//! `minimum`, `maximum`, `maxItems`, `items` (one schema for every element), `enum` (strings)
//! and `oneOf` (a polymorphic collection's variants). Each means what it means on MongoDB:
//! - `bsonType: "number"` takes the four number types, `"int"` only Int32, `"long"` only
//!   Int64; the type is the value's own (an array is an `"array"`, never its elements);
//! - `minimum`/`maximum` compare numbers across types, exactly (Int64 against Double without
//!   rounding, Decimal128 by its value), refuse NaN (MongoDB's comparisons match NaN only
//!   against NaN), and let any value that is not a number pass (the test server lets a
//!   Decimal128 or a NaN pass them: `TEST-SERVER.md` in the repository, T10);
//! - `maxItems` and `items` look at arrays only, other values pass;
//! - a field the object lacks passes its `properties` schema; only `required` refuses it
//!   (a field holding null is present);
//! - `enum` takes a value equal to one of its strings; `oneOf` a value that passes exactly one
//!   of its schemas.

use std::cmp::Ordering;

use bson::{Bson, Document};

use crate::codec::number;
use crate::codec::BsonType;

/// A `$jsonSchema` of the subset above: what a value (the whole document, at the top) must
/// be. Every keyword left empty or `None` constrains nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    /// `bsonType`: the value is of one of these types. Empty: of any type.
    pub bson_type: Vec<BsonType>,
    /// `required`: the fields an object must have.
    pub required: Vec<String>,
    /// `properties`: the schema of each field, for an object that has the field.
    pub properties: Vec<(String, Schema)>,
    /// `minimum`: a number is at least this.
    pub minimum: Option<i64>,
    /// `maximum`: a number is at most this.
    pub maximum: Option<i64>,
    /// `maxItems`: an array has at most this many elements.
    pub max_items: Option<u64>,
    /// `items`: every element of an array matches this schema.
    pub items: Option<Box<Schema>>,
    /// `enum`: the value is one of these strings. Empty: any value.
    pub one_of_values: Vec<String>,
    /// `oneOf`: the value passes exactly one of these schemas. Empty: no such condition.
    pub one_of: Vec<Schema>,
}

impl Schema {
    /// A value of one of `types` (any type when empty).
    pub fn of(types: &[BsonType]) -> Self {
        Schema {
            bson_type: types.to_vec(),
            ..Schema::default()
        }
    }

    /// A document: `bsonType: "object"`.
    pub fn object() -> Self {
        Schema::of(&[BsonType::Object])
    }

    /// Adds a required field.
    pub fn require(mut self, field: &str) -> Self {
        self.required.push(field.to_owned());
        self
    }

    /// Adds a field's schema to `properties`.
    pub fn property(mut self, field: &str, schema: Schema) -> Self {
        self.properties.push((field.to_owned(), schema));
        self
    }

    /// Sets `minimum` and `maximum` (`None`: that side unbounded).
    pub fn range(mut self, minimum: Option<i64>, maximum: Option<i64>) -> Self {
        self.minimum = minimum;
        self.maximum = maximum;
        self
    }

    /// Sets `maxItems`.
    pub fn max_items(mut self, n: u64) -> Self {
        self.max_items = Some(n);
        self
    }

    /// Sets `items`.
    pub fn items(mut self, schema: Schema) -> Self {
        self.items = Some(Box::new(schema));
        self
    }

    /// Sets `enum`: the value is one of `values`.
    pub fn values(mut self, values: &[&str]) -> Self {
        self.one_of_values = values.iter().map(|v| (*v).to_owned()).collect();
        self
    }

    /// Sets `oneOf`: the value passes exactly one of `schemas`.
    pub fn one_of(mut self, schemas: Vec<Schema>) -> Self {
        self.one_of = schemas;
        self
    }

    /// MongoDB's `$jsonSchema` document: the keywords in the order above, `bsonType` a string
    /// for one type and an array for several, numbers as Int32 where they fit.
    pub fn to_document(&self) -> Document {
        let mut d = Document::new();
        match self.bson_type.as_slice() {
            [] => {}
            [one] => {
                d.insert("bsonType", one.alias());
            }
            many => {
                let aliases = many.iter().map(|t| Bson::String(t.alias().into()));
                d.insert("bsonType", Bson::Array(aliases.collect()));
            }
        }
        if !self.required.is_empty() {
            d.insert("required", self.required.clone());
        }
        if !self.properties.is_empty() {
            let props: Document = (self.properties.iter())
                .map(|(k, s)| (k.clone(), Bson::Document(s.to_document())))
                .collect();
            d.insert("properties", props);
        }
        let int = |n: i64| match i32::try_from(n) {
            Ok(n) => Bson::Int32(n),
            Err(_) => Bson::Int64(n),
        };
        if let Some(n) = self.minimum {
            d.insert("minimum", int(n));
        }
        if let Some(n) = self.maximum {
            d.insert("maximum", int(n));
        }
        if let Some(n) = self.max_items {
            d.insert("maxItems", int(i64::try_from(n).unwrap_or(i64::MAX)));
        }
        if let Some(items) = &self.items {
            d.insert("items", items.to_document());
        }
        if !self.one_of_values.is_empty() {
            d.insert("enum", self.one_of_values.clone());
        }
        if !self.one_of.is_empty() {
            let all = self.one_of.iter().map(|s| Bson::Document(s.to_document()));
            d.insert("oneOf", Bson::Array(all.collect()));
        }
        d
    }

    /// Why `doc` fails the schema (the first keyword it fails, with the field's path), or
    /// `None` when it passes.
    pub fn violation(&self, doc: &Document) -> Option<String> {
        self.check_object("", doc).err()
    }

    /// The checks of `value` at `path` (`""`: the document itself).
    fn check(&self, path: &str, value: &Bson) -> Result<(), String> {
        if !self.bson_type.is_empty() && !self.bson_type.iter().any(|t| t.holds(value)) {
            let want: Vec<&str> = self.bson_type.iter().map(|t| t.alias()).collect();
            let is = BsonType::of(value).map_or("a deprecated type", BsonType::alias);
            return Err(format!("{} is {is}, not {}", name(path), want.join(" or ")));
        }
        if !self.one_of_values.is_empty()
            && !matches!(value, Bson::String(s) if self.one_of_values.contains(s))
        {
            let want = self.one_of_values.join(", ");
            return Err(format!("{} is {value}, not one of {want}", name(path)));
        }
        if !self.one_of.is_empty() && !matches!(value, Bson::Document(_)) {
            // A document's `oneOf` is checked with its fields (`check_object`).
            self.check_one_of(path, |s| s.check(path, value))?;
        }
        match value {
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                self.check_number(path, value)
            }
            Bson::Array(a) => self.check_array(path, a),
            Bson::Document(d) => self.check_object(path, d),
            _ => Ok(()),
        }
    }

    /// `oneOf`: exactly one of the schemas passes (`check` runs one on the value).
    fn check_one_of(
        &self,
        path: &str,
        check: impl Fn(&Schema) -> Result<(), String>,
    ) -> Result<(), String> {
        let results: Vec<Result<(), String>> = self.one_of.iter().map(check).collect();
        match results.iter().filter(|r| r.is_ok()).count() {
            1 => Ok(()),
            0 => {
                // The failure that names what is wrong: a variant's own (the one that takes
                // the value's discriminator) rather than another's `enum`.
                let why: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
                let why = (why.iter().find(|w| !w.contains("not one of")))
                    .or(why.first())
                    .map_or(String::new(), |w| (*w).clone());
                Err(format!("{} passes none of oneOf: {why}", name(path)))
            }
            n => Err(format!("{} passes {n} of oneOf, not one", name(path))),
        }
    }

    fn check_number(&self, path: &str, value: &Bson) -> Result<(), String> {
        let bounds = [
            (self.minimum, Ordering::Less, "below the minimum"),
            (self.maximum, Ordering::Greater, "above the maximum"),
        ];
        for (bound, out, what) in bounds {
            let Some(bound) = bound else { continue };
            // NaN passes no bound (MongoDB's comparisons match NaN only against NaN).
            let cmp = number::compare(value, &Bson::Int64(bound));
            let outside = number::is_nan(value) || cmp.is_none_or(|c| c == out);
            if outside {
                return Err(format!("{} is {value}, {what} {bound}", name(path)));
            }
        }
        Ok(())
    }

    fn check_array(&self, path: &str, a: &[Bson]) -> Result<(), String> {
        if let Some(max) = self.max_items {
            if a.len() as u64 > max {
                return Err(format!(
                    "{} has {} items, more than maxItems {max}",
                    name(path),
                    a.len()
                ));
            }
        }
        if let Some(items) = &self.items {
            for (i, e) in a.iter().enumerate() {
                items.check(&join(path, &i.to_string()), e)?;
            }
        }
        Ok(())
    }

    fn check_object(&self, path: &str, d: &Document) -> Result<(), String> {
        if let Some(missing) = self.required.iter().find(|f| !d.contains_key(f.as_str())) {
            return Err(format!(
                "{} lacks the required field `{missing}`",
                name(path)
            ));
        }
        for (field, schema) in &self.properties {
            if let Some(v) = d.get(field) {
                schema.check(&join(path, field), v)?;
            }
        }
        if !self.one_of.is_empty() {
            self.check_one_of(path, |s| s.check_document(path, d))?;
        }
        Ok(())
    }

    /// `check` of a document value (without wrapping it in a `Bson`).
    fn check_document(&self, path: &str, d: &Document) -> Result<(), String> {
        if !self.bson_type.is_empty() && !self.bson_type.contains(&BsonType::Object) {
            let want: Vec<&str> = self.bson_type.iter().map(|t| t.alias()).collect();
            return Err(format!(
                "{} is object, not {}",
                name(path),
                want.join(" or ")
            ));
        }
        if !self.one_of_values.is_empty() {
            return Err(format!(
                "{} is a document, not one of {}",
                name(path),
                self.one_of_values.join(", ")
            ));
        }
        self.check_object(path, d)
    }
}

fn join(path: &str, field: &str) -> String {
    match path {
        "" => field.to_owned(),
        _ => format!("{path}.{field}"),
    }
}

/// How a message names the value at `path`.
fn name(path: &str) -> String {
    match path {
        "" => "the document".to_owned(),
        _ => format!("`{path}`"),
    }
}

#[cfg(test)]
mod tests {
    use bson::{doc, Bson, Decimal128};

    use super::Schema;
    use crate::codec::BsonType;

    fn count_schema() -> Schema {
        Schema::object()
            .require("k")
            .property("k", Schema::of(&[BsonType::String]))
            .property(
                "count",
                Schema::of(BsonType::INTEGERS).range(Some(0), Some(10)),
            )
            .property(
                "items",
                Schema::of(&[BsonType::Array])
                    .max_items(2)
                    .items(Schema::of(&[BsonType::Number])),
            )
            .property("n", Schema::default().range(Some(0), Some(10)))
            .property("m", Schema::default().max_items(1))
    }

    #[test]
    fn the_document_is_mongodbs() {
        assert_eq!(
            count_schema().to_document(),
            doc! {
                "bsonType": "object",
                "required": ["k"],
                "properties": {
                    "k": {"bsonType": "string"},
                    "count": {"bsonType": ["int", "long"], "minimum": 0, "maximum": 10},
                    "items": {"bsonType": "array", "maxItems": 2, "items": {"bsonType": "number"}},
                    "n": {"minimum": 0, "maximum": 10},
                    "m": {"maxItems": 1},
                },
            }
        );
        let big = Schema::default().range(Some(i64::MIN), None);
        assert_eq!(big.to_document(), doc! {"minimum": i64::MIN});
    }

    #[test]
    fn keywords_follow_mongodb() {
        let s = count_schema();
        let dec = |x: &str| Bson::Decimal128(x.parse::<Decimal128>().unwrap());
        let pass = [
            doc! {"k": "a"},
            doc! {"k": "a", "count": 0, "items": [], "n": "not a number passes"},
            doc! {"k": "a", "count": 10_i64, "items": [1, 2.5]},
            doc! {"k": "a", "n": 10.0, "m": "not an array passes maxItems"},
            doc! {"k": "a", "n": dec("1E1")},
            doc! {"k": "a", "n": -0.0},
            doc! {"k": "a", "n": Bson::Null},
        ];
        for d in pass {
            assert_eq!(s.violation(&d), None, "{d}");
        }
        let refuse = [
            doc! {},
            doc! {"k": Bson::Null},
            doc! {"k": ["a"]},
            doc! {"k": "a", "count": 11},
            doc! {"k": "a", "count": -1_i64},
            doc! {"k": "a", "count": 5.0},
            doc! {"k": "a", "count": Bson::Null},
            doc! {"k": "a", "items": [1, 2, 3]},
            doc! {"k": "a", "items": ["x"]},
            doc! {"k": "a", "n": 10.000001},
            doc! {"k": "a", "n": dec("10.0000000000000000000000000001")},
            doc! {"k": "a", "n": f64::NAN},
            doc! {"k": "a", "n": dec("NaN")},
            doc! {"k": "a", "n": f64::INFINITY},
            doc! {"k": "a", "n": f64::NEG_INFINITY},
        ];
        for d in refuse {
            assert!(s.violation(&d).is_some(), "{d} passed");
        }
        assert_eq!(
            s.violation(&doc! {"k": "a", "count": 11}).unwrap(),
            "`count` is 11, above the maximum 10"
        );
        assert_eq!(
            s.violation(&doc! {"k": "a", "items": [1, "x"]}).unwrap(),
            "`items.1` is string, not number"
        );
    }
}
