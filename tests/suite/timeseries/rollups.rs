//! Roll-ups (`#[bucket(rollup)]`), on both stores: one document per key keeps the summary of
//! its whole history, through pushes, `push_many` and ingest; a whole-history `summary` reads
//! it and agrees with the items; no series read sees it; a collection that held buckets
//! before is not trusted until `backfill` recomputes every roll-up, and `verify` reports a
//! roll-up that drifted from its buckets; an ingest or a `push_many` killed anywhere leaves them
//! exact. On MongoDB: a push with its roll-up is one command, a whole-history summary one
//! `find`.

use super::*;

use bson::Bson;
use pattern_core::store::query::{Filter, Update};
use pattern_core::store::Error as StoreError;
use pattern_tests::recording_mongo_store;

/// [`Trades`] with roll-ups, in its own collection.
struct Rolled;
impl Bucket for Rolled {
    type Key = i64;
    type Item = Trade;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        collection: "rolled",
        keeps: Keeps {
            rollup: Some("rolled.rollups"),
            ..Trades::SPEC.keeps
        },
        ..Trades::SPEC
    };
    fn item_millis(t: &Trade) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

/// The same collection written by a version without roll-ups.
struct Unrolled;
impl Bucket for Unrolled {
    type Key = i64;
    type Item = Trade;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        keeps: Keeps {
            rollup: None,
            ..Rolled::SPEC.keeps
        },
        ..Rolled::SPEC
    };
    fn item_millis(t: &Trade) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

/// Writes `n` trades for each of keys 0..3, every way there is: one at a time, several at a
/// time, by ingest (keys interleaved). Returns each key's items.
async fn write_all<B: Bucket<Key = i64, Item = Trade>>(
    store: &AnyStore,
    rng: &mut Lcg,
    n: i64,
) -> BTreeMap<i64, Vec<Trade>> {
    let mut all: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    let mut next = 0;
    let mut make = |rng: &mut Lcg, key: i64, all: &mut BTreeMap<i64, Vec<Trade>>| {
        let t = trade(rng, next);
        next += 1;
        all.entry(key).or_default().push(t.clone());
        t
    };
    for round in 0..n / 10 {
        for key in 0..3 {
            match round % 3 {
                0 => {
                    for _ in 0..10 {
                        let t = make(rng, key, &mut all);
                        bucket::push::<B, _, _>(store, &key, &t).await.unwrap();
                    }
                }
                1 => {
                    let ts: Vec<Trade> = (0..10).map(|_| make(rng, key, &mut all)).collect();
                    bucket::push_many::<B, _, _>(store, &key, &ts)
                        .await
                        .unwrap();
                }
                _ => {}
            }
        }
        if round % 3 == 2 {
            let batch: Vec<(i64, Trade)> = (0..30)
                .map(|i| {
                    let key = i % 3;
                    (key, make(rng, key, &mut all))
                })
                .collect();
            assert_eq!(bucket::ingest::<B, _>(store, &batch).await.unwrap(), 30);
        }
    }
    all
}

/// The roll-up documents of the collection, by key.
async fn rollups(store: &AnyStore) -> BTreeMap<i64, Document> {
    (documents(store, "rolled.rollups").await.into_iter())
        .map(|d| (d.get_i64("_id").unwrap(), d))
        .collect()
}

async fn assert_summaries(store: &AnyStore, all: &BTreeMap<i64, Vec<Trade>>) {
    for (key, items) in all {
        let got = bucket::summary::<Rolled, _, _>(store, key, ..)
            .await
            .unwrap();
        let want = expected(&items.iter().collect::<Vec<_>>());
        assert_eq!(observed(&got), want, "key {key}");
    }
}

/// Pushes, `push_many` and ingest keep one roll-up per key, exact; the whole-history summary
/// agrees with the items; reads of the series never see the roll-up; `verify` is clean.
async fn every_write_keeps_the_rollup(store: AnyStore) {
    let mut rng = Lcg(11);
    let all = write_all::<Rolled>(&store, &mut rng, 60).await;
    let docs = rollups(&store).await;
    assert_eq!(docs.keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
    for (key, d) in &docs {
        assert_eq!(
            as_int(d.get("rollup_items").unwrap()),
            Some(all[key].len() as i64)
        );
        let qty: i64 = all[key].iter().map(|t| t.qty).sum();
        assert_eq!(as_int(d.get("qty_sum").unwrap()), Some(qty), "key {key}");
        assert!(d.get("count").is_none(), "a roll-up has no count: {d:?}");
    }
    assert_summaries(&store, &all).await;
    for (key, items) in &all {
        let read: Vec<Trade> = bucket::items::<Rolled, _, _>(&store, key)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(read.len(), items.len(), "key {key}");
        let ranged: Vec<Trade> = bucket::range::<Rolled, _, _>(&store, key, ..)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(ranged.len(), items.len(), "key {key}");
        let mut want: Vec<i64> = items.iter().map(|t| t.id).collect();
        let mut got: Vec<i64> = read.iter().map(|t| t.id).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "key {key}");
        let latest = bucket::latest::<Rolled, _, _>(&store, key, 3)
            .await
            .unwrap();
        assert_eq!(latest.len(), 3);
    }
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// A collection that held buckets before roll-ups were kept: its summaries count the
/// buckets (exact) while a new roll-up counts only what came after; `verify` reports that
/// drift; `backfill` recomputes every roll-up and marks them trusted; from then on the roll-up
/// is read, exact, through more writes.
async fn backfill_makes_rollups_exact(store: AnyStore) {
    let mut rng = Lcg(12);
    let mut all = write_all::<Unrolled>(&store, &mut rng, 30).await;
    assert!(rollups(&store).await.is_empty());
    // A writer with roll-ups arrives: key 0's roll-up counts one item of many.
    let t = trade(&mut rng, 10_000);
    bucket::push::<Rolled, _, _>(&store, &0, &t).await.unwrap();
    all.get_mut(&0).unwrap().push(t);
    assert_summaries(&store, &all).await;
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    let drift: Vec<_> = (v.defects.iter())
        .filter(|d| matches!(d, pattern_core::adopt::LayoutDefect::RollupDrift { .. }))
        .collect();
    assert_eq!(drift.len(), 1, "{v:?}");
    match drift[0] {
        pattern_core::adopt::LayoutDefect::RollupDrift {
            rollup, buckets, ..
        } => assert_eq!((*rollup, *buckets), (1, all[&0].len() as u64)),
        _ => unreachable!(),
    }
    bucket::backfill::<Rolled, _>(&store).await.unwrap();
    let docs = rollups(&store).await;
    assert_eq!(docs.len(), 3);
    assert_summaries(&store, &all).await;
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
    // More writes, every way: still exact (now from the roll-ups).
    let more = write_all::<Rolled>(&store, &mut rng, 30).await;
    for (k, items) in more {
        all.entry(k).or_default().extend(items);
    }
    assert_summaries(&store, &all).await;
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// In one process (one store, its memo shared), a writer with roll-ups, then one without over
/// the same collection: the second's first write untrusts the roll-ups (they miss its items),
/// so the whole-history summary counts the buckets and stays exact; `backfill` makes the
/// roll-ups trusted again.
async fn a_writer_without_rollups_in_the_same_process_untrusts_them(store: AnyStore) {
    let mut rng = Lcg(13);
    let mut all = write_all::<Rolled>(&store, &mut rng, 30).await;
    assert_summaries(&store, &all).await;
    let more = write_all::<Unrolled>(&store, &mut rng, 30).await;
    for (k, items) in more {
        all.entry(k).or_default().extend(items);
    }
    assert_summaries(&store, &all).await;
    bucket::backfill::<Rolled, _>(&store).await.unwrap();
    assert_summaries(&store, &all).await;
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// A collection an older version wrote: its roll-ups among the buckets (`page: "rollup"`),
/// its mark listing their aggregates under `rollup`, none in the roll-ups' collection. This
/// version does not trust them: a whole-history summary counts the buckets (exact, though the
/// old roll-ups say 999), `verify` passes over them, and `backfill` writes each key's roll-up
/// in its collection and deletes the old ones; the summary then reads the new roll-up.
async fn rollups_an_older_version_kept_are_replaced_by_backfill(store: AnyStore) {
    let mut rng = Lcg(14);
    let all = write_all::<Rolled>(&store, &mut rng, 30).await;
    let fields: Vec<Bson> = ["qty_sum", "price_min", "price_max", "fee_sum"]
        .into_iter()
        .map(Bson::from)
        .collect();
    for key in 0..3_i64 {
        let old = bson::doc! {
            "customerId": key, "page": "rollup", "rollup_items": 999_i64, "qty_sum": 999_i64,
            "rollup_summarized": fields.clone(),
        };
        store.insert_one("rolled", old).await.unwrap();
    }
    let ids = Filter::In("_id".into(), (0..3_i64).map(Bson::from).collect());
    assert_eq!(store.delete_many("rolled.rollups", &ids).await.unwrap(), 3);
    let mut old_mark = Update {
        set: vec![("rollup".into(), Bson::Array(fields.clone()))],
        unset: vec!["rollups".into()],
        ..Update::default()
    };
    let mark = Filter::Eq("_id".into(), Bson::from("rolled"));
    let marked = store.update_one("pattern_bounded", &mark, &mut old_mark, false);
    assert!(marked.await.unwrap().matched);
    // This version's first run over it: the older version's readers no longer trust them.
    store.extensions().forget();
    assert_summaries(&store, &all).await;
    let marks = store
        .find("pattern_bounded", &mark, &Default::default())
        .await;
    let marks = marks.unwrap();
    assert!(!marks[0].contains_key("rollup"), "{marks:?}");
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
    bucket::backfill::<Rolled, _>(&store).await.unwrap();
    let old_ones = Filter::and([
        Filter::In("customerId".into(), (0..3_i64).map(Bson::from).collect()),
        Filter::Eq("page".into(), Bson::from("rollup")),
    ]);
    let left = store.find("rolled", &old_ones, &Default::default()).await;
    assert_eq!(left.unwrap(), [], "the old roll-ups deleted");
    let docs = rollups(&store).await;
    for (key, items) in &all {
        let n = docs.get(key).and_then(|d| as_int(d.get("rollup_items")?));
        assert_eq!(n, Some(items.len() as i64), "key {key}");
    }
    assert_summaries(&store, &all).await;
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// Another program broke key 1's roll-up (its `qty_sum` a string): an ingest across keys 0, 1
/// and 2 writes every item, its write of that roll-up is refused, and it reports so
/// (`Error::Ingest` with nothing unwritten, from `RollupBehind`); the broken roll-up is marked
/// stale and the roll-ups after it in the batch still take their items, so every whole-history
/// summary stays exact; `backfill` then rewrites the broken one.
async fn a_roll_up_another_program_broke_loses_no_item(store: AnyStore) {
    let mut rng = Lcg(15);
    let mut all = write_all::<Rolled>(&store, &mut rng, 30).await;
    let mut broken = Update {
        set: vec![("qty_sum".into(), Bson::from("broken"))],
        ..Update::default()
    };
    let key_1 = Filter::Eq("_id".into(), Bson::Int64(1));
    let done = store.update_one("rolled.rollups", &key_1, &mut broken, false);
    assert!(done.await.unwrap().matched);
    let batch: Vec<(i64, Trade)> = (0..30)
        .map(|i| (i % 3, trade(&mut rng, 20_000 + i)))
        .collect();
    match bucket::ingest::<Rolled, _>(&store, &batch).await {
        Err(pattern_core::Error::Ingest {
            written,
            unwritten,
            source,
        }) => {
            assert_eq!((written, unwritten), (30, vec![]));
            assert!(
                matches!(*source, pattern_core::Error::RollupBehind { .. }),
                "{source:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    for (k, t) in batch {
        all.entry(k).or_default().push(t);
    }
    let docs = rollups(&store).await;
    assert_eq!(
        docs[&1].get_bool("rollup_stale"),
        Ok(true),
        "{:?}",
        docs[&1]
    );
    for k in [0, 2] {
        let n = as_int(docs[&k].get("rollup_items").unwrap());
        assert_eq!(n, Some(all[&k].len() as i64), "key {k}");
    }
    assert_summaries(&store, &all).await;
    bucket::backfill::<Rolled, _>(&store).await.unwrap();
    let docs = rollups(&store).await;
    assert_eq!(
        docs[&1].get_bool("rollup_stale").ok(),
        None,
        "{:?}",
        docs[&1]
    );
    assert_summaries(&store, &all).await;
}

/// Drops `task` after `after`, then waits up to 10 s for `verify` to come clean: what was sent
/// carries on without the client for a while (a `bulkWrite` the server is still applying).
async fn killed_then_clean<T: Send + 'static>(
    store: &AnyStore,
    task: tokio::task::JoinHandle<pattern_core::Result<T>>,
    after: std::time::Duration,
    round: i64,
) {
    tokio::time::sleep(after).await;
    task.abort();
    match task.await {
        Ok(done) => drop(done.unwrap()),
        Err(e) => assert!(e.is_cancelled(), "{e:?}"),
    }
    let waited = std::time::Instant::now();
    loop {
        let v = bucket::verify::<Rolled, _>(store).await.unwrap();
        if v.is_clean() {
            break;
        }
        let late = waited.elapsed() > std::time::Duration::from_secs(10);
        assert!(!late, "round {round}, 10 s after the kill: {v:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// An ingest killed anywhere (its task dropped at a point that moves from round to round, then
/// the next batch written by a new process: a store that remembers nothing) leaves every
/// whole-history summary exact: each key's, read through its roll-up where a read trusts it,
/// equals what its buckets hold. A batch sends its buckets, then their roll-ups; a kill between
/// the two leaves the batch's pending mark, and reads of its keys count their buckets, as
/// `verify` leaves their roll-ups out. What was sent carries on without the client for a while
/// (a command the server is still applying), so each round first waits for `verify` to come
/// clean. Without the pending mark (the roll-ups trusted as soon as the buckets are written),
/// a round killed between the two commands reads a summary behind its buckets and this test
/// fails.
async fn an_ingest_killed_anywhere_leaves_the_rollups_exact(store: AnyStore) {
    let mut rng = Lcg(16);
    let mut batch = |round: i64| -> Vec<(i64, Trade)> {
        (0..400)
            .map(|i| (i % 8, trade(&mut rng, 30_000 + round * 1_000 + i)))
            .collect()
    };
    // How long a whole batch takes here: the kills fall across it.
    let started = std::time::Instant::now();
    bucket::ingest::<Rolled, _>(&store, &batch(0))
        .await
        .unwrap();
    let whole = started.elapsed();
    for round in 1..=24 {
        let writer = new_process(&store).await;
        let items = batch(round);
        let task = tokio::spawn(async move { bucket::ingest::<Rolled, _>(&writer, &items).await });
        killed_then_clean(&store, task, whole * round as u32 / 20, round).await;
        // Read by a new process, which knows nothing of the batch.
        let reader = new_process(&store).await;
        for key in 0..8i64 {
            let items: Vec<Trade> = bucket::items::<Rolled, _, _>(&reader, &key)
                .try_collect()
                .await
                .unwrap();
            let got = bucket::summary::<Rolled, _, _>(&reader, &key, ..)
                .await
                .unwrap();
            let want = expected(&items.iter().collect::<Vec<_>>());
            assert_eq!(observed(&got), want, "round {round}, key {key}");
        }
    }
}

/// `push_many` killed anywhere, as the ingest above: four keys' pushes of 53 items each (a
/// fill of the open bucket, then new buckets in one batch) dropped at a point that moves from
/// round to round, each round by a new process. Every write of items carries its roll-up in
/// the same ordered batch, so once the server has done with what was sent, `verify` comes
/// clean; a roll-up sent after the buckets' writes, as a command of its own, is left behind by
/// a kill between them and this test fails.
async fn a_push_many_killed_anywhere_leaves_the_rollups_exact(store: AnyStore) {
    let mut rng = Lcg(17);
    let mut pushes = |round: i64| -> Vec<(i64, Vec<Trade>)> {
        (0..4)
            .map(|k| {
                let first = 50_000 + round * 1_000 + k * 100;
                (k, (first..first + 53).map(|i| trade(&mut rng, i)).collect())
            })
            .collect()
    };
    let all_at_once = |writer: AnyStore, pushes: Vec<(i64, Vec<Trade>)>| async move {
        let each = pushes
            .iter()
            .map(|(k, items)| bucket::push_many::<Rolled, _, _>(&writer, k, items));
        futures::future::try_join_all(each).await.map(drop)
    };
    let started = std::time::Instant::now();
    all_at_once(store.clone(), pushes(0)).await.unwrap();
    let whole = started.elapsed();
    for round in 1..=24 {
        let writer = new_process(&store).await;
        let task = tokio::spawn(all_at_once(writer, pushes(round)));
        killed_then_clean(&store, task, whole * round as u32 / 20, round).await;
    }
}

/// A `push_many` whose fill of the open bucket would take a sum past Int64's range is refused
/// whole, as without roll-ups (`Overflow`, nothing written): its fill, sent with the roll-up
/// under the fill's condition, is refused by that condition, and the plain compare-and-set then
/// reports the overflow. The roll-up keeps the one item; an ordinary `push_many` after it fills
/// the same bucket with its roll-up, and every summary stays exact.
async fn a_push_many_that_would_overflow_leaves_the_rollup_as_it_was(store: AnyStore) {
    let big = sized;
    let mut all: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    bucket::push::<Rolled, _, _>(&store, &1, &big(0, i64::MAX - 1))
        .await
        .unwrap();
    all.entry(1).or_default().push(big(0, i64::MAX - 1));
    let e = bucket::push_many::<Rolled, _, _>(&store, &1, &[big(1, 5), big(2, 6)]).await;
    assert!(
        matches!(e, Err(Error::Store(StoreError::Overflow { ref field, .. })) if field == "qty_sum"),
        "{e:?}"
    );
    let docs = documents(&store, "rolled").await;
    assert_eq!(docs.len(), 1, "nothing written");
    assert_eq!(as_int(docs[0].get("count").unwrap()), Some(1));
    let rollup = &rollups(&store).await[&1];
    assert_eq!(as_int(rollup.get("rollup_items").unwrap()), Some(1));
    assert_eq!(rollup.get("qty_sum"), Some(&Bson::Int64(i64::MAX - 1)));
    // Key 2: the same fill, in range.
    bucket::push::<Rolled, _, _>(&store, &2, &big(10, 1))
        .await
        .unwrap();
    let more = [big(11, 5), big(12, 6)];
    bucket::push_many::<Rolled, _, _>(&store, &2, &more)
        .await
        .unwrap();
    all.entry(2)
        .or_default()
        .extend([big(10, 1), big(11, 5), big(12, 6)]);
    let docs = documents(&store, "rolled").await;
    assert_eq!(docs.len(), 2, "key 2's items in its one bucket: {docs:?}");
    assert_summaries(&store, &all).await;
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// Writers racing on the same keys of a roll-up series, each through another write
/// (`push_many` of several items, `ingest`, `push`): the fills lose compare-and-sets to each
/// other and go again, and every roll-up ends exact (every summary agrees with the items, each
/// item stored once, `verify` clean).
async fn racing_writers_keep_the_rollups_exact(store: AnyStore) {
    let writers = 6_i64;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = Lcg(200 + w as u64);
            let mut mine: Vec<(i64, Trade)> = Vec::new();
            for round in 0..5 {
                let batch: Vec<(i64, Trade)> = (0..36)
                    .map(|i| {
                        let id = w * 1_000_000 + round * 1_000 + i;
                        (
                            i % 4,
                            Trade {
                                id,
                                ..trade(&mut rng, i)
                            },
                        )
                    })
                    .collect();
                match w % 3 {
                    0 => drop(bucket::ingest::<Rolled, _>(&store, &batch).await.unwrap()),
                    1 => {
                        for k in 0..4 {
                            let items: Vec<Trade> = (batch.iter())
                                .filter(|(key, _)| *key == k)
                                .map(|(_, t)| t.clone())
                                .collect();
                            bucket::push_many::<Rolled, _, _>(&store, &k, &items)
                                .await
                                .unwrap();
                        }
                    }
                    _ => {
                        for (k, t) in &batch {
                            bucket::push::<Rolled, _, _>(&store, k, t).await.unwrap();
                        }
                    }
                }
                mine.extend(batch);
            }
            mine
        }));
    }
    let mut all: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    for t in tasks {
        for (k, t) in t.await.unwrap() {
            all.entry(k).or_default().push(t);
        }
    }
    let mut seen = HashSet::new();
    for key in 0..4_i64 {
        let got: Vec<Trade> = bucket::items::<Rolled, _, _>(&store, &key)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(got.len(), all[&key].len(), "key {key}");
        for t in got {
            assert!(seen.insert(t.id), "item {} stored twice", t.id);
        }
    }
    assert_summaries(&store, &all).await;
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// An ingest batch's pending mark lists its keys as the writer's key type stores them: one
/// that lists the Int32 3 (a writer whose key is an `i32`) holds for key 3 read as an Int64.
/// While it stands, the whole-history summary counts the key's buckets (the roll-up, broken
/// here on purpose, is not read) and `verify` leaves the roll-up out; a mark older than a
/// minute `verify` reports as left by a writer that died. `backfill` recomputes the roll-up
/// and deletes the marks, and the summary reads the roll-up again.
async fn a_pending_mark_lists_its_keys_by_value(store: AnyStore) {
    let mut rng = Lcg(23);
    let items: Vec<(i64, Trade)> = (0..30).map(|i| (i % 3 + 2, trade(&mut rng, i))).collect();
    bucket::ingest::<Rolled, _>(&store, &items).await.unwrap();
    let threes: Vec<&Trade> = (items.iter())
        .filter(|(k, _)| *k == 3)
        .map(|(_, t)| t)
        .collect();
    let mark = doc! {
        "_id": {"rollup_pending_of": "rolled", "batch": bson::oid::ObjectId::new()},
        "rollup_pending": [4i64, 3i32],
    };
    (store.insert_one(pattern_core::spec::BOUNDED_COLLECTIONS, mark))
        .await
        .unwrap();
    let mut broken = Update {
        set: vec![("rollup_items".into(), Bson::Int64(999))],
        ..Update::default()
    };
    let three = Filter::Eq("_id".into(), Bson::Int64(3));
    (store.update_one("rolled.rollups", &three, &mut broken, false))
        .await
        .unwrap();
    let got = bucket::summary::<Rolled, _, _>(&store, &3, ..)
        .await
        .unwrap();
    assert_eq!(observed(&got), expected(&threes));
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
    // A mark begun two minutes ago: left by a writer that died. `verify` reports it.
    let began = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
    let secs = began
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as u32;
    let mut oid = bson::oid::ObjectId::new().bytes();
    oid[..4].copy_from_slice(&secs.to_be_bytes());
    let left = doc! {
        "_id": {"rollup_pending_of": "rolled", "batch": bson::oid::ObjectId::from_bytes(oid)},
        "rollup_pending": [2i64],
    };
    (store.insert_one(pattern_core::spec::BOUNDED_COLLECTIONS, left))
        .await
        .unwrap();
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    match v.defects.as_slice() {
        [pattern_core::adopt::LayoutDefect::RollupPending {
            collection,
            since,
            keys: 1,
        }] => {
            assert_eq!(collection, "rolled");
            assert_eq!(since.timestamp_millis(), i64::from(secs) * 1_000);
        }
        other => panic!("{other:?}"),
    }
    bucket::backfill::<Rolled, _>(&store).await.unwrap();
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
    let marks = documents(&store, pattern_core::spec::BOUNDED_COLLECTIONS).await;
    assert!(
        marks.iter().all(|m| !m.contains_key("rollup_pending")),
        "{marks:?}"
    );
    assert_eq!(rollups(&store).await[&3].get_i64("rollup_items"), Ok(10));
    let got = bucket::summary::<Rolled, _, _>(&store, &3, ..)
        .await
        .unwrap();
    assert_eq!(observed(&got), expected(&threes));
}

on_both_stores!(
    a_pending_mark_lists_its_keys_by_value,
    racing_writers_keep_the_rollups_exact,
    a_push_many_that_would_overflow_leaves_the_rollup_as_it_was,
    a_push_many_killed_anywhere_leaves_the_rollups_exact,
    an_ingest_killed_anywhere_leaves_the_rollups_exact,
    a_roll_up_another_program_broke_loses_no_item,
    every_write_keeps_the_rollup,
    backfill_makes_rollups_exact,
    a_writer_without_rollups_in_the_same_process_untrusts_them,
    rollups_an_older_version_kept_are_replaced_by_backfill,
);

/// On MongoDB: a push and its roll-up are one command (a client `bulkWrite`), a whole-history
/// summary is one `aggregate` (the roll-up, then any pending mark), an ingest batch is a command
/// per kind of write between its pending mark's insert and delete, and each write of a
/// `push_many` is one `bulkWrite` with its roll-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_push_with_its_rollup_is_one_command() {
    let (store, log) = recording_mongo_store("ts_rollup").await;
    let mut rng = Lcg(13);
    let mut items = Vec::new();
    for i in 0..12 {
        let t = trade(&mut rng, i);
        bucket::push::<Rolled, _, _>(&store, &5, &t).await.unwrap();
        items.push(t);
    }
    log.lock().unwrap().clear();
    let (mut marks, mut refused) = (0, 0);
    for i in 12..24 {
        let t = trade(&mut rng, i);
        bucket::push::<Rolled, _, _>(&store, &5, &t).await.unwrap();
        items.push(t);
        // Beside the writes of the collection's mark: its width (`series::width`) grows while
        // the trades, out of time order, lie further from their buckets' first than before.
        let (mark, sent): (Vec<_>, Vec<_>) = std::mem::take(&mut *log.lock().unwrap())
            .into_iter()
            .partition(|(n, c)| pattern_tests::on_marks(n, c));
        marks += mark.len();
        let sent: Vec<String> = sent.into_iter().map(|(n, _)| n).collect();
        // One command; or, for a trade further from the open bucket's bounds than the width
        // allows (the trades go back in time now and then), the refused one, the push into
        // the open bucket that returns it, its roll-up, and the width grows.
        if sent != ["bulkWrite"] {
            assert_eq!(sent, ["bulkWrite", "findAndModify", "update"], "push {i}");
            assert_eq!(mark.len(), 1, "push {i}");
            refused += 1;
        }
    }
    assert!(
        marks <= 3 && refused <= 2,
        "{marks} raises, {refused} pushes refused"
    );
    let got = bucket::summary::<Rolled, _, _>(&store, &5, ..)
        .await
        .unwrap();
    let sent: Vec<(String, Document)> = std::mem::take(&mut *log.lock().unwrap());
    assert_eq!(sent.len(), 1, "{sent:?}");
    // The roll-up, then any pending mark that lists the key, in one `aggregate`.
    assert_eq!(sent[0].0, "aggregate");
    assert_eq!(sent[0].1.get_str("aggregate"), Ok("rolled.rollups"));
    assert_eq!(observed(&got), expected(&items.iter().collect::<Vec<_>>()));
    let batch: Vec<(i64, Trade)> = (0..100)
        .map(|i| (i % 4 + 5, trade(&mut rng, 100 + i)))
        .collect();
    bucket::ingest::<Rolled, _>(&store, &batch).await.unwrap();
    // Keys 6 to 8 first seen: learned in two reads. Then the batch's pending mark, the fill of
    // key 5's open bucket, the new buckets, the four roll-ups in one command, and the mark
    // deleted: a process that dies between the buckets and the roll-ups leaves the mark, and
    // reads count those keys' buckets.
    let sent: Vec<String> = std::mem::take(&mut *log.lock().unwrap())
        .into_iter()
        .map(|(n, c)| match pattern_tests::on_marks(&n, &c) {
            true => format!("{n} marks"),
            false => format!("{n} {}", c.get_str(&n).unwrap_or("")),
        })
        // The width's raise, as the trades go back in time.
        .filter(|n| n != "findAndModify marks")
        .collect();
    assert_eq!(
        sent,
        [
            "find rolled",
            "aggregate rolled",
            "insert marks",
            "update rolled",
            "insert rolled",
            "update rolled.rollups",
            "delete marks"
        ]
    );
    items.extend(
        batch
            .iter()
            .filter(|(k, _)| *k == 5)
            .map(|(_, t)| t.clone()),
    );
    let got = bucket::summary::<Rolled, _, _>(&store, &5, ..)
        .await
        .unwrap();
    assert_eq!(observed(&got), expected(&items.iter().collect::<Vec<_>>()));
    // `push_many`: the read of the newest bucket, then the fill of the open bucket and the new
    // buckets, each one `bulkWrite` with its roll-up as its last write.
    let more: Vec<Trade> = (0..13).map(|i| trade(&mut rng, 300 + i)).collect();
    log.lock().unwrap().clear();
    bucket::push_many::<Rolled, _, _>(&store, &5, &more)
        .await
        .unwrap();
    let sent: Vec<(String, Document)> = std::mem::take(&mut *log.lock().unwrap())
        .into_iter()
        .filter(|(n, c)| !pattern_tests::on_marks(n, c))
        .collect();
    let names: Vec<&str> = sent.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["find", "bulkWrite", "bulkWrite"], "{sent:?}");
    for (_, c) in &sent[1..] {
        let last = c.get_array("ops").unwrap().last().unwrap();
        let ns = c.get_array("nsInfo").unwrap();
        let at = last.as_document().unwrap().get_i32("update").unwrap() as usize;
        let ns = ns[at].as_document().unwrap().get_str("ns").unwrap();
        assert!(ns.ends_with(".rolled.rollups"), "{c:?}");
    }
    items.extend(more);
    let got = bucket::summary::<Rolled, _, _>(&store, &5, ..)
        .await
        .unwrap();
    assert_eq!(observed(&got), expected(&items.iter().collect::<Vec<_>>()));
    let _ = store.database().drop().await;
}

/// On MongoDB: an ingest batch with roll-ups sends its pending mark, its buckets' writes, the
/// roll-ups of the writes that applied, then deletes the mark. Refused at key 2's fill (another
/// process filled its open bucket), it rolls up the items of keys 0 and 1's fills only, in one
/// `update` before the mark is deleted; the rest of every key goes through the ordinary push,
/// with its roll-ups, after it. Every whole-history summary is exact and `verify` is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_ingest_batch_leaves_the_keys_before_it_whole() {
    let (m, log) = recording_mongo_store("ingest_refused_keys_whole").await;
    let store = AnyStore::Mongo(m.clone());
    let mut rng = Lcg(17);
    let mut all: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    let batch = |rng: &mut Lcg, from: i64, n: i64| -> Vec<(i64, Trade)> {
        (0..n).map(|i| (i % 5, trade(rng, from + i))).collect()
    };
    let first = batch(&mut rng, 0, 15);
    bucket::ingest::<Rolled, _>(&store, &first).await.unwrap();
    // Another process fills key 2's open bucket: this store's memory of it is stale.
    let other = AnyStore::Mongo(pattern_core::store::MongoStore::new(m.database().clone()));
    let mut theirs = Vec::new();
    for i in 0..3 {
        let t = trade(&mut rng, 100 + i);
        bucket::push::<Rolled, _, _>(&other, &2, &t).await.unwrap();
        theirs.push((2, t));
    }
    log.lock().unwrap().clear();
    let ours = batch(&mut rng, 200, 20);
    bucket::ingest::<Rolled, _>(&store, &ours).await.unwrap();
    for (k, t) in first.into_iter().chain(theirs).chain(ours) {
        all.entry(k).or_default().push(t);
    }
    let sent = std::mem::take(&mut *log.lock().unwrap());
    let named = |(n, c): &(String, Document)| match pattern_tests::on_marks(n, c) {
        true => format!("{n} marks"),
        false => format!("{n} {}", c.get_str(n).unwrap_or("")),
    };
    let at = |name: &str| {
        (sent.iter().position(|c| named(c) == name)).unwrap_or_else(|| panic!("no {name}"))
    };
    let (mark, rolled, unmark) = (
        at("insert marks"),
        at("update rolled.rollups"),
        at("delete marks"),
    );
    assert!(
        mark < rolled && rolled + 1 == unmark,
        "{:?}",
        sent.iter().map(named).collect::<Vec<_>>()
    );
    // Between the mark and the roll-ups: the buckets' writes alone (a command per kind, or
    // one `bulkWrite` on their collection when the runs are short).
    for c in &sent[mark + 1..rolled] {
        let on_buckets = match c.0.as_str() {
            "bulkWrite" => (c.1.get_array("nsInfo").unwrap().iter()).all(|n| {
                n.as_document()
                    .unwrap()
                    .get_str("ns")
                    .unwrap()
                    .ends_with(".rolled")
            }),
            _ => named(c).ends_with(" rolled"),
        };
        assert!(on_buckets, "{c:?}");
    }
    let rollup_keys = |(name, c): &(String, Document)| -> Vec<i64> {
        let key = |q: &Document| as_int(q.get("_id").unwrap()).unwrap();
        match name.as_str() {
            "update" if c.get_str("update") == Ok("rolled.rollups") => (c.get_array("updates"))
                .unwrap()
                .iter()
                .map(|u| key(u.as_document().unwrap().get_document("q").unwrap()))
                .collect(),
            "bulkWrite" => {
                let ns = c.get_array("nsInfo").unwrap();
                let rollups = ns.iter().position(|n| {
                    let n = n.as_document().unwrap().get_str("ns").unwrap();
                    n.ends_with(".rolled.rollups")
                });
                (c.get_array("ops").unwrap().iter())
                    .map(|op| op.as_document().unwrap())
                    .filter(|op| op.get_i32("update").ok().map(|n| n as usize) == rollups)
                    .map(|op| key(op.get_document("filter").unwrap()))
                    .collect()
            }
            _ => Vec::new(),
        }
    };
    // The batch's roll-ups: the keys whose writes applied before the refused one (the fills
    // stand first: keys 0 and 1 filled their open buckets), each with the two items its fill
    // wrote.
    assert_eq!(rollup_keys(&sent[rolled]), [0, 1]);
    for u in sent[rolled].1.get_array("updates").unwrap() {
        let inc = u.as_document().unwrap().get_document("u").unwrap();
        let items = inc
            .get_document("$inc")
            .unwrap()
            .get("rollup_items")
            .unwrap();
        assert_eq!(as_int(items), Some(2), "{u:?}");
    }
    // After it, through the ordinary push with their roll-ups: the rest of every key (keys 0
    // and 1's new buckets; all of keys 2 to 4).
    let mut rolled_after: Vec<i64> = sent[unmark + 1..].iter().flat_map(rollup_keys).collect();
    rolled_after.sort_unstable();
    rolled_after.dedup(); // a push's fill and its new buckets each carry one
    assert_eq!(rolled_after, [0, 1, 2, 3, 4]);
    assert_summaries(&store, &all).await;
    let v = bucket::verify::<Rolled, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
    let _ = m.database().drop().await;
}
