//! The store contract of [pattern-core](https://docs.rs/pattern-core): the few primitive
//! operations the patterns are written against ([`Store`], [`Transaction`]), the small query
//! language they speak ([`query`]), the prepared series push ([`push`]), the per-store state
//! the patterns keep ([`Extensions`]), and the foundation under them all: MongoDB's order of
//! BSON values and its document sizes ([`codec`]), the error type ([`Error`]) and the command
//! counts of an operation's span ([`observe`]).
//!
//! Two implementations ship in their own crates: `pattern-memory` (`MemoryStore`, embedded,
//! pattern-core's default) and `pattern-mongo` (`MongoStore`, on the official driver).
//! Both keep the same collections and the same documents, and apply each single-document
//! write atomically. A third store needs this crate alone: implement the required methods of
//! [`Store`] (and [`Transaction`] for its transactions) and take the provided ones as they
//! are; the conformance suite runs the patterns on such a store (`tests/suite/third_party.rs`).
//!
//! The contract names no pattern: a pattern prepares what it asks (a filter, an update, an
//! [`OpenPush`]) and a store only runs it.

use std::future::Future;

use bson::{Bson, Document, RawDocumentBuf};
use futures::stream::{self, BoxStream, StreamExt};

use crate::codec::order::values_equal;
use crate::codec::raw::to_raw;
use crate::query::{Filter, FindOptions, Graph, GraphLookup, IndexSpec, Path, Schema, Update};

pub mod codec;
pub mod error;
mod extensions;
pub mod observe;
pub mod push;
pub mod query;
mod txn;
pub mod watch;

pub use error::{BoxError, Error, FromStore, Result};
pub use extensions::{Extension, ExtensionKey, Extensions};
pub use push::{push_open_upsert, push_then_apart, KeptOps, OpenPush, Window};
pub use txn::{run_transaction, BoxFuture, Transaction, TRANSACTION_ATTEMPTS};
pub use watch::{Change, ChangeFeed, ChangeOp, Watch};

/// What an `update_one` did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateOutcome {
    /// A document matched the filter (and was updated).
    pub matched: bool,
    /// No document matched and one was inserted (`upsert`).
    pub upserted: bool,
    /// The matched document changed (MongoDB's `nModified`): `false` when the update left it
    /// as it was (its values already those written, or a
    /// [`rewrite_if`](query::Update::rewrite_if) that did not hold), and for an upsert.
    pub modified: bool,
}

/// One write of a [`Store::write_batch`] or a [`Store::write_across`].
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    /// Inserts the document.
    Insert(Document),
    /// Updates the first document matching `filter` (inserts one with `upsert`), as
    /// [`Store::update_one`] does.
    Update {
        /// Which document (the first that matches).
        filter: Filter,
        /// What to change.
        update: Box<Update>,
        /// Insert one built from the filter and the update when none matches.
        upsert: bool,
    },
    /// Updates every document matching `filter`, as [`Store::update_many`] does.
    UpdateMany {
        /// Which documents.
        filter: Filter,
        /// What to change in each.
        update: Box<Update>,
    },
}

/// What a [`Store::write_batch`] did: the first `applied` writes applied, in order; when
/// `error` is set, the write at index `applied` failed with it and none after it ran. (An
/// error that leaves it unknown whether the server applied a command, such as a connection
/// lost mid-command, counts none of that command's writes in `applied`: the caller reads back
/// to find out.)
#[derive(Debug)]
pub struct BatchOutcome {
    /// The writes that applied, from the first, in order.
    pub applied: usize,
    /// Why the write at index `applied` failed (none after it ran).
    pub error: Option<crate::Error>,
}

/// Totals over the array field of the documents matching a filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArrayStats {
    /// Documents matched.
    pub documents: u64,
    /// Sum of the lengths of their arrays (a missing field counts 0).
    pub items: u64,
    /// Documents whose field is present but not an array.
    pub not_arrays: u64,
}

/// The primitive operations the patterns need. Every method acts on one collection by name
/// and is atomic for each document it writes.
pub trait Store: Send + Sync + Sized {
    /// Inserts a document; a unique index violation is [`Error::DuplicateKey`].
    fn insert_one(&self, coll: &str, doc: Document) -> impl Future<Output = Result<()>> + Send;

    /// Updates the first document matching `filter`; with `upsert`, inserts one when none
    /// matches (the filter's top-level equalities, then the update with `$setOnInsert`).
    ///
    /// A store may move the items `update` pushes into the document rather than copy them
    /// (the in-memory store does), so once it applied, `update` may have lost them; when the
    /// write returns an error, `update` is as it was, ready for a retry.
    fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> impl Future<Output = Result<UpdateOutcome>> + Send;

    /// Updates the first document matching `filter` in `sort` order (MongoDB's `findAndModify`,
    /// one round trip), using index `hint` (unless empty) where the server takes hints; with
    /// `upsert`, inserts one when none matches, as [`Store::update_one`] does. Returns the
    /// matched document as it was before the update, with only the top-level `fields` (`_id`
    /// only if listed); `None` when none matched (and one was inserted, with `upsert`).
    /// `update` may lose its pushed items once applied, as with [`Store::update_one`].
    ///
    /// With no `fields`, nothing of the document is wanted, only whether one matched (then
    /// `Some` of an empty document). The MongoDB store then sends the lighter `update` command,
    /// which takes no sort: the server updates the first match in the order of the index its
    /// planner picks, so `sort` must be the order of the index that serves `filter` (as the
    /// series' open-document index serves its push, newest first).
    #[allow(clippy::too_many_arguments)] // findAndModify's own parameters, each one used
    fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
        hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> impl Future<Output = Result<Option<Document>>> + Send;

    /// Updates the first document matching `filter`, as [`Store::update_one`] does without
    /// `upsert`, and returns it as it is after the update, with its `_id` and the top-level
    /// `fields` only (MongoDB's `findAndModify` with `new: true`: one round trip); `None` when
    /// none matched. `update` may lose its pushed items once applied, as with
    /// [`Store::update_one`].
    ///
    /// The default reads the first match's `_id`, updates that document and reads it back:
    /// three commands, one atomic step only inside a transaction. Both stores of the workspace
    /// do it in one.
    fn update_returning(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        fields: &[&str],
    ) -> impl Future<Output = Result<Option<Document>>> + Send {
        async move {
            let first = FindOptions {
                limit: Some(1),
                projection: vec!["_id".into()],
                ..FindOptions::default()
            };
            let found = self.find(coll, filter, &first).await?.pop();
            let Some(id) = found.and_then(|d| d.get("_id").cloned()) else {
                return Ok(None);
            };
            let by_id = Filter::Eq("_id".into(), id);
            if !self.update_one(coll, &by_id, update, false).await?.matched {
                return Ok(None);
            }
            let back = FindOptions {
                limit: Some(1),
                projection: fields.iter().map(|f| Path::from(*f)).collect(),
                ..FindOptions::default()
            };
            Ok(self.find(coll, &by_id, &back).await?.pop().map(|d| {
                d.into_iter()
                    .filter(|(k, _)| k == "_id" || fields.contains(&k.as_str()))
                    .collect()
            }))
        }
    }

    /// One attempt of a push ([`OpenPush`]): appends `items` to the key's open document (the
    /// first in [`OpenPush::order`] whose count is below the size) and adds their number to
    /// its count, or, when the key has none, inserts document number `push.seq` with `_id`
    /// `(push.new_id)()` holding them. Returns `true` when it inserted. Once applied, `items`
    /// may be left empty; on an error they are as they were
    /// ([`Error::DuplicateKey`]: document `seq`, or that `_id`,
    /// exists). The kept values ([`OpenPush::kept`]) go in the same update (`$min`/`$max`/`$inc`),
    /// or into the new document with its marks.
    ///
    /// The default sends the conditional upsert through [`Store::update_first`] (one round
    /// trip, [`push_open_upsert`]). A store may do the same natively: the in-memory store does,
    /// without building the query and the update.
    fn push_open(
        &self,
        push: &OpenPush<'_>,
        items: &mut Vec<Bson>,
    ) -> impl Future<Output = Result<bool>> + Send {
        push_open_upsert(self, push, items)
    }

    /// [`Store::push_open`], then `then`: an upsert of the document `then_filter` matches in
    /// collection `then_coll` (a bucket series' roll-up, `#[bucket(rollup)]`), in the same
    /// command where the store can. `Err`: the push failed and nothing was written (the items
    /// are back, as with [`Store::push_open`]). `Ok((opened, outcome))`: the push applied, and
    /// `outcome` says whether `then` did.
    ///
    /// The default sends the two writes one after the other ([`push_then_apart`]); the
    /// MongoDB store sends both in one ordered `bulkWrite` (MongoDB 8.0; before it, one after
    /// the other).
    fn push_open_then(
        &self,
        push: &OpenPush<'_>,
        items: &mut Vec<Bson>,
        then_coll: &str,
        then_filter: &Filter,
        then: &mut Update,
    ) -> impl Future<Output = Result<(bool, Result<()>)>> + Send {
        push_then_apart(self, push, items, then_coll, then_filter, then)
    }

    /// Runs `ops` in order on one collection, stopping at the first that fails (MongoDB's
    /// ordered bulk write). Each write is atomic by itself, the batch is not. The default runs
    /// them one by one. The MongoDB store sends one `insert` or `update` command for each run
    /// of writes of one kind when the batch is one run or its runs are long (8 writes or more
    /// on average), and one `bulkWrite` command otherwise: callers put like writes together.
    fn write_batch(
        &self,
        coll: &str,
        ops: Vec<WriteOp>,
    ) -> impl Future<Output = BatchOutcome> + Send {
        write_one_by_one(self, coll, ops)
    }

    /// [`Store::write_batch`] over several collections: runs `ops` in order, each on
    /// `colls[n]` for its `n`, stopping at the first that fails. A write then applies only once
    /// every write before it applied (a bucket series' roll-up of a key after the key's writes,
    /// `#[bucket(rollup)]`), and [`BatchOutcome::applied`] counts across them. The default
    /// sends each run of one collection as a [`Store::write_batch`]; the MongoDB store sends one
    /// `bulkWrite` command over them all (MongoDB 8.0; before it, one write at a time), so that
    /// a write applies exactly when those before it did even should the caller's process die
    /// once it is sent.
    fn write_batch_over(
        &self,
        colls: &[&str],
        ops: Vec<(usize, WriteOp)>,
    ) -> impl Future<Output = BatchOutcome> + Send {
        write_runs_apart(self, colls, ops)
    }

    /// Runs `writes` in order, each on its own collection, stopping at the first that fails:
    /// one round trip where the store can (the MongoDB store sends one client `bulkWrite`,
    /// MongoDB 8.0; before it, one write at a time). Returns, for each write, the documents it
    /// matched (an insert or an upsert that inserted: 1). The command carries `comment` where
    /// the store sends one (MongoDB's profiler and logs show it).
    ///
    /// Meant for a transaction: outside one, an error leaves unknown which writes applied
    /// (the caller reads back to find out).
    fn write_across(
        &self,
        writes: Vec<(&str, WriteOp)>,
        comment: Option<&str>,
    ) -> impl Future<Output = Result<Vec<u64>>> + Send {
        let _ = comment;
        write_across_one_by_one(self, writes)
    }

    /// Replaces the first document matching `filter` by `doc` (inserts it with `upsert`).
    fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> impl Future<Output = Result<UpdateOutcome>> + Send;

    /// The documents matching `filter`, sorted, skipped and limited, in one round trip where
    /// the result fits in one reply (16 MiB).
    fn find(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> impl Future<Output = Result<Vec<Document>>> + Send;

    /// [`Store::find`], each document as its BSON bytes: for the reads that decode typed values,
    /// which then decode straight from the bytes a server sent instead of building a
    /// `Document` first. The default serializes what [`Store::find`] returns.
    fn find_raw(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> impl Future<Output = Result<Vec<RawDocumentBuf>>> + Send {
        async move {
            let docs = self.find(coll, filter, opts).await?;
            docs.iter().map(|d| to_raw(coll, d)).collect()
        }
    }

    /// [`Store::find_raw`], then the first document of `then_coll` matching `then_filter`, read
    /// after them (a mark that says how far the first read had to look): in one round trip
    /// where the store can. The default sends the two finds one after the other; the MongoDB
    /// store sends one `aggregate` whose `$unionWith` reads the second once the first is done.
    fn find_raw_then(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
        then_coll: &str,
        then_filter: &Filter,
    ) -> impl Future<Output = Result<(Vec<RawDocumentBuf>, Option<Document>)>> + Send {
        async move {
            let docs = self.find_raw(coll, filter, opts).await?;
            let one = FindOptions {
                limit: Some(1),
                ..FindOptions::default()
            };
            let then = self.find(then_coll, then_filter, &one).await?.pop();
            Ok((docs, then))
        }
    }

    /// Every document matching `filter`, in `opts.sort` order, as a stream read in batches of
    /// `batch` documents: on MongoDB one cursor (a `find`, then a `getMore` per batch; a sort
    /// no index serves may spill to disk, `allowDiskUse`), so a caller that handles each
    /// document as it comes holds one batch at a time. The default reads them all with one
    /// [`Store::find_raw`] (what the in-memory store does: its documents are in memory already).
    fn scan<'a>(
        &'a self,
        coll: &'a str,
        filter: &'a Filter,
        opts: &'a FindOptions,
        batch: u32,
    ) -> BoxStream<'a, Result<RawDocumentBuf>> {
        let _ = batch;
        stream::once(self.find_raw(coll, filter, opts))
            .flat_map(|found| match found {
                Ok(docs) => stream::iter(docs.into_iter().map(Ok)).left_stream(),
                Err(e) => stream::once(async move { Err(e) }).right_stream(),
            })
            .boxed()
    }

    /// Up to `size` documents of the collection picked at random, each at most once, as a
    /// stream read in batches of `batch`: every document when the collection holds no more
    /// than `size`. `comment` names the read in the server's logs (a
    /// [`SCATTER`](crate::query::SCATTER) name: on a sharded cluster every shard answers
    /// it).
    ///
    /// The default reads the whole collection once through [`Store::scan`] and keeps a uniform
    /// random `size` of it (reservoir sampling: `size` documents in memory): correct on any
    /// store, at the cost of a full read. The MongoDB store sends one `aggregate` with
    /// `$sample` instead, which reads only what it returns when `size` is under 5% of a
    /// collection of more than 100 documents (a pseudo-random cursor; a document it returns
    /// twice is passed on once), and otherwise scans and sorts at random on the server.
    fn sample<'a>(
        &'a self,
        coll: &'a str,
        size: u32,
        batch: u32,
        comment: &'static str,
    ) -> BoxStream<'a, Result<RawDocumentBuf>> {
        let opts = FindOptions {
            comment: Some(comment),
            ..FindOptions::default()
        };
        stream::once(async move {
            let all = Filter::And(vec![]);
            let mut docs = self.scan(coll, &all, &opts, batch);
            let (mut kept, mut seen) = (Vec::new(), 0u64);
            let mut random = random_below();
            while let Some(doc) = docs.next().await {
                let doc = doc?;
                // Algorithm R: the document `seen` replaces a kept one with chance size/(seen+1).
                if kept.len() < size as usize {
                    kept.push(doc);
                } else {
                    let slot = random(seen + 1);
                    if slot < u64::from(size) {
                        kept[slot as usize] = doc;
                    }
                }
                seen += 1;
            }
            Ok::<_, crate::Error>(kept)
        })
        .flat_map(|found| match found {
            Ok(docs) => stream::iter(docs.into_iter().map(Ok)).left_stream(),
            Err(e) => stream::once(async move { Err(e) }).right_stream(),
        })
        .boxed()
    }

    /// Inserts the documents in order, stopping at the first that fails (one `insert` command
    /// on MongoDB, split by the driver past 16 MiB or 100,000 documents). The default inserts
    /// them one at a time.
    fn insert_many(
        &self,
        coll: &str,
        docs: Vec<Document>,
    ) -> impl Future<Output = Result<()>> + Send {
        async move {
            for doc in docs {
                self.insert_one(coll, doc).await?;
            }
            Ok(())
        }
    }

    /// Ends the server sessions `ids` (the [`Transaction::session_id`]s of another process),
    /// aborting their transactions now rather than when they expire. A store without server
    /// sessions does nothing.
    fn kill_sessions(&self, ids: &[Document]) -> impl Future<Output = Result<()>> + Send {
        let _ = ids;
        async { Ok(()) }
    }

    /// Counts the matching documents and the elements of their `array_field`, server-side.
    fn array_stats(
        &self,
        coll: &str,
        filter: &Filter,
        array_field: &str,
    ) -> impl Future<Output = Result<ArrayStats>> + Send;

    /// How many documents match `filter`: a collection-wide count (on a sharded cluster a
    /// scatter-gather, named by `comment` in the server's logs, see
    /// [`SCATTER`](crate::query::SCATTER)). By default [`array_stats`](Store::array_stats)'s
    /// count; the MongoDB store sends it with its `comment`.
    fn count_matching(
        &self,
        coll: &str,
        filter: &Filter,
        comment: &'static str,
    ) -> impl Future<Output = Result<u64>> + Send {
        let _ = comment;
        async move { Ok(self.array_stats(coll, filter, "_id").await?.documents) }
    }

    /// The first matching document of each value of `by`, in `sort` order (`[(n, -1)]`: each
    /// key's newest), with the `projection`'s fields (empty: whole), in no particular order of
    /// `by`; a document without `by` counts under `null`. One read whatever the number of
    /// values: on MongoDB one `aggregate` (`$match`, `$sort`, `$group` with `$first`). By
    /// default a `find` of every match sorted by `by` then `sort`, which a store overrides when
    /// it can group natively.
    fn first_per(
        &self,
        coll: &str,
        filter: &Filter,
        by: &str,
        sort: &[(Path, i32)],
        projection: &[Path],
    ) -> impl Future<Output = Result<Vec<Document>>> + Send {
        async move {
            let opts = FindOptions {
                sort: std::iter::once((Path::from(by), 1))
                    .chain(sort.iter().cloned())
                    .collect(),
                projection: projection.to_vec(),
                ..FindOptions::default()
            };
            let mut out: Vec<Document> = Vec::new();
            for d in self.find(coll, filter, &opts).await? {
                let value = |d: &Document| d.get(by).cloned().unwrap_or(Bson::Null);
                if out
                    .last()
                    .is_none_or(|last| !values_equal(&value(last), &value(&d)))
                {
                    out.push(d);
                }
            }
            Ok(out)
        }
    }

    /// Updates every document matching `filter` (each atomically; all of them together only
    /// inside a transaction); returns how many matched. An update with
    /// [`rewrites`](Update::rewrite) is sent as an update pipeline, each document's fields
    /// computed from its own values. Refuses, before writing anything, an update that
    /// [`Update::check`] refuses. On MongoDB, a document the update cannot apply to fails the
    /// command, leaving the documents before it updated (outside a transaction).
    fn update_many(
        &self,
        coll: &str,
        filter: &Filter,
        update: &Update,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// A recursive search from one document ([`GraphLookup`], MongoDB's `$graphLookup`), in one
    /// round trip. `None` when the start document does not exist.
    fn graph_lookup(
        &self,
        coll: &str,
        query: &GraphLookup,
    ) -> impl Future<Output = Result<Option<Graph>>> + Send;

    /// Deletes every matching document; returns how many.
    fn delete_many(&self, coll: &str, filter: &Filter) -> impl Future<Output = Result<u64>> + Send;

    /// Creates the index if no index of that name exists (idempotent).
    fn create_index(
        &self,
        coll: &str,
        index: &IndexSpec,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Names of the collection's indexes (empty when the collection does not exist).
    fn index_names(&self, coll: &str) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Drops an index by name.
    fn drop_index(&self, coll: &str, name: &str) -> impl Future<Output = Result<()>> + Send;

    /// Names of the database's collections (MongoDB: `listCollections`, the `system.` ones
    /// left out), sorted.
    fn collection_names(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Installs `schema` as the collection's validator, creating the collection if need be
    /// and replacing any validator it had (MongoDB: `collMod` with `validator: {$jsonSchema}`,
    /// `validationLevel: "moderate"`, `validationAction: "error"`). From then on a write that
    /// would leave a document the schema refuses fails with
    /// [`Error::SchemaViolation`] and writes nothing: every
    /// insert (an upsert's too), and every update or replacement of a document that passed the
    /// schema before it. "Moderate": a document that fails the schema already (written before
    /// the validator, or by a tool that bypassed it) may still be updated, so that it can be
    /// repaired. Not transactional: in a transaction it applies to the store at once.
    ///
    /// The default refuses ([`Error::InvalidInput`]): a store that
    /// cannot enforce a validator says so rather than ignore it.
    fn set_validator(
        &self,
        coll: &str,
        schema: &Schema,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = schema;
        let refused = crate::Error::invalid(format!(
            "this store does not enforce validators (collection `{coll}`)"
        ));
        async move { Err(refused) }
    }

    /// Opens a feed of the changes to `watch.collections`, by anyone, in commit order
    /// ([`ChangeFeed`]): a change stream of the database on MongoDB. The default, and the
    /// in-memory store, refuse with [`Error::Unsupported`]: a store
    /// that only its own process writes has nothing to follow.
    fn watch(&self, watch: &Watch) -> impl Future<Output = Result<Box<dyn ChangeFeed>>> + Send {
        let _ = watch;
        let refused = crate::Error::Unsupported {
            store: self.system_name(),
            reason: "this store has no change feed".into(),
        };
        async move { Err(refused) }
    }

    /// Has the collection keep each document's state before a change, so that a
    /// [`ChangeFeed`] gives [`Change::before`] for updates, replacements and deletes (MongoDB:
    /// `collMod` with `changeStreamPreAndPostImages`, creating the collection if need be). The
    /// default refuses, as [`Store::watch`] does.
    fn keep_before_images(&self, coll: &str) -> impl Future<Output = Result<()>> + Send {
        let _ = coll;
        let refused = crate::Error::Unsupported {
            store: self.system_name(),
            reason: "this store has no change feed".into(),
        };
        async move { Err(refused) }
    }

    /// The database system, for tracing (OpenTelemetry's `db.system.name`): `"mongodb"`,
    /// `"memory"` for the in-memory store, `"other"` by default.
    fn system_name(&self) -> &'static str {
        "other"
    }

    /// The database's name, for tracing (OpenTelemetry's `db.namespace`), if it has one.
    fn database_name(&self) -> Option<&str> {
        None
    }

    /// Whether this store routes each query to the shards its shard key names (a MongoDB
    /// sharded cluster, reached through `mongos`): a read the key would target then names the
    /// key even when another filter finds its documents alone. `false` (the default) for a
    /// replica set, a standalone server or the in-memory store, where nothing is routed.
    ///
    /// What it changes: a time-range read of buckets cut by span selects them by their
    /// time-named `_id`s alone where nothing is routed (one index can serve it, so the server
    /// has no plans to weigh), and by the key as well on a sharded cluster.
    fn routes_by_shard_key(&self) -> impl Future<Output = Result<bool>> + Send {
        async { Ok(false) }
    }

    /// What the patterns remember of this store in this process (the indexes they ensured, a
    /// series' next document numbers...), each pattern under its own key. A store holds one
    /// [`Extensions`] (`Extensions::default()`) and hands it out; a transaction hands out its
    /// store's.
    fn extensions(&self) -> &Extensions;

    /// This store's transactions: a [`Store`] whose operations all commit together or not at
    /// all ([`Transaction`]).
    type Txn: Transaction;

    /// Starts a snapshot transaction. Most callers want [`run_transaction`], which retries
    /// conflicts and commits.
    fn start_transaction(&self) -> impl Future<Output = Result<Self::Txn>> + Send;

    /// `Some(self)` when this handle is a transaction already (then [`run_transaction`] runs its
    /// work inside it instead of starting another).
    fn current_transaction(&self) -> Option<&Self::Txn> {
        None
    }
}

/// A generator of numbers below a bound, seeded anew for each call (from the standard
/// library's per-process random hash keys): [`Store::sample`]'s default picks with it.
fn random_below() -> impl FnMut(u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut state = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        | 1;
    move |below: u64| {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D) % below.max(1)
    }
}

/// [`Store::write_batch_over`] as one [`Store::write_batch`] per run of one collection, in
/// order, stopping at the first write that fails.
pub async fn write_runs_apart<S: Store>(
    store: &S,
    colls: &[&str],
    ops: Vec<(usize, WriteOp)>,
) -> BatchOutcome {
    write_runs_with(ops, |ns, run| store.write_batch(colls[ns], run)).await
}

/// Ordered writes, each on the collection its `n` names, a run of one collection at a time
/// through `write` (given the run's `n`), stopping at the first write that fails.
pub async fn write_runs_with<F, Fut>(ops: Vec<(usize, WriteOp)>, write: F) -> BatchOutcome
where
    F: Fn(usize, Vec<WriteOp>) -> Fut,
    Fut: Future<Output = BatchOutcome>,
{
    let mut applied = 0;
    let mut ops = ops.into_iter().peekable();
    while let Some((ns, first)) = ops.next() {
        let mut run = vec![first];
        while let Some((_, op)) = ops.next_if(|(n, _)| *n == ns) {
            run.push(op);
        }
        let done = write(ns, run).await;
        applied += done.applied;
        if done.error.is_some() {
            return BatchOutcome {
                applied,
                error: done.error,
            };
        }
    }
    BatchOutcome {
        applied,
        error: None,
    }
}

/// [`Store::write_batch`] one write at a time, stopping at the first that fails: what the
/// trait provides, for a store that sends a batch as one command where it can and falls back
/// to this where it cannot.
pub async fn write_one_by_one<S: Store>(store: &S, coll: &str, ops: Vec<WriteOp>) -> BatchOutcome {
    let total = ops.len();
    for (i, op) in ops.into_iter().enumerate() {
        let done = match op {
            WriteOp::Insert(doc) => store.insert_one(coll, doc).await,
            WriteOp::Update {
                filter,
                mut update,
                upsert,
            } => (store.update_one(coll, &filter, &mut update, upsert).await).map(|_| ()),
            WriteOp::UpdateMany { filter, update } => {
                (store.update_many(coll, &filter, &update).await).map(|_| ())
            }
        };
        if let Err(e) = done {
            return BatchOutcome {
                applied: i,
                error: Some(e),
            };
        }
    }
    BatchOutcome {
        applied: total,
        error: None,
    }
}

/// [`Store::write_across`] one write at a time: what the trait provides, for a store without a
/// command that writes several collections at once.
pub async fn write_across_one_by_one<S: Store>(
    store: &S,
    writes: Vec<(&str, WriteOp)>,
) -> Result<Vec<u64>> {
    let mut matched = Vec::with_capacity(writes.len());
    for (coll, op) in writes {
        matched.push(match op {
            WriteOp::Insert(doc) => store.insert_one(coll, doc).await.map(|()| 1)?,
            WriteOp::Update {
                filter,
                mut update,
                upsert,
            } => {
                let done = store.update_one(coll, &filter, &mut update, upsert).await?;
                u64::from(done.matched || done.upserted)
            }
            WriteOp::UpdateMany { filter, update } => {
                store.update_many(coll, &filter, &update).await?
            }
        });
    }
    Ok(matched)
}
