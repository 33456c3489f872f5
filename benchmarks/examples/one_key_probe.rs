//! One key on MongoDB, one writer: grows a key's trade history with `push_many` to 10,000 and
//! then 100,000 items (listing the commands of its first two calls of 1,000 items, and timing
//! the last tenth of those calls at each size); at each size times `push_many`'s first read
//! in three shapes (test server, T23), and 50 single `push` calls, listing the commands they
//! sent (the driver's command monitoring): the push is one `update` whatever the size, and
//! its time should not grow with the key's history (BENCHMARKS.md, section 5, has the
//! figures).
//!
//! Run: `MONGODB_URI=... cargo run --release -p pattern-bench --example one_key_probe`. With
//! `ONE_KEY_PROBE_KEEP=1` the database is kept and named, for
//! `benchmarks/scripts/one_key_update.py <database>` (the same `update` from pymongo).

use std::time::Instant;

use pattern_bench::{page_is_a_number, trade, TradeHistory};

#[tokio::main]
async fn main() {
    let (store, log) = pattern_tests::counted_mongo_store("one_key_probe").await;
    let t0 = 1_600_000_000;
    let mut held = 0i64;
    for target in [10_000i64, 100_000] {
        let mut many = Vec::new();
        while held < target {
            let end = (held + 1000).min(target);
            let items: Vec<_> = (held..end).map(|i| trade(t0, i)).collect();
            log.clear();
            let t = Instant::now();
            TradeHistory::push_many(&store, &0, &items).await.unwrap();
            many.push(t.elapsed());
            if end <= 2000 {
                println!("push_many of items {held}..{end}: {}", summary(&log));
            }
            held = end;
        }
        // The last tenth of the calls that grew the key to `target`.
        let mut last = many.split_off(many.len() - many.len().div_ceil(10));
        last.sort();
        println!(
            "{target} items: median push_many of 1,000 over the last tenth {:.2?}, commands of \
             the last: {}",
            last[last.len() / 2],
            summary(&log)
        );
        // The newest-bucket read `push_many` starts with, bounded by the page number it
        // remembers, in three shapes (the number condition merged, as a clause, none).
        let c = store.database().collection::<bson::Document>("trades");
        let n = held / 10;
        let not_num = page_is_a_number();
        let mut merged = not_num.clone();
        merged.insert("$gte", n - 1);
        let shapes = [
            ("merged", bson::doc! {"customerId": 0_i64, "page": merged}),
            (
                "clause",
                bson::doc! {"customerId": 0_i64, "page": {"$gte": n - 1}, "$and": [{"page": not_num}]},
            ),
            (
                "bound alone",
                bson::doc! {"customerId": 0_i64, "page": {"$gte": n - 1}},
            ),
        ];
        for (name, filter) in &shapes {
            let mut lat = Vec::new();
            for _ in 0..20 {
                let t = Instant::now();
                let found = c
                    .find_one(filter.clone())
                    .sort(bson::doc! {"page": -1, "_id": -1})
                    .await
                    .unwrap();
                lat.push(t.elapsed());
                assert!(found.is_some(), "{name}");
            }
            lat.sort();
            println!(
                "{target} items: newest-bucket read, {name}: median {:.2?}",
                lat[10]
            );
        }
        log.clear();
        let mut latencies = Vec::new();
        for _ in 0..50 {
            let t = Instant::now();
            TradeHistory::push(&store, &0, trade(t0, held))
                .await
                .unwrap();
            latencies.push(t.elapsed());
            held += 1;
        }
        latencies.sort();
        println!(
            "{target} items: median push {:.2?}, commands for 50 pushes: {}",
            latencies[latencies.len() / 2],
            summary(&log)
        );
    }
    if std::env::var_os("ONE_KEY_PROBE_KEEP").is_some() {
        println!("kept database {}", store.database().name());
    } else {
        store.database().drop().await.ok();
    }
}

/// The commands logged, counted by name: `1 find, 100 insert`.
fn summary(log: &pattern_tests::CommandLog) -> String {
    let mut names = log.names();
    names.sort();
    names.dedup();
    let counts: Vec<String> = names
        .iter()
        .map(|n| format!("{} {n}", log.count(n)))
        .collect();
    counts.join(", ")
}
