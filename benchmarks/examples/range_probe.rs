//! Where an hour's read of the buckets without a span goes (BENCHMARKS.md, section 8): the
//! `timeseries` benchmark's trades (one every 6 s overall, 1,000 customers) ingested into
//! `History`, then for random customers, each read in turn: the library's `range` of one hour
//! from the middle of the history; the same `_id` range by the driver, one `find` of
//! `{_id: {$gte, $lt}}` (what the library's filter is sent as), decoded as documents and as raw
//! bytes; the collection's mark alone; the floor (a find of an absent `_id`). Medians. What
//! the library's read costs beyond the driver's find of its range is the mark it reads after
//! the range (`series::width`) and its own work on the client.
//!
//! With `RANGE_PROBE_LAYOUT=day`, the same for the buckets cut by day (`DailyHistory`): the
//! library's hour against the driver's find of the day's `_id` range the library sends (no
//! mark read there).
//!
//! Two more kinds split the library's read between the server and the client: the command
//! the library sent for the customer's hour (caught by a second, monitored client, untimed),
//! sent again by `run_command`, and its pipeline by the driver's `aggregate` read as raw bytes:
//! the library's read less the latter is its own work on the client.
//!
//! Run: `MONGODB_URI=... cargo run --release -p pattern-bench --example range_probe`
//! (`RANGE_PROBE_TRADES`, default 300,000; `RANGE_PROBE_ROUNDS`, reads of each kind, default
//! 200; `RANGE_PROBE_ONLY=k`, kind `k` alone, in the order printed from 0, to profile it;
//! `RANGE_PROBE_KEEP=1` keeps the database; `RANGE_PROBE_LEASE_MS=n`, a lease of `n` ms on
//! the width, so that the library's hour is one `find` of its range).

use std::time::{Duration, Instant};

use bson::{doc, DateTime, Document, RawDocumentBuf};
use futures::TryStreamExt;
use mongodb::Collection;
use pattern_bench::{market_trade, median, DailyHistory, History, Trade, MARKET_T0};
use pattern_core::store::MongoStore;

const CUSTOMERS: i64 = 1_000;
const STEP: i64 = 6_000;
const HOUR: i64 = 3_600_000;

#[tokio::main]
async fn main() {
    let n: i64 = pattern_bench::env_number("RANGE_PROBE_TRADES", 300_000);
    let store = pattern_tests::mongo_store("range_probe").await;
    let db = store.database().clone();
    let trades: Vec<(i64, Trade)> = (0..n)
        .map(|i| (i % CUSTOMERS, market_trade(i, STEP)))
        .collect();
    let by_day = std::env::var("RANGE_PROBE_LAYOUT").is_ok_and(|v| v == "day");
    for chunk in trades.chunks(10_000) {
        match by_day {
            true => DailyHistory::ingest(&store, chunk).await.map(|_| ()),
            false => History::ingest(&store, chunk).await.map(|_| ()),
        }
        .unwrap();
    }
    // `RANGE_PROBE_LEASE_MS`: a lease on the width (`History::lease_width`), so that the
    // library's reads, back to back, are the `_id` range alone.
    let lease_ms: u64 = pattern_bench::env_number("RANGE_PROBE_LEASE_MS", 0);
    if lease_ms > 0 && !by_day {
        let lease = Duration::from_millis(lease_ms);
        History::lease_width(&store, lease).await.unwrap();
    }
    let name = if by_day { "trades_daily" } else { "trades" };
    let coll: Collection<Document> = db.collection(name);
    let raw: Collection<RawDocumentBuf> = db.collection(name);
    let marks: Collection<Document> = db.collection(pattern_core::spec::BOUNDED_COLLECTIONS);
    let mark = marks.find_one(doc! {"_id": name}).await.unwrap().unwrap();
    let after = mark
        .get("width_after")
        .and_then(pattern_tests::as_int)
        .unwrap_or(0);
    println!("{n} trades; width after the `_id` second: {after} ms");
    let from = MARKET_T0 + n * STEP / 2;
    const DAY: i64 = 86_400_000;
    let (lo, hi) = match by_day {
        // The day's window, as `Span::window_ids` names it.
        true => (
            from.div_euclid(DAY) * DAY / 1000,
            (from + HOUR - 1).div_euclid(DAY) * DAY / 1000 + DAY / 1000,
        ),
        false => (
            (from - after).div_euclid(1000),
            (from + HOUR - 1).div_euclid(1000) + 1,
        ),
    };
    let names = [
        "library range",
        "driver find {_id: {$gte, $lt}}, documents",
        "driver find {_id: {$gte, $lt}}, raw",
        "the mark alone",
        "the floor (an absent _id)",
        "the library's command, sent again by the driver (`run_command`)",
        "the library's pipeline, by the driver's `aggregate`, raw",
    ];
    // A second client on the same database whose commands are kept: what the library sends for
    // a customer's hour, to send again as it is (the library's work on the client apart).
    let sent: std::sync::Arc<std::sync::Mutex<Vec<Document>>> = Default::default();
    let spy = {
        let sink = sent.clone();
        let mut opts = pattern_tests::client_options().await;
        pattern_tests::monitor(&mut opts, move |ev| {
            if let mongodb::event::command::CommandEvent::Started(s) = ev {
                if matches!(s.command_name.as_str(), "aggregate" | "find") {
                    sink.lock().unwrap().push(s.command);
                }
            }
        });
        MongoStore::with_options(opts, db.name()).expect("client")
    };
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    let rounds: i64 = pattern_bench::env_number("RANGE_PROBE_ROUNDS", 200);
    for round in 0..rounds {
        let c = (round * 7919) % CUSTOMERS;
        let (a, b) = (format!("{c}_{lo}"), format!("{c}_{hi}"));
        // The library's command for this customer's hour, untimed (not when another kind is
        // read alone).
        // Not with a lease: the library's command is then a `find` (timed as kind 2 is).
        let replayed = lease_ms == 0
            && std::env::var("RANGE_PROBE_ONLY").map_or(true, |k| k == "5" || k == "6");
        let command = if !replayed {
            Document::new()
        } else {
            sent.lock().unwrap().clear();
            hour(&spy, by_day, c, from).await;
            let mut cmd = sent.lock().unwrap().pop().expect("the library's command");
            for f in [
                "lsid",
                "$clusterTime",
                "$db",
                "$readPreference",
                "txnNumber",
            ] {
                cmd.remove(f);
            }
            if round == 0 {
                println!("the library's command: {cmd}");
            }
            cmd
        };
        for turn in 0..names.len() {
            let k = (round as usize + turn) % names.len();
            // `RANGE_PROBE_ONLY=k`: that kind alone (to profile it).
            let only = std::env::var("RANGE_PROBE_ONLY").ok();
            if only.is_some_and(|o| o != k.to_string()) || (k >= 5 && !replayed) {
                continue;
            }
            let t = Instant::now();
            match k {
                0 => {
                    // An hour holds a customer's trade or none (one every 100 minutes).
                    assert!(hour(&store, by_day, c, from).await.len() <= 1);
                }
                1 => {
                    let f = doc! {"_id": {"$gte": &a, "$lt": &b}};
                    let got: Vec<Document> =
                        coll.find(f).await.unwrap().try_collect().await.unwrap();
                    assert!(!got.is_empty());
                }
                2 => {
                    let f = doc! {"_id": {"$gte": &a, "$lt": &b}};
                    let got: Vec<RawDocumentBuf> =
                        raw.find(f).await.unwrap().try_collect().await.unwrap();
                    assert!(!got.is_empty());
                }
                3 => {
                    marks.find_one(doc! {"_id": name}).await.unwrap().unwrap();
                }
                5 => {
                    let reply = db.run_command(command.clone()).await.unwrap();
                    let batch = reply
                        .get_document("cursor")
                        .unwrap()
                        .get_array("firstBatch");
                    assert!(!batch.unwrap().is_empty());
                }
                4 => {
                    let none = coll
                        .find_one(doc! {"_id": format!("{c}_absent")})
                        .await
                        .unwrap();
                    assert!(none.is_none());
                }
                6 => {
                    let pipeline: Vec<Document> = (command.get_array("pipeline").unwrap().iter())
                        .map(|s| s.as_document().unwrap().clone())
                        .collect();
                    let got: Vec<RawDocumentBuf> = (raw.aggregate(pipeline))
                        .with_type::<RawDocumentBuf>()
                        .batch_size(100_000)
                        .await
                        .unwrap()
                        .try_collect()
                        .await
                        .unwrap();
                    assert!(!got.is_empty());
                }
                _ => unreachable!(),
            }
            times[k].push(t.elapsed());
        }
    }
    for (name, t) in names.iter().zip(times).filter(|(_, t)| !t.is_empty()) {
        println!("| {name} | {:.3} ms |", median(t).as_secs_f64() * 1e3);
    }
    if std::env::var("RANGE_PROBE_KEEP").is_err() {
        db.drop().await.ok();
    }
}

/// The library's read of customer `c`'s hour from `from`, in the layout asked for.
async fn hour(store: &MongoStore, by_day: bool, c: i64, from: i64) -> Vec<Trade> {
    let range = DateTime::from_millis(from)..DateTime::from_millis(from + HOUR);
    match by_day {
        true => {
            (pattern_core::bucket::range::<DailyHistory, _, _>(store, &c, range))
                .try_collect()
                .await
        }
        false => {
            (pattern_core::bucket::range::<History, _, _>(store, &c, range))
                .try_collect()
                .await
        }
    }
    .unwrap()
}
