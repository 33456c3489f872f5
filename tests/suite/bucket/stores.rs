//! What each store does on its own: round trips on MongoDB, two processes pushing in turn, an
//! unreachable server, the in-memory store's dump.

use super::*;
use pattern_core::store;

/// On MongoDB a push is one round trip, two when it opens a bucket; a page read is one, however
/// deep.
#[tokio::test]
async fn mongo_push_and_page_round_trips() {
    let (store, log) = counted_mongo_store("round_trips").await;
    Ticks::push(&store, "rt", tick(0, 0, 1_700_000_000))
        .await
        .unwrap(); // creates the indexes
    log.clear();
    for n in 1..=300 {
        Ticks::push(&store, "rt", tick(0, n, 1_700_000_000 + i64::from(n)))
            .await
            .unwrap();
    }
    // Each push is one `update`, the seed's conditional upsert, also the 100 that open a
    // bucket (size 3): the store knows the next page number from its earlier pushes. Beside
    // them, the collection's width grows while the first buckets fill, one `findAndModify` of
    // its mark each time (`series::width`: the write returns the mark's lease), and then no
    // more.
    assert_eq!(log.count("update"), 300, "{:?}", log.names());
    let raises = log.count("findAndModify pattern_bounded");
    assert!((1..=3).contains(&raises), "{:?}", log.names());
    assert!(
        (log.names()[100..]).iter().all(|n| n == "update"),
        "the width settles with the first buckets: {:?}",
        log.names()
    );
    assert_eq!(
        log.len(),
        300 + raises,
        "pushes sent other commands: {:?}",
        log.names()
    );
    log.clear();
    let page = Ticks::page(&store, "rt", 50).await.unwrap().unwrap();
    assert_eq!(page.items[0].n, 147);
    assert_eq!(log.names(), ["find"]);
    log.clear();
    let all: Vec<Tick> = Ticks::items(&store, "rt").try_collect().await.unwrap();
    assert_eq!(all.len(), 301);
    assert_eq!(
        log.count("find"),
        101usize.div_ceil(pattern_core::bucket::STREAM_BATCH as usize),
        "{:?}",
        log.names()
    );
    log.clear();
    Ticks::counts(&store, "rt").await.unwrap();
    assert_eq!(log.names(), ["aggregate"]);
    // A store that has not seen the key's newest bucket (another process did) opens the next
    // one with three: the miss, a read of the newest bucket, the insert. Then one again. (Its
    // first write to the collection also reads the collection's mark in `pattern_bounded`.)
    for n in 301..=302 {
        Ticks::push(&store, "rt", tick(0, n, 1_700_000_000 + i64::from(n)))
            .await
            .unwrap(); // fills bucket 101
    }
    store.extensions().forget();
    log.clear();
    Ticks::push(&store, "rt", tick(0, 303, 1_700_000_303))
        .await
        .unwrap();
    let sent = without_index_commands(&log);
    assert_eq!(
        sent,
        ["find pattern_bounded", "findAndModify", "find", "insert"]
    );
    log.clear();
    Ticks::push(&store, "rt", tick(0, 304, 1_700_000_304))
        .await
        .unwrap();
    assert_eq!(log.names(), ["update"]);
    // Into an open bucket it has not seen: one `findAndModify`, whose reply gives the bucket's
    // number; then `update` again.
    store.extensions().forget();
    log.clear();
    for n in 305..=306 {
        Ticks::push(&store, "rt", tick(0, n, 1_700_000_000 + i64::from(n)))
            .await
            .unwrap();
    }
    let sent = without_index_commands(&log);
    assert_eq!(sent, ["find pattern_bounded", "findAndModify", "update"]);
    let last = Ticks::page(&store, "rt", 102).await.unwrap().unwrap();
    assert_eq!(
        last.items.iter().map(|t| t.n).collect::<Vec<_>>(),
        [303, 304, 305]
    );
    let newest = Ticks::page(&store, "rt", 103).await.unwrap().unwrap();
    assert_eq!(newest.items.iter().map(|t| t.n).collect::<Vec<_>>(), [306]);
    // A key never seen, in a process that has not seen the collection either: the mark's read
    // (the library created the collection, never archived from it: every key's numbers dense
    // from 1), then one `findAndModify` that opens bucket 1. Then `update` again.
    store.extensions().forget();
    log.clear();
    for n in 0..2 {
        Ticks::push(&store, "new", tick(0, n, 1_700_000_000 + i64::from(n)))
            .await
            .unwrap();
    }
    let sent = without_index_commands(&log);
    assert_eq!(sent, ["find pattern_bounded", "findAndModify", "update"]);
    let first = Ticks::page(&store, "new", 1).await.unwrap().unwrap();
    assert_eq!(first.items.iter().map(|t| t.n).collect::<Vec<_>>(), [0, 1]);
    let _ = store.database().drop().await;
}

/// One item a bucket, untimed: a key's buckets are its items.
#[derive(Bucket)]
#[bucket(collection = "singles", size = 1)]
#[allow(dead_code)]
struct Singles {
    #[bucket(key)]
    key: String,
    #[bucket(items)]
    items: Vec<i64>,
}

/// The cases of [`mongo_items_take_one_find_per_512_buckets`]: a key, its unnumbered buckets
/// (the seed's layout, read first, by `_id`), its numbered ones.
const STREAM_CASES: [(&str, i64, i64); 11] = [
    ("none", 0, 0),
    ("one", 0, 1),
    ("n511", 0, 511),
    ("n512", 0, 512),
    ("n513", 0, 513),
    ("n1024", 0, 1024),
    ("n1200", 0, 1200),
    ("u600n600", 600, 600),
    ("u512n512", 512, 512),
    ("u1200", 1200, 0),
    ("u100n924", 100, 924),
];

/// Writes the buckets of [`STREAM_CASES`], one item each, numbered in read order.
async fn fill_singles<S: Store>(store: &S) {
    Singles::ensure_indexes(store).await.unwrap();
    for (key, unnumbered, numbered) in STREAM_CASES {
        let mut docs = Vec::new();
        for i in 0..unnumbered {
            docs.push(doc! {"_id": format!("{key}_u{i:05}"), "key": key, "count": 1, "items": [i]});
        }
        for n in 1..=numbered {
            let item = unnumbered + n - 1;
            docs.push(
                doc! {"_id": format!("{key}_n{n:05}"), "key": key, "count": 1, "items": [item], "page": n},
            );
        }
        if !docs.is_empty() {
            store.insert_many("singles", docs).await.unwrap();
        }
    }
}

/// Reads each case's items and pages, in order; with `log`, asserts each read sent
/// `max(1, ⌈buckets / 512⌉)` finds.
async fn read_singles<S: Store>(store: &S, log: Option<&pattern_tests::CommandLog>) {
    let batch = pattern_core::bucket::STREAM_BATCH;
    for (key, unnumbered, numbered) in STREAM_CASES {
        let buckets = unnumbered + numbered;
        let want = usize::try_from((buckets + batch - 1) / batch)
            .unwrap()
            .max(1);
        if let Some(log) = log {
            log.clear();
        }
        let items: Vec<i64> = Singles::items(store, key).try_collect().await.unwrap();
        assert_eq!(items, (0..buckets).collect::<Vec<_>>(), "{key}: in order");
        if let Some(log) = log {
            let finds = vec!["find"; want];
            assert_eq!(
                log.names(),
                finds,
                "{key}: {buckets} buckets in {want} finds"
            );
            log.clear();
        }
        let pages: Vec<_> = Singles::pages(store, key).try_collect().await.unwrap();
        let firsts: Vec<i64> = pages.iter().map(|p| p.items[0]).collect();
        assert_eq!(firsts, (0..buckets).collect::<Vec<_>>(), "{key}: pages");
        if let Some(log) = log {
            assert_eq!(log.names(), vec!["find"; want], "{key}: pages");
        }
    }
}

/// On MongoDB reading every item of a key takes one `find` per 512 buckets, and one when there
/// are none: a find that returns fewer buckets than it asked for is the last, a full one
/// carries its extra bucket into the next (issue 42, defect 9: 1,200 unnumbered buckets, or
/// 600 unnumbered then 600 numbered, took 4 finds, 1,024 numbered ones 3, 512 took 2); `pages`
/// sends the same finds. The in-memory store reads the same items in the same order.
#[tokio::test]
async fn mongo_items_take_one_find_per_512_buckets() {
    let (store, log) = counted_mongo_store("items_finds").await;
    fill_singles(&store).await;
    read_singles(&store, Some(&log)).await;
    let _ = store.database().drop().await;
    let memory = pattern_core::MemoryStore::new();
    fill_singles(&memory).await;
    read_singles(&memory, None).await;
}

/// On MongoDB a burst within one second opens each bucket with one `update`, like any other
/// push: the suffix follows the newest bucket's. A store that has not seen the key reads the
/// newest bucket and opens the next without a refusal. When an `_id` is taken by a document it
/// could not know, the refusal is followed by a read of the free suffix and one more `update`:
/// the taken `_id` is never sent again.
#[tokio::test]
async fn mongo_same_second_burst_round_trips() {
    let (store, log) = counted_mongo_store("burst_round_trips").await;
    Ticks::push(&store, "b", tick(0, 0, 1_700_000_000))
        .await
        .unwrap(); // creates the indexes
    log.clear();
    for i in 1..12 {
        Ticks::push(&store, "b", tick(0, i, 1_700_000_000))
            .await
            .unwrap();
    }
    // The collection's width takes the second once (its mark's `findAndModify`, first).
    let mut want = vec!["findAndModify pattern_bounded"];
    want.extend(["update"; 11]);
    assert_eq!(log.names(), want);
    store.extensions().forget();
    log.clear();
    Ticks::push(&store, "b", tick(0, 12, 1_700_000_000))
        .await
        .unwrap(); // opens bucket 5 (after the mark's read: a new store)
    assert_eq!(
        without_index_commands(&log),
        ["find pattern_bounded", "findAndModify", "find", "insert"]
    );
    // A document of another key holds the `_id` bucket 7 would get.
    store
        .insert_one(
            "ticks",
            doc! {"_id": "b_1700000000_000006", "user": "other"},
        )
        .await
        .unwrap();
    log.clear();
    for i in 13..18 {
        Ticks::push(&store, "b", tick(0, i, 1_700_000_000))
            .await
            .unwrap(); // fills 5, opens and fills 6
    }
    assert_eq!(log.names(), vec!["update"; 5]);
    log.clear();
    Ticks::push(&store, "b", tick(0, 18, 1_700_000_000))
        .await
        .unwrap(); // opens 7
    assert_eq!(log.names(), ["update", "find", "update"]);
    let ids: Vec<String> = documents(&store, "ticks")
        .await
        .iter()
        .filter(|d| d.get_str("user") == Ok("b"))
        .map(|d| d.get_str("_id").unwrap().to_owned())
        .collect();
    assert_eq!(ids.last().unwrap(), "b_1700000000_000007");
    assert_eq!(ids.len(), 7);
    let _ = store.database().drop().await;
}

/// The commands of `log` but the index ones (a store that forgot what it ensured re-checks its
/// indexes).
/// On MongoDB `push_many` sends its new buckets in batches of at most 8 MiB of documents (a
/// command takes 16 MiB): 200 buckets of 100 KiB onto a key with none are one `find` (the
/// key's newest bucket) and three `insert`s of 81, 81 and 38 buckets; every bucket is stored
/// once, in order.
#[tokio::test]
async fn mongo_push_many_splits_its_buckets_at_8_mib() {
    let (store, log) = counted_mongo_store("split_8_mib").await;
    edges::Blobs::push_many(&store, &1, &["first".to_owned()])
        .await
        .unwrap(); // creates the indexes, reads the mark
    log.clear();
    let big = edges::big_blobs();
    edges::Blobs::push_many(&store, &2, &big).await.unwrap();
    assert_eq!(
        without_index_commands(&log),
        ["find", "insert", "insert", "insert"]
    );
    let pages: Vec<_> = edges::Blobs::pages(&store, &2).try_collect().await.unwrap();
    assert_eq!(pages.len(), 200);
    assert!(pages.iter().zip(&big).all(|(p, b)| p.items == [b.clone()]));
}

fn without_index_commands(log: &pattern_tests::CommandLog) -> Vec<String> {
    log.names()
        .into_iter()
        .filter(|n| n != "createIndexes" && n != "listIndexes")
        .collect()
}

/// Two processes pushing in turn to one key: each remembers the next page number from its own
/// pushes, so when the other one opened that page its upsert collides on the unique page
/// index; it then finds the open bucket. Nothing is lost or reordered, pages stay dense and
/// full, and a push stays one round trip except around a bucket the other process opened.
#[tokio::test]
async fn mongo_two_processes_push_in_turn() {
    let (a, log) = counted_mongo_store("two_processes").await;
    let b = pattern_tests::second_client(&a).await;
    let n = 90;
    for i in 0..n {
        let store = if i % 2 == 0 { &a } else { &b };
        Ticks::push(store, "k", tick(0, i, 1_700_000_000 + i64::from(i)))
            .await
            .unwrap();
    }
    let pages = Ticks::counts(&a, "k").await.unwrap();
    assert_eq!(pages.items, u64::from(n));
    assert_eq!(pages.pages, u64::from(n).div_ceil(3));
    for p in 1..=pages.pages {
        let page = Ticks::page(&b, "k", p).await.unwrap().unwrap();
        let want: Vec<u32> = (3 * (p as u32 - 1)..3 * p as u32).collect();
        assert_eq!(
            page.items.iter().map(|t| t.n).collect::<Vec<_>>(),
            want,
            "page {p}"
        );
    }
    // Process `a` made 45 pushes; the ones after `b` opened a bucket cost a collision and a
    // `findAndModify` more.
    let writes = log.count("update") + log.count("findAndModify") + log.count("insert");
    println!(
        "process a: {writes} writes for 45 pushes: {:?}",
        log.names()
    );
    assert!(writes <= 45 * 2, "{:?}", log.names());
    let _ = a.database().drop().await;
}

/// An unreachable server gives `store::Error::Unavailable` within the configured time, not a hang.
#[tokio::test]
async fn unreachable_server_is_a_typed_error() {
    let store = MongoStore::connect(
        "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300&connectTimeoutMS=300",
        "nowhere",
    )
    .await
    .unwrap();
    let start = Instant::now();
    let err = Ticks::push(&store, "k", tick(0, 0, 0)).await.unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    let err = Ticks::page(&store, "k", 1).await.unwrap_err();
    assert!(
        matches!(err, Error::Store(store::Error::Unavailable { .. })),
        "{err:?}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
}

/// The in-memory store dumps the documents it holds as Extended JSON, one per line.
#[tokio::test]
async fn memory_store_dumps_extended_json() {
    let store = pattern_core::MemoryStore::new();
    TradeHistory::push(
        &store,
        &123,
        trade("buy", "MDB", 419, "2023-10-26T15:47:03.434Z"),
    )
    .await
    .unwrap();
    let json = store.dump_extjson("trades");
    assert_eq!(json.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["_id"], "123_1698335223");
    assert_eq!(v["customerId"], 123);
    assert_eq!(v["history"][0]["date"]["$date"], "2023-10-26T15:47:03.434Z");
}
