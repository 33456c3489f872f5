//! Plain documents (`#[derive(Document)]`): one struct, one document, typed field paths
//! that follow serde's renames, and two recipes of MongoDB's data-modeling article.
//!
//! - Atomic operations: fields that change together live in one document and change in one
//!   conditional update ([`update_one`]: the checkout `{_id, available: {$gt: 0}}`, `$inc`,
//!   `$push`), whose result says whether it applied. No read-modify-write.
//! - Keyword search: a `Vec<String>` field marked `#[document(keywords)]` has a multikey index
//!   `{field: 1}`, and [`Field::contains`] / [`Field::contains_all`] find the documents holding
//!   one keyword or all of several ([`find`], with a projection of chosen fields), keywords
//!   optionally lowercased on write and on query ([`Normalize`](crate::spec::Normalize)).
//!
//! The functions are generic over the document type; the derive generates the same as typed
//! methods on the struct, and one [`Field`] constant per field.

use std::borrow::Borrow;

use bson::{Bson, Document as BsonDocument};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::spec::Keywords;
use crate::store::query::{self, FindOptions, IndexSpec};
use crate::store::{Extension, ExtensionKey, Store};
use crate::{Error, Result};

mod find;
mod typed;

pub use find::Find;
pub use typed::{Array, Field, Filter, Numeric, Update};

/// The `comment` of a keyword search (a collection-wide read: on a collection sharded by
/// another field, every shard answers it).
pub const KEYWORD_SEARCH: &str = "pattern scatter: keyword search";
/// The `comment` of any other [`find`] without an equality on `_id`.
pub const DOCUMENT_FIND: &str = "pattern scatter: document find";

/// A plain document type: the user's struct, stored as one document in [`Document::COLLECTION`]
/// with `_id` = [`Document::id`]. Implemented by `#[derive(Document)]`.
pub trait Document: Serialize + DeserializeOwned + Send + Sync + Sized {
    /// The collection.
    const COLLECTION: &'static str;
    /// The type of the field stored as `_id`.
    type Id: Serialize + DeserializeOwned + Clone + std::fmt::Debug + Send + Sync;
    /// This document's id.
    fn id(&self) -> &Self::Id;
    /// Its keyword arrays (`#[document(keywords)]`), each with a multikey index.
    const KEYWORDS: &'static [Keywords] = &[];
}

/// The indexes of `D`'s collection: one multikey index `{field: 1}` per keyword array, named
/// as MongoDB names it by default (`<field>_1`).
pub fn indexes<D: Document>() -> Vec<IndexSpec> {
    (D::KEYWORDS.iter())
        .map(|k| IndexSpec {
            name: format!("{}_1", k.field),
            keys: vec![(k.field.to_owned(), 1)],
            unique: false,
            partial: None,
        })
        .collect()
}

/// Creates [`indexes`] (once per store and process; the other functions call it).
pub async fn ensure_indexes<D: Document, S: Store>(store: &S) -> Result<()> {
    let ensured = &store.extensions().get(&ENSURED).0;
    if D::KEYWORDS.is_empty() || lock(ensured).iter().any(|c| c == D::COLLECTION) {
        return Ok(());
    }
    for index in indexes::<D>() {
        store.create_index(D::COLLECTION, &index).await?;
    }
    let mut colls = lock(ensured);
    if !colls.iter().any(|c| c == D::COLLECTION) {
        colls.push(D::COLLECTION.to_owned());
    }
    Ok(())
}

/// The collections whose keyword indexes this process ensured, per store.
#[derive(Debug, Default)]
struct Ensured(std::sync::Mutex<Vec<String>>);

impl Extension for Ensured {
    fn forget(&self) {
        lock(&self.0).clear();
    }
}

static ENSURED: ExtensionKey<Ensured> = ExtensionKey::new();

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The id as BSON (what `_id` holds).
pub(crate) fn id_bson<Q: Serialize + ?Sized>(id: &Q) -> Result<Bson> {
    crate::codec::raw::id_bson(id, "a document id")
}

/// The document as stored: serialized, with an `_id`, its keywords normalised.
pub fn to_document<D: Document>(doc: &D) -> Result<BsonDocument> {
    let mut out = bson::to_document(doc).map_err(|e| {
        Error::invalid(format!(
            "a document of `{}` does not serialize to a document: {e}",
            D::COLLECTION
        ))
    })?;
    if !out.contains_key("_id") {
        return Err(Error::invalid(format!(
            "a document of `{}` has no `_id`",
            D::COLLECTION
        )));
    }
    for k in D::KEYWORDS {
        if let Some(v) = out.get_mut(k.field) {
            typed::normalize_keywords(k.normalize, v);
        }
    }
    Ok(out)
}

fn decode<P: DeserializeOwned>(coll: &str, doc: BsonDocument) -> Result<P> {
    let id = doc.get("_id").cloned();
    bson::from_document(doc).map_err(|e| Error::decode(coll, id.as_ref(), e))
}

/// Inserts the document (one `insert`). [`Error::DuplicateKey`] when its `_id` exists.
pub async fn insert<D: Document, S: Store>(store: &S, doc: &D) -> Result<()> {
    let doc = to_document(doc)?;
    ensure_indexes::<D, S>(store).await?;
    store.insert_one(D::COLLECTION, doc).await
}

/// Writes the whole document over the one with its `_id`, or inserts it (one `update` with
/// a replacement document and `upsert`). Last writer wins: for fields that change together
/// under a condition, [`update_one`].
pub async fn save<D: Document, S: Store>(store: &S, doc: &D) -> Result<()> {
    let doc = to_document(doc)?;
    ensure_indexes::<D, S>(store).await?;
    let by_id = query::Filter::Eq("_id".into(), doc.get("_id").cloned().unwrap_or(Bson::Null));
    store.replace_one(D::COLLECTION, &by_id, doc, true).await?;
    Ok(())
}

/// The document with this `_id`, or `None` (one `find` by `_id`).
pub async fn get<D, S, Q>(store: &S, id: &Q) -> Result<Option<D>>
where
    D: Document,
    S: Store,
    Q: Serialize + ?Sized,
    D::Id: Borrow<Q>,
{
    let by_id = query::Filter::Eq("_id".into(), id_bson(id)?);
    let opts = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    let found = store.find(D::COLLECTION, &by_id, &opts).await?;
    found
        .into_iter()
        .next()
        .map(|d| decode(D::COLLECTION, d))
        .transpose()
}

/// Applies `update` to the first document matching `filter`, atomically, in one `update`
/// command; whether a document matched (and was updated). The article's checkout:
/// `filter` `{_id, available: {$gt: 0}}`, `update` `$inc: {available: -1}`, `$push: {checkout:
/// {...}}`: `false` means no copy was available, and nothing was written. Refuses, before
/// sending anything, a filter or update whose values did not serialize, and an update that
/// does nothing ([`Error::InvalidInput`]).
pub async fn update_one<D: Document, S: Store>(
    store: &S,
    filter: Filter<D>,
    update: Update<D>,
) -> Result<bool> {
    let filter = filter.to_query()?;
    let mut update = update.into_query()?;
    ensure_indexes::<D, S>(store).await?;
    let done = store
        .update_one(D::COLLECTION, &filter, &mut update, false)
        .await?;
    Ok(done.matched)
}

/// A find of the documents matching `filter` (see [`Find`]: a projection, a sort, a limit).
pub fn find<D: Document>(filter: Filter<D>) -> Find<D> {
    Find::new(filter)
}

#[cfg(test)]
mod tests;
