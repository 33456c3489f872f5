//! Migrating existing data into the patterns (issue 17, point 7): `pattern_core::adopt`'s
//! resumable migrations against a hand-written one-shot aggregation on the same server.
//!
//! - Buckets: 1,000,000 flat trades over 1,000 customers (`{_id, ticker, customerId, type,
//!   qty, date}`, inserted out of time order) into buckets of 100 that keep their time bounds
//!   (`migrate_bucket`), against `$sort` + `$group` + `$unwind` + `$group` + `$merge`.
//! - Outlier: 10,000 books with arrays of up to 5,000 buyers (every 10th book 50 to 5,000, the
//!   rest under 50) into the outlier layout, 50 kept, the rest in chunks of 500
//!   (`migrate_outlier`), against `$slice` + `$unwind` + `$group` + `$merge` then one pipeline
//!   `updateMany` of the main documents.
//!
//! Each run seeds a fresh database (in chunks generated on the fly: the process never holds
//! the data set), then migrates, timed, counting the commands its client sends and the
//! process's peak memory during the migration (`VmHWM`, reset before it through
//! `/proc/self/clear_refs`). Ours is then verified (`verify_bucket` / `verify_outlier`,
//! timed apart) and every result, ours and the aggregation's, checked item by item against the
//! data seeded (streamed, at both scales; at the smoke scale also against the source
//! collection as the server holds it).
//!
//!     cargo bench -p pattern-bench --bench migrate
//!
//! Needs `MONGODB_URI` (`scripts/bench.sh` starts a server and sets it). Under `cargo test` it
//! runs a smoke version (5,000 trades over 100 customers, 500 books of up to 500 buyers,
//! once each) that asserts our migrations are exact and verify clean; no speed assertion.
//!
//! Target: at least half the aggregation's throughput (items/s), while staying resumable and
//! exact. Printed at full scale, two runs of each, fresh database each.
//!
//! `migrate_bucket` reads the source in key and time order, sorted by the server
//! (`allowDiskUse`): it creates no index on the source. (An earlier version built one over the
//! 1,000,000 trades, which SecantusDB with `--cache-size 256M` never finished: it retried the
//! build for over 30 minutes, holding the lock every other DDL of the server waits on.) A
//! migration that gets no answer within 30 minutes (2 at the smoke scale) fails the run,
//! naming the commands it waits for.

mod exact;
mod log;
mod print;
mod runs;
mod seed;

use std::time::Instant;

use pattern_bench::scale;
use pattern_core::adopt::Source;
use pattern_core::spec::{BucketSpec, Keeps, OutlierSpec, SeriesOrder, SeriesSpec};

use crate::print::print_runs;
use crate::runs::{books_agg, books_ours, trades_agg, trades_ours};
use crate::seed::{Books, Trades};

/// 2023-11-14T22:13:20Z.
const T0: i64 = 1_700_000_000_000;
/// One trade every 6 s overall (each of 1,000 customers about one every 100 minutes).
const STEP_MS: i64 = 6_000;
/// Trade `i` happens in time slot `i * SCRAMBLE mod n`: insertion order is not time order.
const SCRAMBLE: i64 = 7_919;
/// Documents per `insert_many` when seeding trades; books go 1,000 at a time.
const SEED_CHUNK: usize = 10_000;
const BOOK_CHUNK: usize = 1_000;

const BUCKET_SIZE: u32 = 100;
const THRESHOLD: usize = 50;
const CHUNK: u32 = 500;

/// Ours: bucket size 100, with the time bounds kept (the realistic case).
const TRADES: BucketSpec = BucketSpec {
    collection: "trade_history",
    key_field: "customerId",
    items_field: "history",
    count_field: "count",
    page_field: "page",
    size: BUCKET_SIZE,
    keeps: Keeps {
        bounds: Some(("date_min", "date_max")),
        summary: &[],
        span: None,
        rollup: None,
    },
};
/// The aggregation's output, as a bucket layout (for `verify_bucket` on it).
const TRADES_AGG: BucketSpec = BucketSpec {
    collection: "trade_history_agg",
    ..TRADES
};
const SOURCE: Source<'static> = Source {
    collection: "trades",
    key_field: "customerId",
    time_field: "date",
};

const BOOKS: OutlierSpec = OutlierSpec {
    collection: "books",
    items_field: "buyers",
    threshold: THRESHOLD as u32,
    flag_field: "has_extras",
    overflow: SeriesSpec {
        collection: "books_extra",
        key_field: "book_id",
        items_field: "buyers_extra",
        count_field: "count",
        size: CHUNK,
        order: SeriesOrder::Seq("seq"),
        keeps: Keeps::NONE,
    },
};
/// The aggregation's output, as an outlier layout (for `verify_outlier` on it).
const BOOKS_AGG: OutlierSpec = OutlierSpec {
    overflow: SeriesSpec {
        collection: "books_extra_agg",
        ..BOOKS.overflow
    },
    ..BOOKS
};

fn main() {
    if std::env::var("MONGODB_URI").map_or(true, |u| u.trim().is_empty()) {
        panic!(
            "the migrate benchmark needs a MongoDB server and MONGODB_URI is not set: run it with \
             `scripts/bench.sh --bench migrate`, which starts the test server and sets it, or point \
             MONGODB_URI at a server of your own"
        );
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(run());
}

async fn run() {
    let started = Instant::now();
    let runs: usize = scale(2, 1);
    let t = Trades::new(scale(1_000_000, 5_000), scale(1_000, 100));
    let b = Books {
        n: scale(10_000, 500),
        max: scale(5_000, 500),
    };
    println!(
        "{} trades over {} customers -> buckets of {BUCKET_SIZE} keeping date_min/date_max; \
         {} books, {} buyers in all, {} books over {THRESHOLD} with {} buyers beyond it -> \
         outlier, chunks of {CHUNK}. {runs} run(s) of each, a fresh database each.",
        t.n,
        t.customers,
        b.n,
        b.total(),
        b.over(),
        b.beyond()
    );
    let mut stage = "$merge";

    let mut bucket_runs = Vec::new();
    for k in 0..runs {
        let r = trades_ours(t).await;
        println!(
            "  bucket, ours #{}: {:.2} s, {}",
            k + 1,
            r.took.as_secs_f64(),
            r.exact.summary()
        );
        bucket_runs.push((k, r));
        let r = trades_agg(t, &mut stage).await;
        println!(
            "  bucket, aggregation #{}: {:.2} s, {}",
            k + 1,
            r.took.as_secs_f64(),
            r.exact.summary()
        );
        bucket_runs.push((k, r));
    }
    bucket_runs.sort_by_key(|(k, r)| (!r.who.starts_with("ours"), *k));
    let trades_stage = stage;

    let mut outlier_runs = Vec::new();
    for k in 0..runs {
        let r = books_ours(b).await;
        println!(
            "  outlier, ours #{}: {:.2} s, {}",
            k + 1,
            r.took.as_secs_f64(),
            r.exact.summary()
        );
        outlier_runs.push((k, r));
        let r = books_agg(b, &mut stage).await;
        println!(
            "  outlier, aggregation #{}: {:.2} s, {}",
            k + 1,
            r.took.as_secs_f64(),
            r.exact.summary()
        );
        outlier_runs.push((k, r));
    }
    outlier_runs.sort_by_key(|(k, r)| (!r.who.starts_with("ours"), *k));

    print_runs(
        &format!(
            "Flat trades into buckets ({} trades, {} customers; aggregation ends in {trades_stage})",
            t.n, t.customers
        ),
        &bucket_runs,
    );
    print_runs(
        &format!(
            "Books into the outlier layout ({} books, {} buyers beyond {THRESHOLD} moved; aggregation ends in {stage} + updateMany)",
            b.n,
            b.beyond()
        ),
        &outlier_runs,
    );
    println!(
        "\n(total bench time {:.1} s)",
        started.elapsed().as_secs_f64()
    );

    // Ours must be exact and verify clean at every scale; the aggregation is reported only.
    for (_, r) in bucket_runs.iter().chain(&outlier_runs) {
        if r.who.starts_with("ours") {
            assert!(r.exact.ok(), "{}: {}", r.who, r.exact.summary());
            let (_, v) = r.verify.as_ref().unwrap();
            assert!(
                v.is_clean(),
                "{}: verification found {:?}",
                r.who,
                v.defects
            );
        }
    }
}
