//! BSON sizes computed without serializing, and the checks of MongoDB's 16 MiB document limit
//! that both stores make.

use bson::{Bson, Document};

use crate::error::MAX_DOCUMENT_BYTES;
use crate::{Error, Result};

/// The serialized size of a document, as `bson::to_vec` would make it; `None` where that
/// fails (a key with a NUL byte...).
pub fn document_bytes(doc: &Document) -> Option<usize> {
    let mut n = 4 + 1; // length prefix, final NUL
    for (k, v) in doc {
        n += field_bytes(k, v)?;
    }
    Some(n)
}

/// The serialized size of field `k: v` in a document: type byte, key, NUL, value.
#[inline]
pub fn field_bytes(k: &str, v: &Bson) -> Option<usize> {
    if k.as_bytes().contains(&0) {
        return None; // not a C string
    }
    // The scalars most fields hold sized here, without a call.
    let value = match v {
        Bson::Int32(_) => 4,
        Bson::Int64(_) | Bson::Double(_) | Bson::DateTime(_) => 8,
        Bson::String(s) => 4 + s.len() + 1,
        Bson::Boolean(_) => 1,
        v => value_bytes(v)?,
    };
    Some(1 + k.len() + 1 + value)
}

/// The serialized size of a value (without its type byte and key), as `bson::to_vec` would
/// make it, computed without serializing for the types the patterns store; `None` where
/// serializing fails. The other types are serialized (in a document `{"0": b}`).
pub fn value_bytes(b: &Bson) -> Option<usize> {
    /// bson's cap on a binary's length (`MAX_BSON_SIZE`), a little lower: past it, serialize.
    const BINARY_CAP: usize = 16 * 1024 * 1024 - 4;
    Some(match b {
        Bson::Int32(_) => 4,
        Bson::Int64(_) | Bson::Double(_) | Bson::DateTime(_) | Bson::Timestamp(_) => 8,
        Bson::Boolean(_) => 1,
        Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey => 0,
        Bson::ObjectId(_) => 12,
        Bson::Decimal128(_) => 16,
        // Length prefix, bytes, NUL (a string may hold NUL bytes).
        Bson::String(s) => 4 + s.len() + 1,
        Bson::Document(d) => document_bytes(d)?,
        Bson::Array(a) => {
            // A document keyed "0", "1"...: type byte, key, NUL and value per element.
            let mut n = 4 + 1;
            for (i, v) in a.iter().enumerate() {
                n += element_at_bytes(i, v)?;
            }
            n
        }
        // Length prefix, subtype, bytes.
        Bson::Binary(bin)
            if bin.subtype != bson::spec::BinarySubtype::BinaryOld
                && bin.bytes.len() <= BINARY_CAP =>
        {
            4 + 1 + bin.bytes.len()
        }
        // Regular expressions (whose options are sorted), code, symbols, DB pointers, old
        // binaries: rare; measured by serializing them.
        _ => serialized_bytes(b)?,
    })
}

/// [`value_bytes`] of a value of the rarer types, by serializing it: kept out of
/// [`value_bytes`], whose every call would otherwise set up this path's frame.
#[cold]
#[inline(never)]
fn serialized_bytes(b: &Bson) -> Option<usize> {
    let v = bson::to_vec(&bson::doc! {"0": b.clone()}).ok()?;
    Some(v.len() - (4 + 1 + 2 + 1))
}

/// The serialized size of `v` as element `i` of an array: type byte, key, NUL, value.
pub fn element_at_bytes(i: usize, v: &Bson) -> Option<usize> {
    Some(element_key_bytes(i) + value_bytes(v)?)
}

/// The number of decimal digits of `i`.
fn decimal_digits(mut i: usize) -> usize {
    let mut n = 1;
    while i >= 10 {
        i /= 10;
        n += 1;
    }
    n
}

/// Refuses an item too large for any document, before anything is sent; else its value's
/// size ([`value_bytes`]).
pub fn check_item_size(collection: &str, item: &Bson) -> Result<usize> {
    let value = value_bytes(item);
    // The size of the document `{"0": item}` (an upper bound of what the item adds to a
    // document): length prefix, type byte, key "0" and its NUL, the value, the final NUL.
    let n = value.map_or(usize::MAX, |n| 4 + 1 + 2 + n + 1);
    match value {
        Some(v) if n <= MAX_DOCUMENT_BYTES - 1024 => Ok(v),
        _ => Err(Error::TooLarge {
            collection: collection.to_owned(),
            message: format!("an item of {n} bytes"),
        }),
    }
}

/// What element `i` of an array takes beside its value: type byte, key, NUL.
pub fn element_key_bytes(i: usize) -> usize {
    1 + decimal_digits(i) + 1
}

/// Refuses a document over [`MAX_DOCUMENT_BYTES`], as MongoDB does.
pub fn check_document_size(coll: &str, doc: &Document) -> Result<()> {
    check_size(coll, document_bytes(doc))
}

/// Refuses a document of `bytes` (`None`: one that does not serialize) over
/// [`MAX_DOCUMENT_BYTES`].
pub fn check_size(coll: &str, bytes: Option<usize>) -> Result<()> {
    let n = bytes.unwrap_or(usize::MAX);
    if n > MAX_DOCUMENT_BYTES {
        return Err(Error::TooLarge {
            collection: coll.to_owned(),
            message: format!("a document of {n} bytes (the maximum is {MAX_DOCUMENT_BYTES})"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::spec::BinarySubtype;
    use bson::{doc, Binary, Document, Regex, Timestamp};

    /// Every kind of value, nested, and values that do not serialize.
    fn samples() -> Vec<Bson> {
        let bin = |subtype, n| {
            Bson::Binary(Binary {
                subtype,
                bytes: vec![7; n],
            })
        };
        let mut v = vec![
            Bson::Double(1.5),
            Bson::String(String::new()),
            Bson::String("h\u{e9}llo\0world".into()),
            Bson::Boolean(true),
            Bson::Null,
            Bson::Undefined,
            Bson::MinKey,
            Bson::MaxKey,
            Bson::Int32(-3),
            Bson::Int64(1 << 40),
            Bson::ObjectId(bson::oid::ObjectId::new()),
            Bson::DateTime(bson::DateTime::from_millis(1_700_000_000_000)),
            Bson::Timestamp(Timestamp {
                time: 1,
                increment: 2,
            }),
            Bson::Decimal128(bson::Decimal128::from_bytes([3; 16])),
            bin(BinarySubtype::Generic, 0),
            bin(BinarySubtype::Uuid, 16),
            bin(BinarySubtype::BinaryOld, 5),
            bin(BinarySubtype::UserDefined(0x80), 3),
            Bson::RegularExpression(Regex {
                pattern: "a.*b".into(),
                options: "xi".into(),
            }),
            Bson::RegularExpression(Regex {
                pattern: "a\0".into(),
                options: String::new(),
            }),
            Bson::JavaScriptCode("f()".into()),
            Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
                code: "g()".into(),
                scope: doc! {"x": 1},
            }),
            Bson::Symbol("s".into()),
            Bson::Document(Document::new()),
            Bson::Document(doc! {"$date": 1, "$oid": "x", "a": {"b": [1, "two", {"c": null}]}}),
            Bson::Document(doc! {"bad\0key": 1}),
            Bson::Array(vec![]),
            Bson::Array((0..120).map(Bson::Int32).collect()),
        ];
        let nested = Bson::Document(doc! {"all": v.clone()});
        v.push(nested);
        v
    }

    #[test]
    fn sizes_are_those_of_the_serialized_bson() {
        for b in samples() {
            let wrapped = doc! {"0": b.clone()};
            let serialized = bson::to_vec(&wrapped).ok().map(|v| v.len());
            // Length prefix, the element (type byte, key "0", NUL, value), final NUL.
            let element = value_bytes(&b).map(|n| 4 + element_key_bytes(0) + n + 1);
            assert_eq!(serialized, element, "{b:?}");
            if let Bson::Document(d) = &b {
                assert_eq!(
                    bson::to_vec(d).ok().map(|v| v.len()),
                    document_bytes(d),
                    "{b:?}"
                );
            }
        }
    }

    #[test]
    fn digits() {
        for i in [0, 9, 10, 99, 100, 12345, usize::MAX] {
            assert_eq!(decimal_digits(i), i.to_string().len());
        }
    }
}
