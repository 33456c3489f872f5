//! What keeping extended references exact costs, measured on MongoDB: an update of a source
//! document that changes a copied field (`Director::update_one` renaming a director), with 1,
//! 100 and 10,000 films holding a copy of it, against hand-written driver code doing the same
//! (a session, `startTransaction`, `update_one` of the director, `update_many` of the films
//! `{director._id: id}` setting the copy, `commitTransaction`), through the same client,
//! interleaved operation by operation. Medians, ratios, and the library's commands per
//! update (from the driver's command monitoring).
//!
//! The library updates up to its `fan_out` (1,000) copies in the source's transaction and the
//! rest in batches of 1,000 after it, before the call returns; the driver code updates every
//! copy in one transaction (MongoDB takes it; a bigger fan-out makes a bigger transaction).
//!
//!     cargo bench -p pattern-bench --bench references
//!
//! Needs `MONGODB_URI` (`scripts/test.sh` starts a server and sets it). Under `cargo test` it
//! runs small (1 and 100 copies, 3 updates each).

use std::time::Instant;

use bson::{doc, Document as BsonDocument};
use pattern_bench::{median, ms, scale};
use pattern_core::document::Update;
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "directors", referenced_by(Film = director))]
struct Director {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    photo: String,
    born: i32,
}

#[derive(Clone, Serialize, Deserialize, Reference)]
#[reference(source = Director)]
struct DirectorRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    photo: String,
}

#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[document(reference)]
    director: DirectorRef,
}

/// The driver's version of the rename: the director and every copy, in one transaction.
async fn driver_rename(client: &mongodb::Client, db: &mongodb::Database, id: i64, name: &str) {
    let directors = db.collection::<BsonDocument>("driver_directors");
    let films = db.collection::<BsonDocument>("driver_films");
    let mut session = client.start_session().await.unwrap();
    loop {
        session.start_transaction().await.unwrap();
        let result: mongodb::error::Result<()> = async {
            directors
                .update_one(doc! {"_id": id}, doc! {"$set": {"name": name}})
                .session(&mut session)
                .await?;
            films
                .update_many(
                    doc! {"director._id": id},
                    doc! {"$set": {"director.name": name}},
                )
                .session(&mut session)
                .await?;
            session.commit_transaction().await
        }
        .await;
        match result {
            Ok(()) => return,
            Err(e) if e.contains_label("TransientTransactionError") => continue,
            Err(e) => panic!("{e}"),
        }
    }
}

/// Director `id` with `copies` films holding a copy, in the library's collections and the
/// driver's (written in bulk: the copies as the library stores them).
async fn seed(db: &mongodb::Database, id: i64, copies: i64) {
    let director = doc! {"_id": id, "name": "Varda", "photo": "varda.jpg", "born": 1928};
    let films: Vec<BsonDocument> = (0..copies)
        .map(|i| {
            doc! {
                "_id": id * 1_000_000 + i,
                "title": format!("film {i}"),
                "director": {"_id": id, "name": "Varda", "photo": "varda.jpg"},
            }
        })
        .collect();
    for (d, f) in [("directors", "films"), ("driver_directors", "driver_films")] {
        db.collection::<BsonDocument>(d)
            .insert_one(director.clone())
            .await
            .unwrap();
        for chunk in films.chunks(5_000) {
            db.collection::<BsonDocument>(f)
                .insert_many(chunk.to_vec())
                .await
                .unwrap();
        }
    }
}

#[tokio::main]
async fn main() {
    let sizes: Vec<(i64, usize)> = scale(
        vec![(1, 200), (100, 100), (10_000, 9)],
        vec![(1, 3), (100, 3)],
    );
    let (store, log) = pattern_tests::counted_mongo_store("bench_references").await;
    let db = store.database().clone();
    let client = db.client().clone();
    Film::ensure_indexes(&store).await.unwrap();
    db.collection::<BsonDocument>("driver_films")
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"director._id": 1})
                .build(),
        )
        .await
        .unwrap();
    println!(
        "\nan update of a source that changes a copied field, on MongoDB (interleaved, medians):"
    );
    println!("| copies | updates | library: Director::update_one | commands | driver: update_one + update_many in a transaction | ratio |");
    println!("|---|---|---|---|---|---|");
    for (id, (copies, n)) in sizes.into_iter().enumerate() {
        let id = id as i64 + 1;
        seed(&db, id, copies).await;
        let (mut lib, mut drv, mut commands) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..n {
            let name = format!("Agnès Varda {i}");
            log.clear();
            let t = Instant::now();
            let u = Update::new().set(Director::NAME, name.clone());
            assert!(Director::update_one(&store, Director::ID.eq(id), u)
                .await
                .unwrap());
            lib.push(t.elapsed());
            commands.push(log.len());
            let t = Instant::now();
            driver_rename(&client, &db, id, &name).await;
            drv.push(t.elapsed());
        }
        // Every copy followed, in both.
        let last = format!("Agnès Varda {}", n - 1);
        for coll in ["films", "driver_films"] {
            let stale = db
                .collection::<BsonDocument>(coll)
                .count_documents(doc! {"director._id": id, "director.name": {"$ne": &last}})
                .await
                .unwrap();
            assert_eq!(stale, 0, "{coll}: {stale} stale copies");
        }
        assert!(Film::verify_copies(&store).await.unwrap().is_empty());
        let (l, d) = (median(lib), median(drv));
        commands.sort();
        println!(
            "| {copies} | {n} | {} | {} | {} | {:.2}x |",
            ms(l),
            commands[commands.len() / 2],
            ms(d),
            l.as_secs_f64() / d.as_secs_f64()
        );
    }
    let _ = db.drop().await;
}
