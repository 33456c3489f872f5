//! STUB (being written)
#![allow(unused)]
use crate::query::{Filter, FindOptions, Graph, GraphLookup, IndexSpec, Update};
use crate::store::{ArrayStats, Store, StoreMemo, Transaction, UpdateOutcome};
use crate::Result;
use bson::Document;

/// A transaction on a `MongoStore`.
#[derive(Debug)]
pub struct MongoTxn;

impl Store for MongoTxn {
    async fn insert_one(&self, _coll: &str, _doc: Document) -> Result<()> {
        unimplemented!()
    }
    async fn update_one(
        &self,
        _coll: &str,
        _filter: &Filter,
        _update: &mut Update,
        _upsert: bool,
    ) -> Result<UpdateOutcome> {
        unimplemented!()
    }
    async fn update_first(
        &self,
        _coll: &str,
        _filter: &Filter,
        _sort: &[(crate::query::Path, i32)],
        _hint: &str,
        _update: &mut Update,
        _upsert: bool,
        _fields: &[&str],
    ) -> Result<Option<Document>> {
        unimplemented!()
    }
    async fn replace_one(
        &self,
        _coll: &str,
        _filter: &Filter,
        _doc: Document,
        _upsert: bool,
    ) -> Result<UpdateOutcome> {
        unimplemented!()
    }
    async fn find(
        &self,
        _coll: &str,
        _filter: &Filter,
        _opts: &FindOptions,
    ) -> Result<Vec<Document>> {
        unimplemented!()
    }
    async fn array_stats(&self, _coll: &str, _filter: &Filter, _f: &str) -> Result<ArrayStats> {
        unimplemented!()
    }
    async fn update_many(&self, _coll: &str, _filter: &Filter, _update: &Update) -> Result<u64> {
        unimplemented!()
    }
    async fn graph_lookup(&self, _coll: &str, _q: &GraphLookup) -> Result<Option<Graph>> {
        unimplemented!()
    }
    async fn delete_many(&self, _coll: &str, _filter: &Filter) -> Result<u64> {
        unimplemented!()
    }
    async fn create_index(&self, _coll: &str, _index: &IndexSpec) -> Result<()> {
        unimplemented!()
    }
    async fn index_names(&self, _coll: &str) -> Result<Vec<String>> {
        unimplemented!()
    }
    async fn drop_index(&self, _coll: &str, _name: &str) -> Result<()> {
        unimplemented!()
    }
    fn memo(&self) -> &StoreMemo {
        unimplemented!()
    }
    type Txn = MongoTxn;
    async fn start_transaction(&self) -> Result<MongoTxn> {
        unimplemented!()
    }
    fn current_transaction(&self) -> Option<&MongoTxn> {
        Some(self)
    }
}

impl Transaction for MongoTxn {
    async fn commit(&self) -> Result<()> {
        unimplemented!()
    }
    async fn abort(&self) -> Result<()> {
        unimplemented!()
    }
}
