//! Which shapes of the push's filter the server answers through the open-document index
//! (`TEST-SERVER.md`, T21): one key of 10,000 items (1,000 full buckets and one open
//! bucket of 5), then the same `update` (`$inc` of a field no read uses) sent with each filter
//! shape, 30 times a shape, the shapes interleaved over 3 rounds; medians printed. Every shape
//! matches the one open bucket. `H` is the push's filter (`OpenPush::filter`); `A` is the same
//! conditions merged, as it was sent before; `C` is it without the number condition.
//!
//! Run: `MONGODB_URI=... cargo run --release -p pattern-bench --example push_filter_probe`.
use std::time::Instant;

use bson::{doc, Document};
use pattern_bench::{page_is_a_number, trade, TradeHistory};

#[tokio::main]
async fn main() {
    let (store, _log) = pattern_tests::counted_mongo_store("push_filter_probe").await;
    let t0 = 1_600_000_000;
    let mut held = 0i64;
    while held < 10_000 {
        let end = held + 1000;
        let items: Vec<_> = (held..end).map(|i| trade(t0, i)).collect();
        TradeHistory::push_many(&store, &0, &items).await.unwrap();
        held = end;
    }
    // One open bucket: 5 items in it.
    for _ in 0..5 {
        TradeHistory::push(&store, &0, trade(t0, held))
            .await
            .unwrap();
        held += 1;
    }
    let c = store.database().collection::<Document>("trades");
    let not_num = page_is_a_number();
    let variants: Vec<(&str, Document)> = vec![
        (
            "A merged (the push's filter before)",
            doc! {"customerId": 0_i64, "count": {"$lt": 10}, "page": not_num.clone()},
        ),
        (
            "B $and, the key in both",
            doc! {"$and": [{"customerId": 0_i64, "count": {"$lt": 10}}, {"customerId": 0_i64, "page": not_num.clone()}]},
        ),
        (
            "B2 $and, no field in both",
            doc! {"$and": [{"customerId": 0_i64, "count": {"$lt": 10}}, {"page": not_num.clone()}]},
        ),
        (
            "E $and, the count in both",
            doc! {"$and": [{"customerId": 0_i64, "count": {"$lt": 10}}, {"count": {"$lt": 10}, "page": not_num.clone()}]},
        ),
        (
            "F a one-branch $or",
            doc! {"customerId": 0_i64, "count": {"$lt": 10}, "$or": [{"page": not_num.clone()}]},
        ),
        (
            "G a one-branch $or, the count in it",
            doc! {"customerId": 0_i64, "count": {"$lt": 10}, "$or": [{"count": {"$lt": 10}, "page": not_num.clone()}]},
        ),
        (
            "H the push's: the number in an $and clause with the count",
            doc! {"customerId": 0_i64, "count": {"$lt": 10}, "$and": [{"count": {"$lt": 10}, "page": not_num.clone()}]},
        ),
        (
            "C no number condition",
            doc! {"customerId": 0_i64, "count": {"$lt": 10}},
        ),
        (
            "D number as $gte -Infinity",
            doc! {"customerId": 0_i64, "count": {"$lt": 10}, "page": {"$gte": f64::NEG_INFINITY}},
        ),
    ];
    for round in 0..3 {
        for (name, f) in &variants {
            let mut lat = Vec::new();
            for _ in 0..30 {
                let t = Instant::now();
                let r = c
                    .update_one(f.clone(), doc! {"$inc": {"probe": 1}})
                    .await
                    .unwrap();
                assert_eq!(r.matched_count, 1, "{name}");
                lat.push(t.elapsed());
            }
            lat.sort();
            println!("round {round} {name}: median {:.2?}", lat[15]);
        }
    }
    store.database().drop().await.ok();
}
