//! `write_batch` and `write_batch_then`: writes in order, stopping at the first refused one,
//! the same on both stores whatever the batch's shape. On MongoDB a batch on one collection
//! goes as one `insert` or `update` command per run of one kind when it is one run or its runs
//! are long, and as one `bulkWrite` otherwise (`pattern-mongo/src/runs.rs`, test server T29);
//! `applied` counts the same writes either way, across the commands. A batch over two
//! collections is one `bulkWrite` always.

use super::*;
use pattern_core::store;
use pattern_core::store::WriteOp;

const ROLLS: &str = "rolls";

fn insert(id: i32) -> WriteOp {
    WriteOp::Insert(doc! {"_id": id, "n": 0})
}

/// An upsert adding 1 to `n`.
fn bump(id: i32) -> WriteOp {
    WriteOp::Update {
        filter: Filter::eq("_id", id),
        update: Box::new(inc("n", 1)),
        upsert: true,
    }
}

/// `(_id, n)` of every document of `coll`, by `_id`.
async fn counts(store: &AnyStore, coll: &str) -> Vec<(i32, i32)> {
    let mut all: Vec<(i32, i32)> = documents(store, coll)
        .await
        .iter()
        .map(|d| (d.get_i32("_id").unwrap(), d.get_i32("n").unwrap()))
        .collect();
    all.sort_unstable();
    all
}

fn duplicate(outcome: &store::BatchOutcome) -> bool {
    matches!(outcome.error, Some(store::Error::DuplicateKey { .. }))
}

/// Long runs (16 upserts, 16 inserts, 16 upserts), short runs (an insert and an upsert in
/// turn), and one run: each stops at the insert whose `_id` is taken, the writes before it
/// applied, none after it.
async fn a_batch_stops_at_its_refused_write(store: AnyStore) {
    let mut batch: Vec<WriteOp> = (0..16).map(bump).collect();
    batch.extend((100..116).map(insert));
    batch[16 + 7] = insert(3); // upserted by the first run
    batch.extend((200..216).map(bump));
    let done = store.write_batch(C, batch).await;
    assert_eq!(done.applied, 23, "{:?}", done.error);
    assert!(duplicate(&done), "{:?}", done.error);
    let mut want: Vec<(i32, i32)> = (0..16).map(|id| (id, 1)).collect();
    want.extend((100..107).map(|id| (id, 0)));
    assert_eq!(counts(&store, C).await, want);

    let short = vec![
        insert(300),
        bump(300),
        insert(301),
        bump(301),
        insert(300),
        bump(302),
    ];
    let done = store.write_batch(C, short).await;
    assert_eq!(done.applied, 4, "{:?}", done.error);
    assert!(duplicate(&done), "{:?}", done.error);
    want.extend([(300, 1), (301, 1)]);
    assert_eq!(counts(&store, C).await, want);

    let mut one_run: Vec<WriteOp> = (400..420).map(insert).collect();
    one_run[11] = insert(401);
    let done = store.write_batch(C, one_run).await;
    assert_eq!(done.applied, 11, "{:?}", done.error);
    assert!(duplicate(&done), "{:?}", done.error);
    want.extend((400..411).map(|id| (id, 0)));
    assert_eq!(counts(&store, C).await, want);
}

/// `write_batch_then`: the second batch runs only once the first applied whole, and `applied`
/// counts across both.
async fn a_batch_then_another_stops_at_its_refused_write(store: AnyStore) {
    // Refused in the first batch: nothing of the second.
    let mut first: Vec<WriteOp> = (0..20).map(insert).collect();
    first[10] = insert(2);
    let then: Vec<WriteOp> = (0..20).map(bump).collect();
    let done = store.write_batch_then(C, first, ROLLS, then).await;
    assert_eq!(done.applied, 10, "{:?}", done.error);
    assert!(duplicate(&done), "{:?}", done.error);
    assert_eq!(counts(&store, ROLLS).await, []);
    // Refused in the second: the first whole, the second up to its refused write.
    let first: Vec<WriteOp> = (100..120).map(insert).collect();
    let mut then: Vec<WriteOp> = (0..20).map(insert).collect();
    then[12] = insert(2);
    let done = store.write_batch_then(C, first, ROLLS, then).await;
    assert_eq!(done.applied, 32, "{:?}", done.error);
    assert!(duplicate(&done), "{:?}", done.error);
    assert_eq!(
        counts(&store, ROLLS).await,
        (0..12).map(|id| (id, 0)).collect::<Vec<_>>()
    );
    assert_eq!(counts(&store, C).await.len(), 30);
}

on_both_stores!(
    untargeted: a_batch_stops_at_its_refused_write,
    a_batch_then_another_stops_at_its_refused_write,
);

/// On MongoDB: one command per run when the batch is one run or its runs are long, one
/// `bulkWrite` when they are short, and for a batch over two collections (`write_batch_then`:
/// the second part applies exactly when the first did, whatever happens to this process once
/// it is sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_mongo_a_command_per_long_run() {
    let (store, log) = pattern_tests::counted_mongo_store("batch_commands").await;
    let mut batch: Vec<WriteOp> = (0..16).map(bump).collect();
    batch.extend((100..116).map(insert));
    batch.extend((0..16).map(bump));
    log.clear();
    assert!(store.write_batch(C, batch).await.error.is_none());
    assert_eq!(log.names(), ["update", "insert", "update"]);

    let short = vec![insert(300), bump(300), insert(301), bump(301)];
    log.clear();
    assert!(store.write_batch(C, short).await.error.is_none());
    assert_eq!(log.names(), ["bulkWrite"]);

    log.clear();
    let one: Vec<WriteOp> = (400..403).map(insert).collect();
    assert!(store.write_batch(C, one).await.error.is_none());
    assert_eq!(log.names(), ["insert"]);

    let first: Vec<WriteOp> = (500..520).map(insert).collect();
    let then: Vec<WriteOp> = (0..20).map(bump).collect();
    log.clear();
    let done = store.write_batch_then(C, first, ROLLS, then).await;
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(done.applied, 40);
    assert_eq!(log.names(), ["bulkWrite"]);
    let alone: Vec<WriteOp> = (600..620).map(insert).collect();
    log.clear();
    let done = store.write_batch_then(C, alone, ROLLS, Vec::new()).await;
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(log.names(), ["insert"]);
    let _ = store.database().drop().await;
}

/// On MongoDB: a batch takes the write concern of the database handle the store was made
/// with, whichever way it is sent (the driver adds it to its own write commands only). A
/// handle asking for more nodes than any deployment has: the writes apply, and the batch
/// reports the write concern's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_mongo_a_batch_takes_the_handles_write_concern() {
    use mongodb::options::{Acknowledgment, DatabaseOptions, WriteConcern};
    let (store, _log) = pattern_tests::counted_mongo_store("batch_write_concern").await;
    let concern = WriteConcern::builder().w(Acknowledgment::Nodes(50)).build();
    let opts = DatabaseOptions::builder().write_concern(concern).build();
    let db = store.database();
    let strict =
        pattern_core::store::MongoStore::new(db.client().database_with_options(db.name(), opts));
    let unmet = |o: &store::BatchOutcome| matches!(&o.error, Some(store::Error::Server { message, .. }) if message.contains("write concern"));
    // One run: one `insert`.
    let done = strict.write_batch(C, (0..20).map(insert).collect()).await;
    assert!(unmet(&done), "{:?}", done.error);
    assert_eq!(done.applied, 20);
    // Short runs: one `bulkWrite`.
    let short = vec![insert(100), bump(100), insert(101), bump(101)];
    let done = strict.write_batch(C, short).await;
    assert!(unmet(&done), "{:?}", done.error);
    assert_eq!(done.applied, 4);
    let _ = db.drop().await;
}
