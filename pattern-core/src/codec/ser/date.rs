//! A `bson::DateTime` as it serializes: `{"$date": {"$numberLong": "<millis>"}}` (bson's
//! canonical Extended JSON, the only form its `Serialize` writes). [`Body`] reads the inner
//! struct and gives the milliseconds, or refuses anything else (the caller then takes the
//! general path, whose result for what `Body` accepts is the same number).

use bson::ser::Error;
use serde::ser::{self, Error as _, Impossible, Serialize};

type Result<T> = std::result::Result<T, Error>;

/// Not the form `Body` reads: the caller serializes the value the general way.
fn other<T>() -> Result<T> {
    Err(Error::custom("not a date's body"))
}

/// Refuses every method of a serializer but those written beside the macro's call.
macro_rules! refuse {
    ($($method:ident($($arg:ty),*) -> $out:ty;)*) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$out> {
            other()
        }
    )*};
}

/// A serializer of an `i64` whose struct serializer is `$fields`: its types, and every method
/// of serde's `Serializer` that no date's body calls, refused ([`refuse!`]).
macro_rules! refuse_all_but_struct_and_str {
    ($fields:ty) => {
        type Ok = i64;
        type Error = Error;
        type SerializeSeq = Impossible<i64, Error>;
        type SerializeTuple = Impossible<i64, Error>;
        type SerializeTupleStruct = Impossible<i64, Error>;
        type SerializeTupleVariant = Impossible<i64, Error>;
        type SerializeMap = Impossible<i64, Error>;
        type SerializeStruct = $fields;
        type SerializeStructVariant = Impossible<i64, Error>;

        refuse! {
            serialize_bool(bool) -> Self::Ok;
            serialize_i8(i8) -> Self::Ok;
            serialize_i16(i16) -> Self::Ok;
            serialize_i32(i32) -> Self::Ok;
            serialize_i64(i64) -> Self::Ok;
            serialize_u8(u8) -> Self::Ok;
            serialize_u16(u16) -> Self::Ok;
            serialize_u32(u32) -> Self::Ok;
            serialize_u64(u64) -> Self::Ok;
            serialize_f32(f32) -> Self::Ok;
            serialize_f64(f64) -> Self::Ok;
            serialize_char(char) -> Self::Ok;
            serialize_bytes(&[u8]) -> Self::Ok;
            serialize_none() -> Self::Ok;
            serialize_unit() -> Self::Ok;
            serialize_unit_struct(&'static str) -> Self::Ok;
            serialize_unit_variant(&'static str, u32, &'static str) -> Self::Ok;
            serialize_seq(Option<usize>) -> Self::SerializeSeq;
            serialize_tuple(usize) -> Self::SerializeTuple;
            serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
            serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant;
            serialize_map(Option<usize>) -> Self::SerializeMap;
            serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant;
        }
        fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Self::Ok> {
            other()
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok> {
            other()
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok> {
            other()
        }
    };
}

/// The value of a `$date` field: a struct of the one field `$numberLong`, a string of an
/// `i64`.
pub(super) struct Body;

/// [`Body`]'s struct, holding the number once its field went by.
pub(super) struct Fields(Option<i64>);

impl ser::Serializer for Body {
    refuse_all_but_struct_and_str!(Fields);

    fn serialize_str(self, _: &str) -> Result<i64> {
        other()
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields> {
        Ok(Fields(None))
    }
}

impl ser::SerializeStruct for Fields {
    type Ok = i64;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        match (key, self.0) {
            ("$numberLong", None) => {
                self.0 = Some(value.serialize(Millis)?);
                Ok(())
            }
            _ => other(),
        }
    }
    fn end(self) -> Result<i64> {
        self.0.map_or_else(other, Ok)
    }
}

/// The `$numberLong` string, read as the general path reads it (`str::parse`).
struct Millis;

impl ser::Serializer for Millis {
    refuse_all_but_struct_and_str!(Impossible<i64, Error>);

    fn serialize_str(self, v: &str) -> Result<i64> {
        v.parse().map_or_else(|_| other(), Ok)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        other()
    }
}
