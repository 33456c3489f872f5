//! Where a computed child insert's time goes on the server (BENCHMARKS.md, section 13; test
//! server T22): the parent's `update` the library sent for a review (recorded by command
//! monitoring; its checks of the parent's fields in the update, a `$replaceWith` of `$cond`,
//! the filter by `_id` alone) replayed as it was sent; with the same checks as conditions of
//! the filter (as the library sent them before); as `$expr` in the filter; as a `$cond` per
//! field; without checks; and the driver's pipeline update of the `related` benchmark. The
//! same film, 50 replays a shape, the shapes interleaved over 3 rounds, outside a
//! transaction; medians printed. Each shape matches the film (the checks hold: every value
//! stays a number).
//!
//! Run: `MONGODB_URI=... cargo run --release -p pattern-bench --example computed_filter_probe`.
use std::time::Instant;

use bson::{doc, Bson, Document as BsonDocument};
use pattern_bench::{Film, Review};

#[tokio::main]
async fn main() {
    let (store, log) = pattern_tests::recording_mongo_store("computed_filter_probe").await;
    let db = store.database().clone();
    Review::ensure_indexes(&store).await.unwrap();
    let film = Film::unreviewed(1);
    film.insert(&store).await.unwrap();
    for i in 0..3 {
        let review = Review {
            id: i,
            film_id: 1,
            rating: 4,
        };
        log.lock().unwrap().clear();
        review.insert(&store).await.unwrap();
    }
    // The last insert's parent update, as sent.
    let sent = (log.lock().unwrap().iter())
        .find(|(name, _)| name == "update")
        .map(|(_, body)| body.clone())
        .expect("the insert updated its film");
    let update = sent.get_array("updates").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    let (q, u) = (
        update.get_document("q").unwrap().clone(),
        update.get("u").unwrap().clone(),
    );
    println!("sent: q = {q}\n      u = {u}");
    let id = q.get("_id").unwrap().clone();
    // The sent pipeline: `[{$replaceWith: {$cond: [checks, {$mergeObjects: ["$$ROOT", set]},
    // "$$ROOT"]}}]`.
    let cond = u.as_array().unwrap()[0]
        .as_document()
        .unwrap()
        .get_document("$replaceWith")
        .unwrap()
        .get_array("$cond")
        .unwrap()
        .clone();
    let ok = cond[0].clone();
    let set = cond[1]
        .as_document()
        .unwrap()
        .get_array("$mergeObjects")
        .unwrap()[1]
        .as_document()
        .unwrap()
        .clone();
    let plain = Bson::Array(vec![Bson::Document(doc! {"$set": set.clone()})]);
    // The checks as query conditions, as the library sent them before (its own rendering of
    // `Filter::TypeOrMissing` and the ranges, beside the `_id`).
    let in_filter = {
        use pattern_core::spec::BsonType as T;
        use pattern_core::store::query::Filter;
        let or_missing = |f: &str, c: Filter| Filter::Or(vec![Filter::Exists(f.into(), false), c]);
        Filter::And(vec![
            Filter::Eq("_id".into(), id.clone()),
            Filter::TypeOrMissing("reviews".into(), vec![T::Int, T::Long]),
            or_missing("reviews", Filter::Gte("reviews".into(), Bson::Int64(0))),
            Filter::TypeOrMissing("rating_sum".into(), vec![T::Int, T::Long, T::Double]),
            or_missing(
                "rating_sum",
                Filter::Lte("rating_sum".into(), Bson::Int64(i64::MAX - 4)),
            ),
            Filter::TypeOrMissing(
                "rating_max".into(),
                vec![T::Int, T::Long, T::Double, T::Null],
            ),
        ])
        .to_document()
    };
    let driver_u = Bson::Array(vec![
        Bson::Document(doc! {"$set": {
            "reviews": {"$add": ["$reviews", 1_i64]},
            "rating_sum": {"$add": ["$rating_sum", 4_i64]},
            "rating_max": {"$max": ["$rating_max", 4_i64]},
        }}),
        Bson::Document(doc! {"$set": {"rating_avg": {"$divide": ["$rating_sum", "$reviews"]}}}),
    ]);
    let per_field: BsonDocument = (set.iter())
        .map(|(k, v)| {
            let kept = Bson::String(format!("${k}"));
            (
                k.clone(),
                Bson::Document(doc! {"$cond": [ok.clone(), v.clone(), kept]}),
            )
        })
        .collect();
    let shapes: Vec<(&str, BsonDocument, Bson)> = vec![
        (
            "A as sent: the checks in the update, one $replaceWith",
            q.clone(),
            u.clone(),
        ),
        (
            "P the checks in the filter, a plain $set",
            in_filter,
            plain.clone(),
        ),
        (
            "K the checks as $expr in the filter, a plain $set",
            doc! {"_id": id.clone(), "$expr": ok.clone()},
            plain.clone(),
        ),
        (
            "M the checks in the update, a $cond per field of one $set",
            doc! {"_id": id.clone()},
            Bson::Array(vec![Bson::Document(doc! {"$set": per_field})]),
        ),
        ("C no checks, a plain $set", doc! {"_id": id.clone()}, plain),
        ("D the driver's update", doc! {"_id": id.clone()}, driver_u),
    ];
    for round in 0..3 {
        for (name, q, u) in &shapes {
            let mut lat = Vec::new();
            for _ in 0..50 {
                let cmd = doc! {"update": "films", "updates": [{"q": q.clone(), "u": u.clone()}]};
                let t = Instant::now();
                let r = db.run_command(cmd).await.unwrap();
                lat.push(t.elapsed());
                assert_eq!(r.get_i32("n").unwrap(), 1, "{name}: {r}");
            }
            lat.sort();
            println!("round {round} {name}: median {:.3?}", lat[25]);
        }
    }
    db.drop().await.ok();
}
