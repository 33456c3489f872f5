//! Where a computed child insert's time goes on the server (BENCHMARKS.md, section 13; test
//! server T22): the parent's `update` the library sent for a review (recorded by command
//! monitoring) replayed as it was sent; with its guards as one clause of `$and`; with its type
//! guards alone, its ranges alone, its types as short positive lists; with the same checks
//! moved into the update (a `$replaceWith` of `$cond`, the filter by `_id` alone); without
//! guards; and the driver's pipeline update of the `related` benchmark. The same film, 50
//! replays a shape, the shapes interleaved over 3 rounds, outside a transaction; medians
//! printed. Each shape matches the film (the guards hold: every value stays a number).
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
    let guards: Vec<Bson> = (q.iter())
        .filter(|(k, _)| k.as_str() != "_id")
        .flat_map(|(k, v)| match (k.as_str(), v) {
            ("$and", Bson::Array(parts)) => parts.clone(),
            _ => vec![Bson::Document(doc! {k.clone(): v.clone()})],
        })
        .collect();
    let driver_u = Bson::Array(vec![
        Bson::Document(doc! {"$set": {
            "reviews": {"$add": ["$reviews", 1_i64]},
            "rating_sum": {"$add": ["$rating_sum", 4_i64]},
            "rating_max": {"$max": ["$rating_max", 4_i64]},
        }}),
        Bson::Document(doc! {"$set": {"rating_avg": {"$divide": ["$rating_sum", "$reviews"]}}}),
    ]);
    let shapes: Vec<(&str, BsonDocument, Bson)> = vec![
        ("A as sent", q.clone(), u.clone()),
        (
            "B the guards as one $and clause",
            doc! {"_id": id.clone(), "$and": [{"$and": guards.clone()}]},
            u.clone(),
        ),
        (
            "E the type guards alone",
            {
                let mut d = doc! {"_id": id.clone()};
                for (k, v) in q
                    .iter()
                    .filter(|(k, _)| !k.starts_with('$') && k.as_str() != "_id")
                {
                    d.insert(k.clone(), v.clone());
                }
                d
            },
            u.clone(),
        ),
        (
            "F the ranges alone",
            doc! {"_id": id.clone(), "$and": [
                {"$or": [{"reviews": {"$exists": false}}, {"reviews": {"$gte": 0}}]},
                {"$or": [{"rating_sum": {"$exists": false}}, {"rating_sum": {"$lte": i64::MAX - 4}}]},
            ]},
            u.clone(),
        ),
        (
            "G the types as short lists ($type of the kinds kept, or missing)",
            doc! {"_id": id.clone(), "$and": [
                {"$or": [{"reviews": {"$exists": false}}, {"reviews": {"$type": [16, 18], "$gte": 0}}]},
                {"$or": [{"rating_sum": {"$exists": false}}, {"rating_sum": {"$type": [1, 16, 18], "$lte": i64::MAX - 4}}]},
                {"$or": [{"rating_max": {"$exists": false}}, {"rating_max": {"$type": [1, 10, 16, 18]}}]},
            ]},
            u.clone(),
        ),
        (
            "H no guards in the query: the same checks in the update, one $replaceWith",
            doc! {"_id": id.clone()},
            {
                let ty = |f: &str| doc! {"$type": format!("${f}")};
                let ok = doc! {"$and": [
                    {"$in": [ty("reviews"), ["int", "long", "missing"]]},
                    {"$gte": [{"$ifNull": ["$reviews", 0]}, 0]},
                    {"$in": [ty("rating_sum"), ["int", "long", "double", "missing"]]},
                    {"$lte": [{"$ifNull": ["$rating_sum", 0]}, i64::MAX - 4]},
                    {"$in": [ty("rating_max"), ["int", "long", "double", "null", "missing"]]},
                ]};
                let set = u.as_array().unwrap()[0]
                    .as_document()
                    .unwrap()
                    .get_document("$set")
                    .unwrap()
                    .clone();
                Bson::Array(vec![Bson::Document(doc! {"$replaceWith": {"$cond": [
                    ok, {"$mergeObjects": ["$$ROOT", set]}, "$$ROOT"
                ]}})])
            },
        ),
        ("C no guards", doc! {"_id": id.clone()}, u.clone()),
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
