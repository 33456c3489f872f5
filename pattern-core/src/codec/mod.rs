//! BSON helpers: the items' serializer here; MongoDB's order of values, its arithmetic on
//! numbers, document sizes, documents read as bytes and the type names are the contract's
//! foundation (`pattern_store::codec`), used here under their old paths.

pub(crate) mod ser;

pub use pattern_store::codec::BsonType;
pub(crate) use pattern_store::codec::{as_int, number, order, raw, room, size};
