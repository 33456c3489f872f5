//! What an ingest's fill of an open bucket costs on the server with its compare-and-set in
//! an update pipeline (as an ingest sends it) and in the filter (BENCHMARKS.md, section 8;
//! test server T25). 1,000 open buckets of `DailyHistory`'s collection (its indexes ensured), one
//! a customer and shape, then `bulkWrite`s of 1,000 fills (a trade pushed, the count and the
//! quantity's sum raised, the time bounds moved), each shape's in turn, 8 rounds, medians:
//!
//! 0. the check in the filter: `{_id, count >= c, count <= c}`, upsert, the update operators;
//! 1. `_id` alone, the operators, no check (what the check costs);
//! 2. `_id` alone, upsert, one pipeline stage `{$replaceWith: {$cond: [{$eq: ["$count", c]},
//!    {$mergeObjects: ["$$ROOT", {fields}]}, "<refusal>"]}}` with the least expressions
//!    (`$add`, `$concatArrays`, `$min`, `$max`); a refusal is a string, which the server
//!    refuses as a replacement, so the ordered batch stops there as with the filter;
//! 3. the same, with what keeps the operators' meaning, as an ingest sends it
//!    (`Update::require`): each field under `$ifNull` (a missing field), and the sum bounded
//!    (`{$lte: [{$abs: "$qty"}, max - v]}`: no Int64 overflow, no date moved by `$add`).
//!
//! Run: `MONGODB_URI=... cargo run --release -p pattern-bench --example fill_shape_probe`.

use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use pattern_bench::{market_trade, DailyHistory, MARKET_T0};

const KEYS: i64 = 1_000;
const SHAPES: usize = 4;
const ROUNDS: i64 = 8;
const REFUSAL: &str = "fill_shape_probe: the count moved";

/// Fill number `c` of a bucket (which holds `c` trades) in `shape`.
fn fill(shape: usize, k: i64, c: i64) -> Document {
    let id = format!("{k}_f{shape}");
    let trade = bson::to_bson(&market_trade(c, 1_000)).expect("a trade serializes");
    let date = Bson::DateTime(bson::DateTime::from_millis(MARKET_T0 + c * 1_000));
    let (count, qty, history) = match shape {
        3 => (
            doc! {"$add": [{"$ifNull": ["$count", 0]}, 1]},
            doc! {"$add": [{"$ifNull": ["$qty", 0]}, 3_i64]},
            doc! {"$concatArrays": [{"$ifNull": ["$history", []]}, {"$literal": [trade.clone()]}]},
        ),
        _ => (
            doc! {"$add": ["$count", 1]},
            doc! {"$add": ["$qty", 3_i64]},
            doc! {"$concatArrays": ["$history", {"$literal": [trade.clone()]}]},
        ),
    };
    let fields = doc! {
        "count": count, "qty": qty, "history": history,
        "date_min": {"$min": ["$date_min", date.clone()]},
        "date_max": {"$max": ["$date_max", date.clone()]},
    };
    let check = match shape {
        3 => doc! {"$and": [
            {"$eq": ["$count", c]},
            {"$lte": [{"$abs": "$qty"}, i64::MAX - 3]},
        ]},
        _ => doc! {"$eq": ["$count", c]},
    };
    let pipeline = vec![doc! {"$replaceWith": {"$cond": [
        check, {"$mergeObjects": ["$$ROOT", fields]}, REFUSAL,
    ]}}];
    let operators = doc! {
        "$inc": {"count": 1, "qty": 3_i64},
        "$push": {"history": trade},
        "$min": {"date_min": date.clone()},
        "$max": {"date_max": date},
    };
    let (filter, mods, upsert) = match shape {
        0 => (
            doc! {"_id": id, "count": {"$gte": c, "$lte": c}},
            Bson::Document(operators),
            true,
        ),
        1 => (doc! {"_id": id}, Bson::Document(operators), false),
        _ => (doc! {"_id": id}, Bson::from(pipeline), true),
    };
    doc! {"update": 0, "filter": filter, "updateMods": mods, "upsert": upsert, "multi": false}
}

#[tokio::main]
async fn main() {
    let store = pattern_tests::mongo_store("fill_shape_probe").await;
    DailyHistory::ensure_indexes(&store).await.unwrap();
    let db = store.database();
    let coll = db.collection::<Document>("trades_daily");
    let ns = format!("{}.trades_daily", db.name());
    let buckets: Vec<Document> = (0..KEYS)
        .flat_map(|k| {
            (0..SHAPES).map(move |s| {
                doc! {
                    "_id": format!("{k}_f{s}"), "customerId": k, "page": s as i64 + 1,
                    "count": 0, "qty": 0_i64, "history": [],
                }
            })
        })
        .collect();
    coll.insert_many(buckets).await.unwrap();
    let admin = db.client().database("admin");
    let bulk = |ops: Vec<Document>| {
        doc! {"bulkWrite": 1, "ops": ops, "nsInfo": [{"ns": ns.clone()}], "ordered": true, "errorsOnly": true}
    };
    let mut times: [Vec<Duration>; SHAPES] = Default::default();
    for c in 0..ROUNDS {
        for (shape, times) in times.iter_mut().enumerate() {
            let ops: Vec<Document> = (0..KEYS).map(|k| fill(shape, k, c)).collect();
            let t = Instant::now();
            let reply = admin.run_command(bulk(ops)).await.unwrap();
            times.push(t.elapsed());
            assert_eq!(reply.get_i32("nErrors").ok(), Some(0), "{reply}");
        }
    }
    // Every shape filled every bucket alike.
    for s in 0..SHAPES {
        let b = coll
            .find_one(doc! {"_id": format!("7_f{s}")})
            .await
            .unwrap()
            .unwrap();
        assert_eq!(b.get_i32("count").ok(), Some(ROUNDS as i32), "{b}");
        assert_eq!(
            b.get_array("history").map(Vec::len).ok(),
            Some(ROUNDS as usize)
        );
    }
    // A check that fails stops the ordered batch there, shape 0 (the upsert's duplicate `_id`)
    // and 2 and 3 (the refusal) alike.
    for shape in [0, 2, 3] {
        let ops = vec![
            fill(shape, 1, ROUNDS),
            fill(shape, 2, 0),
            fill(shape, 3, ROUNDS),
        ];
        let reply = admin.run_command(bulk(ops)).await.unwrap();
        assert_eq!(reply.get_i32("nErrors").ok(), Some(1), "{reply}");
        assert_eq!(
            reply.get_i32("nModified").ok(),
            Some(1),
            "shape {shape}: {reply}"
        );
    }
    for (name, mut t) in [
        "fills by {_id, count >= c, count <= c}, upsert (the check in the filter)",
        "fills by _id alone, no check",
        "fills by _id, the count checked in a pipeline",
        "fills by _id, a pipeline keeping the operators' meaning (as an ingest sends them)",
    ]
    .into_iter()
    .zip(times)
    {
        t.sort();
        println!("{name}: median {:.1?}", t[t.len() / 2]);
    }
    db.drop().await.ok();
}
