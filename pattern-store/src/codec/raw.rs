//! Documents read as BSON bytes: conversions to `Document` and `Bson` whose errors name the
//! collection.

use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::Result;

/// The `_id` of a stored document, or an error naming the collection.
/// An id as BSON (what `_id` holds); `what` names it in the error (`a node id`).
pub fn id_bson<Q: serde::Serialize + ?Sized>(id: &Q, what: &str) -> Result<Bson> {
    bson::to_bson(id).map_err(|e| crate::Error::invalid(format!("{what} does not serialize: {e}")))
}

/// The `_id` of `doc`, a document of `coll` (an [`Error::Decode`](crate::Error::Decode) when it has none).
pub fn doc_id<'a>(coll: &str, doc: &'a Document) -> Result<&'a Bson> {
    doc.get("_id")
        .ok_or_else(|| crate::Error::decode(coll, None, "document has no _id"))
}

/// A document as its BSON bytes, or an error naming the collection (a document that does not
/// serialize: a key with a NUL byte).
pub fn to_raw(coll: &str, doc: &Document) -> Result<RawDocumentBuf> {
    RawDocumentBuf::from_document(doc).map_err(|e| crate::Error::decode(coll, doc.get("_id"), e))
}

/// A document read as bytes, as a `Document` (for the reads' `Document` paths and their
/// errors), or an error naming the collection.
pub fn from_raw(coll: &str, raw: &RawDocument) -> Result<Document> {
    Document::try_from(raw).map_err(|e| crate::Error::decode(coll, None, e))
}

/// A value of a document read as bytes, as a `Bson`, or an error naming the collection.
pub fn raw_value(coll: &str, v: RawBsonRef) -> Result<Bson> {
    Bson::try_from(v.to_raw_bson()).map_err(|e| crate::Error::decode(coll, None, e))
}
