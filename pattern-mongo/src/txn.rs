//! [`MongoTxn`]: a MongoDB multi-document transaction as a [`Store`].

use std::fmt;

use bson::Document;
use mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT;
use mongodb::ClientSession;
use tokio::sync::Mutex;

use super::{map_err, server_code, MongoStore};
use pattern_store::query::{IndexSpec, Schema};
use pattern_store::{Error, Result};
use pattern_store::{Extensions, Store, Transaction, WriteOp};

/// How many times a commit is sent when its outcome is unknown (the server may or may not
/// have committed: a network error, a write concern timeout). The driver's own retry of the
/// commit comes on top of these.
const COMMIT_ATTEMPTS: u32 = 4;

/// MongoDB's NoSuchTransaction: the server no longer has the transaction (it aborted it).
const NO_SUCH_TRANSACTION: i32 = 251;

/// The test server's error for an operation in a transaction it has ended (T24).
const TRANSACTION_CLOSED: &str = "transaction already closed";

/// A transaction on a [`MongoStore`]: a session with a snapshot transaction started (read
/// concern `snapshot`, write concern `majority`), through which every operation runs. The
/// server takes the snapshot at the transaction's first operation.
///
/// Index operations ([`Store::create_index`], [`Store::index_names`], [`Store::drop_index`])
/// run outside the transaction, on the store: MongoDB refuses them in a transaction (except
/// creating an index on a collection the transaction creates), and the patterns ensure their
/// indexes lazily, possibly from inside one. They are not undone by an abort. An index created
/// on a new collection after the transaction's first operation makes the transaction's first
/// write there conflict ([`Error::WriteConflict`]: a retry sees the collection). On a MongoDB
/// server, a new index build waits for the transactions that hold locks on its collection, this
/// one included: ensure a collection's indexes before the transaction first writes to it (as
/// the patterns do, each index set once per process). [`Store::set_validator`] runs on the
/// store too (`collMod` is refused in a transaction).
///
/// After an operation fails, MongoDB has aborted the transaction: what follows in it fails
/// (with that first error named), and so does the commit.
pub struct MongoTxn {
    store: MongoStore,
    state: Mutex<State>,
}

struct State {
    /// Boxed: a session is large, and a transaction is moved around (in `AnyTxn`).
    session: Box<ClientSession>,
    phase: Phase,
    /// The first error an operation of the transaction returned (after which the server has
    /// aborted the transaction).
    failed: Option<String>,
    /// An operation was sent in the transaction (the first carries its read concern).
    sent: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Open,
    Committed,
    /// A commit that returned an error.
    CommitFailed,
    Aborted,
}

impl fmt::Debug for MongoTxn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("MongoTxn");
        d.field("database", &self.store.database().name());
        if let Ok(state) = self.state.try_lock() {
            d.field("phase", &state.phase);
        }
        d.finish_non_exhaustive()
    }
}

/// Runs `$call` with `$store` the transaction's store and `$s` its session, and applies the
/// transaction's bookkeeping to its result.
macro_rules! in_txn {
    ($self:ident, |$store:ident, $s:ident| $call:expr) => {{
        let mut state = $self.state.lock().await;
        state.open()?;
        let result = {
            let ($store, $s) = (&$self.store, Some(&mut *state.session));
            $call.await
        };
        state.sent = true;
        state.outcome(result)
    }};
}

impl MongoTxn {
    pub(crate) fn new(store: MongoStore, session: ClientSession) -> Self {
        Self {
            store,
            state: Mutex::new(State {
                session: Box::new(session),
                phase: Phase::Open,
                failed: None,
                sent: false,
            }),
        }
    }

    /// The store the transaction runs on.
    pub fn store(&self) -> &MongoStore {
        &self.store
    }
}

impl State {
    fn open(&self) -> Result<()> {
        match self.phase {
            Phase::Open => Ok(()),
            Phase::Committed => Err(Error::invalid("the transaction is committed")),
            Phase::CommitFailed | Phase::Aborted => {
                Err(Error::invalid("the transaction is aborted"))
            }
        }
    }

    /// `result`, remembering the first error. A NoSuchTransaction that follows an error is the
    /// server's abort after that error, not a conflict: retrying the transaction would fail
    /// the same way, so it is reported as a server error naming the first one.
    fn outcome<T>(&mut self, result: Result<T>) -> Result<T> {
        let e = match result {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if let (Some(first), Some(code)) = (&self.failed, driver_code(&e)) {
            if code == NO_SUCH_TRANSACTION {
                let message = format!(
                    "the server aborted the transaction after an earlier error in it ({first}): {e}"
                );
                return Err(Error::Server {
                    message,
                    source: Some(Box::new(e)),
                });
            }
        }
        let e = match e {
            // The test server's word for a transaction ended under the operation (T24): its
            // session killed by another run taking over, as MongoDB's NoSuchTransaction with
            // the TransientTransactionError label, which a retry of the whole transaction
            // answers. Not after an earlier error (the server's own abort, above), nor at the
            // commit, whose outcome it leaves unknown.
            Error::Server { message, source }
                if matches!(self.phase, Phase::Open)
                    && self.failed.is_none()
                    && message.contains(TRANSACTION_CLOSED) =>
            {
                Error::WriteConflict { message, source }
            }
            e => e,
        };
        if self.failed.is_none() && !e.is_transient() {
            self.failed = Some(e.to_string());
        }
        Err(e)
    }
}

/// The server's code of the driver error behind `e`, if any.
fn driver_code(e: &Error) -> Option<i32> {
    let source = match e {
        Error::WriteConflict { source, .. }
        | Error::Server { source, .. }
        | Error::Unavailable { source, .. } => source.as_ref()?,
        _ => return None,
    };
    server_code(source.downcast_ref::<mongodb::error::Error>()?)
}

impl Store for MongoTxn {
    session_ops!(in_txn);

    /// One `bulkWrite` in the transaction's session (MongoDB 8.0; before it, one write at a
    /// time).
    async fn write_across(
        &self,
        mut writes: Vec<(&str, WriteOp)>,
        comment: Option<&str>,
    ) -> Result<Vec<u64>> {
        if self
            .store
            .bulk_write
            .load(std::sync::atomic::Ordering::Relaxed)
            == super::NO
        {
            return pattern_store::write_across_one_by_one(self, writes).await;
        }
        // The test server refuses a `bulkWrite` carrying the read concern a transaction's
        // first command carries (test server, T20): the first write alone then.
        let mut matched = Vec::with_capacity(writes.len());
        if !self.state.lock().await.sent && !writes.is_empty() {
            let first = writes.remove(0);
            matched = pattern_store::write_across_one_by_one(self, vec![first]).await?;
        }
        match in_txn!(self, |store, s| store.write_across_in(s, &writes, comment))? {
            Some(rest) => matched.extend(rest),
            None => matched.extend(pattern_store::write_across_one_by_one(self, writes).await?),
        }
        Ok(matched)
    }

    /// On the store, outside the transaction (see [`MongoTxn`]).
    async fn create_index(&self, coll: &str, index: &IndexSpec) -> Result<()> {
        self.state.lock().await.open()?;
        self.store.create_index(coll, index).await
    }

    /// Refused: a change stream is not opened inside a transaction (open it on the store).
    async fn watch(&self, _: &pattern_store::Watch) -> Result<Box<dyn pattern_store::ChangeFeed>> {
        Err(Error::Unsupported {
            store: "mongodb",
            reason: "a change feed is opened on the store, not inside a transaction".into(),
        })
    }

    /// On the store, outside the transaction (see [`MongoTxn`]).
    fn system_name(&self) -> &'static str {
        "mongodb"
    }
    fn database_name(&self) -> Option<&str> {
        self.store.database_name()
    }
    async fn routes_by_shard_key(&self) -> Result<bool> {
        self.store.routes_by_shard_key().await
    }
    async fn index_names(&self, coll: &str) -> Result<Vec<String>> {
        self.state.lock().await.open()?;
        self.store.index_names(coll).await
    }

    /// On the store, outside the transaction (see [`MongoTxn`]).
    async fn drop_index(&self, coll: &str, name: &str) -> Result<()> {
        self.state.lock().await.open()?;
        self.store.drop_index(coll, name).await
    }

    /// On the store, outside the transaction (see [`MongoTxn`]).
    async fn collection_names(&self) -> Result<Vec<String>> {
        self.state.lock().await.open()?;
        self.store.collection_names().await
    }

    /// On the store, outside the transaction (see [`MongoTxn`]).
    async fn set_validator(&self, coll: &str, schema: &Schema) -> Result<()> {
        self.state.lock().await.open()?;
        self.store.set_validator(coll, schema).await
    }

    fn extensions(&self) -> &Extensions {
        self.store.extensions()
    }

    type Txn = MongoTxn;

    /// Transactions do not nest: [`Error::InvalidInput`].
    async fn start_transaction(&self) -> Result<MongoTxn> {
        Err(Error::invalid(
            "a transaction is already open on this handle: run the work in it",
        ))
    }

    fn current_transaction(&self) -> Option<&MongoTxn> {
        Some(self)
    }
}

impl Transaction for MongoTxn {
    /// Commits; when the outcome is unknown (`UnknownTransactionCommitResult`), sends the
    /// commit again, as the driver's documentation recommends, a few times.
    async fn commit(&self) -> Result<()> {
        let mut state = self.state.lock().await;
        match state.phase {
            Phase::Open => {}
            Phase::Committed => return Ok(()),
            Phase::CommitFailed | Phase::Aborted => {
                return Err(Error::invalid(
                    "the transaction is aborted: nothing to commit",
                ))
            }
        }
        let mut attempt = 1;
        let result = loop {
            pattern_store::observe::command(0);
            match state.session.commit_transaction().await {
                Err(e)
                    if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
                        && attempt < COMMIT_ATTEMPTS =>
                {
                    attempt += 1
                }
                done => break done.map_err(|e| map_err("(commit)", e)),
            }
        };
        state.phase = if result.is_ok() {
            Phase::Committed
        } else {
            Phase::CommitFailed
        };
        state.outcome(result)
    }

    async fn session_id(&self) -> Option<Document> {
        Some(self.state.lock().await.session.id().clone())
    }

    /// Aborts (the server's errors are ignored: a transaction it no longer has is aborted
    /// already). Aborting an aborted transaction does nothing; a committed one cannot be.
    async fn abort(&self) -> Result<()> {
        let mut state = self.state.lock().await;
        match state.phase {
            Phase::Open => {}
            Phase::Committed => {
                return Err(Error::invalid(
                    "the transaction is committed: too late to abort",
                ))
            }
            Phase::CommitFailed | Phase::Aborted => return Ok(()),
        }
        state.phase = Phase::Aborted;
        state
            .session
            .abort_transaction()
            .await
            .map_err(|e| map_err("(abort)", e))
    }
}
