#![doc = include_str!("../docs/testing.md")]

use std::future::Future;

use bson::Document;

use crate::store::query::{Filter, FindOptions};
use crate::store::Store;

/// The `comment` of [`Fixtures::documents`]' read: a collection-wide one
/// ([`SCATTER`](crate::store::query::SCATTER)).
const DOCUMENTS: &str = "pattern scatter: documents";

/// Fixtures on any [`Store`]: seed a collection, read it back as stored, clear it. Implemented
/// for every store.
pub trait Fixtures: Store {
    /// Inserts `docs` into `coll` as they are, in order, as another tool would (no pattern
    /// involved; a validator installed on the collection still applies). Stops at the first
    /// that fails ([`store::Error::DuplicateKey`](crate::store::Error::DuplicateKey) for an `_id` there
    /// already): those before it are stored.
    fn seed(
        &self,
        coll: &str,
        docs: impl IntoIterator<Item = Document>,
    ) -> impl Future<Output = pattern_store::Result<()>> + Send {
        let docs: Vec<Document> = docs.into_iter().collect();
        async move {
            if docs.is_empty() {
                return Ok(());
            }
            self.insert_many(coll, docs).await
        }
    }

    /// Every document of `coll`, in `_id` order, as stored: every BSON type kept (an Int32
    /// stays an Int32, a Decimal128 a Decimal128). Empty when the collection does not exist.
    fn documents(
        &self,
        coll: &str,
    ) -> impl Future<Output = pattern_store::Result<Vec<Document>>> + Send {
        async move {
            let opts = FindOptions {
                sort: vec![("_id".into(), 1)],
                comment: Some(DOCUMENTS),
                ..FindOptions::default()
            };
            self.find(coll, &Filter::everything(), &opts).await
        }
    }

    /// Deletes every document of `coll` (its indexes and validator stay); how many.
    fn clear(&self, coll: &str) -> impl Future<Output = pattern_store::Result<u64>> + Send {
        async move { self.delete_many(coll, &Filter::everything()).await }
    }
}

impl<S: Store> Fixtures for S {}
