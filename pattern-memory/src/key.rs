//! The in-memory store's keys: a BSON value ordered as MongoDB orders values (so `1`, `1_i64`
//! and `1.0` are one key, as in a MongoDB index), as the `_id`s of a collection and the values
//! of index entries are held.
//!
//! A key is 32 bytes. The usual `_id`s and index keys are held inline: a string of up to 23
//! bytes, an ObjectId, a number, a date, a boolean, null and the two bounds; anything else is
//! boxed. A B-tree node of keys stays within a few cache lines, two keys of the same usual type
//! compare without leaving it (two short strings as three numbers), and a copy of such an
//! `_id` or entry allocates nothing, so a transaction's copy of a collection copies its keys'
//! bytes alone.

use std::borrow::Cow;
use std::cmp::Ordering;

use bson::oid::ObjectId;
use bson::Bson;

use pattern_store::codec::order::{bracket, compare_values};

#[derive(Clone, Debug)]
pub(super) enum Key {
    /// A string of up to [`Short::MAX`] bytes.
    Str(Short),
    /// A longer string.
    Long(Box<str>),
    ObjectId(ObjectId),
    Int32(i32),
    Int64(i64),
    Double(f64),
    Date(i64),
    Bool(bool),
    Null,
    /// MongoDB's `MinKey` and `MaxKey`.
    Min,
    Max,
    /// Any other value (arrays, documents, Decimal128, symbols, ...).
    Other(Box<Bson>),
}

/// A short string as three big-endian words of its zero-padded bytes, its length in the last
/// byte: two compare as their words do, which is the order of their bytes (a string that
/// another extends with zero bytes is the shorter).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Short([u64; 3]);

impl Short {
    pub(super) const MAX: usize = 23;

    fn new(s: &str) -> Option<Short> {
        let n = s.len();
        (n <= Short::MAX).then(|| {
            let mut bytes = [0; 24];
            bytes[..n].copy_from_slice(s.as_bytes());
            bytes[23] = n as u8;
            let word = |i: usize| u64::from_be_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
            Short([word(0), word(8), word(16)])
        })
    }

    /// The bytes, zero-padded, and how many are the string's.
    fn bytes(&self) -> ([u8; 24], usize) {
        let mut bytes = [0; 24];
        for (i, w) in self.0.iter().enumerate() {
            bytes[i * 8..i * 8 + 8].copy_from_slice(&w.to_be_bytes());
        }
        let n = bytes[23] as usize;
        (bytes, n)
    }

    fn text(self) -> String {
        let (bytes, n) = self.bytes();
        String::from_utf8(bytes[..n].to_vec()).expect("made from a str")
    }
}

impl std::fmt::Debug for Short {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.text().fmt(f)
    }
}

impl Key {
    /// `v` as a key.
    #[inline]
    pub(super) fn new(v: Bson) -> Key {
        match v {
            // A long string keeps its allocation.
            Bson::String(s) => Short::new(&s).map_or_else(|| Key::Long(s.into()), Key::Str),
            other => Key::scalar(&other).unwrap_or_else(|| Key::Other(Box::new(other))),
        }
    }

    /// `v` as a key, copied (a short string without allocating).
    #[inline]
    pub(super) fn of(v: &Bson) -> Key {
        match v {
            Bson::String(s) => Key::string(s),
            other => Key::scalar(other).unwrap_or_else(|| Key::Other(Box::new(other.clone()))),
        }
    }

    #[inline]
    fn string(s: &str) -> Key {
        Short::new(s).map_or_else(|| Key::Long(s.into()), Key::Str)
    }

    /// The inline key of a value of a usual fixed-size type.
    #[inline]
    fn scalar(v: &Bson) -> Option<Key> {
        Some(match v {
            Bson::ObjectId(o) => Key::ObjectId(*o),
            Bson::Int32(n) => Key::Int32(*n),
            Bson::Int64(n) => Key::Int64(*n),
            Bson::Double(d) => Key::Double(*d),
            Bson::DateTime(d) => Key::Date(d.timestamp_millis()),
            Bson::Boolean(b) => Key::Bool(*b),
            Bson::Null => Key::Null,
            Bson::MinKey => Key::Min,
            Bson::MaxKey => Key::Max,
            _ => return None,
        })
    }

    /// The value (a copy, but for a boxed one).
    pub(super) fn value(&self) -> Cow<'_, Bson> {
        Cow::Owned(match self {
            Key::Str(s) => Bson::String(s.text()),
            Key::Long(s) => Bson::String(s.to_string()),
            Key::ObjectId(o) => Bson::ObjectId(*o),
            Key::Int32(n) => Bson::Int32(*n),
            Key::Int64(n) => Bson::Int64(*n),
            Key::Double(d) => Bson::Double(*d),
            Key::Date(ms) => Bson::DateTime(bson::DateTime::from_millis(*ms)),
            Key::Bool(b) => Bson::Boolean(*b),
            Key::Null => Bson::Null,
            Key::Min => Bson::MinKey,
            Key::Max => Bson::MaxKey,
            Key::Other(b) => return Cow::Borrowed(b),
        })
    }

    /// The elements of an array key (an array stands for an entry per element).
    pub(super) fn array(&self) -> Option<&[Bson]> {
        match self {
            Key::Other(b) => match &**b {
                Bson::Array(a) => Some(a),
                _ => None,
            },
            _ => None,
        }
    }

    /// The key's bracket in MongoDB's order ([`bracket`]).
    fn bracket(&self) -> u8 {
        match self {
            Key::Str(_) | Key::Long(_) => bracket(&Bson::String(String::new())),
            Key::Other(b) => bracket(b),
            k => bracket(&k.value()),
        }
    }

    /// [`Ord::cmp`] of two keys of different types (or doubles, or a short string and a long
    /// one, or boxed values): by bracket, then as [`compare_values`] orders them.
    #[cold]
    fn cmp_apart(&self, other: &Key) -> Ordering {
        // A short string against a long one: their bytes (the short one's copied out of its
        // words, on the stack).
        match (self, other) {
            (Key::Str(a), Key::Long(b)) => {
                let (bytes, n) = a.bytes();
                return bytes[..n].cmp(b.as_bytes());
            }
            (Key::Long(a), Key::Str(b)) => {
                let (bytes, n) = b.bytes();
                return a.as_bytes().cmp(&bytes[..n]);
            }
            _ => {}
        }
        let (a, b) = (self.bracket(), other.bracket());
        if a != b {
            return a.cmp(&b);
        }
        compare_values(&self.value(), &other.value())
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            // The usual `_id`s and index keys, straight to what `compare_values` would do.
            (Key::Str(a), Key::Str(b)) => a.cmp(b),
            (Key::Long(a), Key::Long(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Key::Int64(a), Key::Int64(b)) => a.cmp(b),
            (Key::Int32(a), Key::Int32(b)) => a.cmp(b),
            // A bucket's time bounds and their mark.
            (Key::Date(a), Key::Date(b)) => a.cmp(b),
            (Key::Bool(a), Key::Bool(b)) => a.cmp(b),
            (Key::ObjectId(a), Key::ObjectId(b)) => a.bytes().cmp(&b.bytes()),
            // The bounds of a range: below and above every value.
            (Key::Min, Key::Min) | (Key::Max, Key::Max) => Ordering::Equal,
            (Key::Min, _) | (_, Key::Max) => Ordering::Less,
            (_, Key::Min) | (Key::Max, _) => Ordering::Greater,
            (a, b) => a.cmp_apart(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, Decimal128};

    /// Values of every type a key holds, inline or boxed, with the pairs MongoDB's order
    /// makes equal across types or sorts by value within a bracket.
    fn corpus() -> Vec<Bson> {
        let oid = |b: u8| Bson::ObjectId(ObjectId::from_bytes([b; 12]));
        vec![
            Bson::MinKey,
            Bson::Undefined,
            Bson::Null,
            Bson::Double(f64::NAN),
            Bson::Double(f64::NEG_INFINITY),
            Bson::Int64(i64::MIN),
            Bson::Int32(-5),
            Bson::Double(-5.0),
            Bson::Int64(-5),
            Bson::Double(-0.0),
            Bson::Int32(0),
            Bson::Double(0.5),
            Bson::Int32(1),
            Bson::Int64(1),
            Bson::Double(1.0),
            Bson::Decimal128("1".parse::<Decimal128>().unwrap()),
            Bson::Int64(1 << 53),
            Bson::Int64((1 << 53) + 1),
            Bson::Double(9007199254740992.0),
            Bson::Int64(i64::MAX),
            Bson::Double(f64::INFINITY),
            Bson::String(String::new()),
            Bson::String("a".into()),
            Bson::Symbol("a".into()),
            Bson::String("ab".into()),
            Bson::String("0_1700000000".into()),
            Bson::String("0_1700000010".into()),
            Bson::String("a\0".into()),
            Bson::String("a\0\0b".into()),
            Bson::String("0123456789abcdef".into()),
            Bson::String("0123456789abcdef\0".into()),
            Bson::String("0123456789abcdefg".into()),
            Bson::String("0123456789abcdefghijklm".into()),
            Bson::String("0123456789abcdefghijklm\0".into()),
            Bson::String("0123456789abcdefghijklmn".into()),
            Bson::String("0123456789abcdefghijkn".into()),
            Bson::String("é".into()),
            Bson::String("a string longer than twenty-four bytes".into()),
            Bson::String("a string longer than twenty-four bytez".into()),
            Bson::Document(doc! {}),
            Bson::Document(doc! {"a": 1}),
            Bson::Array(vec![]),
            Bson::Array(vec![Bson::Int32(1), Bson::String("x".into())]),
            oid(0),
            oid(7),
            Bson::Boolean(false),
            Bson::Boolean(true),
            Bson::DateTime(bson::DateTime::from_millis(-1)),
            Bson::DateTime(bson::DateTime::from_millis(1_700_000_000_000)),
            Bson::Timestamp(bson::Timestamp {
                time: 1,
                increment: 2,
            }),
            Bson::RegularExpression(bson::Regex {
                pattern: "a".into(),
                options: String::new(),
            }),
            Bson::MaxKey,
        ]
    }

    #[test]
    fn keys_order_as_mongodb_orders_their_values() {
        let values = corpus();
        for a in &values {
            for b in &values {
                let want = compare_values(a, b);
                assert_eq!(Key::of(a).cmp(&Key::of(b)), want, "{a:?} against {b:?}");
                assert_eq!(
                    Key::new(a.clone()).cmp(&Key::of(b)),
                    want,
                    "{a:?} against {b:?}"
                );
            }
            // The value a key gives back is the one it was made of.
            assert_eq!(format!("{:?}", Key::of(a).value()), format!("{a:?}"));
        }
    }

    #[test]
    fn a_key_is_32_bytes_and_holds_a_short_string_or_objectid_inline() {
        assert_eq!(std::mem::size_of::<Key>(), 32);
        let short = Key::of(&Bson::String("0123456789_0123456789".into()));
        assert!(matches!(&short, Key::Str(_)));
        assert!(matches!(
            Key::of(&Bson::String("x".repeat(Short::MAX + 1))),
            Key::Long(_)
        ));
        assert!(matches!(
            Key::of(&Bson::ObjectId(ObjectId::new())),
            Key::ObjectId(_)
        ));
    }

    #[test]
    fn keys_order_as_mongodb_compares() {
        // Strings that share their first 16 bytes (two of a short string's words), end inside
        // them, hold NUL bytes or none; and values of other types beside them: `Key`'s order is
        // `compare_values`'s for every pair.
        let strings = [
            "",
            "a",
            "a\0",
            "a\0b",
            "ab",
            "abc",
            "0_1700000010",
            "0_1700000020",
            "1_1700000010",
            "0123456789abcdef",
            "0123456789abcdef\0",
            "0123456789abcdefA",
            "0123456789abcdefB",
            "0123456789abcde",
            "0123456789abcdeg",
            "é",
            "\u{ff}",
        ];
        let mut values: Vec<Bson> = strings.iter().map(|s| Bson::String((*s).into())).collect();
        values.extend([
            Bson::Int32(1),
            Bson::Int64(1),
            Bson::Double(1.5),
            Bson::Null,
            Bson::MaxKey,
        ]);
        for a in &values {
            for b in &values {
                let want = pattern_store::codec::order::compare_values(a, b);
                let got = Key::new(a.clone()).cmp(&Key::new(b.clone()));
                assert_eq!(got, want, "{a:?} against {b:?}");
            }
        }
    }
}
