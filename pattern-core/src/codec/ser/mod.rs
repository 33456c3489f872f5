//! Items to BSON: the same values as `bson::to_bson`, for less work.
//!
//! Every push serializes its items, and `bson::to_bson` spends part of its time on forms
//! nobody wrote: a `bson::DateTime` goes out as `{"$date": {"$numberLong": "<millis>"}}`, two
//! documents that its serializer builds and then reads back (sorting their keys in a new
//! vector) to find the date, and every small struct or map it builds goes through the same
//! check.
//! [`to_bson`] builds the same [`Bson`] directly: a struct of several fields straight into a
//! [`Document`], and the one-field structs of BSON's own types (`$date`, `$numberLong`, `$oid`)
//! without building a document at all. Whatever it does not know exactly (the other `$`
//! forms, bson's private newtypes) it hands to bson's serializer, and on any error it runs
//! `bson::to_bson` over the whole value, so errors read exactly as bson words them.
//!
//! The result equals `bson::to_bson`'s for every value (the tests below compare them over
//! BSON's types, serde's data model and documents holding `$` keys).

use bson::oid::ObjectId;
use bson::ser::Error;
use bson::{Bson, Document};
use serde::ser::{self, Serialize};

/// An item of a series as BSON (the same value as `bson::to_bson`), or why it does not
/// serialize.
pub(crate) fn item<T: Serialize + ?Sized>(item: &T) -> crate::Result<Bson> {
    to_bson(item)
        .map_err(|e| crate::Error::invalid(format!("item does not serialize to BSON: {e}")))
}

/// `bson::to_bson(value)`, built directly.
pub(crate) fn to_bson<T: Serialize + ?Sized>(value: &T) -> bson::ser::Result<Bson> {
    value.serialize(Ser).or_else(|_| bson::to_bson(value))
}

type Result<T> = std::result::Result<T, Error>;

/// The serializer: one per value, as bson's.
#[derive(Clone, Copy)]
struct Ser;

/// What bson's serializer makes of a document it built from a struct or a map (its private
/// `Bson::from_extended_document`): a document of one or two fields named `$...` may be one
/// of BSON's own types in Extended JSON form. The forms `DateTime` and `ObjectId` write
/// are read here; any other `$` form goes through bson's serializer, which applies that
/// function. A document of one or two fields that is no such form keeps its fields, each
/// nested document read again the same way (bson does the same).
fn from_extended(doc: Document) -> Result<Bson> {
    if doc.len() > 2 {
        return Ok(Bson::Document(doc));
    }
    if doc.keys().any(|k| k.starts_with('$')) {
        return bson::to_bson(&doc);
    }
    let needs_pass = doc
        .values()
        .any(|v| matches!(v, Bson::Document(d) if d.len() <= 2));
    if !needs_pass {
        return Ok(Bson::Document(doc));
    }
    doc.into_iter()
        .map(|(k, v)| match v {
            Bson::Document(d) => Ok((k, from_extended(d)?)),
            other => Ok((k, other)),
        })
        .collect::<Result<Document>>()
        .map(Bson::Document)
}

/// A struct of one field `key: value`: what [`from_extended`] makes of `{key: value}`.
fn one_field(key: &'static str, value: Bson) -> Result<Bson> {
    match (key, value) {
        ("$date", Bson::Int64(millis)) => Ok(Bson::DateTime(bson::DateTime::from_millis(millis))),
        ("$numberLong", Bson::String(s)) => match s.parse::<i64>() {
            Ok(n) => Ok(Bson::Int64(n)),
            Err(_) => document_of(key, Bson::String(s)),
        },
        ("$oid", Bson::String(s)) => match ObjectId::parse_str(&s) {
            Ok(oid) => Ok(Bson::ObjectId(oid)),
            Err(_) => document_of(key, Bson::String(s)),
        },
        (key, value) => document_of(key, value),
    }
}

/// `{key: value}` as bson's serializer leaves it.
fn document_of(key: &'static str, value: Bson) -> Result<Bson> {
    let mut doc = Document::new();
    doc.insert(key, value);
    from_extended(doc)
}

/// A newtype struct bson's serializer treats specially (UUIDs, raw documents): serialized by
/// bson itself.
struct Newtype<'a, T: ?Sized> {
    name: &'static str,
    value: &'a T,
}

impl<T: Serialize + ?Sized> Serialize for Newtype<'_, T> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(self.name, self.value)
    }
}

fn variant_doc(variant: &'static str, value: Bson) -> Bson {
    let mut doc = Document::new();
    doc.insert(variant, value);
    Bson::Document(doc)
}

impl ser::Serializer for Ser {
    type Ok = Bson;
    type Error = Error;
    type SerializeSeq = Array;
    type SerializeTuple = Array;
    type SerializeTupleStruct = Array;
    type SerializeTupleVariant = Array;
    type SerializeMap = Map;
    type SerializeStruct = Struct;
    type SerializeStructVariant = Struct;

    fn serialize_bool(self, v: bool) -> Result<Bson> {
        Ok(Bson::Boolean(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Bson> {
        Ok(Bson::Int32(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Bson> {
        Ok(Bson::Int32(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Bson> {
        Ok(Bson::Int32(v))
    }
    fn serialize_i64(self, v: i64) -> Result<Bson> {
        Ok(Bson::Int64(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Bson> {
        Ok(Bson::Int32(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Bson> {
        Ok(Bson::Int32(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Bson> {
        Ok(Bson::Int64(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Bson> {
        i64::try_from(v)
            .map(Bson::Int64)
            .map_err(|_| Error::UnsignedIntegerExceededRange(v))
    }
    fn serialize_f32(self, v: f32) -> Result<Bson> {
        Ok(Bson::Double(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<Bson> {
        Ok(Bson::Double(v))
    }
    fn serialize_char(self, v: char) -> Result<Bson> {
        Ok(Bson::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Bson> {
        Ok(Bson::String(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Bson> {
        Ok(Bson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes: v.to_vec(),
        }))
    }
    fn serialize_none(self) -> Result<Bson> {
        Ok(Bson::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Bson> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Bson> {
        Ok(Bson::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Bson> {
        Ok(Bson::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Bson> {
        Ok(Bson::String(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Bson> {
        if name.starts_with("$__") {
            return bson::to_bson(&Newtype { name, value });
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Bson> {
        Ok(variant_doc(variant, value.serialize(Ser)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Array> {
        Ok(Array::new(len.unwrap_or(0), None))
    }
    fn serialize_tuple(self, len: usize) -> Result<Array> {
        Ok(Array::new(len, None))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Array> {
        Ok(Array::new(len, None))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Array> {
        Ok(Array::new(len, Some(variant)))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Map> {
        Ok(Map {
            doc: Document::new(),
            key: None,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Struct> {
        Ok(Struct::new(len, None))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Struct> {
        Ok(Struct::new(len, Some(variant)))
    }
}

/// Sequences and tuples; a tuple variant's array goes into `{variant: [...]}`.
struct Array {
    items: Vec<Bson>,
    variant: Option<&'static str>,
}

impl Array {
    fn new(len: usize, variant: Option<&'static str>) -> Self {
        Array {
            items: Vec::with_capacity(len),
            variant,
        }
    }

    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.items.push(value.serialize(Ser)?);
        Ok(())
    }

    fn finish(self) -> Result<Bson> {
        let array = Bson::Array(self.items);
        Ok(match self.variant {
            Some(variant) => variant_doc(variant, array),
            None => array,
        })
    }
}

/// serde's four sequence traits, all one [`Array`].
macro_rules! array_serializer {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Array {
            type Ok = Bson;
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
                self.push(value)
            }
            fn end(self) -> Result<Bson> {
                self.finish()
            }
        }
    )*};
}

array_serializer!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// Maps: keys must serialize to strings, as bson requires.
struct Map {
    doc: Document,
    key: Option<String>,
}

impl ser::SerializeMap for Map {
    type Ok = Bson;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.key = match key.serialize(Ser)? {
            Bson::String(s) => Some(s),
            other => return Err(Error::InvalidDocumentKey(other)),
        };
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let key = self.key.take().unwrap_or_default();
        self.doc.insert(key, value.serialize(Ser)?);
        Ok(())
    }
    fn end(self) -> Result<Bson> {
        from_extended(self.doc)
    }
}

/// Structs, and struct variants (`{variant: {...}}`). The first field waits outside a
/// document: a struct of one field is most often one of BSON's own types (a date's
/// `{"$date": ...}`), which needs none.
struct Struct {
    /// The fields serde announced (the document is made with room for them).
    len: usize,
    first: Option<(&'static str, Bson)>,
    doc: Option<Document>,
    variant: Option<&'static str>,
}

impl Struct {
    fn new(len: usize, variant: Option<&'static str>) -> Self {
        Struct {
            len,
            first: None,
            doc: None,
            variant,
        }
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<()> {
        // A `bson::DateTime`'s one field: its milliseconds read straight from the
        // `{"$numberLong": "<millis>"}` it writes, which would otherwise be built as a string
        // and a struct and read back. The value is what the general path makes of it.
        if key == "$date" && self.first.is_none() && self.doc.is_none() {
            if let Ok(millis) = value.serialize(date::Body) {
                self.first = Some((key, Bson::Int64(millis)));
                return Ok(());
            }
        }
        let value = value.serialize(Ser)?;
        if let Some(doc) = &mut self.doc {
            doc.insert(key, value);
        } else if let Some((k, v)) = self.first.take() {
            let mut doc = crate::codec::room::with_room(self.len);
            doc.insert(k, v);
            doc.insert(key, value);
            self.doc = Some(doc);
        } else {
            self.first = Some((key, value));
        }
        Ok(())
    }

    fn finish(self) -> Result<Bson> {
        let value = match (self.doc, self.first) {
            (Some(doc), _) => from_extended(doc)?,
            (None, Some((key, value))) => one_field(key, value)?,
            (None, None) => Bson::Document(Document::new()),
        };
        Ok(match self.variant {
            Some(variant) => variant_doc(variant, value),
            None => value,
        })
    }
}

/// serde's two struct traits, both one [`Struct`].
macro_rules! struct_serializer {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Struct {
            type Ok = Bson;
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<()> {
                self.field(key, value)
            }
            fn end(self) -> Result<Bson> {
                self.finish()
            }
        }
    )*};
}

struct_serializer!(SerializeStruct, SerializeStructVariant);

mod date;

#[cfg(test)]
mod tests;
