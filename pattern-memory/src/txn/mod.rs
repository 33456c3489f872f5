//! The in-memory store's snapshot transactions ([`MemoryTxn`]).
//!
//! A transaction holds a snapshot of the store: the collections as they were when it started
//! (shared, not copied: see `Slot`). It reads from the snapshot, and its first write to a
//! collection makes a working copy of it, which its reads and writes use from then on. Before
//! each write it claims the documents it changes in the store: a document another open
//! transaction has claimed, or that changed since the snapshot (its stamp differs: see
//! `Clock`), is a [`Error::WriteConflict`] there and then, and the transaction is aborted.
//! Plain writes wait for the claims on the documents they change. The commit checks again,
//! under the store's lock, that no document it wrote changed since the snapshot, then puts
//! its documents in the store: a collection nothing else changed since the snapshot is
//! replaced by the working copy; into any other, the documents it wrote are merged (their
//! old versions out first, then the new ones in, checked against the unique indexes, all
//! undone should one be refused).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bson::{Document, RawDocumentBuf};

use super::collection::{unchanged, Collection, Stored};
use super::key::Key;
use super::ops::{self, Space, Step, Stop};
use super::{index_names, MemoryStore, Slot, State};
use pattern_store::query::{
    Filter, FindOptions, Graph, GraphLookup, IndexSpec, Path, Schema, Update,
};
use pattern_store::{ArrayStats, Extensions, Store, Transaction, UpdateOutcome};
use pattern_store::{Error, Result};

/// A snapshot transaction on a [`MemoryStore`], with MongoDB's semantics:
/// it reads the data as it was when it started, plus its own writes; what it writes is seen by
/// no one else until it commits, then by everyone at once. A write of a document another open
/// transaction has written, or that someone changed after this transaction started, fails at
/// once with [`Error::WriteConflict`] (the first writer wins) and aborts the transaction: its
/// further operations fail the same way. Plain writes of a document an open transaction has
/// written wait until it ends. Dropped without a commit, it is aborted. As on MongoDB, an
/// operation that fails (a duplicate key, an update a document refuses...) aborts the
/// transaction: what follows in it fails with an [`Error::Server`] naming that first error, and
/// so does the commit.
///
/// Index changes ([`Store::create_index`], [`Store::drop_index`]) and validators
/// ([`Store::set_validator`]) are not transactional: they apply to the store at once, and to
/// the transaction's own copies.
pub struct MemoryTxn {
    store: MemoryStore,
    id: u64,
    /// Set by the store when the transaction blocked a plain write past its lifetime.
    killed: Arc<AtomicBool>,
    inner: Mutex<Inner>,
}

struct Inner {
    status: Status,
    /// The store's collections when the transaction started.
    snapshot: BTreeMap<String, Arc<Collection>>,
    /// The collections it wrote to: copies of the snapshot's, with its writes.
    working: BTreeMap<String, Collection>,
    /// The documents it claimed (and wrote), by collection.
    writes: BTreeMap<String, BTreeSet<Key>>,
    /// Its index changes, made again on the working copies made after them.
    index_changes: Vec<(String, IndexChange)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Status {
    Active,
    Committed,
    /// Aborted by its owner (`abort`): further use is a mistake, as on MongoDB.
    Ended,
    /// Aborted by a conflict; why.
    Aborted(&'static str),
    /// An operation failed (the error): as on MongoDB, whose server aborts a transaction in
    /// which an operation fails, what follows fails too, and so does the commit.
    Failed(String),
}

enum IndexChange {
    Create(IndexSpec),
    Drop(String),
    Validator(Arc<Schema>),
}

impl std::fmt::Debug for MemoryTxn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTxn")
            .field("id", &self.id)
            .field("status", &self.lock().status)
            .finish_non_exhaustive()
    }
}

fn conflict(message: impl Into<String>) -> Error {
    Error::WriteConflict {
        message: message.into(),
        source: None,
    }
}

impl Inner {
    /// Forgets everything it read and wrote (the store's copies can go).
    fn discard(&mut self, why: &'static str) {
        self.status = Status::Aborted(why);
        self.snapshot = BTreeMap::new();
        self.working = BTreeMap::new();
        self.writes = BTreeMap::new();
        self.index_changes = Vec::new();
    }
}

impl MemoryTxn {
    pub(super) fn new(
        store: MemoryStore,
        id: u64,
        killed: Arc<AtomicBool>,
        snapshot: BTreeMap<String, Arc<Collection>>,
    ) -> Self {
        MemoryTxn {
            store,
            id,
            killed,
            inner: Mutex::new(Inner {
                status: Status::Active,
                snapshot,
                working: BTreeMap::new(),
                writes: BTreeMap::new(),
                index_changes: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the transaction takes operations: an error once it committed or aborted.
    fn usable(&self, inner: &mut Inner) -> Result<()> {
        if inner.status == Status::Active && self.killed.load(Ordering::SeqCst) {
            // The store released its claims already.
            inner.discard("it blocked another write past the transaction lifetime");
        }
        match &inner.status {
            Status::Active => Ok(()),
            Status::Committed => Err(Error::invalid("the transaction has committed")),
            Status::Ended => Err(Error::invalid("the transaction was aborted")),
            Status::Aborted(why) => Err(conflict(format!("the transaction was aborted: {why}"))),
            // Not a conflict: running the work again would fail the same way.
            Status::Failed(first) => Err(Error::Server {
                message: format!(
                    "the transaction was aborted after an earlier error in it ({first})"
                ),
                source: None,
            }),
        }
    }

    /// Aborts the transaction (`state`: the store's state, locked): releases its claims and
    /// discards its writes. The caller notifies the store's waiters once it released the lock.
    fn abort_locked(&self, inner: &mut Inner, state: &mut State, why: &'static str) {
        state.release(self.id, &inner.writes);
        inner.discard(why);
    }

    /// Runs a write (or a read) on the transaction's view. An error aborts the transaction,
    /// as the server does on MongoDB (a conflict has already): its claims are released, and
    /// what follows fails naming this error. The checks a client makes before sending an
    /// operation are made before this.
    fn run<R>(&self, op: impl FnOnce(&mut TxnSpace<'_>) -> Step<R>) -> Result<R> {
        pattern_store::observe::command(0);
        let mut inner = self.lock();
        self.usable(&mut inner)?;
        let mut space = TxnSpace {
            inner: &mut inner,
            txn: self,
        };
        let e = match op(&mut space) {
            Ok(r) => return Ok(r),
            Err(Stop::Failed(e)) => e,
            Err(Stop::Wait(_)) => unreachable!("a transaction's operations never wait"),
        };
        if inner.status == Status::Active {
            self.abort_locked(&mut inner, &mut self.store.lock(), "");
            inner.status = Status::Failed(e.to_string());
            self.store.ended.notify_waiters();
        }
        Err(e)
    }

    /// Runs a read of collection `coll` as the transaction sees it.
    fn read<R>(&self, coll: &str, op: impl FnOnce(Option<&Collection>) -> R) -> Result<R> {
        self.run(|space| Ok(op(space.read(coll))))
    }

    fn commit_now(&self) -> Result<()> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        match inner.status {
            Status::Committed => return Ok(()), // a commit again, as MongoDB takes it
            _ => self.usable(inner)?,
        }
        let mut state = self.store.lock();
        let result = match self.killed.load(Ordering::SeqCst) {
            // Aborted by a plain write it blocked, since `usable` looked.
            true => Err(conflict(
                "the transaction was aborted: it blocked another write past the transaction lifetime",
            )),
            false => commit_locked(inner, &mut state),
        };
        match &result {
            Ok(()) => {
                state.release(self.id, &inner.writes);
                inner.discard("");
                inner.status = Status::Committed;
            }
            Err(_) => self.abort_locked(inner, &mut state, "its commit conflicted"),
        }
        drop(state);
        self.store.ended.notify_waiters();
        result
    }

    fn abort_now(&self) -> Result<()> {
        let mut inner = self.lock();
        match inner.status {
            Status::Committed => Err(Error::invalid(
                "the transaction has committed: it cannot be aborted",
            )),
            Status::Aborted(_) | Status::Failed(_) | Status::Ended => Ok(()),
            Status::Active => {
                self.abort_locked(&mut inner, &mut self.store.lock(), "it was aborted");
                inner.status = Status::Ended;
                self.store.ended.notify_waiters();
                Ok(())
            }
        }
    }

    fn create_index_now(&self, coll: &str, index: &IndexSpec) -> Result<()> {
        let mut inner = self.lock();
        self.usable(&mut inner)?;
        self.store
            .lock()
            .collection(coll)
            .create_index(coll, index)?;
        let change = IndexChange::Create(index.clone());
        inner.index_changes.push((coll.to_owned(), change));
        match inner.working.get_mut(coll) {
            Some(w) => w.create_index(coll, index),
            None => Ok(()),
        }
    }

    fn drop_index_now(&self, coll: &str, name: &str) -> Result<()> {
        let mut inner = self.lock();
        self.usable(&mut inner)?;
        if let Some(slot) = self.store.lock().collections.get_mut(coll) {
            slot.get_mut().drop_index(name);
        }
        let change = IndexChange::Drop(name.to_owned());
        inner.index_changes.push((coll.to_owned(), change));
        if let Some(w) = inner.working.get_mut(coll) {
            w.drop_index(name);
        }
        Ok(())
    }

    fn set_validator_now(&self, coll: &str, schema: &Schema) -> Result<()> {
        let mut inner = self.lock();
        self.usable(&mut inner)?;
        let schema = Arc::new(schema.clone());
        self.store.lock().collection(coll).validator = Some(schema.clone());
        if let Some(w) = inner.working.get_mut(coll) {
            w.validator = Some(schema.clone());
        }
        let change = IndexChange::Validator(schema);
        inner.index_changes.push((coll.to_owned(), change));
        Ok(())
    }

    fn index_names_now(&self, coll: &str) -> Result<Vec<String>> {
        let mut inner = self.lock();
        self.usable(&mut inner)?;
        // The store's (index changes are not transactional), or those of a collection only
        // this transaction has.
        if let Some(c) = self.store.lock().get(coll) {
            return Ok(index_names(Some(c)));
        }
        let mut space = TxnSpace {
            inner: &mut inner,
            txn: self,
        };
        Ok(index_names(space.read(coll)))
    }
}

/// A transaction's view: its working copies, else its snapshot.
struct TxnSpace<'a> {
    inner: &'a mut Inner,
    txn: &'a MemoryTxn,
}

impl Space for TxnSpace<'_> {
    fn read(&mut self, coll: &str) -> Option<&Collection> {
        (self.inner.working.get(coll)).or_else(|| self.inner.snapshot.get(coll).map(|c| &**c))
    }

    fn write(&mut self, coll: &str) -> &mut Collection {
        let inner = &mut *self.inner;
        if !inner.working.contains_key(coll) {
            let mut copy = match inner.snapshot.get(coll) {
                Some(c) => (**c).clone(),
                None => Collection::new(),
            };
            for (name, change) in &inner.index_changes {
                if name == coll {
                    // A refusal leaves the copy without the index: the commit checks the
                    // store's.
                    let _ = match change {
                        IndexChange::Create(spec) => copy.create_index(coll, spec),
                        IndexChange::Drop(name) => {
                            copy.drop_index(name);
                            Ok(())
                        }
                        IndexChange::Validator(schema) => {
                            copy.validator = Some(schema.clone());
                            Ok(())
                        }
                    };
                }
            }
            inner.working.insert(coll.to_owned(), copy);
        }
        inner.working.get_mut(coll).expect("made above")
    }

    fn claim<'b>(&mut self, coll: &str, ids: impl IntoIterator<Item = &'b Key>) -> Step<()> {
        let (txn, inner) = (self.txn, &mut *self.inner);
        let mut state = txn.store.lock();
        let refused = if txn.killed.load(Ordering::SeqCst) {
            Some((
                "it blocked another write past the transaction lifetime",
                None,
            ))
        } else {
            let mine = inner.writes.get(coll);
            let snapshot = inner.snapshot.get(coll);
            let current = state.collections.get(coll);
            let same = same(snapshot, current);
            let (snapshot, current) = (snapshot.map(|c| &**c), current.map(Slot::get));
            let claimed = state.claims.get(coll);
            let mut new = Vec::new();
            let mut refused = None;
            for id in ids {
                let id = id.clone();
                if mine.is_some_and(|m| m.contains(&id)) {
                    continue;
                }
                if claimed.is_some_and(|c| c.contains_key(&id)) {
                    refused = Some(("another open transaction wrote it", Some(id)));
                    break;
                }
                if !same && !unchanged(snapshot, current, &id) {
                    refused = Some(("it changed after this transaction started", Some(id)));
                    break;
                }
                new.push(id);
            }
            // An empty map would make plain writes look for claims: none for nothing.
            if refused.is_none() && !new.is_empty() {
                let claimed = state.claims.entry(coll.to_owned()).or_default();
                let mine = inner.writes.entry(coll.to_owned()).or_default();
                for id in new {
                    claimed.insert(id.clone(), txn.id);
                    mine.insert(id);
                }
            }
            refused
        };
        let Some((why, id)) = refused else {
            return Ok(());
        };
        txn.abort_locked(inner, &mut state, "a write conflicted");
        drop(state);
        txn.store.ended.notify_waiters();
        let what = match id {
            Some(id) => format!(
                "document {} of `{coll}`",
                pattern_store::error::display_bson(&id.value())
            ),
            None => format!("a write to `{coll}`"),
        };
        Err(Stop::Failed(conflict(format!("{what}: {why}"))))
    }
}

impl Drop for MemoryTxn {
    /// An open transaction dropped is aborted.
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        if inner.status == Status::Active {
            let mut state = self.store.lock();
            state.release(self.id, &inner.writes);
            drop(state);
            inner.discard("it was dropped");
            self.store.ended.notify_waiters();
        }
    }
}

impl Store for MemoryTxn {
    async fn insert_one(&self, coll: &str, doc: Document) -> Result<()> {
        let mut doc = Some(doc);
        self.run(|space| ops::insert(space, coll, &mut doc))
    }

    async fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        update.check()?;
        let op =
            |space: &mut TxnSpace<'_>| ops::update(space, coll, filter, &[], update, upsert, None);
        Ok(self.run(op)?.0)
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(Path, i32)],
        _hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        update.check()?;
        let op = |space: &mut TxnSpace<'_>| {
            ops::update(space, coll, filter, sort, update, upsert, Some(fields))
        };
        Ok(self.run(op)?.1)
    }

    async fn update_returning(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        let op =
            |space: &mut TxnSpace<'_>| ops::update_returning(space, coll, filter, update, fields);
        self.run(op)
    }

    async fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        let mut doc = Some(doc);
        self.run(|space| ops::replace(space, coll, filter, &mut doc, upsert))
    }

    async fn find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Result<Vec<Document>> {
        opts.check()?;
        let docs = self.read(coll, |c| ops::find(c, filter, opts))?;
        pattern_store::observe::command(docs.len() as u64);
        Ok(docs)
    }

    async fn find_raw(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        opts.check()?;
        let docs = self.read(coll, |c| ops::find_raw(coll, c, filter, opts))??;
        pattern_store::observe::command(docs.len() as u64);
        Ok(docs)
    }

    async fn array_stats(&self, coll: &str, filter: &Filter, field: &str) -> Result<ArrayStats> {
        self.read(coll, |c| ops::array_stats(c, filter, field))
    }

    async fn update_many(&self, coll: &str, filter: &Filter, update: &Update) -> Result<u64> {
        update.check()?;
        self.run(|space| ops::update_many(space, coll, filter, update))
    }

    async fn graph_lookup(&self, coll: &str, q: &GraphLookup) -> Result<Option<Graph>> {
        self.read(coll, |c| ops::graph_lookup(c, q))
    }

    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64> {
        self.run(|space| ops::delete(space, coll, filter))
    }

    async fn create_index(&self, coll: &str, index: &IndexSpec) -> Result<()> {
        self.create_index_now(coll, index)
    }

    async fn index_names(&self, coll: &str) -> Result<Vec<String>> {
        self.index_names_now(coll)
    }

    async fn drop_index(&self, coll: &str, name: &str) -> Result<()> {
        self.drop_index_now(coll, name)
    }

    /// The store's collections (those only this transaction created aside).
    async fn collection_names(&self) -> Result<Vec<String>> {
        self.store.collection_names().await
    }

    async fn set_validator(&self, coll: &str, schema: &Schema) -> Result<()> {
        self.set_validator_now(coll, schema)
    }

    fn system_name(&self) -> &'static str {
        "memory"
    }

    fn extensions(&self) -> &Extensions {
        &self.store.extensions
    }

    type Txn = MemoryTxn;

    /// Refused: a transaction does not nest ([`transaction`](pattern_store::run_transaction) runs nested
    /// work in the transaction it is given).
    async fn start_transaction(&self) -> Result<MemoryTxn> {
        Err(Error::invalid(
            "a transaction cannot start another: run the work in this one",
        ))
    }

    fn current_transaction(&self) -> Option<&MemoryTxn> {
        Some(self)
    }
}

impl Transaction for MemoryTxn {
    async fn commit(&self) -> Result<()> {
        pattern_store::observe::command(0);
        self.commit_now()
    }

    async fn abort(&self) -> Result<()> {
        self.abort_now()
    }
}

// The commit: the check that nothing the transaction wrote changed since its snapshot, then
// its documents into the store (a collection replaced whole, or the writes merged).

/// Checks that every document the transaction wrote is as its snapshot had it, then puts
/// them in the store (see the module's documentation); on an error nothing changed.
fn commit_locked(inner: &mut Inner, state: &mut State) -> Result<()> {
    let mut replaced: Vec<String> = Vec::new();
    for (coll, ids) in &inner.writes {
        let snapshot = inner.snapshot.get(coll);
        let current = state.collections.get(coll);
        if same(snapshot, current) {
            replaced.push(coll.clone());
            continue;
        }
        let (snapshot, current) = (snapshot.map(|c| &**c), current.map(Slot::get));
        if let Some(id) = ids.iter().find(|id| !unchanged(snapshot, current, id)) {
            return Err(conflict(format!(
                "document {} of `{coll}` changed after the transaction started",
                pattern_store::error::display_bson(&id.value())
            )));
        }
    }
    let mut merged: Vec<(&String, Merge)> = Vec::new();
    for (coll, ids) in &inner.writes {
        if replaced.contains(coll) {
            continue;
        }
        let view = (inner.working.get(coll)).or_else(|| inner.snapshot.get(coll).map(|c| &**c));
        let created = !state.collections.contains_key(coll);
        match merge(state.collection(coll), coll, view, ids, created) {
            Ok(done) => merged.push((coll, done)),
            Err(e) => {
                for (coll, done) in merged.into_iter().rev() {
                    done.undo(state, coll);
                }
                return Err(conflict(format!(
                    "committing would break a unique index of `{coll}`: {e}"
                )));
            }
        }
    }
    for coll in replaced {
        if let Some(working) = inner.working.remove(&coll) {
            state.collections.insert(coll, Slot::Owned(working));
        }
    }
    Ok(())
}

/// Whether the store's collection is still the one the snapshot holds (or both have none).
fn same(snapshot: Option<&Arc<Collection>>, current: Option<&Slot>) -> bool {
    match (snapshot, current) {
        (Some(a), Some(Slot::Shared(b))) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// What a merge into a collection of the store changed: the documents it put, and those it
/// took out (to put back).
struct Merge {
    put: Vec<Key>,
    taken: Vec<(Key, Stored)>,
    created: bool,
}

impl Merge {
    fn undo(self, state: &mut State, coll: &str) {
        if self.created {
            state.collections.remove(coll);
            return;
        }
        let c = state.collection(coll);
        for id in &self.put {
            c.take(id);
        }
        for (id, stored) in self.taken {
            c.put_back(id, stored);
        }
    }
}

/// Puts the documents `ids` as `view` (the transaction's copy) has them into `current`: the
/// old versions out first, then the new ones in (so that documents trading unique keys do
/// not collide). On a refusal, `current` is as it was.
fn merge(
    current: &mut Collection,
    coll: &str,
    view: Option<&Collection>,
    ids: &BTreeSet<Key>,
    created: bool,
) -> Result<Merge> {
    let mut done = Merge {
        put: Vec::new(),
        taken: ids.iter().filter_map(|id| current.take(id)).collect(),
        created,
    };
    for id in ids {
        let Some(stored) = view.and_then(|v| v.docs.get(id)) else {
            continue; // deleted
        };
        if let Err(e) = current.put(coll, id.clone(), stored.clone()) {
            for id in &done.put {
                current.take(id);
            }
            for (id, stored) in std::mem::take(&mut done.taken) {
                current.put_back(id, stored);
            }
            return Err(e);
        }
        done.put.push(id.clone());
    }
    Ok(done)
}

#[cfg(test)]
mod tests;
