//! Buckets as time series against MongoDB's own answers, same server, same run: 1,000,000
//! trades over 1,000 customers stored four ways, as flat documents (`insert_many`), in a
//! time-series collection (`insert_many`, `metaField` = customer) and in our buckets
//! (`ingest`, time bounds and a summary of `qty` kept). Prints, per layout: ingest
//! throughput (the layouts' batches interleaved, each timed), the last 10 trades of a
//! customer, an hour, a day and a month of a customer from the middle of the history and at its
//! end, the total quantity of a customer over all history, and storage (documents, bytes,
//! indexes); and, beside each range read, what a target's ratio can be judged against: the
//! floor of a read from this process (a find of an absent `_id`), the by-day `_id` range sent by
//! the driver, one by-day bucket found by its exact `_id`, and the `_id` range the buckets
//! without a span scan, sent by the driver without reading the collection's mark.
//!
//!     cargo bench -p pattern-bench --bench timeseries
//!
//! Needs `MONGODB_URI` (`scripts/bench.sh` starts a server and sets it). Under `cargo test`
//! it runs a smoke version (20,000 trades over 100 customers) that checks the four layouts
//! answer every query alike; speed targets are printed at full scale only (this machine is
//! noisy: medians of many reads, ratios within one run).
//!
//! The buckets without a span hold a lease of 1 s on their width (`PATTERN_TS_LEASE_MS`, 0:
//! none), so that a range read within 0.9 s of one that read the collection's mark is one `find`.
//!
//! A fourth layout, the same buckets cut by day (`span = "1d"`), stands beside the buckets of
//! unbounded span (the previous layout), same data, same run.
//!
//! Targets: ingest at least half of flat `insert_many` and at least the time-series
//! collection's; last-10 and one-day range no slower than the time-series collection; cut by
//! day, ingest at least half the time-series collection's, an hour, a day and a month at
//! least 1.5x faster than it and a day no slower than flat documents; a whole-history total
//! at least 10x faster than aggregating the items.

use std::time::{Duration, Instant};

use bson::{doc, DateTime, Document};
use futures::TryStreamExt;
use mongodb::Collection;
use pattern_bench::MARKET_T0 as T0;
use pattern_bench::{full_scale, market_trade, scale, DailyHistory, History, Trade};
use pattern_core::Bucket;

const BATCH: usize = 10_000;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

/// The time windows read: name, length (ms), and whether the window ends with the history
/// (its newest trades, in the buckets still filling) rather than starting in its middle.
const WINDOWS: [(&str, i64, bool); 6] = [
    ("one hour", 3_600_000, false),
    ("one day", 86_400_000, false),
    ("one month", 30 * 86_400_000, false),
    ("one hour at the end", 3_600_000, true),
    ("one day at the end", 86_400_000, true),
    ("one month at the end", 30 * 86_400_000, true),
];
/// How many windows.
const W: usize = WINDOWS.len();

/// One figure per window, as `a ms, b ms, ...` with the windows' names.
fn per_window(xs: &[Duration; W]) -> String {
    (WINDOWS.iter().zip(xs))
        .map(|((name, _, _), x)| format!("{name} {:.3} ms", ms(*x)))
        .collect::<Vec<_>>()
        .join(", ")
}

struct Layout {
    name: &'static str,
    ingest: Duration,
    last10: Duration,
    /// One per [`WINDOWS`].
    windows: [Duration; W],
    total: Duration,
    storage: String,
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(run());
}

async fn run() {
    let n: i64 = scale(1_000_000, 20_000);
    let customers: i64 = scale(1_000, 100);
    let reads: usize = scale(25, 10);
    // The time-series collection's whole-history `$group` takes seconds on the test server:
    // fewer of those.
    let slow_reads: usize = scale(5, 3);
    // One trade every 6 s overall: each customer about one every 1.7 h (full scale).
    let step = 6_000;
    // Counting the `aggregate`s on the buckets' collection: a range read without a span that
    // reads the collection's mark sends one, a read within the width's lease a `find`.
    let marked = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = marked.clone();
    let store = pattern_tests::monitored_mongo_store("bench_timeseries", move |ev| {
        if let mongodb::event::command::CommandEvent::Started(s) = ev {
            if s.command_name == "aggregate" && s.command.get_str("aggregate") == Ok("trades") {
                count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    })
    .await;
    let db = store.database().clone();
    let trades: Vec<(i64, Trade)> = (0..n)
        .map(|i| (i % customers, market_trade(i, step)))
        .collect();
    println!("{n} trades over {customers} customers, batches of {BATCH}");

    // Flat documents, indexed as a reader of one customer's trades by time needs.
    let flat: Collection<Document> = db.collection("flat_trades");
    flat.create_index(
        mongodb::IndexModel::builder()
            .keys(doc! {"customerId": 1, "date": 1})
            .build(),
    )
    .await
    .unwrap();
    let ts = pattern_bench::market_time_series(&db).await;
    pattern_core::bucket::ensure_indexes::<History, _>(&store)
        .await
        .unwrap();
    // The buckets without a span read by a lease on their width (`bucket::lease_width`), taken
    // before the ingest as a program would: `PATTERN_TS_LEASE_MS` milliseconds (0: none).
    let lease_ms: u64 = pattern_bench::env_number("PATTERN_TS_LEASE_MS", 1_000);
    if lease_ms > 0 {
        let lease = Duration::from_millis(lease_ms);
        (pattern_core::bucket::lease_width::<History, _>(&store, lease).await).unwrap();
    }
    println!("the buckets' width lease: {lease_ms} ms");
    pattern_core::bucket::ensure_indexes::<DailyHistory, _>(&store)
        .await
        .unwrap();

    // The four ingests interleaved: batch `i` of each layout in turn (the order rotating
    // every batch), each timed on its own, so that the server's growing data and cache, and
    // whatever else the machine is doing, fall on every layout alike (one after the other,
    // the last layout ingested into the fullest cache).
    let mut took = [Duration::ZERO; 4];
    for (i, chunk) in trades.chunks(BATCH).enumerate() {
        for turn in 0..4 {
            let layout = (i + turn) % 4;
            let started = Instant::now();
            match layout {
                0 | 1 => {
                    let docs: Vec<Document> = chunk
                        .iter()
                        .map(|(c, t)| pattern_bench::flat_trade(*c, t))
                        .collect();
                    let coll = if layout == 0 { &flat } else { &ts };
                    coll.insert_many(docs).await.unwrap();
                }
                2 => ingest_batch::<History>(&store, chunk).await,
                _ => ingest_batch::<DailyHistory>(&store, chunk).await,
            }
            took[layout] += started.elapsed();
        }
    }
    let [flat_ingest, ts_ingest, ours_ingest, daily_ingest] = took;
    println!(
        "ingest, interleaved batch by batch: flat insert_many {flat_ingest:.1?}, time-series \
         insert_many {ts_ingest:.1?}, buckets {ours_ingest:.1?}, buckets by day \
         {daily_ingest:.1?}"
    );

    // The reads: random customers (same for each layout), a day in the middle of history.
    let picks: Vec<i64> = (0..reads as i64)
        .map(|i| (i * 7_919 + 13) % customers)
        .collect();
    let day_from = T0 + (n / 2) * step;
    // Just past the newest trade.
    let history_end = T0 + n * step;

    let mut layouts = Vec::new();
    // Each customer read in every layout in turn, so that whatever else the machine (or the
    // server, after the time-series collection's long `$group`s) is doing falls on all alike.
    let names = ["flat", "time-series", "buckets", "buckets by day"];
    type Timed = (Vec<Duration>, [Vec<Duration>; W], Vec<Duration>);
    let mut timed: Vec<Timed> = vec![Timed::default(); names.len()];
    // The floor of a read from this process, per window: a find of an `_id` no document has in
    // the by-day buckets (one round trip, one lookup in the index their range reads use, nothing
    // returned), then the `_id` range the by-day read sends, by the driver, both sent just
    // before the by-day read of the window.
    let daily: Collection<Document> = db.collection("trades_daily");
    let mut floor: [Vec<Duration>; W] = Default::default();
    let mut by_driver: [Vec<Duration>; W] = Default::default();
    // What no design that returns a bucket can go below: one by-day bucket of the window found
    // by its exact `_id` (a read that knew which bucket holds the window).
    let mut one_bucket: [Vec<Duration>; W] = Default::default();
    // The buckets without a span: the `_id` range their read scans, by the driver, without the
    // collection's mark (what the read would cost if it need not learn the width).
    let unbounded: Collection<Document> = db.collection("trades");
    let mark = (db.collection::<Document>(pattern_core::spec::BOUNDED_COLLECTIONS))
        .find_one(doc! {"_id": "trades"})
        .await
        .unwrap()
        .expect("the buckets' collection has its mark");
    let width = |side: &str| mark.get(side).and_then(pattern_tests::as_int).unwrap_or(0);
    let (after, before) = (width("width_after"), width("width_before"));
    println!("the buckets' width: {after} ms after their `_id` second, {before} ms before");
    let mut range_alone: [Vec<Duration>; W] = Default::default();
    // The buckets' range reads by whether they read the mark: within the lease, and not.
    let mut leased: [Vec<Duration>; W] = Default::default();
    let mut with_mark: [Vec<Duration>; W] = Default::default();
    for (i, &c) in picks.iter().enumerate() {
        for (l, name) in names.into_iter().enumerate() {
            let (last10, windows, total) = &mut timed[l];
            // The last 10 trades, newest first in the flat layouts, push order in ours.
            let t = Instant::now();
            let got: Vec<i64> = match name {
                "buckets" => latest::<History>(&store, c).await,
                "buckets by day" => latest::<DailyHistory>(&store, c).await,
                _ => {
                    let coll = if name == "flat" { &flat } else { &ts };
                    dates(coll, doc! {"customerId": c}, -1, Some(10)).await
                }
            };
            last10.push(t.elapsed());
            let want: Vec<i64> = (0..10)
                .map(|k| {
                    let last = (n - 1) - ((n - 1 - c) % customers);
                    T0 + (last - k * customers) * step
                })
                .collect();
            assert_eq!(got, want, "{name}: last 10 of {c}");

            // The trades of each window, from the middle of the history or at its end.
            for (w, (window, len, at_end)) in WINDOWS.into_iter().enumerate() {
                let start = if at_end { history_end - len } else { day_from };
                let (from, to) = (
                    DateTime::from_millis(start),
                    DateTime::from_millis(start + len),
                );
                if name == "buckets by day" {
                    let t = Instant::now();
                    let absent = format!("{c}_absent");
                    let none = daily.find_one(doc! {"_id": absent}).await.unwrap();
                    floor[w].push(t.elapsed());
                    assert!(none.is_none());
                    // The `_id` range the library's read sends, by the driver: its buckets
                    // decoded as documents, nothing left out.
                    const DAY: i64 = 86_400_000;
                    let (f, t_) = (from.timestamp_millis(), to.timestamp_millis());
                    let end = (t_ - 1).div_euclid(DAY) * DAY + DAY;
                    let (lo, hi) = (f.div_euclid(DAY) * DAY / 1000, (end - 1) / 1000 + 1);
                    let ids =
                        doc! {"_id": {"$gte": format!("{c}_{lo}"), "$lt": format!("{c}_{hi}")}};
                    let t = Instant::now();
                    let docs = find_all(&daily, ids).await;
                    by_driver[w].push(t.elapsed());
                    assert!(!docs.is_empty());
                    let one = doc! {"_id": docs[0].get_str("_id").unwrap()};
                    let t = Instant::now();
                    let found = daily.find_one(one).await.unwrap();
                    one_bucket[w].push(t.elapsed());
                    assert!(found.is_some());
                }
                if name == "buckets" {
                    let (f, t_) = (from.timestamp_millis(), to.timestamp_millis());
                    let (lo, hi) = (
                        (f - after).div_euclid(1000),
                        (t_ - 1 + before).div_euclid(1000),
                    );
                    let ids = doc! {"_id": {"$gte": format!("{c}_{lo}"), "$lt": format!("{c}_{}", hi + 1)}};
                    let t = Instant::now();
                    let docs = find_all(&unbounded, ids).await;
                    range_alone[w].push(t.elapsed());
                    assert!(!docs.is_empty());
                }
                let marks_before = marked.load(std::sync::atomic::Ordering::Relaxed);
                let t = Instant::now();
                let got: Vec<i64> = match name {
                    "buckets" => range::<History>(&store, c, from..to).await,
                    "buckets by day" => range::<DailyHistory>(&store, c, from..to).await,
                    _ => {
                        let coll = if name == "flat" { &flat } else { &ts };
                        let window = doc! {"customerId": c, "date": {"$gte": from, "$lt": to}};
                        dates(coll, window, 1, None).await
                    }
                };
                windows[w].push(t.elapsed());
                if name == "buckets" {
                    let now = marked.load(std::sync::atomic::Ordering::Relaxed);
                    let kind = if now > marks_before {
                        &mut with_mark
                    } else {
                        &mut leased
                    };
                    kind[w].push(t.elapsed());
                }
                let want: Vec<i64> = (c..n)
                    .step_by(customers as usize)
                    .map(|i| T0 + i * step)
                    .filter(|ms| *ms >= start && *ms < start + len)
                    .collect();
                assert_eq!(got, want, "{name}: {window} of {c}");
            }

            // The total quantity over all history.
            if name == "time-series" && i >= slow_reads {
                continue;
            }
            let t = Instant::now();
            let got: i64 = match name {
                "buckets" => History::summary(&store, &c, ..)
                    .await
                    .unwrap()
                    .qty_sum
                    .as_i64()
                    .unwrap(),
                "buckets by day" => DailyHistory::summary(&store, &c, ..)
                    .await
                    .unwrap()
                    .qty_sum
                    .as_i64()
                    .unwrap(),
                _ => {
                    let coll = if name == "flat" { &flat } else { &ts };
                    sum_qty(coll, c).await
                }
            };
            total.push(t.elapsed());
            let want: i64 = trades
                .iter()
                .filter(|(k, _)| *k == c)
                .map(|(_, t)| t.qty)
                .sum();
            assert_eq!(got, want, "{name}: total of {c}");
        }
    }
    for (name, (last10, windows, total)) in names.into_iter().zip(timed) {
        let windows = windows.map(median);
        println!(
            "{name}: last 10 {:.3} ms, {}, total {:.3} ms (medians)",
            ms(median(last10.clone())),
            per_window(&windows),
            ms(median(total.clone()))
        );
        let (ingest, storage) = match name {
            "flat" => (flat_ingest, storage(&db, "flat_trades").await),
            "time-series" => (ts_ingest, storage(&db, "ts_trades").await),
            "buckets" => (ours_ingest, storage(&db, "trades").await),
            _ => (daily_ingest, storage(&db, "trades_daily").await),
        };
        layouts.push(Layout {
            name,
            ingest,
            last10: median(last10),
            windows,
            total: median(total),
            storage,
        });
    }
    // Aggregating our own buckets' items (what a summary saves): `$unwind` and `$group`.
    let mut unwound = Vec::new();
    let buckets: Collection<Document> = db.collection("trades");
    for &c in &picks {
        let t = Instant::now();
        let pipeline = vec![
            doc! {"$match": {"customerId": c}},
            doc! {"$unwind": "$history"},
            doc! {"$group": {"_id": null, "qty": {"$sum": "$history.qty"}}},
        ];
        let out: Vec<Document> = buckets
            .aggregate(pipeline)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        unwound.push(t.elapsed());
        let want: i64 = trades
            .iter()
            .filter(|(k, _)| *k == c)
            .map(|(_, t)| t.qty)
            .sum();
        assert_eq!(
            out[0].get("qty").and_then(pattern_tests::as_int),
            Some(want)
        );
    }
    let unwound = median(unwound);

    println!(
        "\n| layout | ingest (items/s) | last 10 (ms) | one hour (ms) | one day (ms) | one month (ms) \
         | total qty, all history (ms) | storage |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for l in &layouts {
        println!(
            "| {} | {:.0} ({:.1} s) | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {} |",
            l.name,
            n as f64 / l.ingest.as_secs_f64(),
            l.ingest.as_secs_f64(),
            ms(l.last10),
            ms(l.windows[0]),
            ms(l.windows[1]),
            ms(l.windows[2]),
            ms(l.total),
            l.storage
        );
    }
    println!(
        "| buckets, `$unwind` + `$group` of the items | | | | | | {:.3} | |",
        ms(unwound)
    );
    println!(
        "\nat the history's end (the newest trades): \n| layout | one hour (ms) | one day (ms) | \
         one month (ms) |\n|---|---|---|---|"
    );
    for l in &layouts {
        let at_end = (WINDOWS.iter().zip(&l.windows)).filter(|((_, _, end), _)| *end);
        let cells: Vec<String> = at_end.map(|(_, d)| format!("{:.3}", ms(*d))).collect();
        println!("| {} | {} |", l.name, cells.join(" | "));
    }
    let floor = floor.map(median);
    let by_driver = by_driver.map(median);
    let one_bucket = one_bucket.map(median);
    let range_alone = range_alone.map(median);
    println!(
        "one by-day bucket of the window by its exact `_id`, by the driver (medians): {}",
        per_window(&one_bucket)
    );
    println!(
        "the buckets without a span: their read's `_id` range by the driver, the mark not read \
         (medians): {}",
        per_window(&range_alone)
    );
    // Reads of each kind, their median and how many (none: `-`).
    let split = |xs: &[Vec<Duration>; W]| {
        (WINDOWS.iter().zip(xs))
            .map(|((name, _, _), x)| match x.is_empty() {
                true => format!("{name} - (0)"),
                false => format!("{name} {:.3} ms ({})", ms(median(x.clone())), x.len()),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "the buckets without a span, their reads within the width's lease (one `find`; medians, \
         reads): {}",
        split(&leased)
    );
    println!(
        "the buckets without a span, their reads of the mark (medians, reads): {}",
        split(&with_mark)
    );
    println!(
        "the by-day read's `_id` range by the driver (medians): {}",
        per_window(&by_driver)
    );
    println!(
        "the floor of a read (a find of an absent `_id` of the by-day buckets, before each of \
         their reads; medians): {}",
        per_window(&floor)
    );
    let [f, t, b, d] = [&layouts[0], &layouts[1], &layouts[2], &layouts[3]];
    let aggregate_items = f.total.min(t.total).min(unwound);
    let ratio = |x: Duration, y: Duration| x.as_secs_f64() / y.as_secs_f64();
    let mut targets: Vec<(String, f64, f64)> = [
        (
            "ingest >= 0.5x flat insert_many",
            ratio(f.ingest, b.ingest),
            0.5,
        ),
        (
            "ingest >= 1x time-series insert_many",
            ratio(t.ingest, b.ingest),
            1.0,
        ),
        (
            "by day: ingest >= 0.5x time-series insert_many",
            ratio(t.ingest, d.ingest),
            0.5,
        ),
        (
            "last 10: time-series / ours >= 1",
            ratio(t.last10, b.last10),
            1.0,
        ),
    ]
    .map(|(what, r, want)| (what.to_owned(), r, want))
    .to_vec();
    for (w, (window, _, _)) in WINDOWS.into_iter().enumerate() {
        let (tw, bw, dw) = (t.windows[w], b.windows[w], d.windows[w]);
        targets.push((
            format!("{window}: time-series / ours >= 1"),
            ratio(tw, bw),
            1.0,
        ));
        let by_day = format!("by day, {window}: time-series / ours >= 1.5");
        targets.push((by_day, ratio(tw, dw), 1.5));
        let floor_ratio = format!("{window}: time-series / the floor of a read");
        println!("{floor_ratio}: {:.2}", ratio(tw, floor[w]));
        let one = ratio(tw, one_bucket[w]);
        println!("{window}: time-series / one by-day bucket by its `_id`: {one:.2}");
        let alone = ratio(tw, range_alone[w]);
        println!("{window}: time-series / the no-span `_id` range, the mark not read: {alone:.2}");
    }
    let flat_day = ratio(f.windows[1], d.windows[1]);
    targets.push(("by day, one day: flat / ours >= 1".into(), flat_day, 1.0));
    let total = ratio(aggregate_items, b.total);
    targets.push((
        "total: fastest aggregation of the items / ours >= 10".into(),
        total,
        10.0,
    ));
    println!("\n| target | ratio | met |\n|---|---|---|");
    for (what, ratio, want) in targets {
        let met = if ratio >= want { "yes" } else { "NO" };
        println!("| {what} | {ratio:.2} | {met} |");
    }
    if !full_scale() {
        println!("(smoke scale: the ratios are not the targets' figures)");
    }
    // `PATTERN_TS_KEEP=1`: the database is left for a look from another process.
    if std::env::var_os("PATTERN_TS_KEEP").is_some() {
        println!("kept database {}", db.name());
    } else {
        let _ = db.drop().await;
    }
    drop(store);
}

/// One batch of trades ingested into `B`'s buckets, every one written.
async fn ingest_batch<B: Bucket<Key = i64, Item = Trade>>(
    store: &pattern_core::store::MongoStore,
    chunk: &[(i64, Trade)],
) {
    let written = pattern_core::bucket::ingest::<B, _>(store, chunk)
        .await
        .unwrap();
    assert_eq!(written as usize, chunk.len());
}

/// The dates (ms) of customer `c`'s last 10 trades in `B`'s buckets, newest first.
async fn latest<B: Bucket<Key = i64, Item = Trade>>(
    store: &pattern_core::store::MongoStore,
    c: i64,
) -> Vec<i64> {
    let last = pattern_core::bucket::latest::<B, _, _>(store, &c, 10)
        .await
        .unwrap();
    last.into_iter()
        .rev()
        .map(|t| t.date.timestamp_millis())
        .collect()
}

/// The dates (ms) of customer `c`'s trades in `range`, from `B`'s buckets.
async fn range<B: Bucket<Key = i64, Item = Trade>>(
    store: &pattern_core::store::MongoStore,
    c: i64,
    range: std::ops::Range<DateTime>,
) -> Vec<i64> {
    (pattern_core::bucket::range::<B, _, _>(store, &c, range))
        .map_ok(|t| t.date.timestamp_millis())
        .try_collect()
        .await
        .unwrap()
}

/// Every document of `coll` matching `filter`, decoded by the driver.
async fn find_all(coll: &Collection<Document>, filter: Document) -> Vec<Document> {
    coll.find(filter)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// The dates (ms) of a flat or time-series layout's trades matching `filter`, sorted by date
/// (`dir`), at most `limit`.
async fn dates(
    coll: &Collection<Document>,
    filter: Document,
    dir: i32,
    limit: Option<i64>,
) -> Vec<i64> {
    let found = coll.find(filter).sort(doc! {"date": dir});
    let found = match limit {
        Some(n) => found.limit(n).await,
        None => found.await,
    };
    let docs: Vec<Document> = found.unwrap().try_collect().await.unwrap();
    docs.iter()
        .map(|d| d.get_datetime("date").unwrap().timestamp_millis())
        .collect()
}

async fn sum_qty(coll: &Collection<Document>, c: i64) -> i64 {
    let pipeline = vec![
        doc! {"$match": {"customerId": c}},
        doc! {"$group": {"_id": null, "qty": {"$sum": "$qty"}}},
    ];
    let out: Vec<Document> = coll
        .aggregate(pipeline)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    out[0].get("qty").and_then(pattern_tests::as_int).unwrap()
}

/// What the server reports of a collection: documents, data bytes, indexes and their bytes.
async fn storage(db: &mongodb::Database, coll: &str) -> String {
    let s = db.run_command(doc! {"collStats": coll}).await.unwrap();
    let n = |k: &str| s.get(k).and_then(pattern_tests::as_int).unwrap_or(-1);
    let docs = match s.get_document("timeseries") {
        Ok(t) => format!(
            "{} buckets",
            t.get("bucketCount")
                .and_then(pattern_tests::as_int)
                .unwrap_or(-1)
        ),
        Err(_) => format!("{} docs", n("count")),
    };
    format!(
        "{docs}, {:.1} MB data, {} indexes {:.1} MB",
        n("size") as f64 / 1e6,
        n("nindexes"),
        n("totalIndexSize") as f64 / 1e6
    )
}
