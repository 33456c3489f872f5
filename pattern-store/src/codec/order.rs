//! MongoDB's order of BSON values: the type brackets, then the values within a bracket
//! (numbers by exact value across Int32, Int64, Double and Decimal128). The in-memory store's
//! queries, sorts and indexes, the trees' node ids and the roll-ups' key merge all order by it,
//! as the server does.

use std::cmp::Ordering;

use bson::Bson;

/// MongoDB's canonical order of type brackets.
pub fn bracket(b: &Bson) -> u8 {
    match b {
        Bson::MinKey => 0,
        Bson::Null | Bson::Undefined => 1,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 2,
        Bson::String(_) | Bson::Symbol(_) => 3,
        Bson::Document(_) => 4,
        Bson::Array(_) => 5,
        Bson::Binary(_) => 6,
        Bson::ObjectId(_) => 7,
        Bson::Boolean(_) => 8,
        Bson::DateTime(_) => 9,
        Bson::Timestamp(_) => 10,
        Bson::RegularExpression(_) => 11,
        Bson::MaxKey => 13,
        _ => 12,
    }
}

/// A total order over BSON values (MongoDB's sort order for the types the patterns store).
pub fn compare_values(a: &Bson, b: &Bson) -> Ordering {
    // Two values of the same usual type (a bucket's time bounds, `_id`s, keys): compared
    // before either's bracket is looked up.
    match (a, b) {
        (Bson::DateTime(x), Bson::DateTime(y)) => return x.cmp(y),
        (Bson::Int64(x), Bson::Int64(y)) => return x.cmp(y),
        (Bson::Int32(x), Bson::Int32(y)) => return x.cmp(y),
        (Bson::String(x), Bson::String(y)) => return x.as_bytes().cmp(y.as_bytes()),
        _ => {}
    }
    let (ba, bb) = (bracket(a), bracket(b));
    if ba != bb {
        return ba.cmp(&bb);
    }
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => x.cmp(y),
        (Bson::Int64(x), Bson::Int64(y)) => x.cmp(y),
        (Bson::Int32(x), Bson::Int64(y)) => (*x as i64).cmp(y),
        (Bson::Int64(x), Bson::Int32(y)) => x.cmp(&(*y as i64)),
        // Numbers by exact value across the four types, Decimal128 included (NaN first).
        (x, y) if ba == 2 => super::number::compare(x, y).unwrap_or(Ordering::Equal),
        // A symbol compares as the string of its text.
        (Bson::String(x) | Bson::Symbol(x), Bson::String(y) | Bson::Symbol(y)) => {
            x.as_bytes().cmp(y.as_bytes())
        }
        (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.cmp(y),
        (Bson::Timestamp(x), Bson::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (Bson::Document(x), Bson::Document(y)) => compare_documents(x, y),
        (Bson::Array(x), Bson::Array(y)) => {
            for (vx, vy) in x.iter().zip(y.iter()) {
                let o = compare_values(vx, vy);
                if o.is_ne() {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        // By length, then subtype, then bytes.
        (Bson::Binary(x), Bson::Binary(y)) => (x.bytes.len().cmp(&y.bytes.len()))
            .then_with(|| u8::from(x.subtype).cmp(&u8::from(y.subtype)))
            .then_with(|| x.bytes.cmp(&y.bytes)),
        (Bson::RegularExpression(x), Bson::RegularExpression(y)) => (x.pattern.as_bytes())
            .cmp(y.pattern.as_bytes())
            .then_with(|| x.options.as_bytes().cmp(y.options.as_bytes())),
        // DB pointers, then code, then code with a scope (MongoDB's order of the three),
        // code by its text (then its scope).
        (x, y) if ba == 12 && other_rank(x) != other_rank(y) => other_rank(x).cmp(&other_rank(y)),
        (Bson::JavaScriptCode(x), Bson::JavaScriptCode(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Bson::JavaScriptCodeWithScope(x), Bson::JavaScriptCodeWithScope(y)) => (x.code.as_bytes())
            .cmp(y.code.as_bytes())
            .then_with(|| compare_documents(&x.scope, &y.scope)),
        _ => Ordering::Equal,
    }
}

/// Two documents field by field (each value, then its name), then by length.
fn compare_documents(x: &bson::Document, y: &bson::Document) -> Ordering {
    for ((kx, vx), (ky, vy)) in x.iter().zip(y.iter()) {
        let o = compare_values(vx, vy).then_with(|| kx.cmp(ky));
        if o.is_ne() {
            return o;
        }
    }
    x.len().cmp(&y.len())
}

/// The order within bracket 12: DB pointers, code, code with a scope, anything else.
fn other_rank(b: &Bson) -> u8 {
    match b {
        Bson::DbPointer(_) => 0,
        Bson::JavaScriptCode(_) => 1,
        Bson::JavaScriptCodeWithScope(_) => 2,
        _ => 3,
    }
}

/// Equality as `$eq` sees it (numbers compare by value across Int32/Int64/Double).
pub fn values_equal(a: &Bson, b: &Bson) -> bool {
    bracket(a) == bracket(b) && compare_values(a, b).is_eq()
}

/// A value as MongoDB's equality sees it (`$eq`, a unique index, `$group`'s keys): numbers by
/// [`canonical`](super::number::canonical) (Int32 5, Int64 5, Double 5.0 and Decimal128 5 are
/// one value), a symbol as the string of its text, `undefined` as `null`, and the same inside
/// documents, arrays and a code's scope; anything else as it is. Two values are equal exactly
/// when their canonical forms have the same bytes: [`value_key`].
pub fn canonical(v: &Bson) -> Bson {
    match v {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
            super::number::canonical(v).unwrap_or(Bson::Null)
        }
        Bson::Symbol(s) => Bson::String(s.clone()),
        Bson::Undefined => Bson::Null,
        Bson::Document(d) => Bson::Document(canonical_document(d)),
        Bson::Array(a) => Bson::Array(a.iter().map(canonical).collect()),
        Bson::JavaScriptCodeWithScope(c) => {
            Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
                code: c.code.clone(),
                scope: canonical_document(&c.scope),
            })
        }
        other => other.clone(),
    }
}

fn canonical_document(d: &bson::Document) -> bson::Document {
    d.iter().map(|(k, v)| (k.clone(), canonical(v))).collect()
}

/// A stored value as a key of an ordered map or set: ordered as MongoDB sorts
/// ([`compare_values`]) and equal as `$eq` holds ([`values_equal`]: numbers by value).
#[derive(Clone, Debug)]
pub struct ByValue(pub Bson);

impl PartialEq for ByValue {
    fn eq(&self, other: &Self) -> bool {
        compare_values(&self.0, &other.0).is_eq()
    }
}

impl Eq for ByValue {}

impl PartialOrd for ByValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByValue {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_values(&self.0, &other.0)
    }
}

/// A key for a map or a set of stored values that holds two values as one exactly when MongoDB
/// does ([`values_equal`]): the bytes of the value's [`canonical`] form. Whoever wrote a value
/// (pymongo stores a small integer as Int32, a Rust `i64` is an Int64, `mongosh` writes
/// doubles), its key is the same.
pub fn value_key(v: &Bson) -> Vec<u8> {
    let mut bytes = Vec::new();
    // A document of one value always serializes.
    let _ = bson::doc! {"": canonical(v)}.to_writer(&mut bytes);
    bytes
}

/// Whether a field holds the same value in two documents as MongoDB compares them
/// ([`values_equal`]: numbers by value): both missing, or both present and equal.
pub fn same_value(a: Option<&Bson>, b: Option<&Bson>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => values_equal(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering::{Equal, Greater, Less};

    use bson::spec::BinarySubtype;
    use bson::{doc, Binary, Bson, JavaScriptCodeWithScope, Regex};

    use super::{compare_values, values_equal};

    fn bin(subtype: BinarySubtype, bytes: &[u8]) -> Bson {
        Bson::Binary(Binary {
            subtype,
            bytes: bytes.to_vec(),
        })
    }

    fn regex(pattern: &str, options: &str) -> Bson {
        Bson::RegularExpression(Regex {
            pattern: pattern.into(),
            options: options.into(),
        })
    }

    /// `value_key` holds two values as one exactly when `values_equal` does: every pair of a
    /// pool of values written in each number type, nested in documents and arrays, and the
    /// types that compare across their BSON types (symbols, `undefined`).
    #[test]
    fn value_keys_are_equal_exactly_when_the_values_are() {
        use super::value_key;
        let d = |s: &str| Bson::Decimal128(s.parse().unwrap());
        let numbers = [
            Bson::Int32(5),
            Bson::Int64(5),
            Bson::Double(5.0),
            d("5"),
            d("5.000"),
            d("0.5E1"),
            Bson::Int32(0),
            Bson::Double(-0.0),
            d("-0"),
            d("0E-20"),
            Bson::Int64(-7),
            d("-7.0"),
            Bson::Double(0.5),
            d("0.5"),
            d("0.50"),
            Bson::Double(0.1),
            d("0.1"),
            Bson::Double(1e20),
            d("1E20"),
            d("100000000000000000000"),
            Bson::Double(1e40),
            d("1E40"),
            Bson::Int64(i64::MAX),
            Bson::Double(9_223_372_036_854_775_808.0),
            d("9223372036854775807"),
            d("9223372036854775808"),
            Bson::Int64(i64::MIN),
            d("-9223372036854775808"),
            Bson::Double(f64::NAN),
            d("NaN"),
            Bson::Double(f64::INFINITY),
            d("Infinity"),
            d("-Infinity"),
            d("1E6111"),
            d("1000000000000000000000000000000000E6111"),
        ];
        let mut pool: Vec<Bson> = numbers.to_vec();
        pool.extend([
            Bson::String("a".into()),
            Bson::Symbol("a".into()),
            Bson::Null,
            Bson::Undefined,
            Bson::Boolean(true),
        ]);
        for n in &numbers[..6] {
            pool.push(Bson::Document(doc! {"a": n.clone(), "b": [n.clone()]}));
            pool.push(Bson::Array(vec![n.clone(), Bson::String("x".into())]));
        }
        pool.push(Bson::Document(doc! {"b": 5, "a": [5]}));
        for a in &pool {
            for b in &pool {
                assert_eq!(
                    value_key(a) == value_key(b),
                    values_equal(a, b),
                    "{a:?} and {b:?}"
                );
            }
        }
    }

    /// Each pair in MongoDB's order: the first sorts before the second.
    #[test]
    fn the_rarer_types_order_as_mongodb_does() {
        let (s, y) = (Bson::String("a".into()), Bson::Symbol("a".into()));
        assert_eq!(
            compare_values(&s, &y),
            Equal,
            "a symbol is the string of its text"
        );
        assert!(values_equal(&s, &y));
        assert!(!values_equal(&Bson::String("b".into()), &y));
        let date = |ms: i64| Bson::DateTime(bson::DateTime::from_millis(ms));
        let ascending = [
            // The usual types, compared before their brackets are looked up.
            (Bson::Int32(-1), Bson::Int32(2)),
            (Bson::Int64(i64::MIN), Bson::Int64(0)),
            (date(-5), date(3)),
            (Bson::String(String::new()), Bson::String("a".into())),
            (Bson::String("ab".into()), Bson::String("b".into())),
            (Bson::Symbol("a".into()), Bson::String("b".into())),
            (Bson::String("a".into()), Bson::Symbol("b".into())),
            // Binary data: by length first, then subtype, then bytes.
            (
                bin(BinarySubtype::Generic, &[9]),
                bin(BinarySubtype::Generic, &[1, 1]),
            ),
            (
                bin(BinarySubtype::Generic, &[5]),
                bin(BinarySubtype::Uuid, &[5]),
            ),
            (
                bin(BinarySubtype::Generic, &[1, 2]),
                bin(BinarySubtype::Generic, &[1, 3]),
            ),
            // Regular expressions: by pattern, then options.
            (regex("a", "z"), regex("b", "")),
            (regex("a", "i"), regex("a", "m")),
            // Code by its text; code before code with a scope, which compares its scope next.
            (
                Bson::JavaScriptCode("a".into()),
                Bson::JavaScriptCode("b".into()),
            ),
            (
                Bson::JavaScriptCode("z".into()),
                Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                    code: "a".into(),
                    scope: doc! {},
                }),
            ),
            (
                Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                    code: "a".into(),
                    scope: doc! {"x": 1},
                }),
                Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                    code: "a".into(),
                    scope: doc! {"x": 2},
                }),
            ),
        ];
        for (lo, hi) in &ascending {
            assert_eq!(compare_values(lo, hi), Less, "{lo:?} < {hi:?}");
            assert_eq!(compare_values(hi, lo), Greater, "{hi:?} > {lo:?}");
            assert_eq!(compare_values(lo, lo), Equal, "{lo:?} = itself");
        }
    }
}
