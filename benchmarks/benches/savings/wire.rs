//! What the server sends back, as a monitored client sees it.

use std::sync::{Arc, Mutex};

use bson::Document;
use mongodb::event::command::CommandEvent;
use pattern_core::store::MongoStore;

/// What the server sent back for one operation.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Wire {
    pub(crate) round_trips: usize,
    pub(crate) documents: usize,
    pub(crate) bytes: usize,
}

/// The replies a monitored client received, summed.
#[derive(Clone, Default)]
pub(crate) struct WireLog(Arc<Mutex<Wire>>);

impl WireLog {
    fn record(&self, reply: &Document) {
        let cursor = reply.get_document("cursor").ok();
        let batch = cursor.and_then(|c| {
            c.get_array("firstBatch")
                .or_else(|_| c.get_array("nextBatch"))
                .ok()
        });
        let mut w = self.0.lock().unwrap();
        w.round_trips += 1;
        w.documents += batch.map_or(0, Vec::len);
        w.bytes += bson::to_vec(reply).map_or(0, |v| v.len());
    }
    pub(crate) fn take(&self) -> Wire {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// A store on `db` whose client reports every reply to `log` (the shared command monitor).
pub(crate) async fn monitored_store(db: &str, log: WireLog) -> MongoStore {
    let mut opts = pattern_tests::client_options().await;
    pattern_tests::monitor(&mut opts, move |ev| {
        if let CommandEvent::Succeeded(s) = ev {
            let data = matches!(
                s.command_name.as_str(),
                "find" | "getMore" | "aggregate" | "findAndModify" | "count"
            );
            if data {
                log.record(&s.reply);
            }
        }
    });
    MongoStore::with_options(opts, db).expect("client")
}
