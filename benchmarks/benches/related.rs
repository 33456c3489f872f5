//! What keeping a parent's computed values and subset exact costs, measured on MongoDB: a
//! child inserted through the library (`Review::insert`, one transaction that writes the child
//! and its parent's values) against hand-written driver code doing the same in one transaction,
//! through the same client, interleaved insert by insert. Medians, ratios, and the library's
//! commands per insert (from the driver's command monitoring).
//!
//! - **Computed** (`count`, `sum`, `max`, `avg` of the reviews' ratings): the driver inserts the
//!   review and updates the film with one pipeline update (`$add` to the count and the sum,
//!   `$max`, then the average from them), refusing a review of a film that does not exist.
//! - **Subset** (the 10 newest reviews embedded in the film): the driver inserts the review and
//!   `$push`es it with `$each`, `$sort` (date, then `_id`, descending) and `$slice: 10`.
//!
//! Both sides end with the same film (checked), and the library's `verify` finds no drift.
//!
//!     cargo bench -p pattern-bench --bench related
//!
//! Needs `MONGODB_URI` (`scripts/test.sh` starts a server and sets it). Under `cargo test` it
//! runs small (5 inserts each).

use std::time::{Duration, Instant};

use bson::{doc, Document as BsonDocument};
use pattern_bench::{median, ms, scale, Film, Review};
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "shows")]
struct Show {
    #[serde(rename = "_id")]
    id: i64,
    recent: Vec<Comment>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "comments",
    subset(parent = Show, key = show_id, into = recent, keep = 10, order = date)
)]
struct Comment {
    #[serde(rename = "_id")]
    id: i64,
    show_id: i64,
    date: i64,
    text: String,
}

/// Runs `write` in a driver transaction, again on a transient error.
async fn in_transaction<F>(client: &mongodb::Client, write: F)
where
    F: for<'s> Fn(
        &'s mut mongodb::ClientSession,
    ) -> futures::future::BoxFuture<'s, mongodb::error::Result<()>>,
{
    let mut session = client.start_session().await.unwrap();
    loop {
        session.start_transaction().await.unwrap();
        let result = match write(&mut session).await {
            Ok(()) => session.commit_transaction().await,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => return,
            Err(e) if e.contains_label("TransientTransactionError") => continue,
            Err(e) => panic!("{e}"),
        }
    }
}

/// The driver's review: the review, and the film's count, sum, maximum and average in one
/// pipeline update; a film that does not exist refuses it.
async fn driver_review(client: &mongodb::Client, db: &mongodb::Database, review: BsonDocument) {
    let reviews = db.collection::<BsonDocument>("driver_reviews");
    let films = db.collection::<BsonDocument>("driver_films");
    in_transaction(client, |session| {
        let (reviews, films, review) = (reviews.clone(), films.clone(), review.clone());
        Box::pin(async move {
            let (film, rating) = (
                review.get_i64("film_id").unwrap(),
                review.get_i64("rating").unwrap(),
            );
            reviews.insert_one(review).session(&mut *session).await?;
            let update = vec![
                doc! {"$set": {
                    "reviews": {"$add": ["$reviews", 1_i64]},
                    "rating_sum": {"$add": ["$rating_sum", rating]},
                    "rating_max": {"$max": ["$rating_max", rating]},
                }},
                doc! {"$set": {"rating_avg": {"$divide": ["$rating_sum", "$reviews"]}}},
            ];
            let done = films
                .update_one(doc! {"_id": film}, update)
                .session(&mut *session)
                .await?;
            assert_eq!(done.matched_count, 1, "no film {film}");
            Ok(())
        })
    })
    .await;
}

/// The driver's comment: the comment, and the show's ten newest by one `$push` with `$each`,
/// `$sort` and `$slice`; a show that does not exist refuses it.
async fn driver_comment(client: &mongodb::Client, db: &mongodb::Database, comment: BsonDocument) {
    let comments = db.collection::<BsonDocument>("driver_comments");
    let shows = db.collection::<BsonDocument>("driver_shows");
    in_transaction(client, |session| {
        let (comments, shows, comment) = (comments.clone(), shows.clone(), comment.clone());
        Box::pin(async move {
            let show = comment.get_i64("show_id").unwrap();
            comments
                .insert_one(comment.clone())
                .session(&mut *session)
                .await?;
            let push = doc! {"$push": {"recent": {
                "$each": [comment],
                "$sort": {"date": -1, "_id": -1},
                "$slice": 10,
            }}};
            let done = shows
                .update_one(doc! {"_id": show}, push)
                .session(&mut *session)
                .await?;
            assert_eq!(done.matched_count, 1, "no show {show}");
            Ok(())
        })
    })
    .await;
}

/// A film's or show's document in the driver's collection, decoded as the library's type.
async fn driver_parent<T: serde::de::DeserializeOwned>(
    db: &mongodb::Database,
    coll: &str,
    id: i64,
) -> T {
    let found = db
        .collection::<BsonDocument>(coll)
        .find_one(doc! {"_id": id})
        .await;
    bson::from_document(found.unwrap().unwrap()).unwrap()
}

#[tokio::main]
async fn main() {
    let n: i64 = scale(300, 5);
    let (store, log) = pattern_tests::counted_mongo_store("bench_related").await;
    let db = store.database().clone();
    let client = db.client().clone();
    Review::ensure_indexes(&store).await.unwrap();
    Comment::ensure_indexes(&store).await.unwrap();
    let film = Film::unreviewed(1);
    film.insert(&store).await.unwrap();
    let show = Show {
        id: 1,
        recent: vec![],
    };
    show.insert(&store).await.unwrap();
    for (coll, parent) in [
        ("driver_films", bson::to_document(&film).unwrap()),
        ("driver_shows", bson::to_document(&show).unwrap()),
    ] {
        let c = db.collection::<BsonDocument>(coll);
        c.insert_one(parent).await.unwrap();
    }
    // The driver's children indexed as the library's are (a delete or a repair reads them).
    for (coll, keys) in [
        ("driver_reviews", doc! {"film_id": 1}),
        (
            "driver_comments",
            doc! {"show_id": 1, "date": -1, "_id": -1},
        ),
    ] {
        let index = mongodb::IndexModel::builder().keys(keys).build();
        let c = db.collection::<BsonDocument>(coll);
        c.create_index(index).await.unwrap();
    }
    println!(
        "\na child inserted with its parent's values kept, on MongoDB (interleaved, medians):"
    );
    println!("| pattern | inserts | library: insert | commands | driver: insert + parent update in a transaction | commands | ratio |");
    println!("|---|---|---|---|---|---|---|");

    let (mut lib, mut drv, mut commands) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let review = Review {
            id: i,
            film_id: 1,
            rating: (i * 7) % 11,
        };
        log.clear();
        let t = Instant::now();
        review.insert(&store).await.unwrap();
        lib.push(t.elapsed());
        commands.push(log.len());
        let t = Instant::now();
        driver_review(&client, &db, bson::to_document(&review).unwrap()).await;
        drv.push(t.elapsed());
    }
    let ours = Film::get(&store, &1).await.unwrap().unwrap();
    let theirs: Film = driver_parent(&db, "driver_films", 1).await;
    assert_eq!(ours, theirs, "the library's film and the driver's");
    assert!(Review::verify(&store).await.unwrap().is_empty());
    report(
        "computed (count, sum, max, avg)",
        n,
        lib,
        &mut commands,
        drv,
        3,
    );

    let (mut lib, mut drv, mut commands) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let comment = Comment {
            id: i,
            show_id: 1,
            date: (i * 37) % 101,
            text: format!("comment {i}"),
        };
        log.clear();
        let t = Instant::now();
        comment.insert(&store).await.unwrap();
        lib.push(t.elapsed());
        commands.push(log.len());
        let t = Instant::now();
        driver_comment(&client, &db, bson::to_document(&comment).unwrap()).await;
        drv.push(t.elapsed());
    }
    let ours = Show::get(&store, &1).await.unwrap().unwrap();
    let theirs: Show = driver_parent(&db, "driver_shows", 1).await;
    assert_eq!(ours, theirs, "the library's show and the driver's");
    assert!(Comment::verify_subsets(&store).await.unwrap().is_empty());
    report("subset (10 newest)", n, lib, &mut commands, drv, 3);
    let _ = db.drop().await;
}

/// One row: the medians, the library's commands per insert (median), the driver's.
fn report(
    what: &str,
    n: i64,
    lib: Vec<Duration>,
    commands: &mut [usize],
    drv: Vec<Duration>,
    driver_commands: usize,
) {
    let (l, d) = (median(lib), median(drv));
    commands.sort();
    println!(
        "| {what} | {n} | {} | {} | {} | {driver_commands} | {:.2}x |",
        ms(l),
        commands[commands.len() / 2],
        ms(d),
        l.as_secs_f64() / d.as_secs_f64()
    );
}
