//! Typed finds: a filter, the fields wanted, an order and a limit, decoded as the document
//! type or any type the caller chooses (the fields of a projection).

use bson::Document as BsonDocument;
use serde::de::DeserializeOwned;

use super::{decode, ensure_indexes, Document, Field, Filter, DOCUMENT_FIND, KEYWORD_SEARCH};
use crate::store::query::{FindOptions, Path};
use crate::store::Store;
use crate::Result;

/// A find of documents of type `D`: `Book::find(filter).project(Book::TITLE).limit(1)`, then
/// [`Find::all`] (the documents as `D`) or [`Find::all_as`] (as a type of the caller's, e.g.
/// the projected fields). One `find` command.
///
/// On a sharded collection a find without an equality on `_id` is a scatter-gather; it is
/// named so in the server's logs (`comment`: [`KEYWORD_SEARCH`] for a keyword search, else
/// [`DOCUMENT_FIND`]).
pub struct Find<D> {
    filter: Filter<D>,
    /// The top-level fields wanted; empty: the whole documents.
    projection: Vec<Path>,
    sort: Vec<(Path, i32)>,
    limit: Option<i64>,
}

impl<D: Document> Find<D> {
    /// The documents matching `filter`, whole, in no particular order.
    pub fn new(filter: Filter<D>) -> Self {
        Find {
            filter,
            projection: Vec::new(),
            sort: Vec::new(),
            limit: None,
        }
    }

    /// Adds `field` to the projection: then only `_id` and the projected fields are read (the
    /// seed's `{title: 1}`), on every store.
    pub fn project<T>(mut self, field: Field<D, T>) -> Self {
        self.projection.push(field.name().into());
        self
    }

    /// Sorts by `field`, ascending (after the sort keys given before).
    pub fn ascending<T>(mut self, field: Field<D, T>) -> Self {
        self.sort.push((field.name().into(), 1));
        self
    }

    /// Sorts by `field`, descending (after the sort keys given before).
    pub fn descending<T>(mut self, field: Field<D, T>) -> Self {
        self.sort.push((field.name().into(), -1));
        self
    }

    /// At most `n` documents.
    pub fn limit(mut self, n: u32) -> Self {
        self.limit = Some(i64::from(n));
        self
    }

    /// The matching documents, as `D`.
    pub async fn all<S: Store>(self, store: &S) -> Result<Vec<D>> {
        self.all_as::<D, S>(store).await
    }

    /// The matching documents, each decoded as `P` (the projected fields, or any type the
    /// documents decode as).
    pub async fn all_as<P: DeserializeOwned, S: Store>(self, store: &S) -> Result<Vec<P>> {
        let docs = self.documents(store).await?;
        docs.into_iter().map(|d| decode(D::COLLECTION, d)).collect()
    }

    /// The first matching document, as `D` (the seed's `findOne`).
    pub async fn one<S: Store>(self, store: &S) -> Result<Option<D>> {
        self.one_as::<D, S>(store).await
    }

    /// The first matching document, decoded as `P`.
    pub async fn one_as<P: DeserializeOwned, S: Store>(self, store: &S) -> Result<Option<P>> {
        Ok(self.limit(1).all_as(store).await?.into_iter().next())
    }

    /// The find options sent: the projection, sort and limit, and the `comment` naming a
    /// collection-wide read (none when the filter holds an equality on `_id`).
    pub fn options(&self) -> FindOptions {
        let by_id = (self.filter.to_query().ok())
            .is_some_and(|f| f.equalities().iter().any(|(p, _)| *p == "_id"));
        let comment = match (by_id, self.filter.is_keyword_search()) {
            (true, _) => None,
            (false, true) => Some(KEYWORD_SEARCH),
            (false, false) => Some(DOCUMENT_FIND),
        };
        FindOptions {
            sort: self.sort.clone(),
            limit: self.limit,
            projection: self.projection.clone(),
            comment,
            ..FindOptions::default()
        }
    }

    /// The documents as found, cut to the projection (a store may return more fields than
    /// asked: the in-memory store does).
    async fn documents<S: Store>(&self, store: &S) -> Result<Vec<BsonDocument>> {
        let filter = self.filter.to_query()?;
        let opts = self.options();
        ensure_indexes::<D, S>(store).await?;
        let found = store.find(D::COLLECTION, &filter, &opts).await?;
        if self.projection.is_empty() {
            return Ok(found);
        }
        let wanted = |k: &String| k == "_id" || self.projection.iter().any(|p| p == k);
        Ok(found
            .into_iter()
            .map(|d| d.into_iter().filter(|(k, _)| wanted(k)).collect())
            .collect())
    }
}
