//! MongoDB's names of the BSON types (`"int"`, `"long"`, `"string"`...), as `$type` and a
//! `$jsonSchema`'s `bsonType` spell them.

use bson::Bson;

/// A BSON type by MongoDB's alias (`bsonType` in a `$jsonSchema`, `$type` in a query).
/// [`BsonType::Number`] stands for the four number types together. The deprecated types
/// (undefined, DBPointer, symbol, JavaScript with scope) have no variant: no value of theirs
/// is of any of these types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BsonType {
    /// MongoDB's `double`.
    Double,
    /// MongoDB's `string`.
    String,
    /// MongoDB's `object` (an embedded document).
    Object,
    /// MongoDB's `array`.
    Array,
    /// MongoDB's `binData`.
    BinData,
    /// MongoDB's `objectId`.
    ObjectId,
    /// MongoDB's `bool`.
    Bool,
    /// MongoDB's `date`.
    Date,
    /// MongoDB's `null`.
    Null,
    /// MongoDB's `regex`.
    Regex,
    /// MongoDB's `javascript`.
    JavaScript,
    /// MongoDB's `int` (32-bit).
    Int,
    /// MongoDB's `timestamp`.
    Timestamp,
    /// MongoDB's `long` (64-bit).
    Long,
    /// MongoDB's `decimal` (Decimal128).
    Decimal,
    /// MongoDB's `minKey`.
    MinKey,
    /// MongoDB's `maxKey`.
    MaxKey,
    /// Int32, Int64, Double or Decimal128.
    Number,
}

impl BsonType {
    /// Every alias, [`BsonType::Number`] last.
    pub const ALL: [BsonType; 18] = [
        BsonType::Double,
        BsonType::String,
        BsonType::Object,
        BsonType::Array,
        BsonType::BinData,
        BsonType::ObjectId,
        BsonType::Bool,
        BsonType::Date,
        BsonType::Null,
        BsonType::Regex,
        BsonType::JavaScript,
        BsonType::Int,
        BsonType::Timestamp,
        BsonType::Long,
        BsonType::Decimal,
        BsonType::MinKey,
        BsonType::MaxKey,
        BsonType::Number,
    ];

    /// The integers: `int` and `long` (the server holds `5` and `5L` equal, so a key or a
    /// count may be stored as either).
    pub const INTEGERS: &'static [BsonType] = &[BsonType::Int, BsonType::Long];

    /// MongoDB's alias: `"int"`, `"objectId"`...
    pub const fn alias(self) -> &'static str {
        match self {
            BsonType::Double => "double",
            BsonType::String => "string",
            BsonType::Object => "object",
            BsonType::Array => "array",
            BsonType::BinData => "binData",
            BsonType::ObjectId => "objectId",
            BsonType::Bool => "bool",
            BsonType::Date => "date",
            BsonType::Null => "null",
            BsonType::Regex => "regex",
            BsonType::JavaScript => "javascript",
            BsonType::Int => "int",
            BsonType::Timestamp => "timestamp",
            BsonType::Long => "long",
            BsonType::Decimal => "decimal",
            BsonType::MinKey => "minKey",
            BsonType::MaxKey => "maxKey",
            BsonType::Number => "number",
        }
    }

    /// The type of `v` (never [`BsonType::Number`]); `None` for the deprecated types.
    pub fn of(v: &Bson) -> Option<BsonType> {
        Some(match v {
            Bson::Double(_) => BsonType::Double,
            Bson::String(_) => BsonType::String,
            Bson::Document(_) => BsonType::Object,
            Bson::Array(_) => BsonType::Array,
            Bson::Binary(_) => BsonType::BinData,
            Bson::ObjectId(_) => BsonType::ObjectId,
            Bson::Boolean(_) => BsonType::Bool,
            Bson::DateTime(_) => BsonType::Date,
            Bson::Null => BsonType::Null,
            Bson::RegularExpression(_) => BsonType::Regex,
            Bson::JavaScriptCode(_) => BsonType::JavaScript,
            Bson::Int32(_) => BsonType::Int,
            Bson::Timestamp(_) => BsonType::Timestamp,
            Bson::Int64(_) => BsonType::Long,
            Bson::Decimal128(_) => BsonType::Decimal,
            Bson::MinKey => BsonType::MinKey,
            Bson::MaxKey => BsonType::MaxKey,
            Bson::JavaScriptCodeWithScope(_)
            | Bson::Symbol(_)
            | Bson::Undefined
            | Bson::DbPointer(_) => return None,
        })
    }

    /// Whether `v` is of this type (any number, for [`BsonType::Number`]).
    pub fn holds(self, v: &Bson) -> bool {
        match BsonType::of(v) {
            Some(t) if t == self => true,
            Some(BsonType::Int | BsonType::Long | BsonType::Double | BsonType::Decimal) => {
                self == BsonType::Number
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for BsonType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.alias())
    }
}

#[cfg(test)]
mod tests {
    use super::BsonType;
    use bson::Bson;

    #[test]
    fn number_holds_the_four_number_types_only() {
        for v in [
            Bson::Int32(1),
            Bson::Int64(1),
            Bson::Double(f64::NAN),
            Bson::Decimal128("1".parse().unwrap()),
        ] {
            assert!(BsonType::Number.holds(&v), "{v:?}");
            assert_eq!(BsonType::of(&v).map(|t| t.holds(&v)), Some(true));
        }
        for v in [Bson::Null, Bson::String("1".into()), Bson::Boolean(true)] {
            assert!(!BsonType::Number.holds(&v), "{v:?}");
        }
        assert!(!BsonType::Int.holds(&Bson::Int64(1)));
        assert_eq!(BsonType::of(&Bson::Undefined), None);
        let aliases: std::collections::BTreeSet<_> =
            BsonType::ALL.iter().map(|t| t.alias()).collect();
        assert_eq!(aliases.len(), BsonType::ALL.len());
    }
}
