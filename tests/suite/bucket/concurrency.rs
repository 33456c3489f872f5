//! Concurrent writers to one key: nothing lost or duplicated, no bucket over size, one open
//! bucket, each writer's order kept.

use super::*;

/// Checks every invariant of a key's buckets after concurrent writers; returns the items.
async fn check_invariants(store: &AnyStore, key: &str, writers: u32, per_writer: u32) {
    let docs = documents(store, "ticks").await;
    let mine: Vec<&Document> = docs
        .iter()
        .filter(|d| d.get_str("user") == Ok(key))
        .collect();
    let mut open = 0;
    let mut numbers: Vec<i64> = mine
        .iter()
        .map(|d| pattern_tests::as_int(d.get("page").unwrap()).unwrap())
        .collect();
    numbers.sort();
    assert_eq!(
        numbers,
        (1..=mine.len() as i64).collect::<Vec<_>>(),
        "pages not numbered 1..n"
    );
    for d in &mine {
        let n = d.get_array("ticks").unwrap().len();
        assert!(n <= 3, "bucket {} holds {n} items", d.get("_id").unwrap());
        assert_eq!(
            pattern_tests::as_int(d.get("count").unwrap()),
            Some(n as i64),
            "count disagrees"
        );
        open += usize::from(n < 3);
    }
    // A bucket is opened only when the newest is full, so at most one is open: the newest.
    assert!(open <= 1, "{open} open buckets for one key");
    let items: Vec<Tick> = Ticks::items(store, key).try_collect().await.unwrap();
    assert_eq!(
        items.len() as u32,
        writers * per_writer,
        "items lost or duplicated"
    );
    let unique: HashSet<&Tick> = items.iter().collect();
    assert_eq!(unique.len(), items.len(), "an item was stored twice");
    // Each writer's items are read back in the order it pushed them (pages are in number
    // order, and each writer opens bucket n + 1 only after it saw bucket n full).
    let mut last: BTreeMap<u32, u32> = BTreeMap::new();
    for t in &items {
        if let Some(prev) = last.insert(t.writer, t.n) {
            assert!(
                prev < t.n,
                "writer {} pushed {} after {}",
                t.writer,
                prev,
                t.n
            );
        }
    }
    let pages: Vec<_> = Ticks::pages(store, key).try_collect().await.unwrap();
    for (i, page) in pages.iter().enumerate() {
        let direct = Ticks::page(store, key, i as u64 + 1)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(direct, *page, "page {} read directly differs", i + 1);
    }
    assert_eq!(
        Ticks::counts(store, key).await.unwrap().items,
        u64::from(writers * per_writer)
    );
}

async fn concurrent_writers(store: AnyStore, key: &'static str, same_second: bool) {
    const WRITERS: u32 = 16;
    // All in one second, every bucket opening collides: 25 pushes a writer are 134 such
    // collisions, 100 at full scale (`PATTERN_FULL=1`) 534. One a second: 30 pushes a writer
    // (160 buckets opened against 15 other writers), 500 at full scale.
    let pushes: u32 = if same_second {
        pattern_tests::scale(25, 100)
    } else {
        pattern_tests::scale(30, 500)
    };
    let base = 1_690_000_000;
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for n in 0..pushes {
                    // Every writer's items share seconds with the others', so buckets are opened
                    // concurrently in the same second all the time.
                    let at = if same_second {
                        base
                    } else {
                        base + i64::from(n)
                    };
                    Ticks::push(&store, key, tick(w, n, at))
                        .await
                        .expect("push");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    check_invariants(&store, key, WRITERS, pushes).await;
}

/// 16 tasks × 30 pushes to one key (× 500 with `PATTERN_FULL=1`): nothing lost or duplicated,
/// no bucket over size, one open bucket, each writer's order kept, and no duplicate-key error
/// reaches the caller.
async fn concurrent_pushes_to_one_key(store: AnyStore) {
    concurrent_writers(store, "hot", false).await;
}

/// The same (16 tasks × 25 pushes, × 100 with `PATTERN_FULL=1`), with every item in the same
/// second: every bucket opened collides on `_id`.
async fn concurrent_pushes_same_second(store: AnyStore) {
    concurrent_writers(store, "burst", true).await;
}

on_both_stores!(concurrent_pushes_to_one_key, concurrent_pushes_same_second);
