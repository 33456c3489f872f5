//! Roll-ups once buckets were archived (issue 42, defect 4), on both stores: a roll-up counts
//! the archived items on every path that writes it. `backfill` of the live store recomputes
//! each key's roll-up from its buckets and from those of its archives on the same store (which
//! the live collection's mark records), completing the archived buckets too; pushes,
//! `push_many` and `ingest` after the archive add to it; roll-ups made untrusted after the
//! archive (a writer without them, a migration) or first kept after it are recomputed whole.
//! An archive on another store cannot be read by `backfill` of the live store: it refuses,
//! writing nothing, and `History::backfill` reads it.

use super::*;
use pattern_core::store;

use pattern_core::adopt::{Options, Source};
use pattern_core::bucket::{ArchiveAt, History};
use pattern_core::store::query::{Filter, Update};

/// The layout: `summary(sum = "qty"), rollup`, five trades a bucket.
#[derive(Bucket)]
#[bucket(
    collection = "qty_trades",
    size = 5,
    time = "date",
    summary(sum = "qty"),
    rollup
)]
#[allow(dead_code)]
struct QtyTrades {
    #[bucket(key)]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

/// The same collection written without roll-ups.
#[derive(Bucket)]
#[bucket(
    collection = "qty_trades",
    size = 5,
    time = "date",
    summary(sum = "qty")
)]
#[allow(dead_code)]
struct Unrolled {
    #[bucket(key)]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

/// The same collection with time bounds alone (no summary, no roll-ups).
#[derive(Bucket)]
#[bucket(collection = "qty_trades", size = 5, time = "date")]
#[allow(dead_code)]
struct BoundsOnly {
    #[bucket(key)]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

const LIVE: &str = "qty_trades";
const ROLLUPS: &str = "qty_trades.rollups";
const OLD: &str = "qty_trades_old";

/// Trade `i` of a key: six hours apart, in time order, `qty` i + 1.
fn nth(i: i64) -> Trade {
    Trade {
        id: i,
        qty: i + 1,
        price: 10.0,
        fee: None,
        date: date(T0 + i * DAY / 4),
    }
}

/// After every trade so far: archives all but the newest bucket of each key.
fn cutoff() -> DateTime {
    date(T0 + 10_000 * DAY)
}

/// Items and quantity of `trades`.
fn tally(trades: &[Trade]) -> (u64, i64) {
    (trades.len() as u64, trades.iter().map(|t| t.qty).sum())
}

/// Items and quantity of a key's history (`History::summary`, the roll-up once trusted).
async fn whole<A: Store>(live: &AnyStore, to: ArchiveAt<'_, A>, key: i64) -> (u64, i64) {
    let s = History::new(live, to)
        .summary::<QtyTrades, _>(&key, ..)
        .await
        .unwrap();
    (s.items, s.qty_sum.as_i64().unwrap())
}

/// The key's roll-up document: its items and quantity, and whether it is stale.
async fn rollup_of(store: &AnyStore, key: i64) -> Option<(i64, i64, bool)> {
    (documents(store, ROLLUPS).await.into_iter())
        .find(|d| d.get_i64("_id") == Ok(key))
        .map(|d| {
            (
                as_int(d.get("rollup_items").unwrap()).unwrap(),
                as_int(d.get("qty_sum").unwrap()).unwrap(),
                d.get_bool("rollup_stale") == Ok(true),
            )
        })
}

async fn verify_clean<A: Store>(live: &AnyStore, to: &ArchiveAt<'_, A>) {
    let defects = bucket::verify_archive::<QtyTrades, _, _>(live, *to)
        .await
        .unwrap();
    assert_eq!(defects, [], "verify_archive");
}

/// The scenario: 45 trades of one key (nine buckets), archived (40 move, 5 stay),
/// `History::summary` says 45; then `backfill(&live)`: the summary still says 45 (it said
/// 5, and `verify_archive` reported `RollupDrift { rollup: 5, buckets: 45 }`), the roll-up
/// counts 45, `verify_archive` is clean. Then pushes, `push_many` and `ingest` add to it, a
/// writer without roll-ups makes them untrusted and `backfill` recomputes them whole again;
/// a second `backfill` changes nothing.
async fn backfill_after_an_archive_counts_the_archived_items(store: AnyStore) {
    let mut all: Vec<Trade> = (0..45).map(nth).collect();
    for t in &all {
        QtyTrades::push(&store, &7, t.clone()).await.unwrap();
    }
    let to = ArchiveAt {
        store: &store,
        collection: OLD,
    };
    let report = bucket::archive::<QtyTrades, _, _>(&store, to, cutoff(), &Options::default())
        .await
        .unwrap();
    assert_eq!((report.moved, report.items), (8, 40), "{report:?}");
    assert_eq!(QtyTrades::counts(&store, &7).await.unwrap().items, 5);
    assert_eq!(whole(&store, to, 7).await, tally(&all));
    QtyTrades::backfill(&store).await.unwrap();
    assert_eq!(whole(&store, to, 7).await, tally(&all), "after backfill");
    assert_eq!(rollup_of(&store, 7).await, Some((45, tally(&all).1, false)));
    verify_clean(&store, &to).await;
    // The live summary reads the live buckets alone.
    let live = QtyTrades::summary(&store, &7, ..).await.unwrap();
    assert_eq!(
        (live.items, live.qty_sum.as_i64()),
        (5, Some(tally(&all[40..]).1))
    );
    // Every write of items adds to the roll-up that counts the archive.
    let more: Vec<Trade> = (45..60).map(nth).collect();
    for t in &more[..5] {
        QtyTrades::push(&store, &7, t.clone()).await.unwrap();
    }
    QtyTrades::push_many(&store, &7, &more[5..10])
        .await
        .unwrap();
    let batch: Vec<(i64, Trade)> = more[10..].iter().map(|t| (7, t.clone())).collect();
    assert_eq!(QtyTrades::ingest(&store, &batch).await.unwrap(), 5);
    all.extend(more);
    assert_eq!(whole(&store, to, 7).await, tally(&all));
    verify_clean(&store, &to).await;
    // A writer without roll-ups (another process: this one's memo forgotten): they are
    // untrusted and key 7's drifts; `backfill` recomputes it from both sides.
    store.extensions().forget();
    let t = nth(60);
    Unrolled::push(&store, &7, t.clone()).await.unwrap();
    all.push(t);
    assert_eq!(
        whole(&store, to, 7).await,
        tally(&all),
        "read from the buckets"
    );
    QtyTrades::backfill(&store).await.unwrap();
    assert_eq!(rollup_of(&store, 7).await, Some((61, tally(&all).1, false)));
    assert_eq!(whole(&store, to, 7).await, tally(&all));
    verify_clean(&store, &to).await;
    QtyTrades::backfill(&store).await.unwrap();
    assert_eq!(rollup_of(&store, 7).await, Some((61, tally(&all).1, false)));
    verify_clean(&store, &to).await;
}

/// Roll-ups first kept after the archive, over buckets archived without a summary: `backfill`
/// completes the archived buckets (their summary and its mark) and counts them; a stale
/// roll-up (a write that could not update it) is recomputed whole too.
async fn rollups_kept_after_the_archive_count_it(store: AnyStore) {
    let mut all: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    for key in [1, 2] {
        let trades: Vec<Trade> = (0..23).map(|i| nth(i + key * 100)).collect();
        for t in &trades {
            BoundsOnly::push(&store, &key, t.clone()).await.unwrap();
        }
        all.insert(key, trades);
    }
    let to = ArchiveAt {
        store: &store,
        collection: OLD,
    };
    let report = bucket::archive::<BoundsOnly, _, _>(&store, to, cutoff(), &Options::default())
        .await
        .unwrap();
    assert_eq!(report.items, 40, "{report:?}");
    // The first writer with roll-ups: key 1's counts one item.
    let t = nth(1_000);
    QtyTrades::push(&store, &1, t.clone()).await.unwrap();
    all.get_mut(&1).unwrap().push(t);
    assert_eq!(rollup_of(&store, 1).await.map(|r| r.0), Some(1));
    let done = QtyTrades::backfill(&store).await.unwrap();
    assert!(done >= 10, "the buckets on both sides completed: {done}");
    for d in documents(&store, OLD).await {
        assert!(d.get_array("summarized").is_ok(), "completed: {d:?}");
    }
    for (key, trades) in &all {
        let (items, qty) = tally(trades);
        assert_eq!(
            rollup_of(&store, *key).await,
            Some((items as i64, qty, false))
        );
        assert_eq!(whole(&store, to, *key).await, (items, qty), "key {key}");
    }
    verify_clean(&store, &to).await;
    // A stale roll-up: recomputed whole.
    let mut stale = Update {
        set: vec![("rollup_stale".into(), bson::Bson::Boolean(true))],
        ..Update::default()
    };
    let filter = Filter::Eq("_id".into(), bson::Bson::Int64(2));
    store
        .update_one(ROLLUPS, &filter, &mut stale, false)
        .await
        .unwrap();
    QtyTrades::backfill(&store).await.unwrap();
    let (items, qty) = tally(&all[&2]);
    assert_eq!(rollup_of(&store, 2).await, Some((items as i64, qty, false)));
    verify_clean(&store, &to).await;
}

/// A migration into a collection archived from leaves its roll-ups untrusted; `backfill`
/// recomputes them counting the archive: the migrated key and the archived one are exact.
async fn a_migration_after_the_archive_then_backfill(store: AnyStore) {
    let old: Vec<Trade> = (0..30).map(nth).collect();
    for t in &old {
        QtyTrades::push(&store, &7, t.clone()).await.unwrap();
    }
    let to = ArchiveAt {
        store: &store,
        collection: OLD,
    };
    bucket::archive::<QtyTrades, _, _>(&store, to, cutoff(), &Options::default())
        .await
        .unwrap();
    let flat: Vec<Trade> = (0..12).map(|i| nth(500 + i)).collect();
    let rows: Vec<Document> = flat
        .iter()
        .map(|t| {
            let mut d = bson::to_document(t).unwrap();
            d.insert("customer_id", 8_i64);
            d
        })
        .collect();
    store.insert_many("flat_trades", rows).await.unwrap();
    let from = Source {
        collection: "flat_trades",
        key_field: "customer_id",
        time_field: "date",
    };
    let report = QtyTrades::migrate(&store, &from, &Options::default())
        .await
        .unwrap();
    assert_eq!(report.moved_items, 12, "{report:?}");
    QtyTrades::backfill(&store).await.unwrap();
    assert_eq!(rollup_of(&store, 7).await, Some((30, tally(&old).1, false)));
    assert_eq!(
        rollup_of(&store, 8).await,
        Some((12, tally(&flat).1, false))
    );
    assert_eq!(whole(&store, to, 7).await, tally(&old));
    assert_eq!(whole(&store, to, 8).await, tally(&flat));
    verify_clean(&store, &to).await;
}

/// Two archives on the same store (two cut-offs): `backfill` counts both; the live
/// collection's mark records each once, however many runs.
async fn two_archives_on_the_store_are_both_counted(store: AnyStore) {
    let all: Vec<Trade> = (0..40).map(nth).collect();
    for t in &all {
        QtyTrades::push(&store, &7, t.clone()).await.unwrap();
    }
    let first = ArchiveAt {
        store: &store,
        collection: "qty_trades_2023",
    };
    let second = ArchiveAt {
        store: &store,
        collection: "qty_trades_2024",
    };
    let opts = Options::default();
    let early = date(T0 + 5 * DAY);
    let a = bucket::archive::<QtyTrades, _, _>(&store, first, early, &opts)
        .await
        .unwrap();
    let b = bucket::archive::<QtyTrades, _, _>(&store, second, cutoff(), &opts)
        .await
        .unwrap();
    bucket::archive::<QtyTrades, _, _>(&store, second, cutoff(), &opts)
        .await
        .unwrap();
    assert!(a.items > 0 && b.items > 0, "{a:?} {b:?}");
    assert_eq!(a.items + b.items, 35);
    QtyTrades::backfill(&store).await.unwrap();
    assert_eq!(rollup_of(&store, 7).await, Some((40, tally(&all).1, false)));
    // Either archive checked with the live collection counts the other's items too.
    verify_clean(&store, &first).await;
    verify_clean(&store, &second).await;
    let mark = (documents(&store, "pattern_bounded").await.into_iter())
        .find(|d| d.get_str("_id") == Ok(LIVE))
        .unwrap();
    let archives: Vec<(&str, bool)> = (mark.get_array("archives").unwrap().iter())
        .map(|a| {
            let a = a.as_document().unwrap();
            (
                a.get_str("collection").unwrap(),
                a.get_bool("here").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        archives,
        [("qty_trades_2023", true), ("qty_trades_2024", true)]
    );
}

on_both_stores!(
    backfill_after_an_archive_counts_the_archived_items,
    rollups_kept_after_the_archive_count_it,
    a_migration_after_the_archive_then_backfill,
    two_archives_on_the_store_are_both_counted,
);

/// The archive on another store: `backfill` of the live store cannot read it and refuses,
/// writing nothing (the roll-ups it would have shrunk stay); `History::backfill` reads it and
/// recomputes them whole. So does it for a live collection archived from by a version that
/// recorded no archive.
async fn an_archive_on_another_store(live: AnyStore, cold: AnyStore) {
    let mut all: Vec<Trade> = (0..45).map(nth).collect();
    for t in &all {
        QtyTrades::push(&live, &7, t.clone()).await.unwrap();
    }
    let to = ArchiveAt {
        store: &cold,
        collection: OLD,
    };
    let report = bucket::archive::<QtyTrades, _, _>(&live, to, cutoff(), &Options::default())
        .await
        .unwrap();
    assert_eq!(report.items, 40);
    assert_eq!(documents(&cold, OLD).await.len(), 8);
    // A writer without roll-ups (another process): untrusted, key 7's behind by one.
    live.extensions().forget();
    let t = nth(45);
    Unrolled::push(&live, &7, t.clone()).await.unwrap();
    all.push(t);
    let before = documents(&live, LIVE).await;
    let e = QtyTrades::backfill(&live).await;
    assert!(
        matches!(&e, Err(Error::Store(store::Error::InvalidInput(m))) if m.contains("on another store")),
        "{e:?}"
    );
    assert_eq!(documents(&live, LIVE).await, before, "nothing written");
    let history = History::new(&live, to);
    history.backfill::<QtyTrades>().await.unwrap();
    assert_eq!(rollup_of(&live, 7).await, Some((46, tally(&all).1, false)));
    assert_eq!(whole(&live, to, 7).await, tally(&all));
    verify_clean(&live, &to).await;
    // Archived from by a version that recorded no archive: refused too, `History::backfill`
    // counts its archive.
    let mut unrecorded = Update {
        unset: vec!["archives".into()],
        ..Update::default()
    };
    let mark = Filter::Eq("_id".into(), bson::Bson::String(LIVE.into()));
    live.update_one("pattern_bounded", &mark, &mut unrecorded, false)
        .await
        .unwrap();
    let e = QtyTrades::backfill(&live).await;
    assert!(
        matches!(&e, Err(Error::Store(store::Error::InvalidInput(m))) if m.contains("no mark recorded")),
        "{e:?}"
    );
    history.backfill::<QtyTrades>().await.unwrap();
    assert_eq!(rollup_of(&live, 7).await, Some((46, tally(&all).1, false)));
    // The next archive run records its archive, and the one before it as unknown.
    bucket::archive::<QtyTrades, _, _>(&live, to, cutoff(), &Options::default())
        .await
        .unwrap();
    let e = QtyTrades::backfill(&live).await;
    assert!(
        matches!(&e, Err(Error::Store(store::Error::InvalidInput(_)))),
        "{e:?}"
    );
    history.backfill::<QtyTrades>().await.unwrap();
    verify_clean(&live, &to).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_archive_on_another_memory_store() {
    an_archive_on_another_store(pattern_tests::memory_store(), pattern_tests::memory_store()).await;
}

/// The archive in another database of the same server.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_archive_in_another_mongo_database() {
    let live = AnyStore::Mongo(pattern_tests::mongo_store("archive_live").await);
    let cold = AnyStore::Mongo(pattern_tests::mongo_store("archive_cold").await);
    an_archive_on_another_store(live.clone(), cold.clone()).await;
    pattern_tests::drop_db(&live).await;
    pattern_tests::drop_db(&cold).await;
}
