//! `write_batch` and `write_batch_over`: writes in order, stopping at the first refused one,
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

/// `write_batch_over`: writes over two collections in one order (each key's writes, then its
/// roll-up, as an ingest sends them), stopping at the first refused one, wherever it stands;
/// `applied` counts across the collections.
async fn a_batch_over_two_collections_stops_at_its_refused_write(store: AnyStore) {
    let colls = [C, ROLLS];
    // Per key: two inserts, then its upsert in the other collection.
    let batch = |keys: std::ops::Range<i32>| -> Vec<(usize, WriteOp)> {
        (keys.flat_map(|k| [(0, insert(2 * k)), (0, insert(2 * k + 1)), (1, bump(k))])).collect()
    };
    // Refused at key 3's second insert: keys 0 to 2 whole, key 3's first insert, no more.
    let mut ops = batch(0..6);
    ops[10] = (0, insert(0));
    let done = store.write_batch_over(&colls, ops).await;
    assert_eq!(done.applied, 10, "{:?}", done.error);
    assert!(duplicate(&done), "{:?}", done.error);
    assert_eq!(counts(&store, C).await.len(), 7);
    let want: Vec<(i32, i32)> = (0..3).map(|k| (k, 1)).collect();
    assert_eq!(counts(&store, ROLLS).await, want);
    // Refused at key 12's upsert (its `_id` taken by an insert): its inserts applied.
    let mut ops = batch(10..14);
    ops[8] = (1, insert(0));
    let done = store.write_batch_over(&colls, ops).await;
    assert_eq!(done.applied, 8, "{:?}", done.error);
    assert!(duplicate(&done), "{:?}", done.error);
    assert_eq!(counts(&store, C).await.len(), 13);
    assert_eq!(counts(&store, ROLLS).await.len(), 5);
}

on_both_stores!(
    untargeted: a_batch_stops_at_its_refused_write,
    a_batch_over_two_collections_stops_at_its_refused_write,
);

/// On MongoDB: one command per run when the batch is one run or its runs are long, one
/// `bulkWrite` when they are short, and for a batch over two collections (`write_batch_over`:
/// a write applies exactly when those before it did, whatever happens to this process once it
/// is sent).
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

    // Over two collections, long runs or not: one `bulkWrite`.
    let mut over: Vec<(usize, WriteOp)> = (500..520).map(|id| (0, insert(id))).collect();
    over.extend((0..20).map(|id| (1, bump(id))));
    log.clear();
    let done = store.write_batch_over(&[C, ROLLS], over).await;
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(done.applied, 40);
    assert_eq!(log.names(), ["bulkWrite"]);
    // Over one collection: as `write_batch`.
    let alone: Vec<(usize, WriteOp)> = (600..620).map(|id| (0, insert(id))).collect();
    log.clear();
    let done = store.write_batch_over(&[C], alone).await;
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
    let unmet = |o: &store::BatchOutcome| {
        let wc = |m: &String| m.contains("write concern");
        matches!(&o.error, Some(store::Error::Server { message, .. }) if wc(message))
    };
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
