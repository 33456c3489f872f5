//! Load: 64 concurrent tasks push over 1,000 keys on the MongoDB store, then a full
//! verification pass over every stored bucket: nothing lost or duplicated, no bucket over size,
//! counts agree with arrays. Prints the throughput it held.
//!
//! The test command runs a short version (4,000 pushes); the full one (100,000) is
//! `PATTERN_FULL=1 cargo test --release -p pattern-tests --test suite load:: -- --nocapture`, and
//! `PATTERN_LOAD_PUSHES` sets another number.

use std::collections::HashMap;
use std::time::Instant;

use pattern_core::store::AnyStore;
use pattern_core::Bucket;
use pattern_tests::documents;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Event {
    task: u32,
    n: u32,
    at: i64,
}

#[derive(Bucket)]
#[bucket(collection = "events", size = 10, time = "at")]
#[allow(dead_code)]
struct Events {
    #[bucket(key)]
    key: i64,
    #[bucket(items)]
    events: Vec<Event>,
}

const TASKS: u32 = 64;
const KEYS: u32 = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_tasks_over_a_thousand_keys() {
    let total: u32 = std::env::var("PATTERN_LOAD_PUSHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| pattern_tests::scale(4_000, 100_000));
    let per_task = total.div_ceil(TASKS);
    let store = AnyStore::Mongo(pattern_tests::mongo_store("load").await);
    Events::ensure_indexes(&store).await.unwrap();
    let start = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                for n in 0..per_task {
                    let key = i64::from((task * 7_919 + n * 31) % KEYS);
                    let e = Event {
                        task,
                        n,
                        at: 1_700_000_000 + i64::from(n / 4),
                    };
                    Events::push(&store, &key, e).await.expect("push");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let pushed = per_task * TASKS;
    let took = start.elapsed();
    println!(
        "{pushed} pushes by {TASKS} tasks over {KEYS} keys in {took:.1?}: {:.0} pushes/s",
        f64::from(pushed) / took.as_secs_f64()
    );

    let verify = Instant::now();
    let docs = documents(&store, "events").await;
    let mut seen: HashMap<Event, usize> = HashMap::new();
    for d in &docs {
        let items = d.get_array("events").unwrap();
        assert!(
            items.len() <= 10,
            "bucket {} holds {}",
            d.get("_id").unwrap(),
            items.len()
        );
        assert_eq!(
            pattern_tests::as_int(d.get("count").unwrap()),
            Some(items.len() as i64)
        );
        let key = d.get_i64("key").unwrap();
        for b in items {
            let e: Event = bson::from_bson(b.clone()).unwrap();
            assert_eq!(
                i64::from((e.task * 7_919 + e.n * 31) % KEYS),
                key,
                "item under the wrong key"
            );
            *seen.entry(e).or_default() += 1;
        }
    }
    assert_eq!(seen.len() as u32, pushed, "pushes lost");
    assert!(seen.values().all(|&c| c == 1), "a push stored twice");
    println!(
        "verified {} buckets holding {pushed} items in {:.1?}",
        docs.len(),
        verify.elapsed()
    );
    pattern_tests::drop_db(&store).await;
}
