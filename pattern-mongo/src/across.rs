//! [`Store::write_across`](pattern_store::Store::write_across) for [`MongoStore`] and its
//! transactions: the writes, each on its own collection, in one ordered client `bulkWrite`
//! (MongoDB 8.0), in the transaction's session when there is one.

use std::sync::atomic::Ordering;

use mongodb::error::ErrorKind;
use mongodb::options::{InsertOneModel, UpdateManyModel, UpdateOneModel, WriteModel};
use mongodb::Namespace;

use super::errors::refused_or_server;
use super::ops::modifications;
use super::{map_err, MongoStore, Session, NO, YES};
use pattern_store::{Error, Result, WriteOp};

/// MongoDB's WriteConflict.
const WRITE_CONFLICT: i32 = 112;

impl MongoStore {
    /// The writes in one `bulkWrite` in `session`; `Ok(None)` when the server has none (before
    /// MongoDB 8.0: nothing was sent, and the store remembers it).
    pub(crate) async fn write_across_in(
        &self,
        session: Session<'_>,
        writes: &[(&str, WriteOp)],
        comment: Option<&str>,
    ) -> Result<Option<Vec<u64>>> {
        if writes.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let db = self.db.name();
        let mut models: Vec<WriteModel> = Vec::with_capacity(writes.len());
        for (coll, op) in writes {
            let ns = Namespace::new(db, *coll);
            models.push(match op {
                WriteOp::Insert(doc) => {
                    pattern_store::codec::size::check_document_size(coll, doc)?;
                    InsertOneModel::builder()
                        .namespace(ns)
                        .document(doc.clone())
                        .build()
                        .into()
                }
                WriteOp::Update {
                    filter,
                    update,
                    upsert,
                } => {
                    update.check()?;
                    pattern_store::observe::query(coll, "update", || filter.to_document());
                    UpdateOneModel::builder()
                        .namespace(ns)
                        .filter(filter.to_document())
                        .update(modifications(update))
                        .upsert(*upsert)
                        .build()
                        .into()
                }
                WriteOp::UpdateMany { filter, update } => {
                    update.check()?;
                    pattern_store::observe::query(coll, "update", || filter.to_document());
                    UpdateManyModel::builder()
                        .namespace(ns)
                        .filter(filter.to_document())
                        .update(modifications(update))
                        .build()
                        .into()
                }
            });
        }
        let client = self.db.client();
        let mut action = client.bulk_write(models).ordered(true);
        if let Some(c) = comment {
            action = action.comment(c);
        }
        // The database handle's write concern (the client's bulk write takes the client's);
        // a transaction's writes take the transaction's.
        if let (None, Some(w)) = (&session, self.db.write_concern()) {
            action = action.write_concern(w.clone());
        }
        let action = action.verbose_results();
        let sent = in_session!(action, session).await;
        let result = match sent {
            Ok(result) => result,
            Err(e) => {
                let first = writes[0].0;
                return match &*e.kind {
                    // A server before 8.0: checked before anything is sent.
                    ErrorKind::IncompatibleServer { .. } => {
                        self.bulk_write.store(NO, Ordering::Relaxed);
                        Ok(None)
                    }
                    // A write conflict in a transaction (labelled as the driver's single
                    // writes are): the transaction is run again.
                    _ if e.contains_label(mongodb::error::TRANSIENT_TRANSACTION_ERROR) => {
                        Err(map_err(first, e))
                    }
                    ErrorKind::BulkWrite(bulk) => {
                        let (i, w) = (bulk.write_errors.iter())
                            .min_by_key(|(i, _)| **i)
                            .map(|(i, w)| (*i, w.clone()))
                            .ok_or_else(|| map_err(first, e.clone()))?;
                        let coll = writes.get(i).map_or(first, |w| w.0);
                        if w.code == WRITE_CONFLICT {
                            return Err(Error::WriteConflict {
                                message: w.message.clone(),
                                source: Some(Box::new(e)),
                            });
                        }
                        Err(refused_or_server(coll, w.code, &w.message))
                    }
                    _ => Err(map_err(first, e)),
                };
            }
        };
        self.bulk_write.store(YES, Ordering::Relaxed);
        let mut matched = Vec::with_capacity(writes.len());
        let mut written = 0;
        for (i, (_, op)) in writes.iter().enumerate() {
            let n = match op {
                WriteOp::Insert(_) => u64::from(result.insert_results.contains_key(&i)),
                // An upsert that inserted: 1 (the reply's count includes it already, as
                // MongoDB's `n` does).
                _ => result.update_results.get(&i).map_or(0, |u| {
                    written += u.modified_count + u64::from(u.upserted_id.is_some());
                    match u.upserted_id {
                        Some(_) => 1,
                        None => u.matched_count,
                    }
                }),
            };
            if matches!(op, WriteOp::Insert(_)) {
                written += n;
            }
            matched.push(n);
        }
        pattern_store::observe::command(written);
        Ok(Some(matched))
    }
}
