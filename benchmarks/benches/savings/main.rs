//! What the patterns save on MongoDB, each against the same data kept without the pattern.
//!
//! Outlier: `books` documents (1,000 at full scale), 1% of them with 10,000 buyers (strings like
//! `"user00042"`), the others with 5 to 15. Layout A is the library's `#[derive(Outlier)]`
//! (threshold 50, chunks of 500 in `extra_sales`); layout B keeps the same documents with the
//! whole array embedded (`sales_unbounded`, hand-written driver code). Measured: the
//! typical-document read, `Book::typical` against `find_one` by `_id` on layout B, for an
//! outlier and for a typical book; and, for the other side of the trade, every buyer of an
//! outlier (`Book::all_items`, two round trips, against the same `find_one`).
//!
//! Bucket: one customer's trades (10,000 at full scale) stored by `#[derive(Bucket)]` 10 per
//! bucket, against one document per trade (`trades_flat`, index `{customerId: 1, date: 1}`,
//! hand-written driver code). Measured: one page of 10 trades (`TradeHistory::page(n)` for page
//! 1 and the last page, against `find({customerId}).sort({date: 1}).skip(10 (n - 1)).limit(10)`)
//! and every trade of the customer (`TradeHistory::items` collected, against a `find` of all).
//!
//! Every read decodes into the same Rust types on both sides. Latency, one client, one operation
//! at a time: the median of criterion's samples, and the median of a round-robin pass that times
//! the two sides of each comparison in turn (at least 5 rounds, about 4 s), so that the load of
//! a shared machine or test server at any moment falls on both alike; the summary gives both
//! and their ratio layout B / library (above 1: the library is faster). Documents, bytes and
//! round trips are counted once per operation on a second client with command monitoring: the
//! sum over the server's replies to that operation (`bson::to_vec(&reply).len()`, so the cursor
//! envelope is included). Storage per collection is the server's `collStats` (`size`: BSON
//! bytes of the documents; `totalIndexSize`).
//!
//! The data is built with the library on a `MemoryStore` (which writes the same documents as
//! MongoDB) and copied to MongoDB with `insert_many`, so it is exactly the library's layout
//! without thousands of single pushes; every layout is then checked through its own read path.
//! It lives in its own database (`pt_bench_savings_<time>`), dropped at the end.
//!
//! Needs `MONGODB_URI`. Run: `cargo bench -p pattern-bench --bench savings` (full scale);
//! `cargo test -p pattern-bench --bench savings` runs each benchmark once at a smoke scale
//! (100 books, 500 trades).

mod load;
mod read;
mod wire;

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};
use pattern_bench::Samples;
use pattern_core::store::MongoStore;
use tokio::runtime::Runtime;

use crate::load::{coll_stats, load};
use crate::read::{round_robin, run, Op, Pair};
use crate::wire::{monitored_store, WireLog};

/// Buyers of an outlier book.
const OUTLIER_ITEMS: usize = 10_000;
/// Every 100th book is an outlier (1%).
const OUTLIER_EVERY: i64 = 100;
/// Epoch seconds of the first trade; trades are a minute apart.
const T0: i64 = 1_700_000_000;
/// The customer whose trades are stored.
const CUSTOMER: i64 = 123;
/// Per-trade layout (B) of the bucket comparison.
const FLAT: &str = "trades_flat";
/// Unbounded-array layout (B) of the outlier comparison.
const UNBOUNDED: &str = "sales_unbounded";

fn ms(d: Option<Duration>) -> String {
    d.map_or("-".to_owned(), |d| format!("{:.2}", d.as_secs_f64() * 1e3))
}

fn main() {
    let books: i64 = pattern_bench::scale(1_000, 100);
    let trades: i64 = pattern_bench::scale(10_000, 500);
    let last_page = (trades / 10) as u64;
    let rt = Runtime::new().expect("a tokio runtime");
    let db_name = pattern_tests::unique_db("bench_savings");
    let (store, wire_log, monitored) = rt.block_on(async {
        let store = MongoStore::with_options(pattern_tests::client_options().await, &db_name)
            .expect("client");
        let log = WireLog::default();
        let monitored = monitored_store(&db_name, log.clone()).await;
        (store, log, monitored)
    });
    let (outlier, typical) = rt.block_on(load(&store, books, trades));

    let pair = |group, what: String, library, other_name, other| Pair {
        group,
        what,
        library,
        other_name,
        other,
    };
    let pairs = [
        pair(
            "savings/outlier_typical_read",
            format!("outlier_{outlier}"),
            Op::Typical(outlier),
            "unbounded",
            Op::FindBook(outlier),
        ),
        pair(
            "savings/outlier_typical_read",
            format!("typical_{typical}"),
            Op::Typical(typical),
            "unbounded",
            Op::FindBook(typical),
        ),
        pair(
            "savings/outlier_all_buyers",
            format!("outlier_{outlier}"),
            Op::AllBuyers(outlier),
            "unbounded",
            Op::FindBook(outlier),
        ),
        pair(
            "savings/bucket_page",
            "1".to_owned(),
            Op::Page(1),
            "per_trade",
            Op::FlatPage(1),
        ),
        pair(
            "savings/bucket_page",
            last_page.to_string(),
            Op::Page(last_page),
            "per_trade",
            Op::FlatPage(last_page),
        ),
        pair(
            "savings/bucket_all",
            "all".to_owned(),
            Op::AllTrades,
            "per_trade",
            Op::FlatAll,
        ),
    ];

    const SAMPLE_SIZE: usize = 20;
    let samples = Samples::default();
    let mut c = Criterion::default()
        .sample_size(SAMPLE_SIZE)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut groups: Vec<&'static str> = pairs.iter().map(|p| p.group).collect();
    groups.dedup();
    for name in &groups {
        let mut group = c.benchmark_group(*name);
        group.sampling_mode(SamplingMode::Flat);
        for p in pairs.iter().filter(|p| p.group == *name) {
            for (id, op) in p.sides() {
                let key = format!("{name}/{id}");
                let (store, samples) = (&store, &samples);
                group.bench_function(BenchmarkId::from_parameter(&id), |b| {
                    b.to_async(&rt).iter_custom(|iters| {
                        let key = key.clone();
                        async move {
                            let t = Instant::now();
                            for _ in 0..iters {
                                std::hint::black_box(run(op, store).await);
                            }
                            let took = t.elapsed();
                            samples.record(&key, iters, took);
                            took
                        }
                    })
                });
            }
        }
        group.finish();
    }
    c.final_summary();

    // Per pair: criterion's medians, round-robin medians (the groups criterion ran), and what
    // each side receives, once, on the monitored client (after one untracked call, which also
    // ensures the library's indexes on that client's store).
    let budget = Duration::from_secs(pattern_bench::scale(4, 0));
    let min_rounds = pattern_bench::scale(5, 1);
    let mut report = Vec::new();
    for p in &pairs {
        let ids = p.sides().map(|(id, _)| format!("{}/{id}", p.group));
        let criterion = ids.clone().map(|id| samples.median(&id, SAMPLE_SIZE));
        let ran = criterion.iter().any(Option::is_some);
        let (rr, wire) = rt.block_on(async {
            let ops = [p.library, p.other];
            let rr = if ran {
                round_robin(&ops, &store, budget, min_rounds).await
            } else {
                Vec::new()
            };
            let mut wire = Vec::new();
            for op in ops {
                run(op, &monitored).await;
                wire_log.take();
                let items = run(op, &monitored).await;
                wire.push((wire_log.take(), items));
            }
            (rr, wire)
        });
        report.push((criterion, rr, wire));
    }
    let stats = rt.block_on(async {
        let db = store.database();
        let mut out = Vec::new();
        for coll in ["sales", "extra_sales", UNBOUNDED, "trades", FLAT] {
            out.push((coll, coll_stats(db, coll).await));
        }
        out
    });
    rt.block_on(async {
        store
            .database()
            .drop()
            .await
            .expect("drop the benchmark database");
    });

    println!(
        "\nsavings: {books} books (1% with {OUTLIER_ITEMS} buyers; library threshold 50), \
         {trades} trades of one customer (library buckets of 10){}",
        if pattern_bench::full_scale() {
            ""
        } else {
            "\n(smoke scale: one unoptimized run each, not a measurement)"
        }
    );
    println!(
        "median ms: criterion's samples / round-robin (both sides timed in turn); \
         x = other / library (above 1: the library is faster); per side, once: \
         items decoded, round trips, documents and bytes the server returned"
    );
    println!(
        "{:<22} {:<12} {:<10} {:>8} {:>8} {:>11} {:>7} {:>6} {:>6} {:>10}",
        "group", "read", "side", "criter.", "r-robin", "x", "items", "trips", "docs", "bytes"
    );
    for (p, (criterion, rr, wire)) in pairs.iter().zip(&report) {
        let ratio = |v: &[Option<Duration>]| match v {
            [Some(lib), Some(other)] => format!("{:.2}", other.as_secs_f64() / lib.as_secs_f64()),
            _ => "-".to_owned(),
        };
        let rr: Vec<Option<Duration>> = (0..2).map(|i| rr.get(i).copied()).collect();
        for (i, side) in ["library", p.other_name].into_iter().enumerate() {
            let (w, items) = wire[i];
            let x = if i == 0 {
                format!("{}/{}", ratio(criterion), ratio(&rr))
            } else {
                String::new()
            };
            println!(
                "{:<22} {:<12} {:<10} {:>8} {:>8} {:>11} {:>7} {:>6} {:>6} {:>10}",
                if i == 0 {
                    p.group.trim_start_matches("savings/")
                } else {
                    ""
                },
                if i == 0 { p.what.as_str() } else { "" },
                side,
                ms(criterion[i]),
                ms(rr[i]),
                x,
                items,
                w.round_trips,
                w.documents,
                w.bytes
            );
        }
    }
    println!(
        "\n{:<16} {:>8} {:>12} {:>12}",
        "collection", "docs", "BSON bytes", "index bytes"
    );
    for (coll, (n, size, index)) in stats {
        println!("{coll:<16} {n:>8} {size:>12} {index:>12}");
    }
}
