//! Deep pages on MongoDB: page 1, 1,000 and 10,000 of one key (100,000 items in buckets of 10),
//! read with the library's `page(n)` (one lookup of `{key, page: n}`), against the seed's own
//! query written by hand with the driver (`find({customerId}).sort({_id: 1}).skip(n - 1)
//! .limit(1)`; the seed filters with the regex `/^123_/`, a leak between keys, so the
//! equality on the key is used), on the same collection in the same run.
//!
//!     cargo bench -p pattern-bench --bench deep_pages
//!
//! Target: page 10,000 within 1.5x of page 1. Under `cargo test` it runs once at a
//! smaller scale (pages 1, 10 and 100 of 1,000 buckets).

use std::time::Duration;

use bson::doc;
use criterion::{BenchmarkId, Criterion};
use pattern_bench::{full_scale, scale, trade, Trade, TradeHistory};
use pattern_core::store::MongoStore;

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let items: i64 = scale(100_000, 10_000);
    let pages: [u64; 3] = if full_scale() {
        [1, 1_000, 10_000]
    } else {
        [1, 10, 1_000]
    };
    let store = rt.block_on(async {
        let store = pattern_tests::mongo_store("bench_deep_pages").await;
        let start = std::time::Instant::now();
        let all: Vec<Trade> = (0..items).map(|i| trade(1_600_000_000, i)).collect();
        for chunk in all.chunks(1_000) {
            TradeHistory::push_many(&store, &123, chunk).await.unwrap();
        }
        println!("loaded {items} items for one key in {:?}", start.elapsed());
        store
    });
    let trades = store.database().collection::<bson::Document>("trades");
    // The seed's page query needs `{customerId: 1, _id: 1}` to sort without a scan.
    rt.block_on(async {
        trades
            .create_index(
                mongodb::IndexModel::builder()
                    .keys(doc! {"customerId": 1, "_id": 1})
                    .build(),
            )
            .await
            .unwrap();
    });

    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(21)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let mut group = c.benchmark_group("deep_pages");
    for n in pages {
        group.bench_with_input(BenchmarkId::new("library", n), &n, |b, &n| {
            b.to_async(&rt).iter(|| async {
                let p = TradeHistory::page(&store, &123, n).await.unwrap().unwrap();
                assert_eq!(p.items.len(), 10);
            })
        });
        group.bench_with_input(BenchmarkId::new("driver_skip", n), &n, |b, &n| {
            b.to_async(&rt).iter(|| async {
                let mut cur = trades
                    .find(doc! {"customerId": 123_i64})
                    .sort(doc! {"_id": 1})
                    .skip(n - 1)
                    .limit(1)
                    .await
                    .unwrap();
                assert!(cur.advance().await.unwrap());
            })
        });
    }
    group.finish();
    report(&rt, &store, &trades, pages);
    explain(&rt, &store, pages);
    in_memory(&rt, items, pages);
    rt.block_on(async { store.database().drop().await.unwrap() });
    c.final_summary();
}

/// Medians of 21 timed reads of each page, outside criterion, and the ratio deep/first.
fn report(
    rt: &tokio::runtime::Runtime,
    store: &MongoStore,
    trades: &mongodb::Collection<bson::Document>,
    pages: [u64; 3],
) {
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let repeat = scale(21, 3);
    let mut lib = Vec::new();
    let mut drv = Vec::new();
    for n in pages {
        let (l, d) = rt.block_on(async {
            let (mut l, mut d) = (Vec::new(), Vec::new());
            for _ in 0..repeat {
                let t = std::time::Instant::now();
                TradeHistory::page(store, &123, n).await.unwrap().unwrap();
                l.push(t.elapsed());
                let t = std::time::Instant::now();
                let mut cur = trades
                    .find(doc! {"customerId": 123_i64})
                    .sort(doc! {"_id": 1})
                    .skip(n - 1)
                    .limit(1)
                    .await
                    .unwrap();
                cur.advance().await.unwrap();
                d.push(t.elapsed());
            }
            (median(l), median(d))
        });
        lib.push(l);
        drv.push(d);
    }
    println!("\ndeep pages, median of {repeat}:");
    println!("| page | library page(n) | seed skip (driver) |");
    println!("|---|---|---|");
    for (i, n) in pages.iter().enumerate() {
        println!("| {n} | {:?} | {:?} |", lib[i], drv[i]);
    }
    println!(
        "| page {} / page 1 | {:.2}x | {:.2}x |",
        pages[2],
        lib[2].as_secs_f64() / lib[0].as_secs_f64(),
        drv[2].as_secs_f64() / drv[0].as_secs_f64()
    );
}

/// What the server reads for each page, from `explain` (executionStats): index keys and
/// documents examined. This is the cost that grows with depth on a server whose per-query
/// overhead does not hide it.
fn explain(rt: &tokio::runtime::Runtime, store: &MongoStore, pages: [u64; 3]) {
    let db = store.database();
    let stats = |cmd: bson::Document| {
        rt.block_on(async {
            let r = db
                .run_command(doc! {"explain": cmd, "verbosity": "executionStats"})
                .await;
            match r {
                Ok(r) => {
                    let s = r.get_document("executionStats").ok();
                    let get = |k: &str| {
                        s.and_then(|s| s.get(k))
                            .map(|v| v.to_string())
                            .unwrap_or_else(|| "?".into())
                    };
                    format!(
                        "{} keys, {} docs",
                        get("totalKeysExamined"),
                        get("totalDocsExamined")
                    )
                }
                Err(e) => format!("explain failed: {e}"),
            }
        })
    };
    println!("\nexplain (executionStats):");
    println!("| page | library page(n) | seed skip (driver) |");
    println!("|---|---|---|");
    for n in pages {
        let lib = stats(
            doc! {"find": "trades", "filter": {"customerId": 123_i64, "page": n as i64}, "limit": 1},
        );
        let drv = stats(
            doc! {"find": "trades", "filter": {"customerId": 123_i64}, "sort": {"_id": 1}, "skip": n as i64 - 1, "limit": 1},
        );
        println!("| {n} | {lib} | {drv} |");
    }
}

/// The same pages on the in-memory store (library only): the lookup by number against a skip
/// over the same index, to show the algorithmic cost without a server's overhead.
fn in_memory(rt: &tokio::runtime::Runtime, items: i64, pages: [u64; 3]) {
    use pattern_core::store::query::{Filter, FindOptions};
    use pattern_core::store::Store;
    let store = pattern_core::MemoryStore::new();
    rt.block_on(async {
        let all: Vec<Trade> = (0..items).map(|i| trade(1_600_000_000, i)).collect();
        for chunk in all.chunks(1_000) {
            TradeHistory::push_many(&store, &123, chunk).await.unwrap();
        }
    });
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let repeat = scale(201, 3);
    println!("\nin memory, median of {repeat}:");
    println!("| page | library page(n) | skip over the same index |");
    println!("|---|---|---|");
    for n in pages {
        let (l, d) = rt.block_on(async {
            let (mut l, mut d) = (Vec::new(), Vec::new());
            for _ in 0..repeat {
                let t = std::time::Instant::now();
                TradeHistory::page(&store, &123, n).await.unwrap().unwrap();
                l.push(t.elapsed());
                let t = std::time::Instant::now();
                let opts = FindOptions {
                    sort: vec![("page".into(), 1), ("_id".into(), 1)],
                    skip: n - 1,
                    limit: Some(1),
                    ..FindOptions::default()
                };
                let got = store
                    .find("trades", &Filter::eq("customerId", 123_i64), &opts)
                    .await
                    .unwrap();
                assert_eq!(got.len(), 1);
                d.push(t.elapsed());
            }
            (median(l), median(d))
        });
        println!("| {n} | {l:?} | {d:?} |");
    }
}
