//! The one error type of the library.

use std::fmt;

use bson::Bson;

/// A boxed error from a lower layer (the driver, BSON), kept as the `source()`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Every error the library returns. Match on the variant; the messages are for people.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server could not be reached, or did not answer in time. Nothing is known to have
    /// been written by the call that returned this (it may have been, if the connection broke
    /// after the server applied it).
    #[error("MongoDB server unreachable or timed out: {message}")]
    Unavailable {
        message: String,
        #[source]
        source: Option<BoxError>,
    },

    /// A stored document does not have the shape the pattern expects (written by another tool,
    /// or by another version of the struct). Names the collection and the document's `_id`.
    #[error("document {id} in collection `{collection}` does not decode: {reason}")]
    Decode {
        collection: String,
        /// The `_id` of the document, as relaxed Extended JSON.
        id: String,
        reason: String,
    },

    /// An argument was rejected before anything was sent (page 0, an item that does not
    /// serialize, a document over the 16 MiB limit...).
    #[error("invalid input: {0}")]
    InvalidInput(String),

    /// A document would exceed MongoDB's 16 MiB limit ([`MAX_DOCUMENT_BYTES`]): an item too
    /// large by itself (refused before anything is sent), or one that does not fit in the
    /// document it would go to. Nothing was written.
    #[error("document in collection `{collection}` would exceed 16 MiB: {message}")]
    TooLarge { collection: String, message: String },

    /// The parent document of an outlier push does not exist.
    #[error("no document with _id {id} in collection `{collection}`")]
    NotFound { collection: String, id: String },

    /// A unique index rejected a write. The patterns retry these internally; callers see it only
    /// from their own writes (e.g. inserting a parent that already exists).
    #[error("duplicate key in collection `{collection}`: {message}")]
    DuplicateKey { collection: String, message: String },

    /// A retry loop gave up (a pathological number of concurrent conflicts).
    #[error("gave up after {attempts} attempts: {what}")]
    Contention { attempts: u32, what: String },

    /// Any other error the server returned (authorization, invalid index options...).
    #[error("MongoDB server error: {message}")]
    Server {
        message: String,
        #[source]
        source: Option<BoxError>,
    },
}

/// MongoDB's maximum document size, which both stores enforce.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// The BSON size of a value as an array element (an upper bound of what it adds to a document):
/// the size of the document `{"0": b}`, `usize::MAX` when that does not serialize.
pub(crate) fn element_bytes(b: &Bson) -> usize {
    // Length prefix, type byte, key "0" and its NUL, the value, the document's final NUL.
    value_bytes(b).map_or(usize::MAX, |n| 4 + 1 + 2 + n + 1)
}

/// The serialized size of a document, as `bson::to_vec` would make it; `None` where that
/// fails (a key with a NUL byte...).
pub(crate) fn document_bytes(doc: &bson::Document) -> Option<usize> {
    let mut n = 4 + 1; // length prefix, final NUL
    for (k, v) in doc {
        n += field_bytes(k, v)?;
    }
    Some(n)
}

/// The serialized size of field `k: v` in a document: type byte, key, NUL, value.
pub(crate) fn field_bytes(k: &str, v: &Bson) -> Option<usize> {
    if k.bytes().any(|b| b == 0) {
        return None; // not a C string
    }
    Some(1 + k.len() + 1 + value_bytes(v)?)
}

/// The serialized size of a value (without its type byte and key), as `bson::to_vec` would
/// make it, computed without serializing for the types the patterns store; `None` where
/// serializing fails. The other types are serialized (in a document `{"0": b}`).
pub(crate) fn value_bytes(b: &Bson) -> Option<usize> {
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
        _ => {
            let v = bson::to_vec(&bson::doc! {"0": b.clone()}).ok()?;
            v.len() - (4 + 1 + 2 + 1)
        }
    })
}

/// The serialized size of `v` as element `i` of an array: type byte, key, NUL, value.
pub(crate) fn element_at_bytes(i: usize, v: &Bson) -> Option<usize> {
    Some(1 + decimal_digits(i) + 1 + value_bytes(v)?)
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

/// Refuses an item too large for any document, before anything is sent.
pub(crate) fn check_item_size(collection: &str, item: &Bson) -> Result<()> {
    let n = element_bytes(item);
    if n > MAX_DOCUMENT_BYTES - 1024 {
        return Err(Error::TooLarge {
            collection: collection.to_owned(),
            message: format!("an item of {n} bytes"),
        });
    }
    Ok(())
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn decode(
        collection: &str,
        id: Option<&bson::Bson>,
        reason: impl fmt::Display,
    ) -> Self {
        Error::Decode {
            collection: collection.to_owned(),
            id: id
                .map(display_bson)
                .unwrap_or_else(|| "(no _id)".to_owned()),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn invalid(msg: impl fmt::Display) -> Self {
        Error::InvalidInput(msg.to_string())
    }

    /// True when the server could not be reached or timed out.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable { .. })
    }
}

/// Relaxed Extended JSON of a value, for messages.
pub(crate) fn display_bson(b: &bson::Bson) -> String {
    b.clone().into_relaxed_extjson().to_string()
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
            assert_eq!(serialized.unwrap_or(usize::MAX), element_bytes(&b), "{b:?}");
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
