//! The MongoDB store of pattern-core (feature `mongodb` there, re-exported as
//! `pattern_core::store::MongoStore`), on the official `mongodb` driver. It implements the store
//! contract of `pattern-store` and nothing else.
//!
//! Each operation is written once, as a method taking the `Session` it runs in: `None` for
//! the store itself, the transaction's session for a [`MongoTxn`].

use std::sync::Arc;
use std::time::Duration;

use bson::Document;
use mongodb::options::{ClientOptions, ReadConcern, WriteConcern};
use mongodb::{Client, ClientSession, Collection, Database};

use pattern_store::Extensions;
use pattern_store::Result;

/// How long an operation may wait for a reachable server before it returns
/// [`Error::Unavailable`](pattern_store::Error::Unavailable), when the connection string does not say (`serverSelectionTimeoutMS`).
pub const DEFAULT_SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// Documents per reply for reads that return a whole series (all overflow chunks of a parent)
/// or a whole graph: the first reply carries them all unless they exceed 16 MiB.
const READ_ALL_BATCH: u32 = 100_000;

/// What [`MongoStore`] knows of a property of the server (its `bulkWrite`, whether it is a
/// `mongos`): not asked yet, yes or no.
const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

/// The depth field `$graphLookup` adds to each document it finds (removed before returning).
const DEPTH_FIELD: &str = "__pattern_graph_depth";

/// The session an operation runs in: a transaction's, or `None` (the store's own, implicit).
pub(crate) type Session<'a> = Option<&'a mut ClientSession>;

/// `action.session(s)` when there is a session (for the write actions, whose type it keeps).
macro_rules! in_session {
    ($action:expr, $session:expr) => {
        match $session {
            Some(s) => $action.session(s),
            None => $action,
        }
    };
}

mod across;
#[macro_use]
mod delegate;
mod errors;
mod ops;
mod push;
mod runs;
mod store;
mod txn;
mod watch;

pub(crate) use errors::{map_err, server_code};
pub use txn::MongoTxn;

/// A MongoDB database as a pattern store. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MongoStore {
    db: Database,
    extensions: Arc<Extensions>,
    /// Whether the server takes `bulkWrite` (MongoDB 8.0+): [`UNKNOWN`], [`YES`] or
    /// [`NO`] (then batches go one write at a time).
    bulk_write: Arc<std::sync::atomic::AtomicU8>,
    /// Whether the server is a `mongos`
    /// ([`Store::routes_by_shard_key`](pattern_store::Store::routes_by_shard_key)): [`UNKNOWN`]
    /// (not asked yet), [`YES`] or [`NO`].
    routed: Arc<std::sync::atomic::AtomicU8>,
}

impl MongoStore {
    /// A store over an existing database handle (keeps the client's options as they are).
    pub fn new(db: Database) -> Self {
        Self {
            db,
            extensions: Arc::default(),
            bulk_write: Arc::default(),
            routed: Arc::default(),
        }
    }

    /// Tells the store whether a router (`mongos`) stands between it and the shards, rather
    /// than asking the server once (a `hello` command, the first time a read needs to know):
    /// see [`Store::routes_by_shard_key`](pattern_store::Store::routes_by_shard_key). Clones
    /// made after this share the answer.
    pub fn with_routing(self, routed: bool) -> Self {
        let known = if routed { YES } else { NO };
        Self {
            routed: Arc::new(std::sync::atomic::AtomicU8::new(known)),
            ..self
        }
    }

    /// Connects to `uri` and uses database `db`. Unless the URI sets them, server selection
    /// and connection timeouts default to [`DEFAULT_SERVER_SELECTION_TIMEOUT`], so an unreachable
    /// server gives [`Error::Unavailable`](pattern_store::Error::Unavailable) in bounded time.
    pub async fn connect(uri: &str, db: &str) -> Result<Self> {
        let mut opts = ClientOptions::parse(uri)
            .await
            .map_err(|e| map_err("(connect)", e))?;
        opts.server_selection_timeout
            .get_or_insert(DEFAULT_SERVER_SELECTION_TIMEOUT);
        opts.connect_timeout
            .get_or_insert(DEFAULT_SERVER_SELECTION_TIMEOUT);
        Self::with_options(opts, db)
    }

    /// A store from parsed client options (to add command monitoring, timeouts, ...).
    pub fn with_options(opts: ClientOptions, db: &str) -> Result<Self> {
        let client = Client::with_options(opts).map_err(|e| map_err("(connect)", e))?;
        Ok(Self::new(client.database(db)))
    }

    /// `command` with the database handle's write concern, when it has one: the driver adds it
    /// to its own write commands, not to one sent with `run_command` (a batch's `insert`,
    /// `update` or `bulkWrite`).
    pub(crate) fn with_write_concern(&self, mut command: Document) -> Document {
        let concern = (self.db.write_concern()).and_then(|w| bson::to_document(w).ok());
        if let Some(w) = concern.filter(|w| !w.is_empty()) {
            command.insert("writeConcern", w);
        }
        command
    }

    /// The database handle.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Drops a collection and its indexes.
    pub async fn drop_collection(&self, name: &str) -> Result<()> {
        self.coll(name).drop().await.map_err(|e| map_err(name, e))?;
        self.extensions.forget();
        Ok(())
    }

    fn coll(&self, name: &str) -> Collection<Document> {
        self.db.collection(name)
    }

    /// A session with a snapshot transaction started (read concern `snapshot`, write concern
    /// `majority`). The server takes the snapshot at the transaction's first operation.
    pub(crate) async fn start_session(&self) -> Result<ClientSession> {
        let mut session = self
            .db
            .client()
            .start_session()
            .await
            .map_err(|e| map_err("(transaction)", e))?;
        session
            .start_transaction()
            .read_concern(ReadConcern::snapshot())
            .write_concern(WriteConcern::majority())
            .await
            .map_err(|e| map_err("(transaction)", e))?;
        Ok(session)
    }
}
