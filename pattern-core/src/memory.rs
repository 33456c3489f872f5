//! The embedded in-memory store: the default, nothing to install.
//!
//! It keeps the same collections and documents the MongoDB store writes, applies each write
//! atomically under one lock, and enforces the same indexes: `_id` is unique, and unique
//! (optionally partial) indexes reject duplicates with [`Error::DuplicateKey`]. Secondary
//! indexes also serve reads: a query with an equality on an index's first key scans only that
//! key's documents.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use bson::{Bson, Document};

use crate::query::{compare_by, compare_values, get_path, Filter, FindOptions, IndexSpec, Update};
use crate::store::{ArrayStats, EnsuredIndexes, Store, UpdateOutcome};
use crate::{Error, Result};

/// A BSON value ordered by MongoDB's comparison (so `1`, `1_i64` and `1.0` are one key, as in
/// a MongoDB index).
#[derive(Clone, Debug)]
struct Key(Bson);

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_values(&self.0, &other.0)
    }
}

#[derive(Debug)]
struct MemIndex {
    spec: IndexSpec,
    /// index key values -> the `_id`s of the documents with those values
    entries: BTreeMap<Vec<Key>, BTreeSet<Key>>,
}

impl MemIndex {
    fn key_of(&self, doc: &Document) -> Option<Vec<Key>> {
        if let Some(p) = &self.spec.partial {
            if !p.matches(doc) {
                return None;
            }
        }
        Some(self.spec.keys.iter().map(|(path, _)| Key(get_path(doc, path).cloned().unwrap_or(Bson::Null))).collect())
    }

    fn add(&mut self, doc: &Document, id: &Key) {
        if let Some(k) = self.key_of(doc) {
            self.entries.entry(k).or_default().insert(id.clone());
        }
    }

    fn remove(&mut self, doc: &Document, id: &Key) {
        if let Some(k) = self.key_of(doc) {
            if let Some(set) = self.entries.get_mut(&k) {
                set.remove(id);
                if set.is_empty() {
                    self.entries.remove(&k);
                }
            }
        }
    }

    /// Another document (not `id`) already holds `doc`'s key in this unique index.
    fn conflicts(&self, doc: &Document, id: &Key) -> bool {
        self.spec.unique
            && self.key_of(doc).and_then(|k| self.entries.get(&k)).is_some_and(|ids| ids.iter().any(|x| x != id))
    }
}

#[derive(Debug, Default)]
struct Collection {
    docs: BTreeMap<Key, Document>,
    indexes: Vec<MemIndex>,
}

impl Collection {
    fn check_unique(&self, coll: &str, doc: &Document, id: &Key) -> Result<()> {
        for index in &self.indexes {
            if index.conflicts(doc, id) {
                return Err(Error::DuplicateKey {
                    collection: coll.to_owned(),
                    message: format!("E11000 duplicate key error collection: {coll} index: {}", index.spec.name),
                });
            }
        }
        Ok(())
    }

    fn insert(&mut self, coll: &str, mut doc: Document) -> Result<()> {
        if !doc.contains_key("_id") {
            doc.insert("_id", bson::oid::ObjectId::new());
        }
        let doc = id_first(doc);
        let id = Key(doc.get("_id").cloned().unwrap_or(Bson::Null));
        if self.docs.contains_key(&id) {
            return Err(Error::DuplicateKey {
                collection: coll.to_owned(),
                message: format!("E11000 duplicate key error collection: {coll} index: _id_"),
            });
        }
        self.check_unique(coll, &doc, &id)?;
        for index in &mut self.indexes {
            index.add(&doc, &id);
        }
        self.docs.insert(id, doc);
        Ok(())
    }

    fn replace(&mut self, coll: &str, id: &Key, new: Document) -> Result<()> {
        self.check_unique(coll, &new, id)?;
        let old = self.docs.insert(id.clone(), new);
        let new = &self.docs[id];
        for index in &mut self.indexes {
            if let Some(old) = &old {
                index.remove(old, id);
            }
            index.add(new, id);
        }
        Ok(())
    }

    /// The `_id`s of the documents that may match `filter`, narrowed by an index when one
    /// fits (an equality on `_id` or on an index's first key, and the index's partial filter
    /// among the query's own conditions).
    fn candidates(&self, filter: &Filter) -> Vec<Key> {
        let mut leaves = Vec::new();
        flatten(filter, &mut leaves);
        if let Some(id) = leaves.iter().find_map(|l| match l {
            Filter::Eq(p, v) if p == "_id" => Some(Key(v.clone())),
            _ => None,
        }) {
            return self.docs.contains_key(&id).then_some(id).into_iter().collect();
        }
        let mut best: Option<Vec<Key>> = None;
        for index in &self.indexes {
            let usable = index.spec.partial.as_ref().is_none_or(|p| {
                let mut need = Vec::new();
                flatten(p, &mut need);
                need.iter().all(|n| leaves.contains(n))
            });
            let first = &index.spec.keys[0].0;
            let eq = leaves.iter().find_map(|l| match l {
                Filter::Eq(p, v) if p == first => Some(Key(v.clone())),
                _ => None,
            });
            if let (true, Some(v)) = (usable, eq) {
                let ids: Vec<Key> = index
                    .entries
                    .range(vec![v.clone()]..)
                    .take_while(|(k, _)| k[0] == v)
                    .flat_map(|(_, ids)| ids.iter().cloned())
                    .collect();
                if best.as_ref().is_none_or(|b| ids.len() < b.len()) {
                    best = Some(ids);
                }
            }
        }
        best.unwrap_or_else(|| self.docs.keys().cloned().collect())
    }

    fn matching(&self, filter: &Filter) -> Vec<Key> {
        self.candidates(filter).into_iter().filter(|id| filter.matches(&self.docs[id])).collect()
    }
}

fn flatten<'a>(f: &'a Filter, out: &mut Vec<&'a Filter>) {
    match f {
        Filter::And(fs) => fs.iter().for_each(|f| flatten(f, out)),
        leaf => out.push(leaf),
    }
}

fn id_first(mut doc: Document) -> Document {
    if doc.keys().next().map(String::as_str) == Some("_id") {
        return doc;
    }
    let mut out = Document::new();
    if let Some(id) = doc.remove("_id") {
        out.insert("_id", id);
    }
    out.extend(doc);
    out
}

#[derive(Debug, Default)]
struct State {
    collections: BTreeMap<String, Collection>,
}

/// The embedded store. Cheap to clone: clones share the same data.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    ensured: Arc<EnsuredIndexes>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied write: every write
        // builds the new document first and swaps it in last.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Names of the collections that hold documents or indexes.
    pub fn collection_names(&self) -> Vec<String> {
        self.lock().collections.keys().cloned().collect()
    }

    /// Every document of a collection, in `_id` order.
    pub fn dump(&self, coll: &str) -> Vec<Document> {
        self.lock().collections.get(coll).map(|c| c.docs.values().cloned().collect()).unwrap_or_default()
    }

    /// Every document of a collection as relaxed Extended JSON, one per line (`mongoexport`'s
    /// format).
    pub fn dump_extjson(&self, coll: &str) -> String {
        self.dump(coll).into_iter().map(|d| Bson::Document(d).into_relaxed_extjson().to_string() + "\n").collect()
    }

    /// Inserts documents as another tool would, bypassing the patterns (for imports and tests).
    pub fn insert_raw(&self, coll: &str, docs: impl IntoIterator<Item = Document>) -> Result<()> {
        let mut state = self.lock();
        let c = state.collections.entry(coll.to_owned()).or_default();
        docs.into_iter().try_for_each(|d| c.insert(coll, d))
    }

    /// Drops a collection and its indexes.
    pub fn drop_collection(&self, coll: &str) {
        self.lock().collections.remove(coll);
        self.ensured.clear();
    }

    fn sync_update(&self, coll: &str, filter: &Filter, update: &Update, upsert: bool) -> Result<UpdateOutcome> {
        let mut state = self.lock();
        let c = state.collections.entry(coll.to_owned()).or_default();
        if let Some(id) = c.matching(filter).into_iter().next() {
            let mut doc = c.docs[&id].clone();
            update.apply(&mut doc, false).map_err(|e| Error::Server { message: e, source: None })?;
            if doc.get("_id").map(|x| Key(x.clone())) != Some(id.clone()) {
                return Err(Error::invalid("an update may not change _id"));
            }
            c.replace(coll, &id, doc)?;
            return Ok(UpdateOutcome { matched: true, upserted: false });
        }
        if !upsert {
            return Ok(UpdateOutcome::default());
        }
        let mut doc = Document::new();
        for (k, v) in filter.equalities() {
            doc.insert(k, v.clone());
        }
        let before: Vec<String> = doc.keys().cloned().collect();
        update.apply(&mut doc, true).map_err(|e| Error::Server { message: e, source: None })?;
        // MongoDB (5.0+) adds the fields an update creates in lexicographic order.
        let mut created: Vec<(String, Bson)> = doc.iter().filter(|(k, _)| !before.contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
        created.sort_by(|a, b| a.0.cmp(&b.0));
        let mut ordered: Document = before.iter().map(|k| (k.clone(), doc.get(k).cloned().unwrap_or(Bson::Null))).collect();
        ordered.extend(created);
        c.insert(coll, ordered)?;
        Ok(UpdateOutcome { matched: false, upserted: true })
    }

    fn sync_replace(&self, coll: &str, filter: &Filter, doc: Document, upsert: bool) -> Result<UpdateOutcome> {
        let mut state = self.lock();
        let c = state.collections.entry(coll.to_owned()).or_default();
        if let Some(id) = c.matching(filter).into_iter().next() {
            let mut doc = doc;
            doc.insert("_id", id.0.clone());
            c.replace(coll, &id, id_first(doc))?;
            return Ok(UpdateOutcome { matched: true, upserted: false });
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
        Ok(UpdateOutcome { matched: false, upserted: true })
    }

    fn sync_find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Vec<Document> {
        let state = self.lock();
        let Some(c) = state.collections.get(coll) else { return Vec::new() };
        let mut docs: Vec<&Document> = c.matching(filter).iter().map(|id| &c.docs[id]).collect();
        if !opts.sort.is_empty() {
            docs.sort_by(|a, b| compare_by(a, b, &opts.sort));
        }
        let limit = match opts.limit {
            Some(n) if n != 0 => n.unsigned_abs() as usize,
            _ => usize::MAX,
        };
        docs.into_iter().skip(opts.skip as usize).take(limit).cloned().collect()
    }

    fn sync_stats(&self, coll: &str, filter: &Filter, field: &str) -> ArrayStats {
        let state = self.lock();
        let mut stats = ArrayStats::default();
        let Some(c) = state.collections.get(coll) else { return stats };
        for id in c.matching(filter) {
            stats.documents += 1;
            match c.docs[&id].get(field) {
                Some(Bson::Array(a)) => stats.items += a.len() as u64,
                None | Some(Bson::Null) => {}
                Some(_) => stats.not_arrays += 1,
            }
        }
        stats
    }

    fn sync_delete(&self, coll: &str, filter: &Filter) -> u64 {
        let mut state = self.lock();
        let Some(c) = state.collections.get_mut(coll) else { return 0 };
        let ids = c.matching(filter);
        for id in &ids {
            if let Some(doc) = c.docs.remove(id) {
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
        let c = state.collections.entry(coll.to_owned()).or_default();
        if let Some(existing) = c.indexes.iter().find(|i| i.spec.name == spec.name) {
            if existing.spec != *spec {
                return Err(Error::Server {
                    message: format!("an index named {} already exists with different options", spec.name),
                    source: None,
                });
            }
            return Ok(());
        }
        let mut index = MemIndex { spec: spec.clone(), entries: BTreeMap::new() };
        for (id, doc) in &c.docs {
            if index.conflicts(doc, id) {
                return Err(Error::DuplicateKey {
                    collection: coll.to_owned(),
                    message: format!("E11000 duplicate key error building index {} on {coll}", spec.name),
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
        let mut state = self.lock();
        state.collections.entry(coll.to_owned()).or_default().insert(coll, doc)
    }

    async fn update_one(&self, coll: &str, filter: &Filter, update: &Update, upsert: bool) -> Result<UpdateOutcome> {
        self.sync_update(coll, filter, update, upsert)
    }

    async fn replace_one(&self, coll: &str, filter: &Filter, doc: Document, upsert: bool) -> Result<UpdateOutcome> {
        self.sync_replace(coll, filter, doc, upsert)
    }

    async fn find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Result<Vec<Document>> {
        Ok(self.sync_find(coll, filter, opts))
    }

    async fn array_stats(&self, coll: &str, filter: &Filter, array_field: &str) -> Result<ArrayStats> {
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
            Some(c) => std::iter::once("_id_".to_owned()).chain(c.indexes.iter().map(|i| i.spec.name.clone())).collect(),
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

    fn ensured(&self) -> &EnsuredIndexes {
        &self.ensured
    }
}
