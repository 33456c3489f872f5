//! A document type's values as stored: serialized with its `_id`, its keywords normalised and
//! its schema version and variant stamped; decoded from any version this build knows.

use bson::{Bson, Document as BsonDocument};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{polymorphic, typed, versions, write, Document, REVISED_AT, REVISION};
use crate::store::Store;
use crate::{Error, Result};

/// The id as BSON (what `_id` holds).
pub(crate) fn id_bson<Q: Serialize + ?Sized>(id: &Q) -> Result<Bson> {
    Ok(crate::codec::raw::id_bson(id, "a document id")?)
}

/// The document as stored: serialized, with an `_id` (first, as a store keeps it), its
/// keywords normalised, and its schema version (a versioned type's).
pub fn to_document<D: Document>(doc: &D) -> Result<BsonDocument> {
    let mut out = bson::to_document(doc).map_err(|e| {
        Error::invalid(format!(
            "a document of `{}` does not serialize to a document: {e}",
            D::COLLECTION
        ))
    })?;
    match out.keys().next().map(String::as_str) {
        Some("_id") => {}
        // As the store keeps it, `_id` first (an enum's serde writes its tag first): what the
        // write stages hold of it (a subset's copy) is the stored document.
        _ => match out.remove("_id") {
            Some(id) => {
                let mut first = BsonDocument::new();
                first.insert("_id", id);
                first.extend(out);
                out = first;
            }
            None => {
                return Err(Error::invalid(format!(
                    "a document of `{}` has no `_id`",
                    D::COLLECTION
                )))
            }
        },
    }
    for k in polymorphic::keywords::<D>(&out) {
        if let Some(v) = out.get_mut(k.field) {
            typed::normalize_keywords(k.normalize, v);
        }
    }
    // The version of the type written: on an enum, the variant's (by the tag serde wrote).
    if let Some(v) = versions::versioning_of::<D>(&out) {
        out.insert(v.field, Bson::Int32(v.current as i32));
    }
    polymorphic::stamp::<D>(&mut out);
    Ok(out)
}

pub(crate) fn decode<P: DeserializeOwned>(coll: &str, doc: BsonDocument) -> Result<P> {
    let id = doc.get("_id").cloned();
    bson::from_document(doc).map_err(|e| Error::decode(coll, id.as_ref(), e))
}

/// The fields the library keeps in a stored document beside the struct's own: the schema
/// version, the revision and its time.
pub(crate) fn strip_kept<D: Document>(doc: &mut BsonDocument) {
    if let Some(v) = versions::versioning_of::<D>(doc) {
        doc.remove(v.field);
    }
    if D::HISTORY.is_some() {
        doc.remove(REVISION);
        doc.remove(REVISED_AT);
    }
}

/// A stored document of `D` as `D`: decoded as its stored version's type and upgraded; with
/// the older version it was upgraded from. [`Error::NewerVersion`] for a version this build
/// does not know.
pub(crate) fn decode_stored<D: Document>(mut doc: BsonDocument) -> Result<(D, Option<u32>)> {
    polymorphic::check_stored::<D>(&mut doc)?;
    let stored = versions::classify::<D>(&doc)?;
    // On an enum, a variant's older version: upgraded by the variant's type (its own
    // conversions), then read as the enum.
    if let (versions::Stored::Older(from), Some(polymorphic::Polymorphic::Enum { .. })) =
        (&stored, D::POLYMORPHIC)
    {
        if let Some(up) = polymorphic::part_of::<D>(&doc).and_then(|p| p.upgrade) {
            let mut now = (up.0)(doc)?;
            strip_kept::<D>(&mut now);
            return Ok((decode(D::COLLECTION, now)?, Some(*from)));
        }
    }
    strip_kept::<D>(&mut doc);
    match stored {
        versions::Stored::Current => Ok((decode(D::COLLECTION, doc)?, None)),
        versions::Stored::Older(from) => Ok((D::upgrade(from, doc)?, Some(from))),
    }
}

/// [`decode_stored`], then, for a type with `write_back`, the upgraded document written back
/// (only over the very document read: a write since the read is never overwritten).
pub(crate) async fn read_stored<D: Document, S: Store>(store: &S, doc: BsonDocument) -> Result<D> {
    let older = versions::versioning_of::<D>(&doc).is_some_and(|v| v.write_back)
        && matches!(versions::classify::<D>(&doc)?, versions::Stored::Older(_));
    if !older {
        return decode_stored::<D>(doc).map(|(d, _)| d);
    }
    let read = doc.clone();
    let (d, _) = decode_stored::<D>(doc)?;
    write_back::<D, S>(store, read, &d).await?;
    Ok(d)
}

/// Writes `doc`, upgraded from `read`, over the stored document if that is still exactly
/// `read` (a compare-and-set in a transaction: a write since the read, even one that kept the
/// old version, makes it write nothing); whether it wrote. On a type with history, a revision
/// like any other write.
pub(crate) async fn write_back<D: Document, S: Store>(
    store: &S,
    read: BsonDocument,
    doc: &D,
) -> Result<bool> {
    let new = to_document(doc)?;
    write::run::<D, S>(store, write::Write::Upgrade { read, new }).await
}
