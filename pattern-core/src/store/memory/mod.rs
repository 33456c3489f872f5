//! The embedded in-memory store: the default, nothing to install.
//!
//! It keeps the same collections and documents the MongoDB store writes, applies each write
//! atomically under one lock, and enforces the same indexes: `_id` is unique, and unique
//! (optionally partial) indexes reject duplicates with [`Error::DuplicateKey`]. Secondary
//! indexes also serve reads: a query with an equality on an index's first key scans only that
//! key's documents.
//!
//! The series push ([`Store::push_open`]) is done natively: the open document is the last
//! entry under the key in the series' open-document index, and the items go into its array in
//! place; any document it does not handle goes through the conditional upsert every store
//! runs, with the same result.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bson::{Bson, Document, RawDocumentBuf};

use crate::query::{Filter, FindOptions, IndexSpec, Update};
use crate::spec::SeriesSpec;
use crate::store::{ArrayStats, Store, StoreMemo, UpdateOutcome};

mod collection;
mod index;
mod plan;
mod push;
mod txn;
pub use txn::MemoryTxn;
#[cfg(test)]
mod tests;

use crate::{Error, Result};
use collection::{id_first, Collection, Stored};
use index::MemIndex;

#[derive(Debug, Default)]
struct State {
    collections: BTreeMap<String, Collection>,
}

impl State {
    /// Collection `coll`, created empty if need be (its name is copied only then).
    fn collection(&mut self, coll: &str) -> &mut Collection {
        if !self.collections.contains_key(coll) {
            self.collections
                .insert(coll.to_owned(), Collection::default());
        }
        self.collections.get_mut(coll).expect("inserted above")
    }
}

/// The embedded store. Cheap to clone: clones share the same data.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    memo: Arc<StoreMemo>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied write: every write
        // builds the new document first and swaps it in last, except updates, which check
        // whatever can refuse them before changing the document (and undo the change if a
        // check that needs the result refuses it).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every document of a collection, in `_id` order.
    pub(crate) fn dump(&self, coll: &str) -> Vec<Document> {
        self.lock()
            .collections
            .get(coll)
            .map(|c| c.docs.values().map(|s| s.doc.clone()).collect())
            .unwrap_or_default()
    }

    /// Every document of a collection as relaxed Extended JSON, one per line (`mongoexport`'s
    /// format).
    pub fn dump_extjson(&self, coll: &str) -> String {
        self.dump(coll)
            .into_iter()
            .map(|d| Bson::Document(d).into_relaxed_extjson().to_string() + "\n")
            .collect()
    }

    /// Inserts documents as another tool would, bypassing the patterns (for imports and tests).
    #[cfg(test)]
    pub(crate) fn insert_raw(
        &self,
        coll: &str,
        docs: impl IntoIterator<Item = Document>,
    ) -> Result<()> {
        let mut state = self.lock();
        let c = state.collection(coll);
        docs.into_iter().try_for_each(|d| c.insert(coll, d))
    }

    /// Drops a collection and its indexes.
    pub fn drop_collection(&self, coll: &str) {
        self.lock().collections.remove(coll);
        self.memo.clear();
    }

    /// Updates the first document matching `filter` in `sort` order, or upserts. With
    /// `fields`, also returns the matched document's `_id` and those fields, as they were.
    fn sync_update(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
        update: &mut Update,
        upsert: bool,
        fields: Option<&[&str]>,
    ) -> Result<(UpdateOutcome, Option<Document>)> {
        let mut state = self.lock();
        let c = state.collection(coll);
        let first = match c.first_open(filter, sort) {
            Some(first) => first,
            None => c.first_in_order(filter, sort),
        };
        if let Some(id) = first {
            let before = match c.push_in_place(coll, &id, update, fields) {
                Some(done) => done?,
                None => c.update(coll, &id, update, fields)?,
            };
            let outcome = UpdateOutcome {
                matched: true,
                upserted: false,
            };
            return Ok((outcome, before));
        }
        if !upsert {
            return Ok((UpdateOutcome::default(), None));
        }
        let mut doc = Document::new();
        for (k, v) in filter.equalities() {
            doc.insert(k, v.clone());
        }
        let copied = doc.len();
        update.apply(&mut doc, true).map_err(|e| Error::Server {
            message: e,
            source: None,
        })?;
        // MongoDB (5.0+) adds the fields an update creates in lexicographic order. The update
        // appended them after the fields copied from the filter (whose values it may have
        // changed in place).
        // `_id` first, as every stored document has it (so that `insert` need not move it).
        let mut all: Vec<(String, Bson)> = doc.into_iter().collect();
        let mut created = all.split_off(copied);
        created.sort_by(|a, b| a.0.cmp(&b.0));
        let id = match all.iter().position(|(k, _)| k == "_id") {
            Some(i) => Some(all.remove(i)),
            None => (created.iter().position(|(k, _)| k == "_id")).map(|i| created.remove(i)),
        };
        let ordered: Document = id.into_iter().chain(all).chain(created).collect();
        c.insert(coll, ordered)?;
        let outcome = UpdateOutcome {
            matched: false,
            upserted: true,
        };
        Ok((outcome, None))
    }

    fn sync_replace(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        let mut state = self.lock();
        let c = state.collection(coll);
        if let Some(id) = c.first_match(filter) {
            let mut doc = doc;
            doc.insert("_id", id.0.clone());
            c.replace(coll, &id, id_first(doc))?;
            return Ok(UpdateOutcome {
                matched: true,
                upserted: false,
            });
        }
        if !upsert {
            return Ok(UpdateOutcome::default());
        }
        let mut full = Document::new();
        for (k, v) in filter.equalities() {
            if k == "_id" {
                full.insert(k, v.clone());
            }
        }
        full.extend(doc);
        c.insert(coll, full)?;
        Ok(UpdateOutcome {
            matched: false,
            upserted: true,
        })
    }

    fn sync_find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Vec<Document> {
        let state = self.lock();
        state
            .collections
            .get(coll)
            .map(|c| c.find(filter, opts))
            .unwrap_or_default()
    }

    fn sync_stats(&self, coll: &str, filter: &Filter, field: &str) -> ArrayStats {
        let state = self.lock();
        let mut stats = ArrayStats::default();
        let Some(c) = state.collections.get(coll) else {
            return stats;
        };
        for id in c.matching(filter) {
            stats.documents += 1;
            match c.docs[&id].doc.get(field) {
                Some(Bson::Array(a)) => stats.items += a.len() as u64,
                None | Some(Bson::Null) => {}
                Some(_) => stats.not_arrays += 1,
            }
        }
        stats
    }

    fn sync_delete(&self, coll: &str, filter: &Filter) -> u64 {
        let mut state = self.lock();
        let Some(c) = state.collections.get_mut(coll) else {
            return 0;
        };
        let ids = c.matching(filter);
        for id in &ids {
            if let Some(Stored { doc, .. }) = c.docs.remove(id) {
                for index in &mut c.indexes {
                    index.remove(&doc, id);
                }
            }
        }
        ids.len() as u64
    }

    fn sync_create_index(&self, coll: &str, spec: &IndexSpec) -> Result<()> {
        if spec.keys.is_empty() {
            return Err(Error::invalid("an index needs at least one key"));
        }
        let mut state = self.lock();
        let c = state.collection(coll);
        if let Some(existing) = c.indexes.iter().find(|i| i.spec.name == spec.name) {
            if existing.spec != *spec {
                return Err(Error::Server {
                    message: format!(
                        "an index named {} already exists with different options",
                        spec.name
                    ),
                    source: None,
                });
            }
            return Ok(());
        }
        let mut index = MemIndex::new(spec.clone());
        for (id, Stored { doc, .. }) in &c.docs {
            if index.conflicts(doc, id) {
                return Err(Error::DuplicateKey {
                    collection: coll.to_owned(),
                    message: format!(
                        "E11000 duplicate key error building index {} on {coll}",
                        spec.name
                    ),
                });
            }
            index.add(doc, id);
        }
        c.indexes.push(index);
        Ok(())
    }
}

impl Store for MemoryStore {
    async fn insert_one(&self, coll: &str, doc: Document) -> Result<()> {
        self.lock().collection(coll).insert(coll, doc)
    }

    async fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        Ok(self.sync_update(coll, filter, &[], update, upsert, None)?.0)
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
        _hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        let (_, before) = self.sync_update(coll, filter, sort, update, upsert, Some(fields))?;
        Ok(before)
    }

    async fn push_open(
        &self,
        spec: &SeriesSpec,
        key: &Bson,
        items: &mut Vec<Bson>,
        seq: i64,
        new_id: &(dyn Fn() -> Bson + Sync),
    ) -> Result<bool> {
        let native = self
            .lock()
            .collection(spec.collection)
            .push_open(spec, key, items, seq, new_id);
        match native {
            Some(done) => done,
            None => crate::store::push_open_upsert(self, spec, key, items, seq, new_id).await,
        }
    }

    async fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        self.sync_replace(coll, filter, doc, upsert)
    }

    async fn find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Result<Vec<Document>> {
        opts.check()?;
        Ok(self.sync_find(coll, filter, opts))
    }

    /// Serialized from the stored documents, without copying them first.
    async fn find_raw(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        opts.check()?;
        let state = self.lock();
        let Some(c) = state.collections.get(coll) else {
            return Ok(Vec::new());
        };
        c.find_refs(filter, &opts.sort, opts.skip, opts.limit)
            .into_iter()
            .map(|(_, doc)| crate::store::to_raw(coll, doc))
            .collect()
    }

    async fn array_stats(
        &self,
        coll: &str,
        filter: &Filter,
        array_field: &str,
    ) -> Result<ArrayStats> {
        Ok(self.sync_stats(coll, filter, array_field))
    }

    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64> {
        Ok(self.sync_delete(coll, filter))
    }

    async fn create_index(&self, coll: &str, index: &IndexSpec) -> Result<()> {
        self.sync_create_index(coll, index)
    }

    async fn index_names(&self, coll: &str) -> Result<Vec<String>> {
        let state = self.lock();
        Ok(match state.collections.get(coll) {
            Some(c) => std::iter::once("_id_".to_owned())
                .chain(c.indexes.iter().map(|i| i.spec.name.clone()))
                .collect(),
            None => Vec::new(),
        })
    }

    async fn drop_index(&self, coll: &str, name: &str) -> Result<()> {
        let mut state = self.lock();
        if let Some(c) = state.collections.get_mut(coll) {
            c.indexes.retain(|i| i.spec.name != name);
        }
        Ok(())
    }

    fn memo(&self) -> &StoreMemo {
        &self.memo
    }

    async fn update_many(&self, _coll: &str, _filter: &Filter, _update: &Update) -> Result<u64> {
        unimplemented!()
    }

    async fn graph_lookup(
        &self,
        _coll: &str,
        _q: &crate::query::GraphLookup,
    ) -> Result<Option<crate::query::Graph>> {
        unimplemented!()
    }

    type Txn = MemoryTxn;

    async fn start_transaction(&self) -> Result<MemoryTxn> {
        unimplemented!()
    }
}
