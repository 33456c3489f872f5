//! The MongoDB store, on the official `mongodb` driver (feature `mongodb`).
//!
//! Each operation is written once, as a method taking the [`Session`] it runs in: `None` for
//! the store itself, the transaction's session for a [`MongoTxn`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document, RawDocumentBuf};
use futures::TryStreamExt;
use mongodb::error::{ErrorKind, WriteFailure, TRANSIENT_TRANSACTION_ERROR};
use mongodb::options::{
    ClientOptions, IndexOptions, ReadConcern, UpdateModifications, WriteConcern,
};
use mongodb::{Client, ClientSession, Collection, Database, IndexModel};

use crate::store::mongo_txn::MongoTxn;
use crate::store::query::{Filter, FindOptions, Graph, GraphLookup, IndexSpec, Schema, Update};
use crate::store::{ArrayStats, Extensions, Store, UpdateOutcome};
use crate::{Error, Result};

/// How long an operation may wait for a reachable server before it returns
/// [`Error::Unavailable`], when the connection string does not say (`serverSelectionTimeoutMS`).
pub const DEFAULT_SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// Documents per reply for reads that return a whole series (all overflow chunks of a parent)
/// or a whole graph: the first reply carries them all unless they exceed 16 MiB.
const READ_ALL_BATCH: u32 = 100_000;

/// [`MongoStore`]'s knowledge of the server's `bulkWrite`.
const BULK_UNKNOWN: u8 = 0;
const BULK_YES: u8 = 1;
const BULK_NO: u8 = 2;

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

/// A MongoDB database as a pattern store. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MongoStore {
    db: Database,
    extensions: Arc<Extensions>,
    /// Whether the server takes `bulkWrite` (MongoDB 8.0+): [`BULK_UNKNOWN`], [`BULK_YES`] or
    /// [`BULK_NO`] (then batches go one write at a time).
    bulk_write: Arc<std::sync::atomic::AtomicU8>,
}

impl MongoStore {
    /// A store over an existing database handle (keeps the client's options as they are).
    pub fn new(db: Database) -> Self {
        Self {
            db,
            extensions: Arc::default(),
            bulk_write: Arc::default(),
        }
    }

    /// Connects to `uri` and uses database `db`. Unless the URI sets them, server selection
    /// and connection timeouts default to [`DEFAULT_SERVER_SELECTION_TIMEOUT`], so an unreachable
    /// server gives [`Error::Unavailable`] in bounded time.
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

    pub(crate) async fn insert_one_in(
        &self,
        session: Session<'_>,
        coll: &str,
        doc: Document,
    ) -> Result<()> {
        crate::codec::size::check_document_size(coll, &doc)?;
        let collection = self.coll(coll);
        in_session!(collection.insert_one(doc), session)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(())
    }

    /// `insert` of many documents, in order (the driver splits the batch past its limits).
    pub(crate) async fn insert_many_in(
        &self,
        session: Session<'_>,
        coll: &str,
        docs: Vec<Document>,
    ) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        for doc in &docs {
            crate::codec::size::check_document_size(coll, doc)?;
        }
        let collection = self.coll(coll);
        in_session!(collection.insert_many(docs), session)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(())
    }

    pub(crate) async fn update_one_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        update: &Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        let collection = self.coll(coll);
        let action = collection
            .update_one(filter.to_document(), update.to_document())
            .upsert(upsert);
        let r = in_session!(action, session)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(UpdateOutcome {
            matched: r.matched_count > 0,
            upserted: r.upserted_id.is_some(),
        })
    }

    /// [`Store::update_first`] in `session`.
    #[allow(clippy::too_many_arguments)] // the contract's parameters, and the session
    pub(crate) async fn update_first_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        sort: &[(crate::store::query::Path, i32)],
        hint: &str,
        update: &Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        let collection = self.coll(coll);
        if fields.is_empty() {
            // Nothing to return: `update`, the seed's own command (see the trait's note on
            // `sort`).
            let mut action = collection
                .update_one(filter.to_document(), update.to_document())
                .upsert(upsert);
            if !hint.is_empty() {
                action = action.hint(mongodb::options::Hint::Name(hint.to_owned()));
            }
            let r = in_session!(action, session)
                .await
                .map_err(|e| map_err(coll, e))?;
            return Ok((r.matched_count > 0).then(Document::new));
        }
        let sort: Document = sort
            .iter()
            .map(|(k, d)| (k.to_string(), Bson::Int32(*d)))
            .collect();
        // `_id` only when asked for (a projection includes it unless excluded).
        let mut projection = doc! {"_id": fields.contains(&"_id")};
        for f in fields.iter().filter(|f| **f != "_id") {
            projection.insert(*f, 1);
        }
        // The pre-image: present when a document matched; absent when none did (and one was
        // inserted, with `upsert`).
        let mut action = collection
            .find_one_and_update(filter.to_document(), update.to_document())
            .sort(sort)
            .projection(projection)
            .upsert(upsert);
        if !hint.is_empty() {
            action = action.hint(mongodb::options::Hint::Name(hint.to_owned()));
        }
        in_session!(action, session)
            .await
            .map_err(|e| map_err(coll, e))
    }

    pub(crate) async fn replace_one_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        crate::codec::size::check_document_size(coll, &doc)?;
        let collection = self.coll(coll);
        let action = collection
            .replace_one(filter.to_document(), doc)
            .upsert(upsert);
        let r = in_session!(action, session)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(UpdateOutcome {
            matched: r.matched_count > 0,
            upserted: r.upserted_id.is_some(),
        })
    }

    /// `find` with the store's options, each document decoded as `T` by the driver.
    pub(crate) async fn find_in<T>(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<T>>
    where
        T: serde::de::DeserializeOwned + Send + Sync,
    {
        opts.check()?;
        let collection = self.db.collection::<T>(coll);
        let mut action = collection
            .find(filter.to_document())
            .with_options(driver_find_options(opts));
        match opts.limit {
            // The whole limit in the first batch where it fits (one round trip: the cursor is
            // closed once the limit is reached). Not a negative limit: that returns a single
            // batch, which a server may cut short (at 16 MiB, or 101 documents on SecantusDB),
            // silently dropping the rest. A negative limit counts as its absolute value, as the
            // in-memory store takes it.
            Some(n) if n != 0 => {
                let n = n.checked_abs().unwrap_or(i64::MAX);
                action = action
                    .limit(n)
                    .batch_size(u32::try_from(n).unwrap_or(u32::MAX))
            }
            _ => action = action.batch_size(READ_ALL_BATCH),
        }
        let read = match session {
            None => match action.await {
                Ok(cursor) => cursor.try_collect().await,
                Err(e) => Err(e),
            },
            Some(s) => match action.session(&mut *s).await {
                Ok(mut cursor) => cursor.stream(s).try_collect().await,
                Err(e) => Err(e),
            },
        };
        read.map_err(|e| map_err(coll, e))
    }

    /// Every document an aggregation returns: all in the first reply unless they pass 16 MiB
    /// (so no `getMore`).
    async fn aggregate_in(
        &self,
        session: Session<'_>,
        coll: &str,
        pipeline: Vec<Document>,
    ) -> Result<Vec<Document>> {
        let collection = self.coll(coll);
        let action = collection.aggregate(pipeline).batch_size(READ_ALL_BATCH);
        let read = match session {
            None => match action.await {
                Ok(cursor) => cursor.try_collect().await,
                Err(e) => Err(e),
            },
            Some(s) => match action.session(&mut *s).await {
                Ok(mut cursor) => cursor.stream(s).try_collect().await,
                Err(e) => Err(e),
            },
        };
        read.map_err(|e| map_err(coll, e))
    }

    pub(crate) async fn array_stats_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        array_field: &str,
    ) -> Result<ArrayStats> {
        let field = format!("${array_field}");
        let pipeline = vec![
            doc! {"$match": filter.to_document()},
            doc! {"$group": {
                "_id": Bson::Null,
                "documents": {"$sum": 1},
                "items": {"$sum": {"$cond": [{"$isArray": [&field]}, {"$size": [&field]}, 0]}},
                "not_arrays": {"$sum": {"$cond": [
                    {"$or": [{"$isArray": [&field]}, {"$eq": [{"$type": [&field]}, "missing"]}, {"$eq": [{"$type": [&field]}, "null"]}]},
                    0, 1]}},
            }},
        ];
        let docs = self.aggregate_in(session, coll, pipeline).await?;
        let Some(d) = docs.first() else {
            return Ok(ArrayStats::default());
        };
        let n = |k: &str| match d.get(k).and_then(crate::codec::as_int) {
            Some(x) => u64::try_from(x).unwrap_or(0),
            None => 0,
        };
        Ok(ArrayStats {
            documents: n("documents"),
            items: n("items"),
            not_arrays: n("not_arrays"),
        })
    }

    pub(crate) async fn update_many_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        update: &Update,
    ) -> Result<u64> {
        update.check()?;
        let modifications = match update.to_pipeline() {
            Some(pipeline) => UpdateModifications::Pipeline(pipeline),
            None => UpdateModifications::Document(update.to_document()),
        };
        let collection = self.coll(coll);
        let action = collection.update_many(filter.to_document(), modifications);
        let r = in_session!(action, session)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(r.matched_count)
    }

    /// One `aggregate`: the start document, wrapped (`{s: <start>}`) so that the lookup's
    /// array sits beside it rather than in it; `$graphLookup`; then the start document and the
    /// found ones concatenated and unwound, so that each comes back as a document of its own
    /// (the start first), not as one document that could pass 16 MiB.
    ///
    /// Null and missing values connect nothing: the start's values are sent without their
    /// nulls (`startWith` as an expression), and `restrictSearchWithMatch` leaves out the
    /// documents whose `connect_to` is null, missing, or an array of nulls only, which a null
    /// value of a found document's `connect_from` would otherwise match. (A document whose
    /// `connect_to` array holds a null beside other values stays reachable by those values, so
    /// such a null value still reaches it: the one case where this differs from the contract.)
    pub(crate) async fn graph_lookup_in(
        &self,
        session: Session<'_>,
        coll: &str,
        q: &GraphLookup,
    ) -> Result<Option<Graph>> {
        let start = format!("$s.{}", q.start_with);
        let start_values = doc! {"$filter": {
            "input": {"$cond": [{"$isArray": [&start]}, &start, [&start]]},
            "cond": {"$ne": ["$$this", Bson::Null]},
        }};
        let to = q.connect_to.as_ref();
        let not_null = doc! {"$or": [
            {to: {"$ne": Bson::Null}},
            {to: {"$elemMatch": {"$ne": Bson::Null}}},
        ]};
        let mut lookup = doc! {
            "from": coll,
            "startWith": start_values,
            "connectFromField": q.connect_from.as_ref(),
            "connectToField": to,
            "as": "found",
            "depthField": DEPTH_FIELD,
            "restrictSearchWithMatch": not_null,
        };
        // Always a `maxDepth`: without one, SecantusDB stops at depth 100 (MongoDB has no
        // limit); `u32::MAX` is the contract's own unlimited.
        lookup.insert("maxDepth", i64::from(q.max_depth.unwrap_or(u32::MAX)));
        let pipeline = vec![
            doc! {"$match": Filter::eq("_id", q.start.clone()).to_document()},
            doc! {"$replaceRoot": {"newRoot": {"s": "$$ROOT"}}},
            doc! {"$graphLookup": lookup},
            doc! {"$project": {"_id": 0, "all": {"$concatArrays": [["$s"], "$found"]}}},
            doc! {"$unwind": "$all"},
            doc! {"$replaceRoot": {"newRoot": "$all"}},
        ];
        let docs = self.aggregate_in(session, coll, pipeline).await?;
        let mut docs = docs.into_iter();
        let Some(start) = docs.next() else {
            return Ok(None);
        };
        let found = docs
            .map(|mut d| {
                let depth = d.remove(DEPTH_FIELD);
                let depth = depth
                    .as_ref()
                    .and_then(crate::codec::as_int)
                    .and_then(|x| u32::try_from(x).ok())
                    .ok_or_else(|| {
                        Error::decode(coll, d.get("_id"), "$graphLookup returned no depth")
                    })?;
                Ok((d, depth))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(Graph { start, found }))
    }

    pub(crate) async fn delete_many_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
    ) -> Result<u64> {
        let collection = self.coll(coll);
        let r = in_session!(collection.delete_many(filter.to_document()), session)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(r.deleted_count)
    }
}

/// The server's error code, if the server answered with one.
/// The driver's options for `opts`' sort, skip and projection (the limit and batch size are
/// set by each caller).
fn driver_find_options(opts: &FindOptions) -> mongodb::options::FindOptions {
    let mut o = mongodb::options::FindOptions::default();
    if !opts.sort.is_empty() {
        let sort = opts
            .sort
            .iter()
            .map(|(k, d)| (k.to_string(), Bson::Int32(*d)));
        o.sort = Some(sort.collect());
    }
    if opts.skip > 0 {
        o.skip = Some(opts.skip);
    }
    if !opts.projection.is_empty() {
        let fields = opts
            .projection
            .iter()
            .map(|k| (k.to_string(), Bson::Int32(1)));
        o.projection = Some(fields.collect());
    }
    o.comment = opts.comment.map(Bson::from);
    o
}

pub(crate) fn server_code(e: &mongodb::error::Error) -> Option<i32> {
    match &*e.kind {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        _ => None,
    }
}

/// Maps a driver error to the library's error, for collection `coll`.
///
/// An error labelled `TransientTransactionError` (a write conflict, code 112; a transaction
/// the server aborted, NoSuchTransaction, 251; ...) is [`Error::WriteConflict`], unless the
/// server could not be reached: the driver labels those too inside a transaction, but a retry
/// of the transaction would only wait for the server again, so they stay
/// [`Error::Unavailable`].
pub(crate) fn map_err(coll: &str, e: mongodb::error::Error) -> Error {
    let message = e.to_string();
    let unavailable = matches!(
        *e.kind,
        ErrorKind::ServerSelection { .. }
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::Io(_)
            | ErrorKind::DnsResolve { .. }
    );
    if !unavailable && e.contains_label(TRANSIENT_TRANSACTION_ERROR) {
        return Error::WriteConflict {
            message,
            source: Some(Box::new(e)),
        };
    }
    let code = match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Command(c) => Some(c.code),
        // The first document an `insert` of many refused.
        ErrorKind::InsertMany(m) => (m.write_errors.as_ref())
            .and_then(|w| w.first())
            .map(|w| w.code),
        _ => None,
    };
    if let Some(refused) = code.and_then(|code| refused_write(coll, code, &message)) {
        return refused;
    }
    match &*e.kind {
        // Raised by the driver before anything is sent: an argument it cannot encode, or a
        // transaction used out of order (e.g. on a server that has none).
        ErrorKind::InvalidArgument { .. }
        | ErrorKind::BsonSerialization(_)
        | ErrorKind::Transaction { .. } => Error::InvalidInput(message),
        _ if unavailable => Error::Unavailable {
            message,
            source: Some(Box::new(e)),
        },
        _ => Error::Server {
            message,
            source: Some(Box::new(e)),
        },
    }
}

/// MongoDB's DocumentValidationFailure: a collection's validator refused a write.
const DOCUMENT_VALIDATION_FAILURE: i32 = 121;

/// The typed error of a write the server refused with `code` ([`Error::DuplicateKey`],
/// [`Error::TooLarge`], [`Error::SchemaViolation`]); `None` for any other code.
fn refused_write(coll: &str, code: i32, message: &str) -> Option<Error> {
    let (collection, message) = (coll.to_owned(), message.to_owned());
    match code {
        11000 | 11001 => Some(Error::DuplicateKey {
            collection,
            message,
        }),
        // BSONObjectTooLarge, and "resulting document after update is larger than 16 MiB".
        10334 | 17419 | 17420 => Some(Error::TooLarge {
            collection,
            message,
        }),
        DOCUMENT_VALIDATION_FAILURE => Some(Error::SchemaViolation {
            collection,
            message,
        }),
        _ => None,
    }
}

impl Store for MongoStore {
    async fn insert_one(&self, coll: &str, doc: Document) -> Result<()> {
        self.insert_one_in(None, coll, doc).await
    }

    async fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        self.update_one_in(None, coll, filter, update, upsert).await
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(crate::store::query::Path, i32)],
        hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        self.update_first_in(None, coll, filter, sort, hint, update, upsert, fields)
            .await
    }

    async fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        self.replace_one_in(None, coll, filter, doc, upsert).await
    }

    async fn find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Result<Vec<Document>> {
        self.find_in(None, coll, filter, opts).await
    }

    /// One `bulkWrite` command (MongoDB 8.0's client bulk write, sent to `admin`), ordered,
    /// errors only: the reply says how far it got.
    async fn write_batch(&self, coll: &str, ops: Vec<super::WriteOp>) -> super::BatchOutcome {
        // A server before MongoDB 8.0 has no `bulkWrite`: one write at a time there. Until
        // the first reply says, the batch is kept to be sent that way.
        let bulk = self.bulk_write.load(Ordering::Relaxed);
        if bulk == BULK_NO {
            return super::write_one_by_one(self, coll, ops).await;
        }
        let total = ops.len();
        let ops_again = (bulk == BULK_UNKNOWN).then(|| ops.clone());
        let ops: Vec<Bson> = ops
            .into_iter()
            .map(|op| {
                Bson::Document(match op {
                    super::WriteOp::Insert(doc) => bson::doc! {"insert": 0, "document": doc},
                    super::WriteOp::Update {
                        filter,
                        update,
                        upsert,
                    } => bson::doc! {
                        "update": 0,
                        "filter": filter.to_document(),
                        "updateMods": update.to_document(),
                        "upsert": upsert,
                        "multi": false,
                    },
                })
            })
            .collect();
        let ns = format!("{}.{}", self.db.name(), coll);
        let command = bson::doc! {
            "bulkWrite": 1,
            "ops": ops,
            "nsInfo": [{"ns": ns}],
            "ordered": true,
            "errorsOnly": true,
        };
        let admin = self.db.client().database("admin");
        let reply = match admin.run_command(command).await {
            Ok(reply) => reply,
            // CommandNotFound: a server without client bulk writes (before 8.0). Nothing was
            // written: the same batch one write at a time, and from now on.
            Err(e) if matches!(&*e.kind, ErrorKind::Command(c) if c.code == 59) => {
                self.bulk_write.store(BULK_NO, Ordering::Relaxed);
                return match ops_again {
                    Some(ops) => super::write_one_by_one(self, coll, ops).await,
                    None => super::BatchOutcome {
                        applied: 0,
                        error: Some(map_err(coll, e)),
                    },
                };
            }
            Err(e) => {
                return super::BatchOutcome {
                    applied: 0,
                    error: Some(map_err(coll, e)),
                }
            }
        };
        self.bulk_write.store(BULK_YES, Ordering::Relaxed);
        let first_error = reply
            .get_document("cursor")
            .ok()
            .and_then(|c| c.get_array("firstBatch").ok())
            .and_then(|b| b.iter().find_map(|e| e.as_document().cloned()));
        match first_error {
            None => match reply.get_document("writeConcernError") {
                Ok(wce) => super::BatchOutcome {
                    applied: total,
                    error: Some(Error::Server {
                        message: format!("write concern error: {wce}"),
                        source: None,
                    }),
                },
                Err(_) => super::BatchOutcome {
                    applied: total,
                    error: None,
                },
            },
            Some(e) => {
                let idx = e.get("idx").and_then(crate::codec::as_int).unwrap_or(0);
                let code = e.get("code").and_then(crate::codec::as_int).unwrap_or(0);
                let message = e.get_str("errmsg").unwrap_or("").to_owned();
                let error = i32::try_from(code)
                    .ok()
                    .and_then(|code| refused_write(coll, code, &message))
                    .unwrap_or_else(|| Error::Server {
                        message: format!("{message} (code {code})"),
                        source: None,
                    });
                super::BatchOutcome {
                    applied: usize::try_from(idx).unwrap_or(0),
                    error: Some(error),
                }
            }
        }
    }

    /// The reply's documents as the driver received them (no `Document` built).
    async fn find_raw(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        self.find_in(None, coll, filter, opts).await
    }

    async fn array_stats(
        &self,
        coll: &str,
        filter: &Filter,
        array_field: &str,
    ) -> Result<ArrayStats> {
        self.array_stats_in(None, coll, filter, array_field).await
    }

    /// One `aggregate` (the driver's `countDocuments`), with `comment`.
    async fn count_matching(
        &self,
        coll: &str,
        filter: &Filter,
        comment: &'static str,
    ) -> Result<u64> {
        self.db
            .collection::<Document>(coll)
            .count_documents(filter.to_document())
            .comment(comment)
            .await
            .map_err(|e| map_err(coll, e))
    }

    /// One cursor: `find` with `batchSize` and `allowDiskUse`, then a `getMore` per batch.
    fn scan<'a>(
        &'a self,
        coll: &'a str,
        filter: &'a Filter,
        opts: &'a FindOptions,
        batch: u32,
    ) -> futures::stream::BoxStream<'a, Result<RawDocumentBuf>> {
        use futures::StreamExt;
        let open = async move {
            opts.check()?;
            let collection = self.db.collection::<RawDocumentBuf>(coll);
            let mut action = collection
                .find(filter.to_document())
                .with_options(driver_find_options(opts))
                .batch_size(batch.max(1))
                .allow_disk_use(true);
            if let Some(n) = opts.limit.filter(|n| *n != 0) {
                action = action.limit(n.checked_abs().unwrap_or(i64::MAX));
            }
            action.await.map_err(|e| map_err(coll, e))
        };
        futures::stream::once(open)
            .flat_map(move |cursor| match cursor {
                Ok(c) => c
                    .map(move |d| d.map_err(|e| map_err(coll, e)))
                    .left_stream(),
                Err(e) => futures::stream::once(async move { Err(e) }).right_stream(),
            })
            .boxed()
    }

    async fn insert_many(&self, coll: &str, docs: Vec<Document>) -> Result<()> {
        self.insert_many_in(None, coll, docs).await
    }

    /// `killSessions`: ends them and aborts their transactions.
    async fn kill_sessions(&self, ids: &[Document]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<Bson> = ids.iter().cloned().map(Bson::Document).collect();
        self.db
            .client()
            .database("admin")
            .run_command(doc! {"killSessions": ids})
            .await
            .map_err(|e| map_err("(killSessions)", e))?;
        Ok(())
    }

    async fn update_many(&self, coll: &str, filter: &Filter, update: &Update) -> Result<u64> {
        self.update_many_in(None, coll, filter, update).await
    }

    async fn graph_lookup(&self, coll: &str, q: &GraphLookup) -> Result<Option<Graph>> {
        self.graph_lookup_in(None, coll, q).await
    }

    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64> {
        self.delete_many_in(None, coll, filter).await
    }

    async fn create_index(&self, coll: &str, index: &IndexSpec) -> Result<()> {
        let mut opts = IndexOptions::builder().name(index.name.clone()).build();
        if index.unique {
            opts.unique = Some(true);
        }
        opts.partial_filter_expression = index.partial.as_ref().map(Filter::to_document);
        let model = IndexModel::builder()
            .keys(index.key_document())
            .options(opts)
            .build();
        self.coll(coll)
            .create_index(model)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(())
    }

    async fn index_names(&self, coll: &str) -> Result<Vec<String>> {
        match self.coll(coll).list_index_names().await {
            Ok(names) => Ok(names),
            // NamespaceNotFound: no collection yet, so no index.
            Err(e) if matches!(&*e.kind, ErrorKind::Command(c) if c.code == 26) => Ok(Vec::new()),
            Err(e) => Err(map_err(coll, e)),
        }
    }

    async fn drop_index(&self, coll: &str, name: &str) -> Result<()> {
        self.coll(coll)
            .drop_index(name)
            .await
            .map_err(|e| map_err(coll, e))
    }

    async fn collection_names(&self) -> Result<Vec<String>> {
        let mut names =
            (self.db.list_collection_names().await).map_err(|e| map_err("(listCollections)", e))?;
        names.retain(|n| !n.starts_with("system."));
        names.sort();
        Ok(names)
    }

    /// `collMod` with the validator; `create` with it when the collection does not exist
    /// (then `collMod` again, should another client have created it in between).
    async fn set_validator(&self, coll: &str, schema: &Schema) -> Result<()> {
        let options = doc! {
            "validator": {"$jsonSchema": schema.to_document()},
            "validationLevel": "moderate",
            "validationAction": "error",
        };
        let command = |verb: &str| {
            let mut c = doc! {verb: coll};
            c.extend(options.clone());
            c
        };
        let code = |e: &mongodb::error::Error| server_code(e);
        match self.db.run_command(command("collMod")).await {
            Ok(_) => return Ok(()),
            // NamespaceNotFound: no such collection yet.
            Err(e) if code(&e) == Some(26) => {}
            Err(e) => return Err(map_err(coll, e)),
        }
        match self.db.run_command(command("create")).await {
            Ok(_) => Ok(()),
            // NamespaceExists: created by another client since.
            Err(e) if code(&e) == Some(48) => {
                self.db
                    .run_command(command("collMod"))
                    .await
                    .map_err(|e| map_err(coll, e))?;
                Ok(())
            }
            Err(e) => Err(map_err(coll, e)),
        }
    }

    fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    type Txn = MongoTxn;

    async fn start_transaction(&self) -> Result<MongoTxn> {
        let session = self.start_session().await?;
        Ok(MongoTxn::new(self.clone(), session))
    }
}
