//! The MongoDB store, on the official `mongodb` driver (feature `mongodb`).

use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document, RawDocumentBuf};
use futures::TryStreamExt;
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{ClientOptions, IndexOptions};
use mongodb::{Client, Collection, Database, IndexModel};

use crate::query::{Filter, FindOptions, IndexSpec, Update};
use crate::store::{ArrayStats, Store, StoreMemo, UpdateOutcome};
use crate::{Error, Result};

/// How long an operation may wait for a reachable server before it returns
/// [`Error::Unavailable`], when the connection string does not say (`serverSelectionTimeoutMS`).
pub const DEFAULT_SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// Documents per reply for reads that return a whole series (all overflow chunks of a parent):
/// the first reply carries them all unless they exceed 16 MiB.
const READ_ALL_BATCH: u32 = 100_000;

/// A MongoDB database as a pattern store. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MongoStore {
    db: Database,
    memo: Arc<StoreMemo>,
}

impl MongoStore {
    /// A store over an existing database handle (keeps the client's options as they are).
    pub fn new(db: Database) -> Self {
        Self {
            db,
            memo: Arc::default(),
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
        self.memo.clear();
        Ok(())
    }

    fn coll(&self, name: &str) -> Collection<Document> {
        self.db.collection(name)
    }

    /// `find` with the store's options, each document decoded as `T` by the driver.
    async fn find_as<T>(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Result<Vec<T>>
    where
        T: serde::de::DeserializeOwned + Send + Sync,
    {
        opts.check()?;
        let collection = self.db.collection::<T>(coll);
        let mut action = collection.find(filter.to_document());
        if !opts.sort.is_empty() {
            action = action.sort(
                opts.sort
                    .iter()
                    .map(|(k, d)| (k.to_string(), Bson::Int32(*d)))
                    .collect::<Document>(),
            );
        }
        if opts.skip > 0 {
            action = action.skip(opts.skip);
        }
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
        let cursor = action.await.map_err(|e| map_err(coll, e))?;
        cursor.try_collect().await.map_err(|e| map_err(coll, e))
    }
}

/// Maps a driver error to the library's error, for collection `coll`.
pub fn map_err(coll: &str, e: mongodb::error::Error) -> Error {
    let message = e.to_string();
    let dup = |code: i32| code == 11000 || code == 11001;
    // BSONObjectTooLarge, and "resulting document after update is larger than 16 MiB".
    let too_large = |code: i32| code == 10334 || code == 17419 || code == 17420;
    let unavailable = matches!(
        *e.kind,
        ErrorKind::ServerSelection { .. }
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::Io(_)
            | ErrorKind::DnsResolve { .. }
    );
    match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(w)) if dup(w.code) => Error::DuplicateKey {
            collection: coll.to_owned(),
            message,
        },
        ErrorKind::Write(WriteFailure::WriteError(w)) if too_large(w.code) => Error::TooLarge {
            collection: coll.to_owned(),
            message,
        },
        ErrorKind::Command(c) if too_large(c.code) => Error::TooLarge {
            collection: coll.to_owned(),
            message,
        },
        ErrorKind::Command(c) if dup(c.code) => Error::DuplicateKey {
            collection: coll.to_owned(),
            message,
        },
        // Raised by the driver before anything is sent: an argument it cannot encode.
        ErrorKind::InvalidArgument { .. } | ErrorKind::BsonSerialization(_) => {
            Error::InvalidInput(message)
        }
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

impl Store for MongoStore {
    async fn insert_one(&self, coll: &str, doc: Document) -> Result<()> {
        crate::codec::size::check_document_size(coll, &doc)?;
        self.coll(coll)
            .insert_one(doc)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(())
    }

    async fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        let r = self
            .coll(coll)
            .update_one(filter.to_document(), update.to_document())
            .upsert(upsert)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(UpdateOutcome {
            matched: r.matched_count > 0,
            upserted: r.upserted_id.is_some(),
        })
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
        hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        if fields.is_empty() {
            // Nothing to return: `update`, the seed's own command (see the trait's note on
            // `sort`).
            let collection = self.coll(coll);
            let mut action = collection
                .update_one(filter.to_document(), update.to_document())
                .upsert(upsert);
            if !hint.is_empty() {
                action = action.hint(mongodb::options::Hint::Name(hint.to_owned()));
            }
            let r = action.await.map_err(|e| map_err(coll, e))?;
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
        let collection = self.coll(coll);
        let mut action = collection
            .find_one_and_update(filter.to_document(), update.to_document())
            .sort(sort)
            .projection(projection)
            .upsert(upsert);
        if !hint.is_empty() {
            action = action.hint(mongodb::options::Hint::Name(hint.to_owned()));
        }
        action.await.map_err(|e| map_err(coll, e))
    }

    async fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        crate::codec::size::check_document_size(coll, &doc)?;
        let r = self
            .coll(coll)
            .replace_one(filter.to_document(), doc)
            .upsert(upsert)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(UpdateOutcome {
            matched: r.matched_count > 0,
            upserted: r.upserted_id.is_some(),
        })
    }

    async fn find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Result<Vec<Document>> {
        self.find_as(coll, filter, opts).await
    }

    /// The reply's documents as the driver received them (no `Document` built).
    async fn find_raw(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        self.find_as(coll, filter, opts).await
    }

    async fn array_stats(
        &self,
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
        let mut cursor = self
            .coll(coll)
            .aggregate(pipeline)
            .await
            .map_err(|e| map_err(coll, e))?;
        let Some(d) = cursor.try_next().await.map_err(|e| map_err(coll, e))? else {
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

    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64> {
        let r = self
            .coll(coll)
            .delete_many(filter.to_document())
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(r.deleted_count)
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

    type Txn = crate::store::mongo_txn::MongoTxn;

    async fn start_transaction(&self) -> Result<Self::Txn> {
        unimplemented!()
    }
}
