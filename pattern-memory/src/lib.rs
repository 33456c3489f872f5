//! The embedded in-memory store of pattern-core (its default, re-exported as
//! `pattern_core::MemoryStore`): nothing to install. It implements the store contract of
//! `pattern-store` and nothing else.
//!
//! It keeps the same collections and documents the MongoDB store writes, applies each write
//! atomically under one lock, and enforces the same indexes: `_id` is unique, and unique
//! (optionally partial) indexes reject duplicates with [`Error::DuplicateKey`].
//! Secondary indexes also serve reads: equalities on an index's first keys, then a range
//! (`$lt`... or a string prefix) on the next, or an `$in` on its first key, scan only those
//! entries; an `$in` on `_id` looks each up. Indexes are multikey, as MongoDB's: a document
//! whose key holds an array has an entry per element, so an equality on an element (the
//! `ancestors` of a tree) is a lookup.
//!
//! The series push ([`Store::push_open`]) is done natively: the open document is the last
//! entry under the key in the series' open-document index, and the items go into its array in
//! place; any document it does not handle goes through the conditional upsert every store
//! runs, with the same result.
//!
//! Transactions ([`MemoryTxn`]) have MongoDB's snapshot semantics. Starting one shares the
//! store's collections with its snapshot (no copy); its first write to a collection copies
//! that collection (its working copy), and a plain write to a collection while a snapshot
//! shares it copies it once too. With no transaction open, plain writes cost what they cost
//! before transactions existed (no copy, no bookkeeping beyond a per-document stamp).
//! Conflicts are MongoDB's: a transaction's write of a document another open transaction
//! wrote, or that changed after its snapshot, fails at once with
//! [`Error::WriteConflict`] and aborts it; a plain write of a
//! document an open transaction wrote waits until the transaction ends (a transaction that
//! blocks it longer than MongoDB's 60 second transaction lifetime is aborted, so a plain write
//! waiting on a transaction of its own task does not hang forever; the wait needs a Tokio
//! runtime with timers). A unique key a plain write takes while a transaction holds the same
//! key uncommitted does not wait: the transaction's commit then conflicts, and keeps nothing.
//! Index changes are not transactional: a transaction's `create_index` and `drop_index` apply
//! to the store at once; so does `set_validator`.
//!
//! A collection's validator ([`Store::set_validator`]) is checked where every write passes:
//! the collection's insert, replacement and update (the native push steps aside for a
//! validated collection). Level "moderate", as on MongoDB: every inserted document must pass
//! it, an updated or replaced one only if it passed before.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bson::{Bson, Document, RawDocumentBuf};
use tokio::sync::Notify;

use pattern_store::query::{Filter, FindOptions, Graph, GraphLookup, IndexSpec, Schema, Update};
use pattern_store::{ArrayStats, Extensions, OpenPush, Store, UpdateOutcome};

mod apply;
mod collection;
mod find;
mod index;
mod key;
mod ops;
mod plan;
mod push;
mod txn;
pub use plan::MemoryPlan;
pub use txn::MemoryTxn;
#[cfg(test)]
mod tests;

use collection::Collection;
use key::Key;
use ops::{Space, Step, Stop};
use pattern_store::{Error, Result};

/// How long a transaction may block a plain write before the write aborts it (MongoDB's
/// `transactionLifetimeLimitSeconds`).
const TRANSACTION_LIFETIME: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct State {
    collections: BTreeMap<String, Slot>,
    /// The documents open transactions have written: collection -> `_id` -> transaction.
    /// Empty while no transaction has written (the only case plain writes look at).
    claims: BTreeMap<String, BTreeMap<Key, u64>>,
    /// The open transactions, by id.
    txns: BTreeMap<u64, Open>,
    next_txn: u64,
    /// See [`TRANSACTION_LIFETIME`] (shorter in tests).
    lifetime: Duration,
}

impl Default for State {
    fn default() -> Self {
        State {
            collections: BTreeMap::new(),
            claims: BTreeMap::new(),
            txns: BTreeMap::new(),
            next_txn: 1,
            lifetime: TRANSACTION_LIFETIME,
        }
    }
}

/// An open transaction, as the store knows it.
#[derive(Debug)]
struct Open {
    started: Instant,
    /// Set when a plain write it blocked past its lifetime aborted it.
    killed: Arc<AtomicBool>,
}

/// A collection in the store: owned while no transaction's snapshot holds it, shared with
/// the snapshots that do. A write to a shared one takes it back (a copy, if a snapshot still
/// holds it), so plain writes never pay for transactions that are not open.
#[derive(Debug)]
enum Slot {
    Owned(Collection),
    Shared(Arc<Collection>),
}

impl Slot {
    fn get(&self) -> &Collection {
        match self {
            Slot::Owned(c) => c,
            Slot::Shared(c) => c,
        }
    }

    fn get_mut(&mut self) -> &mut Collection {
        if let Slot::Shared(shared) = self {
            let shared = std::mem::replace(shared, Arc::new(Collection::default()));
            *self = Slot::Owned(Arc::try_unwrap(shared).unwrap_or_else(|c| (*c).clone()));
        }
        match self {
            Slot::Owned(c) => c,
            Slot::Shared(_) => unreachable!("owned above"),
        }
    }

    /// The collection, to share with a snapshot.
    fn share(&mut self) -> Arc<Collection> {
        if let Slot::Owned(c) = self {
            c.settle();
            *self = Slot::Shared(Arc::new(std::mem::take(c)));
        }
        match self {
            Slot::Shared(c) => c.clone(),
            Slot::Owned(_) => unreachable!("shared above"),
        }
    }
}

impl State {
    /// Collection `coll`, created empty if need be (its name is copied only then), its
    /// pending index entries settled ([`Collection::settle`]).
    fn collection(&mut self, coll: &str) -> &mut Collection {
        let c = self.unsettled(coll);
        c.settle();
        c
    }

    /// [`State::collection`] as a series push takes it: index entries may be pending.
    fn unsettled(&mut self, coll: &str) -> &mut Collection {
        if !self.collections.contains_key(coll) {
            self.collections
                .insert(coll.to_owned(), Slot::Owned(Collection::new()));
        }
        self.collections
            .get_mut(coll)
            .expect("inserted above")
            .get_mut()
    }

    /// Collection `coll` to read, its pending index entries settled.
    fn get(&mut self, coll: &str) -> Option<&Collection> {
        let slot = self.collections.get_mut(coll)?;
        if let Slot::Owned(c) = slot {
            c.settle();
        }
        Some(slot.get())
    }

    /// Releases transaction `txn`'s claims on `written` (the documents it wrote, by
    /// collection) and forgets it.
    fn release<'a>(
        &mut self,
        txn: u64,
        written: impl IntoIterator<Item = (&'a String, &'a std::collections::BTreeSet<Key>)>,
    ) {
        for (coll, ids) in written {
            if let Some(claimed) = self.claims.get_mut(coll) {
                for id in ids {
                    if claimed.get(id) == Some(&txn) {
                        claimed.remove(id);
                    }
                }
                if claimed.is_empty() {
                    self.claims.remove(coll);
                }
            }
        }
        self.txns.remove(&txn);
    }

    /// Aborts transaction `txn` from outside (it blocked a plain write past its lifetime):
    /// its claims go, and its next operation fails.
    fn kill(&mut self, txn: u64) {
        if let Some(open) = self.txns.remove(&txn) {
            open.killed.store(true, Ordering::SeqCst);
        }
        for claimed in self.claims.values_mut() {
            claimed.retain(|_, holder| *holder != txn);
        }
        self.claims.retain(|_, claimed| !claimed.is_empty());
    }
}

/// Plain operations: on the store's collections; a write waits for the transactions that
/// hold a document it changes.
impl Space for State {
    fn read(&mut self, coll: &str) -> Option<&Collection> {
        self.get(coll)
    }

    fn write(&mut self, coll: &str) -> &mut Collection {
        self.collection(coll)
    }

    fn claim<'b>(&mut self, coll: &str, ids: impl IntoIterator<Item = &'b Key>) -> Step<()> {
        if self.claims.is_empty() {
            return Ok(());
        }
        let Some(claimed) = self.claims.get(coll) else {
            return Ok(());
        };
        for id in ids {
            if let Some(txn) = claimed.get(id) {
                return Err(Stop::Wait(*txn));
            }
        }
        Ok(())
    }
}

/// The embedded store. Cheap to clone: clones share the same data.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    extensions: Arc<Extensions>,
    /// Notified whenever a transaction ends (its claims released).
    ended: Arc<Notify>,
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
            .get(coll)
            .map(|c| c.docs.values().map(|s| Document::clone(&s.doc)).collect())
            .unwrap_or_default()
    }

    /// Every document of a collection as relaxed Extended JSON, one per line (`mongoexport`'s
    /// format). Relaxed: an Int32 and an Int64 both print as a number; to look at the BSON
    /// types, read the documents with `pattern_core::testing::Fixtures::documents`.
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

    /// How long a transaction may block a plain write (tests shorten it).
    #[cfg(test)]
    pub(crate) fn set_transaction_lifetime(&self, lifetime: Duration) {
        self.lock().lifetime = lifetime;
    }

    /// What the planner does for `filter` on `coll` (MongoDB's `explain`, in this store's
    /// terms): the index it walks, the documents it examines and how many match. A collection
    /// that does not exist examines nothing.
    pub fn explain(&self, coll: &str, filter: &Filter) -> MemoryPlan {
        self.lock()
            .get(coll)
            .map(|c| c.explain(filter))
            .unwrap_or_default()
    }

    /// Drops a collection and its indexes.
    pub fn drop_collection(&self, coll: &str) {
        self.lock().collections.remove(coll);
        self.extensions.forget();
    }

    /// Runs a plain write: `op` again each time it stops on a document an open transaction
    /// has written, once that transaction has ended (as MongoDB makes a write wait for the
    /// transaction holding its document). A transaction that blocks it past its lifetime is
    /// aborted.
    async fn write<R>(&self, mut op: impl FnMut(&mut State) -> Step<R> + Send) -> Result<R> {
        loop {
            let mut ended = std::pin::pin!(self.ended.notified());
            let (txn, deadline) = {
                let mut state = self.lock();
                match op(&mut state) {
                    Ok(r) => return Ok(r),
                    Err(Stop::Failed(e)) => return Err(e),
                    Err(Stop::Wait(txn)) => match state.txns.get(&txn) {
                        Some(open) => {
                            // Registered before the lock is released: an end after it wakes
                            // us.
                            ended.as_mut().enable();
                            (txn, open.started + state.lifetime)
                        }
                        // Claims of a transaction the store does not know (never left by
                        // one that ended): dropped, and the write runs again.
                        None => {
                            state.kill(txn);
                            continue;
                        }
                    },
                }
            };
            let deadline = tokio::time::Instant::from_std(deadline);
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                self.lock().kill(txn);
                self.ended.notify_waiters();
            }
        }
    }

    /// A snapshot transaction (see [`MemoryTxn`]).
    fn begin(&self) -> MemoryTxn {
        let mut state = self.lock();
        let id = state.next_txn;
        state.next_txn += 1;
        let killed = Arc::new(AtomicBool::new(false));
        let open = Open {
            started: Instant::now(),
            killed: killed.clone(),
        };
        state.txns.insert(id, open);
        let snapshot = (state.collections.iter_mut())
            .map(|(name, slot)| (name.clone(), slot.share()))
            .collect();
        MemoryTxn::new(self.clone(), id, killed, snapshot)
    }
}

/// `result` of a command, counted whether it succeeded or not (a failed command was sent too),
/// with the documents `documents` says it wrote.
fn counted<T>(result: Result<T>, documents: impl FnOnce(&T) -> u64) -> Result<T> {
    pattern_store::observe::command(result.as_ref().map_or(0, documents));
    result
}

/// The documents an update wrote.
fn written(outcome: &UpdateOutcome) -> u64 {
    u64::from(outcome.matched || outcome.upserted)
}

impl Store for MemoryStore {
    async fn insert_one(&self, coll: &str, doc: Document) -> Result<()> {
        let mut doc = Some(doc);
        counted(
            self.write(|state| ops::insert(state, coll, &mut doc)).await,
            |_| 1,
        )
    }

    async fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        let op = |state: &mut State| ops::update(state, coll, filter, &[], update, upsert, None);
        counted(self.write(op).await.map(|(o, _)| o), written)
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(pattern_store::query::Path, i32)],
        _hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        let fields = Some(fields);
        let op = |state: &mut State| ops::update(state, coll, filter, sort, update, upsert, fields);
        let (_, before) = counted(self.write(op).await, |(o, _)| written(o))?;
        Ok(before)
    }

    async fn update_returning(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        let op = |state: &mut State| ops::update_returning(state, coll, filter, update, fields);
        counted(self.write(op).await, |after| u64::from(after.is_some()))
    }

    async fn push_open(&self, push: &OpenPush<'_>, items: &mut Vec<Bson>) -> Result<bool> {
        let native = {
            let mut state = self.lock();
            // Documents held by a transaction: the upsert, which waits for them.
            // A collection not created yet: the upsert creates it.
            match (
                state.claims.is_empty(),
                state.collections.get_mut(push.collection),
            ) {
                (true, Some(slot)) => slot.get_mut().push_open(push, items),
                _ => None,
            }
        };
        match native {
            Some(done) => {
                pattern_store::observe::command(1);
                done
            }
            // Boxed: the rarer path, which every push's future would otherwise carry.
            None => Box::pin(pattern_store::push_open_upsert(self, push, items)).await,
        }
    }

    async fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        let mut doc = Some(doc);
        let replaced = self.write(|state| ops::replace(state, coll, filter, &mut doc, upsert));
        counted(replaced.await, written)
    }

    async fn find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Result<Vec<Document>> {
        pattern_store::observe::query(coll, "find", || filter.to_document());
        opts.check()?;
        let docs = ops::find(self.lock().get(coll), filter, opts);
        pattern_store::observe::command(docs.len() as u64);
        Ok(docs)
    }

    /// Serialized from the stored documents, without copying them first.
    async fn find_raw(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        pattern_store::observe::query(coll, "find", || filter.to_document());
        opts.check()?;
        let docs = ops::find_raw(coll, self.lock().get(coll), filter, opts)?;
        pattern_store::observe::command(docs.len() as u64);
        Ok(docs)
    }

    async fn array_stats(
        &self,
        coll: &str,
        filter: &Filter,
        array_field: &str,
    ) -> Result<ArrayStats> {
        Ok(ops::array_stats(self.lock().get(coll), filter, array_field))
    }

    /// A snapshot of the matching documents, shared with the store (a pointer each), each
    /// serialized only when the stream reaches it: a scan holds no copy of the collection.
    fn scan<'a>(
        &'a self,
        coll: &'a str,
        filter: &'a Filter,
        opts: &'a FindOptions,
        batch: u32,
    ) -> futures::stream::BoxStream<'a, Result<RawDocumentBuf>> {
        use futures::stream::{self, StreamExt};
        let _ = batch;
        if let Err(e) = opts.check() {
            return stream::once(async move { Err(e) }).boxed();
        }
        let docs = self
            .lock()
            .get(coll)
            .map(|c| c.find_shared(filter, &opts.sort))
            .unwrap_or_default();
        let limit = match opts.limit {
            Some(n) if n != 0 => n.unsigned_abs() as usize,
            _ => usize::MAX,
        };
        let docs = docs.into_iter().skip(opts.skip as usize).take(limit);
        stream::iter(docs.map(move |d| pattern_store::codec::raw::to_raw(coll, &d))).boxed()
    }

    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64> {
        pattern_store::observe::query(coll, "delete", || filter.to_document());
        let n = self.write(|state| ops::delete(state, coll, filter)).await?;
        pattern_store::observe::command(n);
        Ok(n)
    }

    async fn create_index(&self, coll: &str, index: &IndexSpec) -> Result<()> {
        self.lock().collection(coll).create_index(coll, index)
    }

    async fn index_names(&self, coll: &str) -> Result<Vec<String>> {
        Ok(index_names(self.lock().get(coll)))
    }

    async fn drop_index(&self, coll: &str, name: &str) -> Result<()> {
        let mut state = self.lock();
        if let Some(slot) = state.collections.get_mut(coll) {
            slot.get_mut().drop_index(name);
        }
        Ok(())
    }

    async fn collection_names(&self) -> Result<Vec<String>> {
        let mut names: Vec<String> = self.lock().collections.keys().cloned().collect();
        names.sort();
        Ok(names)
    }

    async fn set_validator(&self, coll: &str, schema: &Schema) -> Result<()> {
        self.lock().collection(coll).validator = Some(Arc::new(schema.clone()));
        Ok(())
    }

    /// Refused ([`Error::Unsupported`]): only this process writes to an in-memory store, and
    /// every derived value the patterns keep is brought in line in the write's own
    /// transaction, so there are no writes by other tools to follow.
    async fn watch(&self, _: &pattern_store::Watch) -> Result<Box<dyn pattern_store::ChangeFeed>> {
        Err(Error::Unsupported {
            store: "memory",
            reason: "only this process writes to an in-memory store, through the library, which keeps \
                     every derived value in line in the write's own transaction: there are no writes \
                     by other tools to follow"
                .into(),
        })
    }

    fn system_name(&self) -> &'static str {
        "memory"
    }

    fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    async fn update_many(&self, coll: &str, filter: &Filter, update: &Update) -> Result<u64> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        let n = (self.write(|state| ops::update_many(state, coll, filter, update))).await?;
        pattern_store::observe::command(n);
        Ok(n)
    }

    async fn graph_lookup(&self, coll: &str, q: &GraphLookup) -> Result<Option<Graph>> {
        Ok(ops::graph_lookup(self.lock().get(coll), q))
    }

    type Txn = MemoryTxn;

    async fn start_transaction(&self) -> Result<MemoryTxn> {
        Ok(self.begin())
    }
}

/// The names of a collection's indexes (`_id_` first; none when it does not exist).
fn index_names(c: Option<&Collection>) -> Vec<String> {
    match c {
        Some(c) => std::iter::once("_id_".to_owned())
            .chain(c.indexes.iter().map(|i| i.spec.name.clone()))
            .collect(),
        None => Vec::new(),
    }
}
