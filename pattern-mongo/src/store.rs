//! [`Store`] for [`MongoStore`]: each method calls the operation with no session.

use std::sync::atomic::Ordering;

use bson::{doc, Bson, Document, RawDocumentBuf};
use mongodb::error::ErrorKind;
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

use super::errors::refused_or_server;
use super::ops::driver_find_options;
use super::{map_err, server_code, MongoStore, MongoTxn, NO, UNKNOWN, YES};
use pattern_store::query::{Filter, FindOptions, IndexSpec, Path, Schema, Update};
use pattern_store::{ChangeFeed, Extensions, Store, Watch};
use pattern_store::{Error, Result};

impl MongoStore {
    /// [`Store::write_batch`] of updates the contract accepts, each on `colls[n]`: one
    /// `bulkWrite`; on one collection, as runs when they are long (`runs.rs`).
    async fn bulk_write_batch(
        &self,
        colls: &[&str],
        ops: Vec<(usize, pattern_store::WriteOp)>,
    ) -> pattern_store::BatchOutcome {
        // A server before MongoDB 8.0 has no `bulkWrite`: one write at a time there. Until
        // the first reply says, the batch is kept to be sent that way.
        // One collection's long runs of one kind: a command each (before any `bulkWrite`,
        // which a server before 8.0 lacks).
        if colls.len() == 1 && super::runs::as_runs(&ops) {
            return super::runs::write_runs(self, colls, ops).await;
        }
        let bulk = self.bulk_write.load(Ordering::Relaxed);
        if bulk == NO {
            return one_by_one(self, colls, ops).await;
        }
        let total = ops.len();
        let ops_again = (bulk == UNKNOWN).then(|| ops.clone());
        let ns_of: Vec<usize> = ops.iter().map(|(ns, _)| *ns).collect();
        let ops: Vec<Bson> = ops
            .into_iter()
            .map(|(ns, op)| {
                Bson::Document(match op {
                    pattern_store::WriteOp::Insert(doc) => {
                        bson::doc! {"insert": ns as i32, "document": doc}
                    }
                    pattern_store::WriteOp::Update {
                        filter,
                        update,
                        upsert,
                    } => {
                        let mut op = bulk_update(ns, &filter, *update, false);
                        op.insert("upsert", upsert);
                        op
                    }
                    pattern_store::WriteOp::UpdateMany { filter, update } => {
                        bulk_update(ns, &filter, *update, true)
                    }
                })
            })
            .collect();
        let ns_info: Vec<Bson> = (colls.iter())
            .map(|c| Bson::Document(doc! {"ns": format!("{}.{}", self.db.name(), c)}))
            .collect();
        let coll = colls[0];
        let command = bson::doc! {
            "bulkWrite": 1,
            "ops": ops,
            "nsInfo": ns_info,
            "ordered": true,
            "errorsOnly": true,
        };
        let admin = self.db.client().database("admin");
        let reply = match admin.run_command(self.with_write_concern(command)).await {
            Ok(reply) => reply,
            // CommandNotFound: a server without client bulk writes (before 8.0). Nothing was
            // written: the same batch one write at a time, and from now on.
            Err(e) if matches!(&*e.kind, ErrorKind::Command(c) if c.code == 59) => {
                self.bulk_write.store(NO, Ordering::Relaxed);
                return match ops_again {
                    Some(ops) => one_by_one(self, colls, ops).await,
                    None => pattern_store::BatchOutcome {
                        applied: 0,
                        error: Some(map_err(coll, e)),
                    },
                };
            }
            Err(e) => {
                return pattern_store::BatchOutcome {
                    applied: 0,
                    error: Some(map_err(coll, e)),
                }
            }
        };
        self.bulk_write.store(YES, Ordering::Relaxed);
        pattern_store::observe::command(total as u64);
        let first_error = reply
            .get_document("cursor")
            .ok()
            .and_then(|c| c.get_array("firstBatch").ok())
            .and_then(|b| b.iter().find_map(|e| e.as_document().cloned()));
        match first_error {
            None => match reply.get_document("writeConcernError") {
                Ok(wce) => pattern_store::BatchOutcome {
                    applied: total,
                    error: Some(Error::Server {
                        message: format!("write concern error: {wce}"),
                        source: None,
                    }),
                },
                Err(_) => pattern_store::BatchOutcome {
                    applied: total,
                    error: None,
                },
            },
            Some(e) => {
                let idx = e
                    .get("idx")
                    .and_then(pattern_store::codec::as_int)
                    .unwrap_or(0);
                let code = e
                    .get("code")
                    .and_then(pattern_store::codec::as_int)
                    .unwrap_or(0);
                let message = e.get_str("errmsg").unwrap_or("").to_owned();
                let at = usize::try_from(idx).unwrap_or(0);
                let coll = ns_of.get(at).map_or(coll, |ns| colls[*ns]);
                let error = refused_or_server(coll, i32::try_from(code).unwrap_or(0), &message);
                pattern_store::BatchOutcome {
                    applied: usize::try_from(idx).unwrap_or(0),
                    error: Some(error),
                }
            }
        }
    }

    /// Ordered writes, each on `colls[n]`: those before the first update the contract refuses
    /// in one `bulkWrite`, then that refusal.
    async fn write_batch_in(
        &self,
        colls: &[&str],
        mut ops: Vec<(usize, pattern_store::WriteOp)>,
    ) -> pattern_store::BatchOutcome {
        let refused = ops.iter().enumerate().find_map(|(i, (_, op))| match op {
            pattern_store::WriteOp::Update { update, .. }
            | pattern_store::WriteOp::UpdateMany { update, .. } => {
                update.check().err().map(|e| (i, e))
            }
            pattern_store::WriteOp::Insert(_) => None,
        });
        let Some((at, refusal)) = refused else {
            return self.bulk_write_batch(colls, ops).await;
        };
        ops.truncate(at);
        let done = match ops.is_empty() {
            true => pattern_store::BatchOutcome {
                applied: 0,
                error: None,
            },
            false => self.bulk_write_batch(colls, ops).await,
        };
        match done.error {
            Some(_) => done,
            None => pattern_store::BatchOutcome {
                applied: at,
                error: Some(refusal),
            },
        }
    }

    /// `collMod` with `options`; `create` with them when the collection does not exist (then
    /// `collMod` again, should another client have created it in between).
    async fn set_options(&self, coll: &str, options: Document) -> Result<()> {
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
}

/// `$call` with `$store` the store itself and `$s` no session (the store's own, implicit).
macro_rules! on_store {
    ($self:ident, |$store:ident, $s:ident| $call:expr) => {{
        let ($store, $s) = ($self, None);
        $call.await
    }};
}

impl Store for MongoStore {
    session_ops!(on_store);

    /// One `bulkWrite` (MongoDB 8.0; before it, one write at a time).
    async fn write_across(
        &self,
        writes: Vec<(&str, pattern_store::WriteOp)>,
        comment: Option<&str>,
    ) -> Result<Vec<u64>> {
        if self.bulk_write.load(Ordering::Relaxed) != NO {
            if let Some(matched) = self.write_across_in(None, &writes, comment).await? {
                return Ok(matched);
            }
        }
        pattern_store::write_across_one_by_one(self, writes).await
    }

    fn system_name(&self) -> &'static str {
        "mongodb"
    }

    fn database_name(&self) -> Option<&str> {
        Some(self.db.name())
    }

    /// Asks the server once (`hello`) and remembers: a `mongos` answers `msg: "isdbgrid"`.
    async fn routes_by_shard_key(&self) -> Result<bool> {
        match self.routed.load(Ordering::Relaxed) {
            YES => return Ok(true),
            NO => return Ok(false),
            _ => {}
        }
        let hello =
            (self.db.run_command(doc! {"hello": 1}).await).map_err(|e| map_err("(hello)", e))?;
        let mongos = hello.get_str("msg") == Ok("isdbgrid");
        let known = if mongos { YES } else { NO };
        self.routed.store(known, Ordering::Relaxed);
        Ok(mongos)
    }

    /// One `aggregate`: the find's stages, then `$unionWith` the other collection's document.
    async fn find_raw_then(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
        then_coll: &str,
        then_filter: &Filter,
    ) -> Result<(Vec<RawDocumentBuf>, Option<Document>)> {
        self.find_raw_then_in(None, coll, filter, opts, then_coll, then_filter)
            .await
    }

    /// Both writes in one ordered client `bulkWrite` (MongoDB 8.0; before it, one after the
    /// other).
    async fn push_open_then(
        &self,
        push: &pattern_store::OpenPush<'_>,
        items: &mut Vec<Bson>,
        then_coll: &str,
        then_filter: &Filter,
        then: &mut Update,
    ) -> Result<(bool, Result<()>)> {
        self.push_open_then_bulk(push, items, then_coll, then_filter, then)
            .await
    }

    /// One `bulkWrite` command (MongoDB 8.0's client bulk write, sent to `admin`), ordered,
    /// errors only: the reply says how far it got. An update the contract refuses
    /// ([`Update::check`](pattern_store::query::Update::check)) is refused where it stands, as
    /// one write at a time would: the writes before it are sent, none after.
    async fn write_batch(
        &self,
        coll: &str,
        ops: Vec<pattern_store::WriteOp>,
    ) -> pattern_store::BatchOutcome {
        self.write_batch_in(&[coll], ops.into_iter().map(|op| (0, op)).collect())
            .await
    }

    /// One `bulkWrite` command over the collections, never as runs: a write then applies
    /// exactly when those before it did (a series' roll-up after its key's writes), even should
    /// this process die once it is sent.
    async fn write_batch_over(
        &self,
        colls: &[&str],
        ops: Vec<(usize, pattern_store::WriteOp)>,
    ) -> pattern_store::BatchOutcome {
        match colls {
            [coll] => {
                let ops = ops.into_iter().map(|(_, op)| op).collect();
                self.write_batch(coll, ops).await
            }
            _ => self.write_batch_in(colls, ops).await,
        }
    }

    /// One `aggregate`.
    async fn first_per(
        &self,
        coll: &str,
        filter: &Filter,
        by: &str,
        sort: &[(Path, i32)],
        projection: &[Path],
    ) -> Result<Vec<Document>> {
        (self.first_per_in(None, coll, filter, by, sort, projection)).await
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
        cursor_stream(coll, open).boxed()
    }

    /// One `aggregate`: `$sample` (`allowDiskUse`), then a `getMore` per batch; a document
    /// the pseudo-random cursor returns twice is passed on once (its `_id` remembered).
    fn sample<'a>(
        &'a self,
        coll: &'a str,
        size: u32,
        batch: u32,
        comment: &'static str,
    ) -> futures::stream::BoxStream<'a, Result<RawDocumentBuf>> {
        use futures::StreamExt;
        let open = async move {
            let pipeline = [doc! {"$sample": {"size": i64::from(size)}}];
            (self.db.collection::<Document>(coll).aggregate(pipeline))
                .with_type::<RawDocumentBuf>()
                .batch_size(batch.max(1))
                .allow_disk_use(true)
                .comment(comment)
                .await
                .map_err(|e| map_err(coll, e))
        };
        let mut seen = std::collections::HashSet::<Vec<u8>>::new();
        cursor_stream(coll, open)
            .filter(move |d| {
                // The `_id`'s bytes (type and value) tell two returns of one document apart.
                let first = match d {
                    Ok(d) => match d.get("_id") {
                        Ok(Some(id)) => seen.insert(id_bytes(id)),
                        _ => true,
                    },
                    Err(_) => true,
                };
                std::future::ready(first)
            })
            .boxed()
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

    /// `collMod` with the validator (`create` with it when the collection does not exist).
    async fn set_validator(&self, coll: &str, schema: &Schema) -> Result<()> {
        let options = doc! {
            "validator": {"$jsonSchema": schema.to_document()},
            "validationLevel": "moderate",
            "validationAction": "error",
        };
        self.set_options(coll, options).await
    }

    async fn watch(&self, watch: &Watch) -> Result<Box<dyn ChangeFeed>> {
        Ok(Box::new(crate::watch::open(self, watch).await?))
    }

    /// `collMod` with `changeStreamPreAndPostImages: {enabled: true}` (`create` with it when
    /// the collection does not exist).
    async fn keep_before_images(&self, coll: &str) -> Result<()> {
        let options = doc! {"changeStreamPreAndPostImages": {"enabled": true}};
        self.set_options(coll, options).await
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

/// An `_id`'s BSON type and bytes: equal for one document returned twice.
fn id_bytes(id: bson::RawBsonRef<'_>) -> Vec<u8> {
    let mut doc = bson::RawDocumentBuf::new();
    doc.append("_id", id.to_raw_bson());
    doc.into_bytes()
}

/// The documents of the cursor `open` gives, each error mapped for `coll`; `open`'s own error
/// as the one item.
fn cursor_stream<'a>(
    coll: &'a str,
    open: impl std::future::Future<Output = Result<mongodb::Cursor<RawDocumentBuf>>> + Send + 'a,
) -> impl futures::Stream<Item = Result<RawDocumentBuf>> + Send + 'a {
    use futures::StreamExt;
    futures::stream::once(open).flat_map(move |cursor| match cursor {
        Ok(c) => c
            .map(move |d| d.map_err(|e| map_err(coll, e)))
            .left_stream(),
        Err(e) => futures::stream::once(async move { Err(e) }).right_stream(),
    })
}

/// An update of a raw `bulkWrite` command's `ops`, on its first namespace (its values moved
/// into the command).
fn bulk_update(ns: usize, filter: &Filter, update: Update, multi: bool) -> Document {
    doc! {
        "update": ns as i32,
        "filter": filter.to_document(),
        "updateMods": super::ops::modifications_bson(update),
        "multi": multi,
    }
}

/// Ordered writes, each on `colls[n]`, one at a time: runs of one collection through
/// [`pattern_store::write_one_by_one`], stopping at the first that fails.
async fn one_by_one(
    store: &MongoStore,
    colls: &[&str],
    ops: Vec<(usize, pattern_store::WriteOp)>,
) -> pattern_store::BatchOutcome {
    let one_run = |ns: usize, run| pattern_store::write_one_by_one(store, colls[ns], run);
    pattern_store::write_runs_with(ops, one_run).await
}
