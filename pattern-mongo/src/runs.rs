//! An ordered batch sent as runs: writes of one collection and kind that stand together
//! (inserts; updates of one document; updates of many) go in one `insert` or `update` command,
//! the runs in order, stopping at the first write the server refuses.
//!
//! [`Store::write_batch`](pattern_store::Store::write_batch) sends a batch this way when it is
//! one run or its runs are long ([`RUN_LEN`] writes or more on average), and in one client
//! `bulkWrite` otherwise: each command is a round trip. On the test server a `bulkWrite`
//! inserts about three times slower than the `insert` command, 1,000 bucket documents in 158 ms
//! against 57 ms (test server, T29), where a command more costs about 0.25 ms.
//!
//! Never a batch over two collections
//! ([`Store::write_batch_over`](pattern_store::Store::write_batch_over): a series' writes, each
//! key's roll-up after them). In one command the roll-ups apply exactly when the writes did,
//! even should the process die once it is sent; as runs, a process dying between the commands
//! would leave the roll-ups behind their items.

use bson::{doc, Bson, Document};

use super::errors::refused_or_server;
use super::{map_err, MongoStore};
use pattern_store::query::{Filter, Update};
use pattern_store::{BatchOutcome, Error, WriteOp};

/// Writes a run must hold on average for the batch to go as runs.
pub(crate) const RUN_LEN: usize = 8;

/// The kind of a write: writes of one kind and collection share a command.
fn kind(op: &WriteOp) -> u8 {
    match op {
        WriteOp::Insert(_) => 0,
        WriteOp::Update { .. } => 1,
        WriteOp::UpdateMany { .. } => 2,
    }
}

/// Whether `ops` (each on collection `n`) go as runs: one run (one command either way), or
/// few runs for their writes.
pub(crate) fn as_runs(ops: &[(usize, WriteOp)]) -> bool {
    let runs = 1
        + (ops.windows(2))
            .filter(|w| w[0].0 != w[1].0 || kind(&w[0].1) != kind(&w[1].1))
            .count();
    runs == 1 || ops.len() >= RUN_LEN * runs
}

/// One update of an `update` command's `updates`.
fn update_entry(filter: &Filter, update: Update, upsert: bool, multi: bool) -> Bson {
    let u = super::ops::modifications_bson(update);
    Bson::Document(doc! {"q": filter.to_document(), "u": u, "upsert": upsert, "multi": multi})
}

/// The command of one run on `coll` (its writes of one kind).
fn command(coll: &str, run: Vec<WriteOp>) -> Document {
    let mut docs = Vec::new();
    let mut updates = Vec::new();
    for op in run {
        match op {
            WriteOp::Insert(d) => docs.push(Bson::Document(d)),
            WriteOp::Update {
                filter,
                update,
                upsert,
            } => updates.push(update_entry(&filter, *update, upsert, false)),
            WriteOp::UpdateMany { filter, update } => {
                updates.push(update_entry(&filter, *update, false, true))
            }
        }
    }
    match docs.is_empty() {
        false => doc! {"insert": coll, "documents": docs, "ordered": true},
        true => doc! {"update": coll, "updates": updates, "ordered": true},
    }
}

/// `ops`, each on `colls[n]`, as runs. `applied` counts the writes of the runs that applied
/// and those before the refused write of the last; a command that failed as a whole (the
/// connection lost) leaves its own run's fate unknown, and counts none of it.
pub(crate) async fn write_runs(
    store: &MongoStore,
    colls: &[&str],
    ops: Vec<(usize, WriteOp)>,
) -> BatchOutcome {
    let mut applied = 0;
    let mut ops = ops.into_iter().peekable();
    while let Some((ns, first)) = ops.next() {
        let k = kind(&first);
        let mut run = vec![first];
        while let Some((_, op)) = ops.next_if(|(n, op)| *n == ns && kind(op) == k) {
            run.push(op);
        }
        let (coll, len) = (colls[ns], run.len());
        let command = store.with_write_concern(command(coll, run));
        let reply = match store.db.run_command(command).await {
            Ok(reply) => reply,
            Err(e) => {
                return BatchOutcome {
                    applied,
                    error: Some(map_err(coll, e)),
                }
            }
        };
        pattern_store::observe::command(len as u64);
        let refused = (reply.get_array("writeErrors").ok())
            .and_then(|errors| errors.iter().find_map(Bson::as_document));
        if let Some(e) = refused {
            let int = |f: &str| e.get(f).and_then(pattern_store::codec::as_int).unwrap_or(0);
            let message = e.get_str("errmsg").unwrap_or("");
            let code = i32::try_from(int("code")).unwrap_or(0);
            return BatchOutcome {
                applied: applied + usize::try_from(int("index")).unwrap_or(0),
                error: Some(refused_or_server(coll, code, message)),
            };
        }
        applied += len;
        if let Ok(wce) = reply.get_document("writeConcernError") {
            return BatchOutcome {
                applied,
                error: Some(Error::Server {
                    message: format!("write concern error: {wce}"),
                    source: None,
                }),
            };
        }
    }
    BatchOutcome {
        applied,
        error: None,
    }
}
