//! [`Store::push_open_then`] for [`MongoStore`]: the push and its second write (a bucket
//! series' roll-up, in the roll-ups' collection) in one ordered client `bulkWrite` (MongoDB
//! 8.0), retryable as the driver's single writes are.

use std::sync::atomic::Ordering;

use bson::Bson;
use mongodb::error::{ErrorKind, PartialBulkWriteResult};
use mongodb::options::{UpdateOneModel, WriteModel};
use mongodb::Namespace;

use super::errors::refused_or_server;
use super::{map_err, MongoStore, NO, YES};
use pattern_store::query::{Filter, Update};
use pattern_store::{push_then_apart, OpenPush};
use pattern_store::{Error, Result};

impl MongoStore {
    pub(super) async fn push_open_then_bulk(
        &self,
        push: &OpenPush<'_>,
        items: &mut Vec<Bson>,
        then_coll: &str,
        then_filter: &Filter,
        then: &mut Update,
    ) -> Result<(bool, Result<()>)> {
        let coll = push.collection;
        if self.bulk_write.load(Ordering::Relaxed) == NO {
            return push_then_apart(self, push, items, then_coll, then_filter, then).await;
        }
        // The push's upsert, as `push_open` sends it (no sort: the open index both filters
        // and orders, see `Store::update_first`).
        let (open, update) = (push.filter(), push.upsert(std::mem::take(items)));
        let restore = |items: &mut Vec<Bson>, mut update: Update| {
            *items = std::mem::take(&mut update.push[0].1);
        };
        let model = |coll: &str, filter: &Filter, update: &Update| -> WriteModel {
            UpdateOneModel::builder()
                .namespace(Namespace::new(self.db.name(), coll))
                .filter(filter.to_document())
                .update(update.to_document())
                .upsert(true)
                .build()
                .into()
        };
        let models = vec![
            model(coll, &open, &update),
            model(then_coll, then_filter, then),
        ];
        let mut action = self.db.client().bulk_write(models).ordered(true);
        // The database handle's write concern (the client's bulk write takes the client's).
        if let Some(w) = self.db.write_concern() {
            action = action.write_concern(w.clone());
        }
        let sent = action.verbose_results().await;
        let opened_in = |updates: &std::collections::HashMap<
            usize,
            mongodb::results::UpdateResult,
        >| { updates.get(&0).is_some_and(|u| u.upserted_id.is_some()) };
        match sent {
            Ok(result) => {
                self.bulk_write.store(YES, Ordering::Relaxed);
                pattern_store::observe::command(2);
                Ok((opened_in(&result.update_results), Ok(())))
            }
            Err(e) => {
                let bulk = match &*e.kind {
                    ErrorKind::BulkWrite(bulk) => bulk.clone(),
                    // A server before 8.0: the two writes apart, from now on. Nothing was sent.
                    ErrorKind::IncompatibleServer { .. } => {
                        self.bulk_write.store(NO, Ordering::Relaxed);
                        restore(items, update);
                        return push_then_apart(self, push, items, then_coll, then_filter, then)
                            .await;
                    }
                    _ => {
                        restore(items, update);
                        return Err(map_err(coll, e));
                    }
                };
                let refused = |i: usize| {
                    let coll = if i == 0 { coll } else { then_coll };
                    (bulk.write_errors.get(&i)).map(|w| refused_or_server(coll, w.code, &w.message))
                };
                if let Some(e) = refused(0) {
                    // The push was refused (ordered: the second write was not sent either).
                    restore(items, update);
                    return Err(e);
                }
                let opened = match &bulk.partial_result {
                    Some(PartialBulkWriteResult::Verbose(r)) => opened_in(&r.update_results),
                    _ => false,
                };
                let outcome = match (refused(1), bulk.write_concern_errors.first()) {
                    (Some(e), _) => Err(e),
                    (None, Some(wce)) => Err(Error::Server {
                        message: format!("write concern error: {}", wce.message),
                        source: None,
                    }),
                    (None, None) => Ok(()),
                };
                Ok((opened, outcome))
            }
        }
    }
}
