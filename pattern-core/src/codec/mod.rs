//! BSON helpers under every other layer: the items' serializer, document sizes and the 16 MiB
//! checks, documents read as bytes, MongoDB's names of the BSON types and its order of values.

pub(crate) mod number;
pub(crate) mod order;
pub(crate) mod raw;
pub(crate) mod ser;
pub(crate) mod size;
mod types;

pub use types::BsonType;

use bson::Bson;

/// An integer stored as Int32, Int64 or an integral Double.
pub(crate) fn as_int(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(x) => Some(*x as i64),
        Bson::Int64(x) => Some(*x),
        // Integral and within i64 (2^63 itself is not: `as` would saturate it to 2^63-1).
        Bson::Double(x)
            if x.fract() == 0.0
                && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(x) =>
        {
            Some(*x as i64)
        }
        _ => None,
    }
}
