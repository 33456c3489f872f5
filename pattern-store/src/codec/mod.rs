//! BSON as MongoDB sees it, under every other layer: its order of values (the one sorts,
//! ranges, `$min`/`$max` and indexes use), its arithmetic on mixed numbers (Int32, Int64,
//! Double, Decimal128, as `$inc` and `$add` compute it), document sizes and the 16 MiB check,
//! documents read as bytes, documents built with room for their fields, and the names of the
//! BSON types.

pub mod number;
pub mod order;
pub mod raw;
pub mod room;
pub mod size;
mod types;

pub use types::BsonType;

use bson::Bson;

/// An integer stored as Int32, Int64, an integral Double or an integral Decimal128 (within
/// i64): a number whose value is an integer, whatever program wrote it.
pub fn as_int(v: &Bson) -> Option<i64> {
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
        Bson::Decimal128(_) => match number::canonical(v) {
            Some(Bson::Int64(n)) => Some(n),
            _ => None,
        },
        _ => None,
    }
}
