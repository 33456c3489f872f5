//! Where a batch of the `timeseries` benchmark's ingest goes (BENCHMARKS.md, section 8): the
//! same trades (one every 6 s overall, 1,000 customers, batches of 10,000), the time-series
//! collection's `insert_many` and the library's `ingest` into buckets with roll-ups and into
//! buckets cut by day, batch by batch in turn. For each batch: its wall time, the CPU time of
//! the client (every thread of this process: serializing, planning, building the documents,
//! the driver's encoding), and with `INGEST_BATCH_PROBE_MONITOR=1` the time of the commands
//! it sent (the driver's command monitoring: the round trip, the server's work in it) and the
//! writes they carried, by kind (the monitoring itself costs the client much). Medians over
//! the batches after the first `WARM` (the first batches learn each key's open bucket); the
//! CPU time's mean. A fourth layout, the same buckets without roll-ups (`PlainHistory`), is what
//! an ingest writing one document a key a batch costs (BENCHMARKS.md, section 8).
//!
//! Run: `MONGODB_URI=... cargo run --release -p pattern-bench --example ingest_batch_probe`
//! (`INGEST_BATCH_PROBE_TRADES`, default 300,000; `INGEST_BATCH_PROBE_LAYOUTS`, default
//! `0123`: which layouts run; `INGEST_BATCH_PROBE_KEEP=1` keeps the database).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{Bson, Document};
use mongodb::event::command::CommandEvent;
use pattern_bench::{market_trade, DailyHistory, History, Trade};
use pattern_core::Bucket;

/// `History` without its roll-ups: the buckets alone (a marker type: only its layout is used).
#[allow(dead_code)]
#[derive(Bucket)]
#[bucket(
    collection = "trades_plain",
    size = 10,
    time = "date",
    summary(sum = "qty")
)]
struct PlainHistory {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

const CUSTOMERS: i64 = 1_000;
const BATCH: usize = 10_000;
const WARM: usize = 3;

/// What the monitored client saw since the last `take`: the commands' total duration and
/// their writes by kind (an insert, an update, an upsert).
#[derive(Default)]
struct Seen {
    took: Duration,
    commands: usize,
    inserts: usize,
    updates: usize,
    upserts: usize,
}

fn count_writes(seen: &mut Seen, cmd: &Document) {
    let kind = |op: &Document| {
        if op.contains_key("insert") || op.contains_key("document") {
            "insert"
        } else if op.get_bool("upsert").unwrap_or(false) {
            "upsert"
        } else {
            "update"
        }
    };
    let mut add = |k: &str| match k {
        "insert" => seen.inserts += 1,
        "upsert" => seen.upserts += 1,
        _ => seen.updates += 1,
    };
    if let Ok(ops) = cmd.get_array("ops") {
        // A client bulkWrite: `{insert: ns, document}` or `{update: ns, filter, ...}`.
        for op in ops.iter().filter_map(Bson::as_document) {
            add(kind(op));
        }
    } else if let Ok(docs) = cmd.get_array("documents") {
        docs.iter().for_each(|_| add("insert"));
    } else if let Ok(updates) = cmd.get_array("updates") {
        for u in updates.iter().filter_map(Bson::as_document) {
            add(kind(u));
        }
    }
}

/// The CPU time of every thread of this process so far (`/proc/self/task/*/schedstat`: time
/// on a CPU, in ns): the client's work, not its waiting.
fn cpu_time() -> Duration {
    let mut ns = 0_u64;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
    }
    Duration::from_nanos(ns)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let n: i64 = pattern_bench::env_number("INGEST_BATCH_PROBE_TRADES", 300_000);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let on = seen.clone();
    // The driver's command monitoring converts every command to a `Document` for its event,
    // which costs the client as much as building the batch: on only when asked
    // (`INGEST_BATCH_PROBE_MONITOR=1`), for the commands' times and their writes.
    let monitored = std::env::var("INGEST_BATCH_PROBE_MONITOR").is_ok_and(|v| v == "1");
    let store = if !monitored {
        pattern_tests::mongo_store("ingest_batch_probe").await
    } else {
        pattern_tests::monitored_mongo_store("ingest_batch_probe", move |ev| {
            let mut s = on.lock().unwrap();
            match ev {
                CommandEvent::Started(e) => count_writes(&mut s, &e.command),
                CommandEvent::Succeeded(e) => {
                    s.took += e.duration;
                    s.commands += 1;
                }
                CommandEvent::Failed(e) => {
                    s.took += e.duration;
                    s.commands += 1;
                }
                _ => {}
            }
        })
        .await
    };
    let db = store.database().clone();
    let ts = pattern_bench::market_time_series(&db).await;
    History::ensure_indexes(&store).await.unwrap();
    DailyHistory::ensure_indexes(&store).await.unwrap();
    PlainHistory::ensure_indexes(&store).await.unwrap();
    let trades: Vec<(i64, Trade)> = (0..n)
        .map(|i| (i % CUSTOMERS, market_trade(i, 6_000)))
        .collect();
    let names = [
        "time-series insert_many",
        "buckets with roll-ups",
        "buckets by day",
        "buckets without roll-ups",
    ];
    // `INGEST_BATCH_PROBE_LAYOUTS=12`: only those layouts (0 to 3 as in `names`), to profile
    // one side's client.
    let only = std::env::var("INGEST_BATCH_PROBE_LAYOUTS").unwrap_or_else(|_| "0123".into());
    // Per layout, per batch: wall ms, the client's CPU ms, command ms, commands, inserts,
    // updates, upserts.
    let mut rows: [Vec<[f64; 7]>; 4] = Default::default();
    for (i, chunk) in trades.chunks(BATCH).enumerate() {
        for turn in 0..4 {
            let layout = (i + turn) % 4;
            if !only.contains(&layout.to_string()) {
                continue;
            }
            *seen.lock().unwrap() = Seen::default();
            let cpu = cpu_time();
            let t = Instant::now();
            match layout {
                0 => {
                    let docs: Vec<Document> = (chunk.iter())
                        .map(|(c, t)| pattern_bench::flat_trade(*c, t))
                        .collect();
                    ts.insert_many(docs).await.unwrap();
                }
                1 => {
                    History::ingest(&store, chunk).await.unwrap();
                }
                2 => {
                    DailyHistory::ingest(&store, chunk).await.unwrap();
                }
                _ => {
                    PlainHistory::ingest(&store, chunk).await.unwrap();
                }
            }
            let wall = t.elapsed();
            let cpu = cpu_time() - cpu;
            let s = std::mem::take(&mut *seen.lock().unwrap());
            if i >= WARM {
                rows[layout].push([
                    wall.as_secs_f64() * 1e3,
                    cpu.as_secs_f64() * 1e3,
                    s.took.as_secs_f64() * 1e3,
                    s.commands as f64,
                    s.inserts as f64,
                    s.updates as f64,
                    s.upserts as f64,
                ]);
            }
        }
    }
    println!(
        "{n} trades, {CUSTOMERS} customers, batches of {BATCH}; medians over {} batches a layout",
        rows.iter().map(Vec::len).max().unwrap_or(0)
    );
    println!(
        "| layout | batch | the client's CPU | its commands{} | commands | inserts | updates | upserts |",
        if monitored { "" } else { " (monitoring off)" }
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, r) in names.iter().zip(&rows).filter(|(_, r)| !r.is_empty()) {
        let col = |c: usize| median(r.iter().map(|x| x[c]).collect());
        // The CPU time's mean: the clock is read per thread, in ticks of the scheduler.
        let cpu = r.iter().map(|x| x[1]).sum::<f64>() / r.len() as f64;
        println!(
            "| {name} | {:.0} ms | {cpu:.0} ms | {:.0} ms | {:.0} | {:.0} | {:.0} | {:.0} |",
            col(0),
            col(2),
            col(3),
            col(4),
            col(5),
            col(6)
        );
    }
    if std::env::var_os("INGEST_BATCH_PROBE_KEEP").is_none() {
        db.drop().await.ok();
    }
}
