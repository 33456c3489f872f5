//! The embedded in-memory store: the default, nothing to install.
//!
//! It keeps the same collections and documents the MongoDB store writes, applies each write
//! atomically under one lock, and enforces the same indexes: `_id` is unique, and unique
//! (optionally partial) indexes reject duplicates with [`Error::DuplicateKey`]. Secondary
//! indexes also serve reads: a query with an equality on an index's first key scans only that
//! key's documents.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use bson::{Bson, Document};

use crate::query::{compare_by, compare_values, get_path, Filter, FindOptions, IndexSpec, Update};
use crate::store::{ArrayStats, EnsuredIndexes, Store, UpdateOutcome};
use crate::{Error, Result, MAX_DOCUMENT_BYTES};

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

/// Refuses a document over [`MAX_DOCUMENT_BYTES`], as MongoDB does.
pub(crate) fn check_document_size(coll: &str, doc: &Document) -> Result<()> {
    let n = bson::to_vec(doc).map_or(usize::MAX, |v| v.len());
    if n > MAX_DOCUMENT_BYTES {
        return Err(Error::TooLarge {
            collection: coll.to_owned(),
            message: format!("a document of {n} bytes (the maximum is {MAX_DOCUMENT_BYTES})"),
        });
    }
    Ok(())
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
        Some(
            self.spec
                .keys
                .iter()
                .map(|(path, _)| Key(get_path(doc, path).cloned().unwrap_or(Bson::Null)))
                .collect(),
        )
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

    /// A plan over this index: equalities on a prefix of its keys, then at most a range on
    /// the next key. `None` when the query constrains no prefix of the index.
    fn plan<'a>(&'a self, leaves: &[&Filter]) -> Option<Plan<'a>> {
        let keys = &self.spec.keys;
        let mut prefix: Vec<Key> = Vec::new();
        for (path, _) in keys {
            match eq_on(leaves, path) {
                Some(v) => prefix.push(v),
                None => break,
            }
        }
        let m = prefix.len();
        let (lo, hi) = keys
            .get(m)
            .map_or((None, None), |(path, _)| range_on(leaves, path));
        if m == 0 && lo.is_none() && hi.is_none() {
            return None;
        }
        // Entry keys have one value per index key: `prefix ++ [lo]` sorts before every entry
        // of the range and `prefix ++ [hi or MaxKey]` after (inclusive bounds: a superset).
        let mut start = prefix.clone();
        start.extend(lo);
        let mut end = prefix;
        end.push(hi.unwrap_or(Key(Bson::MaxKey)));
        // Entries iterate in ascending order of their values, whatever the declared direction.
        let mut order: Vec<(String, i32)> = keys[m..].iter().map(|(k, _)| (k.clone(), 1)).collect();
        if order.last().is_none_or(|(k, _)| k != "_id") {
            order.push(("_id".into(), 1));
        }
        let entries = &self.entries;
        let ids = move || -> Ids<'a> {
            Box::new(
                entries
                    .range((Bound::Included(start.clone()), Bound::Included(end.clone())))
                    .flat_map(|(_, ids)| ids.iter()),
            )
        };
        Some(Plan::new(ids, order))
    }

    /// Another document (not `id`) already holds `doc`'s key in this unique index.
    fn conflicts(&self, doc: &Document, id: &Key) -> bool {
        self.spec.unique
            && self
                .key_of(doc)
                .and_then(|k| self.entries.get(&k))
                .is_some_and(|ids| ids.iter().any(|x| x != id))
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
                    message: format!(
                        "E11000 duplicate key error collection: {coll} index: {}",
                        index.spec.name
                    ),
                });
            }
        }
        Ok(())
    }

    fn insert(&mut self, coll: &str, mut doc: Document) -> Result<()> {
        check_document_size(coll, &doc)?;
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
        check_document_size(coll, &new)?;
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

    /// The cheapest plan for `filter`: an `_id` equality or range on the documents themselves,
    /// an index (a partial one only when the query carries its partial filter), or a scan.
    fn plan<'a>(&'a self, filter: &Filter) -> Plan<'a> {
        let mut leaves = Vec::new();
        flatten(filter, &mut leaves);
        let by_id = vec![("_id".to_owned(), 1)];
        let docs = &self.docs;
        if let Some(id) = eq_on(&leaves, "_id") {
            return Plan::new(
                move || -> Ids<'a> {
                    Box::new(docs.get_key_value(&id).map(|(k, _)| k).into_iter())
                },
                by_id,
            );
        }
        let (lo, hi) = range_on(&leaves, "_id");
        let mut best: Option<Plan<'a>> = (lo.is_some() || hi.is_some()).then(|| {
            let lower = lo.map_or(Bound::Unbounded, Bound::Included);
            let upper = hi.map_or(Bound::Unbounded, Bound::Included);
            Plan::new(
                move || -> Ids<'a> {
                    Box::new(docs.range((lower.clone(), upper.clone())).map(|(k, _)| k))
                },
                by_id.clone(),
            )
        });
        // Partial indexes first: they hold one open document per key.
        let mut indexes: Vec<&MemIndex> = self.indexes.iter().collect();
        indexes.sort_by_key(|i| i.spec.partial.is_none());
        for index in indexes {
            if best.as_ref().is_some_and(|b| b.estimate() <= 1) {
                break;
            }
            let usable = index.spec.partial.as_ref().is_none_or(|p| {
                let mut need = Vec::new();
                flatten(p, &mut need);
                need.iter().all(|n| leaves.contains(n))
            });
            if let Some(plan) = usable.then(|| index.plan(&leaves)).flatten() {
                if best.as_ref().is_none_or(|b| plan.estimate() < b.estimate()) {
                    best = Some(plan);
                }
            }
        }
        // No index fits: scan every document in `_id` order.
        best.unwrap_or_else(|| Plan::new(move || -> Ids<'a> { Box::new(docs.keys()) }, by_id))
    }

    /// The `_id` of the first document matching `filter`.
    fn first_match(&self, filter: &Filter) -> Option<Key> {
        self.plan(filter)
            .ids()
            .find(|id| filter.matches(&self.docs[*id]))
            .cloned()
    }

    /// The `_id` of the first document matching `filter` in `sort` order.
    fn first_in_order(&self, filter: &Filter, sort: &[(String, i32)]) -> Option<Key> {
        if sort.is_empty() {
            return self.first_match(filter);
        }
        let opts = FindOptions {
            sort: sort.to_vec(),
            skip: 0,
            limit: Some(1),
        };
        self.find(filter, &opts)
            .first()
            .and_then(|d| d.get("_id"))
            .map(|id| Key(id.clone()))
    }

    /// The `_id`s of every document matching `filter`.
    fn matching(&self, filter: &Filter) -> Vec<Key> {
        self.plan(filter)
            .ids()
            .filter(|id| filter.matches(&self.docs[*id]))
            .cloned()
            .collect()
    }

    /// The documents matching `filter`, sorted, skipped and limited. When the plan already
    /// yields the sort order (forwards or backwards), it stops after `skip + limit` matches.
    fn find(&self, filter: &Filter, opts: &FindOptions) -> Vec<Document> {
        let plan = self.plan(filter);
        let limit = match opts.limit {
            Some(n) if n != 0 => n.unsigned_abs() as usize,
            _ => usize::MAX,
        };
        let skip = opts.skip as usize;
        let sort = &opts.sort;
        let matches = |id: &&Key| filter.matches(&self.docs[*id]);
        let forward = sort.is_empty() || plan.order.starts_with(sort);
        let backward = !forward && {
            let reversed: Vec<(String, i32)> =
                plan.order.iter().map(|(k, d)| (k.clone(), -d)).collect();
            reversed.starts_with(sort)
        };
        if forward {
            return plan
                .ids()
                .filter(matches)
                .skip(skip)
                .take(limit)
                .map(|id| self.docs[id].clone())
                .collect();
        }
        if backward {
            return plan
                .ids()
                .rev()
                .filter(matches)
                .skip(skip)
                .take(limit)
                .map(|id| self.docs[id].clone())
                .collect();
        }
        let mut docs: Vec<&Document> = plan
            .ids()
            .filter(matches)
            .map(|id| &self.docs[id])
            .collect();
        docs.sort_by(|a, b| compare_by(a, b, sort));
        docs.into_iter().skip(skip).take(limit).cloned().collect()
    }
}

/// `_id`s in the order of a plan.
type Ids<'a> = Box<dyn DoubleEndedIterator<Item = &'a Key> + 'a>;

/// How to enumerate the candidates of a query (a superset of its matches), and the sort
/// order they come in.
struct Plan<'a> {
    ids: Box<dyn Fn() -> Ids<'a> + 'a>,
    order: Vec<(String, i32)>,
}

impl<'a> Plan<'a> {
    fn new(ids: impl Fn() -> Ids<'a> + 'a, order: Vec<(String, i32)>) -> Self {
        Plan {
            ids: Box::new(ids),
            order,
        }
    }

    fn ids(&self) -> Ids<'a> {
        (self.ids)()
    }

    /// Candidates, counted up to a cap (enough to tell a point lookup from a range).
    fn estimate(&self) -> usize {
        self.ids().take(64).count()
    }
}

/// The value of an equality on `path` among the query's conditions.
fn eq_on(leaves: &[&Filter], path: &str) -> Option<Key> {
    leaves.iter().find_map(|l| match l {
        Filter::Eq(p, v) if p == path => Some(Key(v.clone())),
        _ => None,
    })
}

/// Inclusive bounds implied by the range conditions on `path` (a superset of the exact range).
fn range_on(leaves: &[&Filter], path: &str) -> (Option<Key>, Option<Key>) {
    let (mut lo, mut hi) = (None, None);
    for l in leaves {
        match l {
            Filter::Gt(p, v) | Filter::Gte(p, v) if p == path => lo = Some(Key(v.clone())),
            Filter::Lt(p, v) | Filter::Lte(p, v) if p == path => hi = Some(Key(v.clone())),
            _ => {}
        }
    }
    (lo, hi)
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
        self.lock()
            .collections
            .get(coll)
            .map(|c| c.docs.values().cloned().collect())
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

    fn sync_update(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(String, i32)],
        update: &Update,
        upsert: bool,
    ) -> Result<(UpdateOutcome, Option<Document>)> {
        let mut state = self.lock();
        let c = state.collections.entry(coll.to_owned()).or_default();
        if let Some(id) = c.first_in_order(filter, sort) {
            let before = c.docs[&id].clone();
            let mut doc = before.clone();
            update.apply(&mut doc, false).map_err(|e| Error::Server {
                message: e,
                source: None,
            })?;
            if doc.get("_id").map(|x| Key(x.clone())) != Some(id.clone()) {
                return Err(Error::invalid("an update may not change _id"));
            }
            c.replace(coll, &id, doc)?;
            let outcome = UpdateOutcome {
                matched: true,
                upserted: false,
            };
            return Ok((outcome, Some(before)));
        }
        if !upsert {
            return Ok((UpdateOutcome::default(), None));
        }
        let mut doc = Document::new();
        for (k, v) in filter.equalities() {
            doc.insert(k, v.clone());
        }
        let before: Vec<String> = doc.keys().cloned().collect();
        update.apply(&mut doc, true).map_err(|e| Error::Server {
            message: e,
            source: None,
        })?;
        // MongoDB (5.0+) adds the fields an update creates in lexicographic order.
        let mut created: Vec<(String, Bson)> = doc
            .iter()
            .filter(|(k, _)| !before.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        created.sort_by(|a, b| a.0.cmp(&b.0));
        let mut ordered: Document = before
            .iter()
            .map(|k| (k.clone(), doc.get(k).cloned().unwrap_or(Bson::Null)))
            .collect();
        ordered.extend(created);
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
        let c = state.collections.entry(coll.to_owned()).or_default();
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
        let Some(c) = state.collections.get_mut(coll) else {
            return 0;
        };
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
                    message: format!(
                        "an index named {} already exists with different options",
                        spec.name
                    ),
                    source: None,
                });
            }
            return Ok(());
        }
        let mut index = MemIndex {
            spec: spec.clone(),
            entries: BTreeMap::new(),
        };
        for (id, doc) in &c.docs {
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
        let mut state = self.lock();
        state
            .collections
            .entry(coll.to_owned())
            .or_default()
            .insert(coll, doc)
    }

    async fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        Ok(self.sync_update(coll, filter, &[], update, upsert)?.0)
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(String, i32)],
        _hint: &str,
        update: &Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        let before = self.sync_update(coll, filter, sort, update, upsert)?.1;
        Ok(before.map(|doc| {
            doc.into_iter()
                .filter(|(k, _)| k == "_id" || fields.contains(&k.as_str()))
                .collect()
        }))
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
        Ok(self.sync_find(coll, filter, opts))
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

    fn ensured(&self) -> &EnsuredIndexes {
        &self.ensured
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn open_index() -> IndexSpec {
        IndexSpec {
            name: "open".into(),
            keys: vec![("k".into(), 1)],
            unique: true,
            partial: Some(Filter::Lt("count".into(), Bson::Int32(3))),
        }
    }

    #[tokio::test]
    async fn partial_unique_index_admits_one_open_document_per_key() {
        let s = MemoryStore::new();
        s.create_index("c", &open_index()).await.unwrap();
        s.insert_one("c", doc! {"_id": 1, "k": "a", "count": 1})
            .await
            .unwrap();
        let dup = s
            .insert_one("c", doc! {"_id": 2, "k": "a", "count": 2})
            .await;
        assert!(matches!(dup, Err(Error::DuplicateKey { .. })));
        s.insert_one("c", doc! {"_id": 3, "k": "a", "count": 3})
            .await
            .unwrap(); // full: not indexed
        s.insert_one("c", doc! {"_id": 4, "k": "b", "count": 0})
            .await
            .unwrap();
        // An update that would make a second open document is refused and changes nothing.
        let f = Filter::eq("_id", 3);
        let u = Update {
            inc: vec![("count".into(), -1)],
            ..Update::default()
        };
        assert!(matches!(
            s.update_one("c", &f, &u, false).await,
            Err(Error::DuplicateKey { .. })
        ));
        assert_eq!(s.dump("c")[1], doc! {"_id": 3, "k": "a", "count": 3});
        // Filling the open document frees the key.
        let fill = Update {
            inc: vec![("count".into(), 2)],
            ..Update::default()
        };
        s.update_one("c", &Filter::eq("_id", 1), &fill, false)
            .await
            .unwrap();
        s.insert_one("c", doc! {"_id": 5, "k": "a", "count": 0})
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn index_over_duplicates_is_refused() {
        let s = MemoryStore::new();
        s.insert_raw(
            "c",
            [
                doc! {"_id": 1, "k": "a", "count": 1},
                doc! {"_id": 2, "k": "a", "count": 1},
            ],
        )
        .unwrap();
        assert!(matches!(
            s.create_index("c", &open_index()).await,
            Err(Error::DuplicateKey { .. })
        ));
        assert_eq!(s.index_names("c").await.unwrap(), ["_id_"]);
    }

    #[tokio::test]
    async fn upsert_builds_the_document_like_mongodb() {
        let s = MemoryStore::new();
        let f = Filter::and([
            Filter::eq("customerId", 123),
            Filter::Lt("count".into(), Bson::Int32(10)),
        ]);
        let u = Update {
            push: vec![("history".into(), vec![Bson::Int32(1)])],
            inc: vec![("count".into(), 1)],
            set_on_insert: vec![
                ("_id".into(), "123_5".into()),
                ("customerId".into(), Bson::Int32(123)),
            ],
            ..Update::default()
        };
        let r = s.update_one("t", &f, &u, true).await.unwrap();
        assert_eq!(
            r,
            UpdateOutcome {
                matched: false,
                upserted: true
            }
        );
        let d = &s.dump("t")[0];
        assert_eq!(
            d,
            &doc! {"_id": "123_5", "customerId": 123, "count": 1, "history": [1]}
        );
        assert_eq!(
            d.keys().collect::<Vec<_>>(),
            ["_id", "customerId", "count", "history"]
        );
        let r = s.update_one("t", &f, &u, true).await.unwrap();
        assert_eq!(
            r,
            UpdateOutcome {
                matched: true,
                upserted: false
            }
        );
        assert_eq!(s.dump("t")[0].get_i32("count"), Ok(2));
    }

    #[tokio::test]
    async fn secondary_index_narrows_and_sorts_like_a_scan() {
        let s = MemoryStore::new();
        let ix = IndexSpec {
            name: "k_id".into(),
            keys: vec![("k".into(), 1), ("_id".into(), 1)],
            unique: false,
            partial: None,
        };
        s.create_index("c", &ix).await.unwrap();
        for i in 0..50 {
            s.insert_one("c", doc! {"_id": format!("{:02}", 49 - i), "k": i % 3})
                .await
                .unwrap();
        }
        let opts = FindOptions {
            sort: vec![("_id".into(), 1)],
            skip: 2,
            limit: Some(3),
        };
        let got = s.find("c", &Filter::eq("k", 1_i64), &opts).await.unwrap();
        let ids: Vec<&str> = got.iter().map(|d| d.get_str("_id").unwrap()).collect();
        assert_eq!(ids, ["06", "09", "12"]);
    }
}
