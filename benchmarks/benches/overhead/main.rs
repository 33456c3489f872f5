//! Overhead of the generated code on MongoDB: each operation of `#[derive(Bucket)]` and
//! `#[derive(Outlier)]` against hand-written `mongodb` driver code that issues the seed's own
//! commands, on the same server, in the same run, through the same client (one connection
//! pool), on collections of the same size holding the same data. Target: median within 5%.
//!
//! Groups (each with a `library` and a `driver` function):
//! - `overhead/bucket_push`: one push into a bucket series of size 10. Library:
//!   `TradeHistory::push`. Driver: the seed's conditional upsert
//!   `updateOne({customerId: k, count: {$lt: 10}}, {$push: {history: t}, $inc: {count: 1},
//!   $setOnInsert: {_id: "<k>_<epoch>", customerId: k}}, {upsert: true})`, with the key matched by
//!   equality (the seed's `{_id: /^123_/}` regex leaks between keys) and served by a plain
//!   (not partial) index `{customerId: 1, count: 1}`. Every criterion sample pushes into a fresh
//!   key, so both sides go through the same bucket states (a bucket opened every 10 pushes);
//!   the sample's documents are deleted afterwards (untimed), so the collections keep their size.
//! - `overhead/bucket_push_ix`: the same two pushes, the driver's into a copy of its
//!   collection that has the library's indexes instead of `{customerId: 1, count: 1}`
//!   (`{customerId, page, _id}`, the partial open-bucket index, the unique page index): what the
//!   library's index design costs the server, apart from the code.
//! - `overhead/bucket_page`: page 3 of a key holding [`PAGES`] pages, rotating over the loaded
//!   keys. Library: `TradeHistory::page(.., 3)`. Driver: the seed's
//!   `find({_id: /^123_/}).sort({_id: 1}).skip(n-1).limit(1)` with the key matched by equality
//!   instead, `find_one({customerId: k}).sort({_id: 1}).skip(2)`, served by `{customerId: 1,
//!   _id: 1}` (the index the library reads through), decoded into a typed bucket struct.
//! - `overhead/outlier_push`: one push below the threshold (50). Library:
//!   `Book::push`. Driver: `updateOne({_id, "customers_purchased.49":
//!   {$exists: false}}, {$push: {customers_purchased: x}})`. Each sample pushes 50 items into
//!   each of fresh, empty books (created and deleted untimed).
//! - `overhead/typical_read`: a book below the threshold (20 buyers). Library: `Book::typical`.
//!   Driver: `find_one({_id})` decoded into the same struct.
//! - `overhead/outlier_read`: every buyer of an outlier (1,000: 50 in the main document, 950 in
//!   two overflow chunks of 500). Library: `Book::all_items`. Driver:
//!   `find_one({_id})`, then `find({book_id}).sort({seq: 1})`, concatenated.
//!
//! Data loaded on both sides: [`KEYS`] customers x `PAGES * 10` trades (the library through
//! `push_many`, the driver side as the seed's bucket documents through `insert_many`), [`BOOKS`]
//! typical books and [`OUTLIERS`] outliers (the library through `save`, the driver side as the
//! seed's documents, the overflow in the same chunked shape).
//!
//! After criterion's report it prints a table of medians per operation (the median of
//! criterion's samples, each the mean of one sample's operations) and the ratio library /
//! driver; then the same from an interleaved run (library and driver alternating operation by
//! operation, the median of single operations), which drift in a shared server's load cannot
//! bias towards either side; then the commands each side sent for 10 operations, as the
//! driver's command monitoring saw them.
//!
//! Needs `MONGODB_URI` (the SecantusDB test server, see `scripts/test.sh`, or any MongoDB).
//! Run: `cargo bench -p pattern-bench --bench overhead` (full scale, a few minutes).
//! `cargo test -p pattern-bench --bench overhead` runs each benchmark once, at a smoke scale.

mod bench;
mod driver;
mod op;
mod seed;
mod trace;

use std::sync::atomic::AtomicI64;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use pattern_bench::Samples;
use pattern_core::store::MongoStore;
use pattern_tests::unique_db;

use crate::bench::Bench;
use crate::op::{Op, Side, OPS};
use crate::trace::Trace;

/// Epoch seconds of trade 0; trade `i` of a series is `i` seconds later, so every bucket
/// starts in its own second.
const T0: i64 = 1_700_000_000;
/// Buckets per loaded customer.
const PAGES: i64 = 5;
/// The page the page benchmark reads (shallow: 2 index entries skipped).
const PAGE: u64 = 3;
/// Buyers of a typical book, of an outlier, and the threshold.
const TYPICAL_BUYERS: usize = 20;
const OUTLIER_BUYERS: usize = 1_000;
const THRESHOLD: usize = 50;
/// Id of the first outlier book (typical books are 0..BOOKS).
const OUTLIER_BASE: i64 = 100_000;
/// Operations traced per benchmark for the command listing.
const TRACED: u64 = 10;

/// Concurrent tasks loading the data.
const LOADERS: usize = 8;

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let full = pattern_bench::full_scale();
    let sample_size = pattern_bench::scale(20, 10);
    let pairs = pattern_bench::scale(300, 3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let trace = Trace::default();
    let (bench, db_name) = rt.block_on(async {
        let mut opts = pattern_tests::client_options().await;
        trace.install(&mut opts);
        let db_name = unique_db("overhead");
        let store = MongoStore::with_options(opts, &db_name).expect("a client");
        let db = store.database().clone();
        let bench = Bench {
            store,
            db,
            keys: pattern_bench::scale(1_000, 10),
            books: pattern_bench::scale(1_000, 10),
            outliers: pattern_bench::scale(20, 2),
            fresh: AtomicI64::new(10_000_000),
        };
        let t = Instant::now();
        bench.load().await;
        bench.check().await;
        println!(
            "overhead: loaded {} customers x {} trades, {} typical books ({TYPICAL_BUYERS} buyers), \
             {} outliers ({OUTLIER_BUYERS} buyers), on each side, in {:.1?}",
            bench.keys,
            PAGES * 10,
            bench.books,
            bench.outliers,
            t.elapsed()
        );
        (bench, db_name)
    });

    let samples = Samples::default();
    let mut c = Criterion::default()
        .sample_size(sample_size)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10))
        .without_plots()
        .configure_from_args();
    for op in OPS {
        let mut group = c.benchmark_group(format!("overhead/{}", op.name()));
        group.sampling_mode(SamplingMode::Flat);
        for side in [Side::Library, Side::Driver] {
            let id = format!("{}/{}", op.name(), side.name());
            let (bench, samples) = (&bench, &samples);
            group.bench_function(side.name(), |b| {
                b.to_async(&rt).iter_custom(|iters| {
                    let id = id.clone();
                    async move {
                        let batch = bench.prepare(op, side, iters).await;
                        let t = Instant::now();
                        for i in 0..iters {
                            bench.run(op, side, &batch, i).await;
                        }
                        let took = t.elapsed();
                        bench.cleanup(op, side, &batch).await;
                        samples.record(&id, iters, took);
                        took
                    }
                })
            });
        }
        group.finish();
    }
    c.final_summary();

    let rows: Vec<(Op, Option<Duration>, Option<Duration>)> = OPS
        .iter()
        .map(|&op| {
            let m =
                |side: Side| samples.median(&format!("{}/{}", op.name(), side.name()), sample_size);
            (op, m(Side::Library), m(Side::Driver))
        })
        .collect();
    let interleaved: Vec<(Op, Duration, Duration)> = rt.block_on(async {
        let mut out = Vec::new();
        for op in OPS {
            let (lib, drv) = bench.interleaved(op, pairs).await;
            out.push((op, lib, drv));
        }
        out
    });
    let mut traces = Vec::new();
    rt.block_on(async {
        for op in OPS {
            for side in [Side::Library, Side::Driver] {
                traces.push((op, side, bench.trace(&trace, op, side).await));
            }
        }
    });

    let scale = if full { "full scale" } else { "smoke scale" };
    println!(
        "\noverhead ({scale}): median per operation, library / driver, same server, same client, \
         {} customers x {} buckets, {} books + {} outliers per side",
        bench.keys, PAGES, bench.books, bench.outliers
    );
    println!("criterion (median of {sample_size} samples, each the mean of its operations):");
    println!(
        "{:<14} {:>14} {:>14} {:>8}",
        "operation", "library", "driver", "ratio"
    );
    for (op, lib, drv) in &rows {
        if let (Some(lib), Some(drv)) = (lib, drv) {
            let ratio = lib.as_secs_f64() / drv.as_secs_f64();
            println!(
                "{:<14} {:>14} {:>14} {:>7.3}x",
                op.name(),
                ms(*lib),
                ms(*drv),
                ratio
            );
        }
    }
    println!(
        "interleaved ({pairs} pairs, library and driver alternating, median of single operations):"
    );
    println!(
        "{:<14} {:>14} {:>14} {:>8}",
        "operation", "library", "driver", "ratio"
    );
    for (op, lib, drv) in &interleaved {
        let ratio = lib.as_secs_f64() / drv.as_secs_f64();
        println!(
            "{:<14} {:>14} {:>14} {:>7.3}x",
            op.name(),
            ms(*lib),
            ms(*drv),
            ratio
        );
    }
    println!("\ncommands sent for {TRACED} operations (driver command monitoring):");
    for (op, side, text) in &traces {
        println!("  {} / {}:\n{text}", op.name(), side.name());
    }

    rt.block_on(async {
        bench.db.drop().await.ok();
    });
    println!("overhead: dropped database {db_name}");
}
