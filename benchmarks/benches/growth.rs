//! Growth: the cost of a bucket push stays flat as the stored history grows.
//!
//! For each store (the in-memory `MemoryStore`, then MongoDB at `MONGODB_URI`) and each shape
//! (the history spread over 1,000 keys; all of it under one key), the history of a
//! `#[derive(Bucket)]` trade series (size 10) is grown to 10,000, then 100,000, then 1,000,000
//! items (smoke scale: 1,000 and 10,000 over 100 keys), and at each level a fixed batch of
//! single `push` calls is timed: 2,000 pushes (smoke: 200) spread round-robin over the keys, run by
//! [`MONGO_TASKS`] concurrent pushers on MongoDB over many keys, by one pusher for one key on
//! MongoDB (concurrent pushers into one key all update its one open bucket, so they measure the
//! server's handling of concurrent writes to one document, not how the push grows with the
//! history: `benchmarks/scripts/one_key.py` measures that contention), and one at a time on the
//! in-memory store (whose futures never wait). Reported: pushes per second (the batch over its wall time), and
//! the median and 99th percentile of the single pushes' latencies. On MongoDB over many keys,
//! the same batch is then sent by hand-written driver code (the library's own `update`, into
//! open buckets: see [`measure_driver`]): the server's share of the cost at each size.
//!
//! Between levels the history is preloaded with `push_many`, 1,000 items per call (whole
//! buckets, one `bulkWrite` a call), by [`LOADERS`] concurrent loaders on MongoDB (one for the
//! one-key shape, whose concurrent loaders would race for the same next bucket); how long each
//! preload took is printed. A level is measured with exactly that many items stored (the
//! pushes of the previous levels count towards it).
//!
//! At the end it checks that key 0 of each run holds every item pushed to it (every push
//! returned `Ok`), and fails after printing the table if not.
//!
//! MongoDB budget: on a slow server (the SecantusDB test server takes ~1-50 ms per operation)
//! 1,000,000 items is ~100,000 bucket documents per shape. Before preloading a level, the time
//! it would take is estimated from the previous preload's rate; a level that would take the
//! shape past half the budget (`GROWTH_MONGO_BUDGET_SECS`, default 1200 s for both shapes; 20 s
//! at smoke scale) is skipped, and a preload still running when only the measurement's time is
//! left of the budget stops short of its level (the row shows the items reached); the table
//! says so. The pushes of one level stop after 120 s
//! (5 s at smoke scale); the rate is then over the pushes done, and the table says so.
//!
//! Needs `MONGODB_URI` (the SecantusDB test server, see `scripts/test.sh`, or any MongoDB).
//! Run: `cargo bench -p pattern-bench --bench growth` (full scale, up to ~25 minutes).
//! `cargo test -p pattern-bench --bench growth` runs it at a smoke scale.

use std::time::{Duration, Instant};

use futures::StreamExt;
use pattern_bench::{Trade, TradeHistory};
use pattern_core::store::MongoStore;
use pattern_core::{store::Store, Bucket, MemoryStore};

/// Epoch seconds of a key's trade 0; trade `i` is `i` seconds later, so every bucket of a key
/// starts in its own second.
const T0: i64 = 1_600_000_000;
/// Items per `push_many` call while preloading.
const PRELOAD_CALL: i64 = 1_000;
/// Concurrent `push_many` callers preloading MongoDB.
const LOADERS: usize = 8;
/// Concurrent pushers measuring MongoDB.
const MONGO_TASKS: usize = 8;

/// Keys of the spread shape.
fn keys() -> i64 {
    pattern_bench::scale(1_000, 100)
}

/// How long the pushes of one level may run on MongoDB before the rest of the batch is
/// skipped (the rate is then taken over the pushes done).
fn measure_limit() -> Duration {
    Duration::from_secs(pattern_bench::scale(120, 5))
}

/// Single pushes timed at each level.
fn batch() -> i64 {
    pattern_bench::scale(2_000, 200)
}

/// Items stored at each measured level.
fn levels() -> Vec<i64> {
    pattern_bench::scale(vec![10_000, 100_000, 1_000_000], vec![1_000, 10_000])
}

/// Trade number `i` of a series, `i` seconds after [`T0`].
fn trade(i: i64) -> Trade {
    pattern_bench::trade(T0, i)
}

/// The history being grown: how many items each key holds.
struct Series {
    stored: Vec<i64>,
}

impl Series {
    fn new(keys: i64) -> Self {
        Series {
            stored: vec![0; keys as usize],
        }
    }
    fn keys(&self) -> i64 {
        self.stored.len() as i64
    }
    fn total(&self) -> i64 {
        self.stored.iter().sum()
    }
}

/// Grows every key to `level / keys` items with `push_many`, [`PRELOAD_CALL`] items per call,
/// `concurrency` calls at a time; no call starts after `deadline`. Returns the items written.
async fn preload<S: Store>(
    store: &S,
    series: &mut Series,
    level: i64,
    concurrency: usize,
    deadline: Option<Instant>,
) -> i64 {
    let target = level / series.keys();
    let calls: Vec<(i64, i64, i64)> = series
        .stored
        .iter()
        .enumerate()
        .flat_map(|(k, &from)| {
            (from..target)
                .step_by(PRELOAD_CALL as usize)
                .map(move |a| (k as i64, a, (a + PRELOAD_CALL).min(target)))
        })
        .collect();
    let done: Vec<(i64, i64)> = futures::stream::iter(calls)
        .map(|(k, a, b)| async move {
            if deadline.is_some_and(|d| Instant::now() > d) {
                return None;
            }
            let items: Vec<Trade> = (a..b).map(trade).collect();
            TradeHistory::push_many(store, &k, &items)
                .await
                .expect("preload");
            Some((k, b))
        })
        .buffer_unordered(concurrency)
        .filter_map(|r| async move { r })
        .collect()
        .await;
    // The calls that started are a prefix of the list, which holds each key's calls in order:
    // each key holds everything up to the end of its last call.
    let before = series.total();
    for (k, b) in done {
        let s = &mut series.stored[k as usize];
        *s = (*s).max(b);
    }
    series.total() - before
}

/// Times up to `n` single pushes, round-robin over the keys, `concurrency` at a time; no push
/// starts after `deadline`. Returns the batch's wall time and each push's latency.
async fn measure<S: Store>(
    store: &S,
    series: &mut Series,
    n: i64,
    concurrency: usize,
    deadline: Instant,
) -> (Duration, Vec<Duration>) {
    timed_pushes(
        series,
        n,
        concurrency,
        deadline,
        false,
        |key, at| async move {
            TradeHistory::push(store, &key, trade(at))
                .await
                .expect("push");
        },
    )
    .await
}

/// The same batch as [`measure`], sent by hand-written driver code: for each push, the exact
/// `update` the library sends in the common case (`{customerId: k, count: {$lt: 10}}`,
/// `$push`, `$inc`, upsert with `$setOnInsert {_id, customerId, page}`), the page number
/// computed from what the key holds. Only pushes into a key's open bucket are sent (a key
/// whose newest bucket is full is skipped, so the driver never opens a bucket the library's
/// memo of page numbers does not know); over 1,000 keys every key has one then. So the
/// server's own cost of a push at this history size, to set the library's against.
async fn measure_driver(
    coll: &mongodb::Collection<bson::Document>,
    series: &mut Series,
    n: i64,
    concurrency: usize,
    deadline: Instant,
) -> (Duration, Vec<Duration>) {
    timed_pushes(
        series,
        n,
        concurrency,
        deadline,
        true,
        |key, at| async move {
            let t = trade(at);
            let id = format!("{key}_{}", T0 + at - at % 10);
            let update = bson::doc! {
                "$push": {"history": bson::to_bson(&t).expect("a trade")},
                "$inc": {"count": 1},
                "$setOnInsert": {"_id": id, "customerId": key, "page": at / 10 + 1},
            };
            let r = coll
                .update_one(bson::doc! {"customerId": key, "count": {"$lt": 10}}, update)
                .upsert(true)
                .await
                .expect("driver push");
            assert_eq!(
                r.matched_count, 1,
                "driver push of key {key} into its open bucket"
            );
        },
    )
    .await
}

/// Up to `n` calls of `push(key, item number)`, round-robin over the keys, `concurrency` at a
/// time, each timed; no call starts after `deadline`. With `open_only`, only the pushes that
/// land in a key's open bucket (one that already holds items and that they do not fill past).
/// Counts the pushes into `series`; returns the wall time and each push's latency.
async fn timed_pushes<F, Fut>(
    series: &mut Series,
    n: i64,
    concurrency: usize,
    deadline: Instant,
    open_only: bool,
    push: F,
) -> (Duration, Vec<Duration>)
where
    F: Fn(i64, i64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let keys = series.keys();
    let base = series.stored.clone();
    let start = Instant::now();
    let push = &push;
    let pushed: Vec<(i64, Duration)> = futures::stream::iter(0..n)
        .filter_map(|j| {
            let key = j % keys;
            let held = base[key as usize];
            let at = held + j / keys;
            let open = held % 10 != 0 && at / 10 == held / 10;
            async move { (!open_only || open).then_some((key, at)) }
        })
        .map(|(key, at)| async move {
            if Instant::now() > deadline {
                return None;
            }
            let t = Instant::now();
            push(key, at).await;
            Some((key, t.elapsed()))
        })
        .buffer_unordered(concurrency)
        .filter_map(|r| async move { r })
        .collect()
        .await;
    let wall = start.elapsed();
    // The pushes that started are a prefix of the batch: each key got the next items in order.
    for (key, _) in &pushed {
        series.stored[*key as usize] += 1;
    }
    (wall, pushed.into_iter().map(|(_, d)| d).collect())
}

/// One line of the table.
struct Row {
    store: &'static str,
    shape: String,
    items: i64,
    preload: Option<(i64, Duration)>,
    measured: Option<Measured>,
    note: String,
}

struct Measured {
    pushes: usize,
    per_second: f64,
    median: Duration,
    p99: Duration,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Which store, and how hard to drive it.
struct Target<'a, S> {
    name: &'static str,
    store: &'a S,
    loaders: usize,
    pushers: usize,
    /// Time allowed for this shape, preloads and measurements together (None: no limit).
    budget: Option<Duration>,
    /// The collection, for the hand-written driver pushes measured beside the library's
    /// (MongoDB, many keys).
    driver: Option<mongodb::Collection<bson::Document>>,
}

/// What one shape gave: its rows, and the items key 0 should hold against what it holds.
struct ShapeRun {
    rows: Vec<Row>,
    pushed_to_key0: u64,
    held_by_key0: u64,
}

/// Grows one shape through every level on one store, measuring at each.
async fn run_shape<S: Store>(target: Target<'_, S>, keys: i64) -> ShapeRun {
    let shape = if keys == 1 {
        "1 key".to_owned()
    } else {
        format!("{keys} keys")
    };
    let started = Instant::now();
    let mut series = Series::new(keys);
    let mut rows = Vec::new();
    // Preload rate seen so far (items per second) and the last measurement's wall time, for
    // the budget.
    let mut rate: Option<f64> = None;
    let mut last_measure = Duration::ZERO;
    for level in levels() {
        let todo = level - series.total();
        if let (Some(budget), Some(rate)) = (target.budget, rate) {
            let estimate = Duration::from_secs_f64(todo as f64 / rate) + last_measure;
            if started.elapsed() + estimate > budget {
                let note = format!(
                    "not run: preloading {todo} more items at {rate:.0} items/s and measuring would \
                     take ~{:.0} s, past this shape's MongoDB budget of {} s",
                    estimate.as_secs_f64(),
                    budget.as_secs()
                );
                println!("growth: {} / {shape} / {level}: {note}", target.name);
                rows.push(Row {
                    store: target.name,
                    shape: shape.clone(),
                    items: level,
                    preload: None,
                    measured: None,
                    note,
                });
                continue;
            }
        }
        let t = Instant::now();
        // One key is preloaded by one caller: concurrent `push_many` calls into one key all
        // race for its next bucket and mostly retry.
        let loaders = if keys == 1 { 1 } else { target.loaders };
        // And measured by one pusher: see the module's documentation.
        let pushers = if keys == 1 { 1 } else { target.pushers };
        // Stop preloading in time to measure within the budget.
        let preload_deadline = target
            .budget
            .map(|b| started + b.saturating_sub(measure_limit()));
        let written = preload(target.store, &mut series, level, loaders, preload_deadline).await;
        let took = t.elapsed();
        rate = Some(written as f64 / took.as_secs_f64().max(1e-9));
        println!(
            "growth: {} / {shape}: preloaded {written} items in {took:.1?} ({:.0} items/s), {} stored",
            target.name,
            rate.unwrap(),
            series.total()
        );

        // No push starts after the shape's budget (and at most MEASURE_LIMIT after now).
        let mut deadline = Instant::now() + measure_limit();
        if let Some(budget) = target.budget {
            deadline = deadline
                .min(started + budget)
                .max(Instant::now() + Duration::from_secs(10));
        }
        let items = series.total();
        let (wall, mut latencies) =
            measure(target.store, &mut series, batch(), pushers, deadline).await;
        last_measure = wall;
        latencies.sort();
        let m = Measured {
            pushes: latencies.len(),
            per_second: latencies.len() as f64 / wall.as_secs_f64(),
            median: percentile(&latencies, 0.5),
            p99: percentile(&latencies, 0.99),
        };
        let mut notes = Vec::new();
        if items < level {
            notes.push(format!("preload stopped by the budget short of {level}"));
        }
        if m.pushes < batch() as usize {
            notes.push(format!(
                "pushes stopped at the time limit after {}",
                m.pushes
            ));
        }
        let note = notes.join("; ");
        println!(
            "growth: {} / {shape} / {items}: {} pushes in {wall:.2?}: {:.0}/s, median {:?}, p99 {:?} {note}",
            target.name, m.pushes, m.per_second, m.median, m.p99
        );
        rows.push(Row {
            store: target.name,
            shape: shape.clone(),
            items,
            preload: Some((written, took)),
            measured: Some(m),
            note,
        });
        if let Some(coll) = target.driver.as_ref().filter(|_| keys > 1) {
            let items = series.total();
            let deadline = Instant::now() + measure_limit();
            let (wall, mut latencies) =
                measure_driver(coll, &mut series, batch(), pushers, deadline).await;
            latencies.sort();
            if !latencies.is_empty() {
                let m = Measured {
                    pushes: latencies.len(),
                    per_second: latencies.len() as f64 / wall.as_secs_f64(),
                    median: percentile(&latencies, 0.5),
                    p99: percentile(&latencies, 0.99),
                };
                println!(
                    "growth: driver / {shape} / {items}: {} pushes in {wall:.2?}: {:.0}/s, median {:?}, p99 {:?}",
                    m.pushes, m.per_second, m.median, m.p99
                );
                rows.push(Row {
                    store: "driver",
                    shape: shape.clone(),
                    items,
                    preload: None,
                    measured: Some(m),
                    note: "hand-written update, open buckets only".into(),
                });
            }
        }
    }
    let held = TradeHistory::counts(target.store, &0)
        .await
        .expect("counts")
        .items;
    ShapeRun {
        rows,
        pushed_to_key0: series.stored[0] as u64,
        held_by_key0: held,
    }
}

fn main() {
    let full = pattern_bench::full_scale();
    let budget_secs: u64 = std::env::var("GROWTH_MONGO_BUDGET_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(pattern_bench::scale(1_200, 20));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let all = Instant::now();
    let mut runs = Vec::new();

    for keys in [keys(), 1] {
        let store = MemoryStore::new();
        let target = Target {
            name: "memory",
            store: &store,
            loaders: 1,
            pushers: 1,
            budget: None,
            driver: None,
        };
        runs.push(rt.block_on(run_shape(target, keys)));
    }
    let memory_took = all.elapsed();

    let mongo_start = Instant::now();
    for keys in [keys(), 1] {
        runs.push(rt.block_on(async {
            let store: MongoStore = pattern_tests::mongo_store("growth").await;
            let target = Target {
                name: "mongodb",
                store: &store,
                loaders: LOADERS,
                pushers: MONGO_TASKS,
                budget: Some(Duration::from_secs(budget_secs / 2)),
                driver: Some(store.database().collection(TradeHistory::SPEC.collection)),
            };
            let run = run_shape(target, keys).await;
            store.database().drop().await.ok();
            run
        }));
    }
    let mongo_took = mongo_start.elapsed();

    let scale = if full { "full scale" } else { "smoke scale" };
    println!(
        "\ngrowth ({scale}): bucket size 10; {} single pushes per level (MongoDB: {MONGO_TASKS} \
         concurrent pushers over many keys, one for 1 key, at most {} s; memory: one at a time); preload by push_many, \
         {PRELOAD_CALL} items per call (MongoDB: {LOADERS} concurrent callers over the keys, one for 1 key)",
        batch(),
        measure_limit().as_secs()
    );
    println!(
        "{:<8} {:<10} {:>13} {:>7} {:>9} {:>12} {:>12} {:>21}  note",
        "store",
        "shape",
        "items stored",
        "pushes",
        "pushes/s",
        "median push",
        "p99 push",
        "preload (items, time)"
    );
    for r in runs.iter().flat_map(|r| &r.rows) {
        let preload = r
            .preload
            .map(|(n, d)| format!("{n}, {:.1} s", d.as_secs_f64()))
            .unwrap_or_default();
        match &r.measured {
            Some(m) => println!(
                "{:<8} {:<10} {:>13} {:>7} {:>9.0} {:>12} {:>12} {:>21}  {}",
                r.store,
                r.shape,
                r.items,
                m.pushes,
                m.per_second,
                format!("{:.2?}", m.median),
                format!("{:.2?}", m.p99),
                preload,
                r.note
            ),
            None => println!("{:<8} {:<10} {:>13}  {}", r.store, r.shape, r.items, r.note),
        }
    }
    println!(
        "growth: memory store {:.1?}, MongoDB {:.1?} (budget {budget_secs} s), total {:.1?}",
        memory_took,
        mongo_took,
        all.elapsed()
    );

    // Every push returned Ok: key 0 must hold every item pushed to it.
    let mut lost = Vec::new();
    for run in &runs {
        let r = &run.rows[0];
        println!(
            "growth: {} / {}: key 0 holds {} items, {} were pushed to it",
            r.store, r.shape, run.held_by_key0, run.pushed_to_key0
        );
        if run.held_by_key0 != run.pushed_to_key0 {
            lost.push(format!(
                "{} / {}: {} pushed, {} held",
                r.store, r.shape, run.pushed_to_key0, run.held_by_key0
            ));
        }
    }
    assert!(
        lost.is_empty(),
        "items lost (every push returned Ok): {}",
        lost.join("; ")
    );
}
