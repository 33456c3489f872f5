//! What the writes of an ingest's batch cost on the server, by the shape of their filter
//! (BENCHMARKS.md, section 8; test server T25): 1,000 customers with 10 buckets each and their
//! roll-ups (the `timeseries` benchmark's layout, `ingest`), then `bulkWrite`s of 1,000 writes
//! each, one a customer: roll-up updates (upserts, as an ingest sends them) by `{key, page:
//! "rollup"}`, the same updates of other documents by `_id` alone, and the roll-ups as one
//! update of many documents (`rollups_at_once`); whole buckets inserted;
//! fills of open buckets (a `$push`, `$inc`, `$min`/`$max`, as an ingest's compare-and-set
//! push) by `{_id, count >= c, count <= c}` with the upsert (the check in the filter; an
//! ingest sends it in the update instead, `fill_shape_probe`), by `{_id, count: c}`, by
//! `_id` and a condition on a field no index names, and by `_id` alone. Each kind's shapes
//! interleaved, 5 rounds, medians.
//!
//! Run: `MONGODB_URI=... cargo run --release -p pattern-bench --example ingest_writes_probe`.

use std::time::{Duration, Instant};

use bson::{doc, Bson};
use pattern_bench::{market_trade, History, Trade};
use pattern_core::store::query::{Filter, Path, Update};
use pattern_core::store::{Store, WriteOp};

const KEYS: i64 = 1_000;
/// Trade `i`, one a second.
fn trade(i: i64) -> Trade {
    market_trade(i, 1_000)
}

fn rollup_update(qty: i64) -> Update {
    Update {
        sum: vec![
            (Path::from("rollup_items"), Bson::Int64(10)),
            (Path::from("qty"), Bson::Int64(qty)),
        ],
        set_on_insert: vec![(Path::from("rollup_summarized"), Bson::from(vec!["qty"]))],
        ..Update::default()
    }
}

/// `ops` as one `bulkWrite`, timed; every write applied.
async fn timed_batch(store: &impl Store, ops: Vec<WriteOp>) -> Duration {
    let t = Instant::now();
    let done = store.write_batch("trades", ops).await;
    let took = t.elapsed();
    assert!(
        done.error.is_none() && done.applied == KEYS as usize,
        "{:?}",
        done.error
    );
    took
}

/// The 1,000 roll-ups' updates as one write of many documents in a `bulkWrite`: `{customerId:
/// {$in: keys}, page: "rollup"}`, a pipeline that finds each document's key among the keys
/// (`$indexOfArray`) and adds the values at that place: one write for all of them, measured
/// against the 1,000 updates an ingest sends.
async fn rollups_at_once(store: &pattern_core::store::MongoStore) -> Duration {
    let db = store.database();
    let keys: Vec<i64> = (0..KEYS).collect();
    let items: Vec<i64> = keys.iter().map(|_| 10).collect();
    let qty: Vec<i64> = keys.clone();
    let pipeline = vec![
        doc! {"$set": {"rollup_at": {"$indexOfArray": [{"$literal": &keys}, "$customerId"]}}},
        doc! {"$set": {
            "rollup_items": {"$add": ["$rollup_items", {"$arrayElemAt": [{"$literal": items}, "$rollup_at"]}]},
            "qty": {"$add": ["$qty", {"$arrayElemAt": [{"$literal": qty}, "$rollup_at"]}]},
        }},
        doc! {"$unset": "rollup_at"},
    ];
    let op = doc! {
        "update": 0, "filter": {"customerId": {"$in": &keys}, "page": "rollup"},
        "updateMods": pipeline, "multi": true,
    };
    let command = doc! {
        "bulkWrite": 1, "ops": [op], "nsInfo": [{"ns": format!("{}.trades", db.name())}],
        "ordered": true,
    };
    let t = Instant::now();
    let reply = db
        .client()
        .database("admin")
        .run_command(command)
        .await
        .unwrap();
    let took = t.elapsed();
    assert_eq!(reply.get_i32("nMatched").ok(), Some(KEYS as i32), "{reply}");
    took
}

#[tokio::main]
async fn main() {
    let store = pattern_tests::mongo_store("ingest_writes_probe").await;
    History::ensure_indexes(&store).await.unwrap();
    let items: Vec<(i64, Trade)> = (0..KEYS * 100).map(|i| (i % KEYS, trade(i))).collect();
    for chunk in items.chunks(10_000) {
        History::ingest(&store, chunk).await.unwrap();
    }
    // Documents updated by `_id` alone: one a customer, beside its roll-up.
    let others: Vec<WriteOp> = (0..KEYS)
        .map(|k| {
            WriteOp::Insert(doc! {
                "_id": format!("{k}_r"), "customerId": k, "page": "other",
                "rollup_items": 0_i64, "qty": 0_i64,
            })
        })
        .collect();
    let done = store.write_batch("trades", others).await;
    assert!(done.error.is_none(), "{:?}", done.error);
    let mut next_bucket = 0_i64;
    let mut times: [Vec<Duration>; 4] = Default::default();
    for round in 0..5 {
        for (shape, times) in times.iter_mut().enumerate() {
            if shape == 3 {
                let took = rollups_at_once(&store).await;
                times.push(took);
                println!("round {round} shape {shape}: {took:.1?}");
                continue;
            }
            let ops: Vec<WriteOp> = (0..KEYS)
                .map(|k| match shape {
                    0 => WriteOp::Update {
                        filter: Filter::and([
                            Filter::eq("customerId", k),
                            Filter::eq("page", "rollup"),
                        ]),
                        update: Box::new(rollup_update(k)),
                        upsert: true,
                    },
                    1 => WriteOp::Update {
                        filter: Filter::eq("_id", format!("{k}_r")),
                        update: Box::new(rollup_update(k)),
                        upsert: true,
                    },
                    _ => {
                        next_bucket += 1;
                        WriteOp::Insert(doc! {
                            "_id": format!("x{next_bucket}"), "customerId": k,
                            "page": 1_000_000 + next_bucket, "count": 10,
                            "history": (0..10).map(|i| bson::to_bson(&trade(i)).unwrap()).collect::<Vec<_>>(),
                        })
                    }
                })
                .collect();
            let took = timed_batch(&store, ops).await;
            times.push(took);
            println!("round {round} shape {shape}: {took:.1?}");
        }
    }
    // Fills of open buckets (an ingest's compare-and-set push) by filter shape: one document
    // a customer and shape, `count` followed here.
    let fills: Vec<WriteOp> = (0..KEYS)
        .flat_map(|k| {
            (0..5).map(move |s| {
                WriteOp::Insert(doc! {
                    "_id": format!("{k}_f{s}"), "customerId": k, "page": 2_000_000 + s,
                    "count": 0_i64, "history": [],
                })
            })
        })
        .collect();
    let done = store.write_batch("trades", fills).await;
    assert!(done.error.is_none(), "{:?}", done.error);
    let mut fill_times: [Vec<Duration>; 5] = Default::default();
    for round in 0..5 {
        // The documents' count before this round's fill.
        let count = round as i64;
        for (shape, times) in fill_times.iter_mut().enumerate() {
            let ops: Vec<WriteOp> = (0..KEYS)
                .map(|k| {
                    let id = Filter::eq("_id", format!("{k}_f{shape}"));
                    let filter = match shape {
                        0 => Filter::and([
                            id,
                            Filter::Gte("count".into(), Bson::Int64(count)),
                            Filter::Lte("count".into(), Bson::Int64(count)),
                        ]),
                        1 => Filter::and([id, Filter::eq("count", count)]),
                        2 => Filter::and([id, Filter::Exists("unindexed".into(), false)]),
                        3 => {
                            Filter::and([id, Filter::In("count".into(), vec![Bson::Int64(count)])])
                        }
                        _ => id,
                    };
                    WriteOp::Update {
                        filter,
                        update: Box::new(Update {
                            inc: vec![("count".into(), 1)],
                            push: vec![(
                                "history".into(),
                                vec![bson::to_bson(&trade(count)).unwrap()],
                            )],
                            sum: vec![("qty".into(), Bson::Int64(3))],
                            min: vec![("date_min".into(), Bson::DateTime(trade(count).date))],
                            max: vec![("date_max".into(), Bson::DateTime(trade(count).date))],
                            ..Update::default()
                        }),
                        upsert: shape == 0,
                    }
                })
                .collect();
            let took = timed_batch(&store, ops).await;
            times.push(took);
            println!("round {round} fill shape {shape}: {took:.1?}");
        }
    }
    for (name, mut t) in [
        "fills by {_id, count >= c, count <= c}, upsert",
        "fills by {_id, count: c}",
        "fills by {_id, a field no index names: missing}",
        "fills by {_id, count: {$in: [c]}}",
        "fills by _id alone",
    ]
    .into_iter()
    .zip(fill_times)
    {
        t.sort();
        println!("{name}: median {:.1?}", t[t.len() / 2]);
    }
    for (name, mut t) in [
        "roll-ups by {key, page: \"rollup\"} (as sent)",
        "the same updates by _id alone",
        "1,000 bucket inserts",
        "the roll-ups by one update of many documents (a pipeline: each its own values)",
    ]
    .into_iter()
    .zip(times)
    {
        t.sort();
        println!("{name}: median {:.1?}", t[t.len() / 2]);
    }
    store.database().drop().await.ok();
}
