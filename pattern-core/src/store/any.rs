//! [`AnyStore`]: either store, chosen at run time.

use super::any_txn::AnyTxn;
use super::{ArrayStats, Extensions, Store, UpdateOutcome};
use crate::store::query::{self};
use crate::Result;
#[cfg(feature = "memory")]
use pattern_memory::MemoryStore;
#[cfg(feature = "mongodb")]
use pattern_mongo::MongoStore;

/// Either store, chosen at run time (e.g. MongoDB when `MONGODB_URI` is set).
#[derive(Clone, Debug)]
pub enum AnyStore {
    /// The embedded store.
    #[cfg(feature = "memory")]
    Memory(MemoryStore),
    /// A MongoDB database.
    #[cfg(feature = "mongodb")]
    Mongo(MongoStore),
}

impl AnyStore {
    /// MongoDB database `db` at `$MONGODB_URI` when that variable is set (and the `mongodb`
    /// feature is on), else a new in-memory store (feature `memory`; without it,
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) saying so).
    pub async fn from_env(db: &str) -> Result<Self> {
        #[cfg(feature = "mongodb")]
        if let Ok(uri) = std::env::var("MONGODB_URI") {
            return Ok(AnyStore::Mongo(MongoStore::connect(&uri, db).await?));
        }
        let _ = db;
        #[cfg(feature = "memory")]
        return Ok(AnyStore::Memory(MemoryStore::new()));
        #[cfg(not(feature = "memory"))]
        Err(crate::Error::invalid(
            "MONGODB_URI is not set, and pattern-core was built without the in-memory store \
             (feature `memory`)",
        ))
    }

    /// Drops a collection and its indexes (to start an example or a test afresh).
    pub async fn drop_collection(&self, name: &str) -> Result<()> {
        match self {
            #[cfg(feature = "memory")]
            AnyStore::Memory(m) => {
                m.drop_collection(name);
                Ok(())
            }
            #[cfg(feature = "mongodb")]
            AnyStore::Mongo(m) => m.drop_collection(name).await,
        }
    }

    /// A short name of the store, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            #[cfg(feature = "memory")]
            AnyStore::Memory(_) => "in-memory",
            #[cfg(feature = "mongodb")]
            AnyStore::Mongo(_) => "MongoDB",
        }
    }
}

macro_rules! delegate {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            #[cfg(feature = "memory")]
            AnyStore::Memory($s) => $call,
            #[cfg(feature = "mongodb")]
            AnyStore::Mongo($s) => $call,
        }
    };
}

impl Store for AnyStore {
    async fn insert_one(&self, coll: &str, doc: bson::Document) -> Result<()> {
        delegate!(self, s => s.insert_one(coll, doc).await)
    }
    async fn insert_many(&self, coll: &str, docs: Vec<bson::Document>) -> Result<()> {
        delegate!(self, s => s.insert_many(coll, docs).await)
    }
    fn scan<'a>(
        &'a self,
        coll: &'a str,
        filter: &'a query::Filter,
        opts: &'a query::FindOptions,
        batch: u32,
    ) -> futures::stream::BoxStream<'a, Result<bson::RawDocumentBuf>> {
        delegate!(self, s => s.scan(coll, filter, opts, batch))
    }
    fn sample<'a>(
        &'a self,
        coll: &'a str,
        size: u32,
        batch: u32,
        comment: &'static str,
    ) -> futures::stream::BoxStream<'a, Result<bson::RawDocumentBuf>> {
        delegate!(self, s => s.sample(coll, size, batch, comment))
    }
    async fn kill_sessions(&self, ids: &[bson::Document]) -> Result<()> {
        delegate!(self, s => s.kill_sessions(ids).await)
    }
    async fn write_batch(&self, coll: &str, ops: Vec<super::WriteOp>) -> super::BatchOutcome {
        delegate!(self, s => s.write_batch(coll, ops).await)
    }
    async fn update_one(
        &self,
        coll: &str,
        filter: &query::Filter,
        update: &mut query::Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        delegate!(self, s => s.update_one(coll, filter, update, upsert).await)
    }

    async fn update_returning(
        &self,
        coll: &str,
        filter: &query::Filter,
        update: &mut query::Update,
        fields: &[&str],
    ) -> Result<Option<bson::Document>> {
        delegate!(self, s => s.update_returning(coll, filter, update, fields).await)
    }

    async fn write_across(
        &self,
        writes: Vec<(&str, super::WriteOp)>,
        comment: Option<&str>,
    ) -> Result<Vec<u64>> {
        delegate!(self, s => s.write_across(writes, comment).await)
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &query::Filter,
        sort: &[(query::Path, i32)],
        hint: &str,
        update: &mut query::Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<bson::Document>> {
        delegate!(self, s => s.update_first(coll, filter, sort, hint, update, upsert, fields).await)
    }
    async fn push_open(
        &self,
        push: &super::OpenPush<'_>,
        items: &mut Vec<bson::Bson>,
    ) -> Result<bool> {
        delegate!(self, s => s.push_open(push, items).await)
    }
    async fn push_open_then(
        &self,
        push: &super::OpenPush<'_>,
        items: &mut Vec<bson::Bson>,
        then_filter: &query::Filter,
        then: &mut query::Update,
    ) -> Result<(bool, Result<()>)> {
        delegate!(self, s => s.push_open_then(push, items, then_filter, then).await)
    }
    async fn replace_one(
        &self,
        coll: &str,
        filter: &query::Filter,
        doc: bson::Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        delegate!(self, s => s.replace_one(coll, filter, doc, upsert).await)
    }
    async fn find(
        &self,
        coll: &str,
        filter: &query::Filter,
        opts: &query::FindOptions,
    ) -> Result<Vec<bson::Document>> {
        delegate!(self, s => s.find(coll, filter, opts).await)
    }
    async fn find_raw(
        &self,
        coll: &str,
        filter: &query::Filter,
        opts: &query::FindOptions,
    ) -> Result<Vec<bson::RawDocumentBuf>> {
        delegate!(self, s => s.find_raw(coll, filter, opts).await)
    }
    async fn array_stats(
        &self,
        coll: &str,
        filter: &query::Filter,
        array_field: &str,
    ) -> Result<ArrayStats> {
        delegate!(self, s => s.array_stats(coll, filter, array_field).await)
    }
    async fn first_per(
        &self,
        coll: &str,
        filter: &query::Filter,
        by: &str,
        sort: &[(query::Path, i32)],
        projection: &[query::Path],
    ) -> Result<Vec<bson::Document>> {
        delegate!(self, s => s.first_per(coll, filter, by, sort, projection).await)
    }
    async fn count_matching(
        &self,
        coll: &str,
        filter: &query::Filter,
        comment: &'static str,
    ) -> Result<u64> {
        delegate!(self, s => s.count_matching(coll, filter, comment).await)
    }
    async fn delete_many(&self, coll: &str, filter: &query::Filter) -> Result<u64> {
        delegate!(self, s => s.delete_many(coll, filter).await)
    }
    async fn create_index(&self, coll: &str, index: &query::IndexSpec) -> Result<()> {
        delegate!(self, s => s.create_index(coll, index).await)
    }
    fn system_name(&self) -> &'static str {
        delegate!(self, s => s.system_name())
    }
    fn database_name(&self) -> Option<&str> {
        delegate!(self, s => s.database_name())
    }
    async fn routes_by_shard_key(&self) -> Result<bool> {
        delegate!(self, s => s.routes_by_shard_key().await)
    }
    async fn index_names(&self, coll: &str) -> Result<Vec<String>> {
        delegate!(self, s => s.index_names(coll).await)
    }
    async fn drop_index(&self, coll: &str, name: &str) -> Result<()> {
        delegate!(self, s => s.drop_index(coll, name).await)
    }
    async fn collection_names(&self) -> Result<Vec<String>> {
        delegate!(self, s => s.collection_names().await)
    }
    async fn watch(
        &self,
        watch: &crate::store::Watch,
    ) -> Result<Box<dyn crate::store::ChangeFeed>> {
        delegate!(self, s => s.watch(watch).await)
    }
    async fn keep_before_images(&self, coll: &str) -> Result<()> {
        delegate!(self, s => s.keep_before_images(coll).await)
    }
    async fn set_validator(&self, coll: &str, schema: &query::Schema) -> Result<()> {
        delegate!(self, s => s.set_validator(coll, schema).await)
    }
    fn extensions(&self) -> &Extensions {
        delegate!(self, s => s.extensions())
    }
    async fn update_many(
        &self,
        coll: &str,
        filter: &query::Filter,
        update: &query::Update,
    ) -> Result<u64> {
        delegate!(self, s => s.update_many(coll, filter, update).await)
    }
    async fn graph_lookup(
        &self,
        coll: &str,
        q: &query::GraphLookup,
    ) -> Result<Option<query::Graph>> {
        delegate!(self, s => s.graph_lookup(coll, q).await)
    }
    type Txn = AnyTxn;
    /// A transaction of the same kind as the store.
    async fn start_transaction(&self) -> Result<AnyTxn> {
        Ok(match self {
            #[cfg(feature = "memory")]
            AnyStore::Memory(s) => AnyTxn::Memory(s.start_transaction().await?),
            #[cfg(feature = "mongodb")]
            AnyStore::Mongo(s) => AnyTxn::Mongo(s.start_transaction().await?),
        })
    }
}
