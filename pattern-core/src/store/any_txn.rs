//! [`AnyTxn`]: a transaction of either store, what [`AnyStore`](crate::AnyStore) starts.

use bson::{Document, RawDocumentBuf};

use crate::store::query::{Filter, FindOptions, Graph, GraphLookup, IndexSpec, Path, Update};
use crate::store::{ArrayStats, Extensions, Store, Transaction, UpdateOutcome};
use crate::Result;

/// A transaction on an [`AnyStore`](crate::AnyStore), of the same kind as the store.
#[derive(Debug)]
pub enum AnyTxn {
    /// A transaction of the embedded store.
    #[cfg(feature = "memory")]
    Memory(pattern_memory::MemoryTxn),
    /// A MongoDB transaction.
    #[cfg(feature = "mongodb")]
    Mongo(pattern_mongo::MongoTxn),
}

macro_rules! delegate {
    ($self:ident, $t:ident => $call:expr) => {
        match $self {
            #[cfg(feature = "memory")]
            AnyTxn::Memory($t) => $call,
            #[cfg(feature = "mongodb")]
            AnyTxn::Mongo($t) => $call,
        }
    };
}

impl Store for AnyTxn {
    async fn insert_one(&self, coll: &str, doc: Document) -> Result<()> {
        delegate!(self, t => t.insert_one(coll, doc).await)
    }
    async fn insert_many(&self, coll: &str, docs: Vec<Document>) -> Result<()> {
        delegate!(self, t => t.insert_many(coll, docs).await)
    }
    async fn write_batch(&self, coll: &str, ops: Vec<super::WriteOp>) -> super::BatchOutcome {
        delegate!(self, t => t.write_batch(coll, ops).await)
    }
    async fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        delegate!(self, t => t.update_one(coll, filter, update, upsert).await)
    }
    async fn update_returning(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        delegate!(self, t => t.update_returning(coll, filter, update, fields).await)
    }

    async fn write_across(
        &self,
        writes: Vec<(&str, super::WriteOp)>,
        comment: Option<&str>,
    ) -> Result<Vec<u64>> {
        delegate!(self, t => t.write_across(writes, comment).await)
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(Path, i32)],
        hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        delegate!(self, t => t.update_first(coll, filter, sort, hint, update, upsert, fields).await)
    }
    async fn push_open(
        &self,
        push: &super::OpenPush<'_>,
        items: &mut Vec<bson::Bson>,
    ) -> Result<bool> {
        delegate!(self, t => t.push_open(push, items).await)
    }
    async fn push_open_then(
        &self,
        push: &super::OpenPush<'_>,
        items: &mut Vec<bson::Bson>,
        then_filter: &super::query::Filter,
        then: &mut super::query::Update,
    ) -> Result<(bool, Result<()>)> {
        delegate!(self, t => t.push_open_then(push, items, then_filter, then).await)
    }
    async fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        delegate!(self, t => t.replace_one(coll, filter, doc, upsert).await)
    }
    async fn find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Result<Vec<Document>> {
        delegate!(self, t => t.find(coll, filter, opts).await)
    }
    async fn find_raw(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        delegate!(self, t => t.find_raw(coll, filter, opts).await)
    }
    async fn array_stats(
        &self,
        coll: &str,
        filter: &Filter,
        array_field: &str,
    ) -> Result<ArrayStats> {
        delegate!(self, t => t.array_stats(coll, filter, array_field).await)
    }
    async fn update_many(&self, coll: &str, filter: &Filter, update: &Update) -> Result<u64> {
        delegate!(self, t => t.update_many(coll, filter, update).await)
    }
    async fn graph_lookup(&self, coll: &str, q: &GraphLookup) -> Result<Option<Graph>> {
        delegate!(self, t => t.graph_lookup(coll, q).await)
    }
    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64> {
        delegate!(self, t => t.delete_many(coll, filter).await)
    }
    async fn create_index(&self, coll: &str, index: &IndexSpec) -> Result<()> {
        delegate!(self, t => t.create_index(coll, index).await)
    }
    fn system_name(&self) -> &'static str {
        delegate!(self, t => t.system_name())
    }
    fn database_name(&self) -> Option<&str> {
        delegate!(self, t => t.database_name())
    }
    async fn routes_by_shard_key(&self) -> Result<bool> {
        delegate!(self, t => t.routes_by_shard_key().await)
    }
    async fn index_names(&self, coll: &str) -> Result<Vec<String>> {
        delegate!(self, t => t.index_names(coll).await)
    }
    async fn drop_index(&self, coll: &str, name: &str) -> Result<()> {
        delegate!(self, t => t.drop_index(coll, name).await)
    }
    async fn collection_names(&self) -> Result<Vec<String>> {
        delegate!(self, t => t.collection_names().await)
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
    async fn set_validator(&self, coll: &str, schema: &crate::store::query::Schema) -> Result<()> {
        delegate!(self, t => t.set_validator(coll, schema).await)
    }
    fn extensions(&self) -> &Extensions {
        delegate!(self, t => t.extensions())
    }

    type Txn = AnyTxn;

    /// What the underlying transaction answers (transactions do not nest: an error).
    async fn start_transaction(&self) -> Result<AnyTxn> {
        Ok(match self {
            #[cfg(feature = "memory")]
            AnyTxn::Memory(t) => AnyTxn::Memory(t.start_transaction().await?),
            #[cfg(feature = "mongodb")]
            AnyTxn::Mongo(t) => AnyTxn::Mongo(t.start_transaction().await?),
        })
    }

    fn current_transaction(&self) -> Option<&AnyTxn> {
        Some(self)
    }
}

impl Transaction for AnyTxn {
    async fn commit(&self) -> Result<()> {
        delegate!(self, t => t.commit().await)
    }
    async fn abort(&self) -> Result<()> {
        delegate!(self, t => t.abort().await)
    }
    async fn session_id(&self) -> Option<Document> {
        delegate!(self, t => t.session_id().await)
    }
}
