//! The follower (`pattern_core::follow`) on MongoDB: a raw driver client (another tool) writes
//! the sources, parents and children of extended references, computed aggregates and subsets
//! without the library; after the follower catches up, every film equals what the raw data
//! says it holds and every `verify*` is clean. Also: the library's own writes are skipped, a
//! resume token the server refuses runs a whole pass, a second follower is refused its lease,
//! a dead owner's open transaction is aborted when its lease is taken, a follower aborted at
//! random points or SIGKILLed and restarted leaves everything exact, and the
//! in-memory store says it has no feed.

use pattern_core::store;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document as BsonDocument};
use mongodb::Collection;
use pattern_core::document::{verify, verify_copies, verify_subsets};
use pattern_core::follow::{Follower, FOLLOW};
use pattern_core::store::MongoStore;
use pattern_core::{Document, Error, Reference};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "directors", referenced_by(Film = director))]
struct Director {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Director)]
struct DirectorRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "editors", referenced_by(Film = editor))]
struct Editor {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Editor)]
struct EditorRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[document(reference)]
    director: DirectorRef,
    #[document(reference)]
    editor: Option<EditorRef>,
    reviews: i64,
    rating_sum: i64,
    rating_min: Option<i64>,
    rating_max: Option<i64>,
    rating_avg: Option<f64>,
    recent: Vec<Review>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "reviews",
    computed(
        parent = Film,
        key = film_id,
        count = reviews,
        sum(rating = rating_sum),
        min(rating = rating_min),
        max(rating = rating_max),
        avg(rating = rating_avg)
    ),
    subset(parent = Film, key = film_id, into = recent, keep = 3, order = date)
)]
struct Review {
    #[serde(rename = "_id")]
    id: i64,
    film_id: i64,
    rating: i64,
    date: i64,
}

fn follower(store: &MongoStore) -> Follower<MongoStore> {
    Follower::new(store.clone(), "films")
        .follow::<Film>()
        .follow::<Review>()
        .follow::<Director>()
        .follow::<Editor>()
        .follow::<Person>()
        .follow_buckets::<SaleHistory>()
        .lease(Duration::from_secs(3))
}

/// Another tool: the same database through a client of its own, writing documents as it likes.
struct Raw {
    db: mongodb::Database,
    directors: Collection<BsonDocument>,
    editors: Collection<BsonDocument>,
    films: Collection<BsonDocument>,
    reviews: Collection<BsonDocument>,
}

async fn raw(store: &MongoStore) -> Raw {
    let other = pattern_tests::second_client(store).await;
    let db = other.database().clone();
    Raw {
        db: db.clone(),
        directors: db.collection("directors"),
        editors: db.collection("editors"),
        films: db.collection("films"),
        reviews: db.collection("reviews"),
    }
}

/// Two directors, two editors, `films` films (film `f` by director `f % 2`, edited by editor
/// `f % 2`), each with two reviews: all through the library.
async fn seed(store: &MongoStore, films: i64) {
    for shop in 0..3 {
        for d in 0..5 {
            let sale = Sale {
                qty: d + 1,
                date: sale_day(d),
            };
            SaleHistory::push(store, &shop, sale).await.unwrap();
        }
    }
    for d in 0..2 {
        let name = format!("director {d}");
        Director { id: d, name }.insert(store).await.unwrap();
        let name = format!("editor {d}");
        Editor { id: d, name }.insert(store).await.unwrap();
    }
    for f in 0..films {
        let film = Film {
            id: f,
            title: format!("film {f}"),
            director: DirectorRef {
                id: f % 2,
                name: "?".into(),
            },
            editor: Some(EditorRef {
                id: f % 2,
                name: "?".into(),
            }),
            reviews: 0,
            rating_sum: 0,
            rating_min: None,
            rating_max: None,
            rating_avg: None,
            recent: Vec::new(),
        };
        film.insert(store).await.unwrap();
        for r in 0..2 {
            let id = f * 10 + r;
            let review = Review {
                id,
                film_id: f,
                rating: r + 1,
                date: r,
            };
            review.insert(store).await.unwrap();
        }
    }
}

/// Every film as the raw data says it must be stored: its sources' names, its reviews'
/// aggregates and its 3 newest reviews.
async fn expected(store: &MongoStore) -> BTreeMap<i64, Film> {
    let all = |c: &str| {
        let c: Collection<BsonDocument> = store.database().collection(c);
        async move {
            use futures::TryStreamExt;
            c.find(doc! {})
                .await
                .unwrap()
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
        }
    };
    let names = |docs: Vec<BsonDocument>| -> BTreeMap<i64, String> {
        (docs.into_iter())
            .map(|d| {
                (
                    d.get_i64("_id").unwrap(),
                    d.get_str("name").unwrap().to_owned(),
                )
            })
            .collect()
    };
    let directors = names(all("directors").await);
    let editors = names(all("editors").await);
    let reviews: Vec<Review> = (all("reviews").await.into_iter())
        .map(|d| bson::from_document(d).unwrap())
        .collect();
    let mut out = BTreeMap::new();
    for f in all("films").await {
        let id = f.get_i64("_id").unwrap();
        let d = f.get_document("director").unwrap().get_i64("_id").unwrap();
        let e = (f.get_document("editor").ok()).map(|e| e.get_i64("_id").unwrap());
        let mut of: Vec<Review> = reviews
            .iter()
            .filter(|r| r.film_id == id)
            .cloned()
            .collect();
        let ratings: Vec<i64> = of.iter().map(|r| r.rating).collect();
        let n = ratings.len() as i64;
        of.sort_by_key(|r| std::cmp::Reverse((r.date, r.id)));
        of.truncate(3);
        let film = Film {
            id,
            title: f.get_str("title").unwrap().to_owned(),
            director: DirectorRef {
                id: d,
                name: directors[&d].clone(),
            },
            editor: e.and_then(|e| {
                (editors.get(&e)).map(|name| EditorRef {
                    id: e,
                    name: name.clone(),
                })
            }),
            reviews: n,
            rating_sum: ratings.iter().sum(),
            rating_min: ratings.iter().min().copied(),
            rating_max: ratings.iter().max().copied(),
            rating_avg: (n > 0).then(|| ratings.iter().sum::<i64>() as f64 / n as f64),
            recent: of,
        };
        out.insert(id, film);
    }
    out
}

/// Every film equal to what the raw data says, and every `verify` clean.
async fn assert_exact(store: &MongoStore, when: &str) {
    let want = expected(store).await;
    let have = Film::find(Film::ID.gte(i64::MIN)).all(store).await.unwrap();
    assert_eq!(have.len(), want.len(), "{when}");
    for film in have {
        let w = &want[&film.id];
        let close = match (film.rating_avg, w.rating_avg) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-9,
            (a, b) => a == b,
        };
        assert!(close, "{when}, film {}: {film:?}\nwant {w:?}", film.id);
        let film = Film {
            rating_avg: w.rating_avg,
            ..film
        };
        assert_eq!(&film, w, "{when}, film {}", film.id);
    }
    assert_eq!(
        verify_copies::<Film, _>(store).await.unwrap(),
        vec![],
        "{when}"
    );
    assert_eq!(verify::<Review, _>(store).await.unwrap(), vec![], "{when}");
    assert_eq!(
        verify_subsets::<Review, _>(store).await.unwrap(),
        Vec::<String>::new(),
        "{when}"
    );
    // Every roll-up equals its buckets; every person at the current version (written back).
    let sales = SaleHistory::verify(store).await.unwrap();
    assert!(sales.is_clean(), "{when}: {sales:?}");
    for p in pattern_tests::documents(store, "people").await {
        let v = p.get("schema_version").and_then(pattern_tests::as_int);
        assert_eq!(v, Some(2), "{when}: {p:?}");
    }
}

/// A mix of writes another tool makes, numbered: renames, a deleted (optional) source, a film
/// inserted with wrong derived values, a review moved to another film, and the writes of
/// [`write_to_film`] (child inserts, deletes and changes, a parent overwritten).
async fn foreign_write(raw: &Raw, n: i64, films: i64) {
    let f = n % films;
    match n % 8 {
        0 => {
            let d = n % 2;
            let name = format!("director {d} renamed {n}");
            raw.directors
                .update_one(doc! {"_id": d}, doc! {"$set": {"name": name}})
                .await
                .unwrap();
        }
        3 => {
            raw.reviews
                .update_one(
                    doc! {"film_id": f},
                    doc! {"$set": {"film_id": (f + 1) % films}},
                )
                .await
                .unwrap();
        }
        5 => {
            // An editor deleted (films keep it as an optional copy: nulled), then back.
            let e = n % 2;
            if raw
                .editors
                .delete_one(doc! {"_id": e})
                .await
                .unwrap()
                .deleted_count
                == 0
            {
                let name = format!("editor {e} back {n}");
                raw.editors
                    .update_one(doc! {"_id": e}, doc! {"$set": {"name": name}})
                    .upsert(true)
                    .await
                    .unwrap();
            }
        }
        6 => {
            let id = 10_000 + n;
            let film = doc! {
                "_id": id, "title": format!("film {id}"),
                "director": {"_id": n % 2, "name": "not the name"}, "editor": Bson::Null,
                "reviews": 5_i64, "rating_sum": 0_i64, "rating_min": Bson::Null,
                "rating_max": Bson::Null, "rating_avg": Bson::Null, "recent": [],
            };
            raw.films.insert_one(film).await.unwrap();
        }
        _ => write_to_film(raw, n, f).await,
    }
}

#[tokio::test]
async fn foreign_writes_are_followed() {
    let store = pattern_tests::mongo_store("follow_foreign").await;
    seed(&store, 6).await;
    let f = follower(&store);
    // The first run: a whole pass (nothing to fix yet), its position recorded. (The test
    // server may hand a new stream changes from before it, among them bucket updates made
    // before their before-images were kept: the roll-ups' whole check, a pass too.)
    f.catch_up().await.unwrap();
    let first = f.status().passes;
    assert!((1..=2).contains(&first), "{:?}", f.status());
    let raw = raw(&store).await;
    for n in 0..24 {
        foreign_write(&raw, n, 6).await;
    }
    f.catch_up().await.unwrap();
    assert_exact(&store, "after 24 foreign writes").await;
    let s = f.status();
    assert!(s.applied > 0, "{s:?}");
    assert_eq!(
        s.passes, first,
        "no whole pass for changes it can follow: {s:?}"
    );
    assert!(!s.running, "{s:?}");
    assert!(s.last_applied.is_some(), "{s:?}");
    // The token and the counters are in the follower's document.
    let stored = pattern_tests::documents(&store, FOLLOW).await;
    assert_eq!(stored.len(), 1);
    assert!(stored[0].get_document("token").is_ok(), "{stored:?}");
    assert_eq!(stored[0].get("owner"), Some(&Bson::Null), "{stored:?}");
    assert_eq!(stored[0].get_i64("applied").unwrap() as u64, s.applied);
}

/// pymongo stores a small integer as an Int32: its reviews name their film (and have their
/// `_id`, rating and date) in Int32s, the library's in Int64s. The follower keeps each film's
/// aggregates and subset over both, and every `verify` agrees: children are grouped by their
/// key's value, as the server's match has them.
#[tokio::test]
async fn reviews_written_with_int32_keys_count_for_their_film() {
    let store = pattern_tests::mongo_store("follow_int32").await;
    seed(&store, 3).await;
    let f = follower(&store);
    f.catch_up().await.unwrap();
    let raw = raw(&store).await;
    for n in 0..12_i32 {
        let review =
            doc! {"_id": 1_000 + n, "film_id": n % 3, "rating": n % 5 + 1, "date": 100 + n};
        raw.reviews.insert_one(review).await.unwrap();
    }
    // A film renamed by the other program, which names it by an Int32 `_id`.
    raw.films
        .update_one(doc! {"_id": 0_i32}, doc! {"$set": {"title": "renamed"}})
        .await
        .unwrap();
    f.catch_up().await.unwrap();
    assert_exact(&store, "after reviews with Int32 keys").await;
    let s = f.status();
    assert!(s.applied >= 12, "{s:?}");
}

/// A followed collection dropped and restored by another program (mongodump and mongorestore
/// of the reviews, say, with one review fewer): the follower checks the rules over it whole,
/// repairs what differs, and says so: one more pass in its status, the values it wrote counted.
#[tokio::test]
async fn a_dropped_and_restored_collection_is_checked_whole_and_counted() {
    let store = pattern_tests::mongo_store("follow_drop").await;
    seed(&store, 4).await;
    let f = follower(&store);
    f.catch_up().await.unwrap();
    let before = f.status();
    let raw = raw(&store).await;
    use futures::TryStreamExt;
    let reviews: Vec<BsonDocument> = (raw.reviews.find(doc! {}).await.unwrap())
        .try_collect()
        .await
        .unwrap();
    raw.reviews.drop().await.unwrap();
    raw.reviews
        .insert_many(reviews.into_iter().filter(|r| r.get_i64("_id") != Ok(11)))
        .await
        .unwrap();
    f.catch_up().await.unwrap();
    let s = f.status();
    assert!(s.passes > before.passes, "{s:?}");
    assert!(s.repaired > before.repaired, "{s:?}");
    assert_exact(&store, "after a drop and restore").await;
    let stored = pattern_tests::documents(&store, FOLLOW).await;
    assert_eq!(
        stored[0].get_i64("passes").ok(),
        Some(s.passes as i64),
        "{stored:?}"
    );
}

/// A batch whose transaction keeps conflicting is split rather than retried whole: reviews of
/// film 0 and film 1 arrive together (one batch), and another program then holds a
/// transaction open over film 1 (its write not committed) as the follower starts. The follower
/// applies film 0's while film 1 is held, then film 1's once the other program commits; every
/// film is exact. (On the test server an open transaction holds back the change stream from
/// its first write on, so the reviews are written before it: TEST-SERVER.md, T26.)
#[tokio::test]
async fn a_batch_that_keeps_conflicting_is_split() {
    let store = pattern_tests::mongo_store("follow_split").await;
    seed(&store, 2).await;
    let f = Arc::new(follower(&store));
    f.catch_up().await.unwrap();
    let raw = raw(&store).await;
    let reviews = [
        doc! {"_id": 500_i64, "film_id": 0_i64, "rating": 5_i64, "date": 50_i64},
        doc! {"_id": 501_i64, "film_id": 1_i64, "rating": 5_i64, "date": 50_i64},
    ];
    raw.reviews.insert_many(reviews).await.unwrap();
    let mut held = raw.db.client().start_session().await.unwrap();
    held.start_transaction().await.unwrap();
    raw.films
        .update_one(doc! {"_id": 1_i64}, doc! {"$set": {"title": "held"}})
        .session(&mut held)
        .await
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let f = f.clone();
        tokio::spawn(async move {
            f.run(async move {
                let _ = stopped.await;
            })
            .await
        })
    };
    let count = |id: i64| {
        let store = store.clone();
        async move { Film::get(&store, &id).await.unwrap().unwrap().reviews }
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while count(0).await != 3 {
        if running.is_finished() {
            panic!("the follower stopped: {:?}", running.await);
        }
        assert!(std::time::Instant::now() < deadline, "film 0 never applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(count(1).await, 2, "film 1 is held by the other transaction");
    held.commit_transaction().await.unwrap();
    while count(1).await != 3 {
        assert!(std::time::Instant::now() < deadline, "film 1 never applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    assert_exact(&store, "after a split batch").await;
}

/// `catch_up` stops at its mark, not before: the feed's copy of an updated document is the
/// document when the feed reads it, so an update of the follower's own document deep in a
/// backlog (past the stream's first batch, read after the mark was written) shows the mark.
#[tokio::test]
async fn catch_up_applies_a_backlog_longer_than_a_batch() {
    let store = pattern_tests::mongo_store("follow_backlog").await;
    seed(&store, 4).await;
    let f = follower(&store).batch(50);
    f.catch_up().await.unwrap();
    let raw = raw(&store).await;
    let follow: Collection<BsonDocument> = raw.db.collection(FOLLOW);
    let reviews: Vec<BsonDocument> = (0..1_500_i64)
        .map(|n| doc! {"_id": 100_000 + n, "film_id": n % 4, "rating": n % 5 + 1, "date": 10 + n})
        .collect();
    for (i, chunk) in reviews.chunks(20).enumerate() {
        raw.reviews.insert_many(chunk.to_vec()).await.unwrap();
        if i == 60 {
            follow
                .update_one(
                    doc! {"_id": "films"},
                    doc! {"$set": {"note": "an operator's"}},
                )
                .await
                .unwrap();
        }
    }
    f.catch_up().await.unwrap();
    // Every change read (a film brought in line by its first change skips the rest).
    let s = f.status();
    assert!(s.applied + s.skipped >= 1_500, "{s:?}");
    assert_exact(&store, "after a backlog of 1,500 changes").await;
    // The mark is gone; the follower's document alone is left.
    assert_eq!(pattern_tests::documents(&store, FOLLOW).await.len(), 1);
}

#[tokio::test]
async fn the_librarys_own_writes_are_skipped() {
    let store = pattern_tests::mongo_store("follow_own").await;
    let f = follower(&store);
    f.catch_up().await.unwrap();
    seed(&store, 3).await;
    f.catch_up().await.unwrap();
    let s = f.status();
    assert_eq!(s.applied, 0, "{s:?}");
    assert!(s.skipped >= 3 + 6, "{s:?}");
    assert_exact(&store, "the library's writes").await;
}

#[tokio::test]
async fn a_token_the_server_refuses_runs_a_whole_pass() {
    let store = pattern_tests::mongo_store("follow_lost").await;
    seed(&store, 4).await;
    let f = follower(&store);
    f.catch_up().await.unwrap();
    let first = f.status().passes;
    let raw = raw(&store).await;
    // History lost: the stored token is one the server cannot resume from...
    raw.db
        .collection::<BsonDocument>(FOLLOW)
        .update_one(
            doc! {"_id": "films"},
            doc! {"$set": {"token": {"_data": "8200000001"}}},
        )
        .await
        .unwrap();
    // ... and writes were made meanwhile.
    for n in 0..8 {
        foreign_write(&raw, n, 4).await;
    }
    f.catch_up().await.unwrap();
    let lost = f.status().passes;
    assert!(lost > first, "{:?}", f.status());
    assert!(f.status().repaired > 0, "{:?}", f.status());
    assert_exact(&store, "after the whole pass").await;
    // A fresh token was recorded: the next run resumes from it.
    for n in 8..16 {
        foreign_write(&raw, n, 4).await;
    }
    f.catch_up().await.unwrap();
    assert_eq!(f.status().passes, lost, "{:?}", f.status());
    assert_exact(&store, "after resuming").await;
}

#[tokio::test]
async fn a_second_follower_is_refused_while_the_first_runs() {
    let store = pattern_tests::mongo_store("follow_lease").await;
    seed(&store, 2).await;
    let first = Arc::new(follower(&store));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let first = first.clone();
        tokio::spawn(async move {
            first
                .run(async move {
                    let _ = rx.await;
                })
                .await
        })
    };
    while !first.status().running || first.status().passes == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = follower(&store);
    match second.catch_up().await {
        Err(Error::LeaseHeld { what, .. }) => assert!(what.contains("runs elsewhere"), "{what}"),
        other => panic!("{other:?}"),
    }
    tx.send(()).unwrap();
    running.await.unwrap().unwrap();
    // Stopped, the first gave its lease up: the second runs at once.
    second.catch_up().await.unwrap();
    assert_exact(&store, "after the second").await;
}

/// A follower SIGKILLed mid-batch leaves its transaction open, holding what it wrote (its own
/// document among them) until the server expires it, a minute later. The next follower kills
/// the dead owner's recorded sessions before it takes the lease: it neither waits for the
/// expiry nor sees the dead transaction's writes.
#[tokio::test]
async fn a_dead_owners_open_transaction_is_aborted_when_its_lease_is_taken() {
    let store = pattern_tests::mongo_store("follow_dead_owner").await;
    seed(&store, 2).await;
    let f = follower(&store);
    f.catch_up().await.unwrap();
    let raw = raw(&store).await;
    let client = raw.db.client().clone();
    let mut session = client.start_session().await.unwrap();
    let lsid = session.id().clone();
    // The dead owner: its lease run out, its session recorded, as a follower's batch leaves them.
    let follow: Collection<BsonDocument> = raw.db.collection(FOLLOW);
    let past = bson::DateTime::from_millis(bson::DateTime::now().timestamp_millis() - 1_000);
    follow
        .update_one(
            doc! {"_id": "films"},
            doc! {"$set": {"owner": "dead", "until": past, "sessions": [lsid]}},
        )
        .await
        .unwrap();
    // Its batch, open: a film and the follower's document written, never committed.
    session.start_transaction().await.unwrap();
    raw.films
        .update_one(doc! {"_id": 0_i64}, doc! {"$set": {"title": "uncommitted"}})
        .session(&mut session)
        .await
        .unwrap();
    follow
        .update_one(doc! {"_id": "films"}, doc! {"$set": {"dead": true}})
        .session(&mut session)
        .await
        .unwrap();
    // Killed: no abort sent, the session never returned to its pool.
    std::mem::forget(session);
    let taken = tokio::time::timeout(Duration::from_secs(30), f.catch_up()).await;
    taken
        .expect("the next follower waited for the dead transaction to expire")
        .unwrap();
    let film = raw
        .films
        .find_one(doc! {"_id": 0_i64})
        .await
        .unwrap()
        .unwrap();
    assert_ne!(film.get_str("title"), Ok("uncommitted"), "{film}");
    let stored = pattern_tests::documents(&store, FOLLOW).await;
    assert!(!stored[0].contains_key("dead"), "{stored:?}");
    assert_exact(&store, "after the dead owner").await;
}

/// Writes of another tool beside the films: a person at the older schema version (written
/// back to the current one by the follower), and a sale pushed raw into a shop's open bucket
/// (its count and sum kept, the roll-up not).
async fn write_beside(raw: &Raw, n: i64) {
    let people = raw.db.collection::<BsonDocument>("people");
    people
        .insert_one(doc! {"_id": 1_000 + n, "name": format!("person {n}")})
        .await
        .unwrap();
    let sale = bson::to_bson(&Sale {
        qty: 7,
        date: sale_day(30 + n),
    })
    .unwrap();
    raw.db
        .collection::<BsonDocument>("sales")
        .update_one(
            doc! {"shop": n % 3, "count": {"$lt": 4}},
            doc! {"$push": {"history": sale}, "$inc": {"count": 1, "qty_sum": 7_i64},
            "$max": {"date_max": sale_day(30 + n)}},
        )
        .await
        .unwrap();
}

fn sale_day(d: i64) -> bson::DateTime {
    bson::DateTime::from_millis(1_698_278_400_000 + d * 86_400_000)
}

/// A write of another tool that concerns film `f` alone (so that a change the follower
/// skipped is not covered by a later one): a review inserted, deleted, moved in, the film's
/// derived values overwritten, its reviews changed.
async fn write_to_film(raw: &Raw, n: i64, f: i64) {
    match n % 5 {
        0 => {
            let review = doc! {"_id": 100_000 + n, "film_id": f, "rating": n % 5 + 1, "date": n};
            raw.reviews.insert_one(review).await.unwrap();
        }
        1 => {
            raw.reviews.delete_one(doc! {"film_id": f}).await.unwrap();
        }
        2 => {
            // A review of no film (an orphan) moved in.
            let review = doc! {"_id": 200_000 + n, "film_id": -1_i64, "rating": 5_i64, "date": n};
            raw.reviews.insert_one(review).await.unwrap();
            raw.reviews
                .update_one(doc! {"_id": 200_000 + n}, doc! {"$set": {"film_id": f}})
                .await
                .unwrap();
        }
        3 => {
            raw.films
                .update_one(
                    doc! {"_id": f},
                    doc! {"$set": {"reviews": 99_i64, "director.name": "wrong", "recent": []}},
                )
                .await
                .unwrap();
        }
        _ => {
            raw.reviews
                .update_many(
                    doc! {"film_id": f},
                    doc! {"$inc": {"rating": 1_i64, "date": 10_i64}},
                )
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn a_follower_aborted_anywhere_resumes_exactly() {
    let store = pattern_tests::mongo_store("follow_abort").await;
    let writes = pattern_tests::scale(60, 400) as i64;
    seed(&store, writes).await;
    let f = Arc::new(follower(&store).batch(3));
    f.catch_up().await.unwrap();
    let raw = Arc::new(raw(&store).await);
    // Another tool writes to each film once; the library adds reviews meanwhile.
    let writer = {
        let raw = raw.clone();
        tokio::spawn(async move {
            for n in 0..writes {
                write_to_film(&raw, n, n).await;
                // A person of the older version, a raw bucket push; a director renamed, an
                // editor deleted or back (the sources of every film).
                match n % 10 {
                    2 => write_beside(&raw, n).await,
                    4 => foreign_write(&raw, 8 * n, writes).await,
                    9 => foreign_write(&raw, 8 * n + 5, writes).await,
                    _ => {}
                }
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
        })
    };
    let library = {
        let store = store.clone();
        tokio::spawn(async move {
            for n in 0..writes / 4 {
                let review = Review {
                    id: 500_000 + n,
                    film_id: n * 4 % writes,
                    rating: 3,
                    date: 1_000 + n,
                };
                review.insert(&store).await.unwrap();
            }
        })
    };
    // The follower aborted after 1 to 40 ms, again and again, while they write.
    let mut next = pattern_tests::rng(0x9e37_79b9_7f4a_7c15);
    let mut aborted = 0;
    while !writer.is_finished() {
        let run = {
            let f = f.clone();
            tokio::spawn(async move { f.run(futures::future::pending()).await })
        };
        tokio::time::sleep(Duration::from_millis(1 + next(40))).await;
        run.abort();
        let _ = run.await;
        aborted += 1;
    }
    writer.await.unwrap();
    library.await.unwrap();
    f.catch_up().await.unwrap();
    assert!(aborted > 5, "{aborted}");
    assert_exact(&store, &format!("after {aborted} aborted runs")).await;
}

#[tokio::test]
async fn the_in_memory_store_has_nothing_to_follow() {
    let store = pattern_core::MemoryStore::new();
    let f = Follower::new(store, "films").follow::<Film>();
    match f.catch_up().await {
        Err(Error::Store(store::Error::Unsupported { store, reason })) => {
            assert_eq!(store, "memory");
            assert!(reason.contains("only this process writes"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// The follower of [`a_follower_killed_with_sigkill_resumes_exactly`], in a process of its own:
/// runs until killed, waiting while the lease of the one killed before holds.
#[tokio::test]
#[ignore = "started by a_follower_killed_with_sigkill_resumes_exactly in a process of its own"]
async fn follower_child() {
    let Ok(db) = std::env::var("PATTERN_FOLLOW_CHILD_DB") else {
        return;
    };
    let opts = pattern_tests::client_options().await;
    let store = MongoStore::with_options(opts, &db).unwrap();
    let f = follower(&store).lease(Duration::from_secs(1)).batch(3);
    loop {
        match f.run(futures::future::pending()).await {
            Err(Error::LeaseHeld { .. } | Error::Store(store::Error::Contention { .. })) => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_follower_killed_with_sigkill_resumes_exactly() {
    let store = pattern_tests::mongo_store("follow_sigkill").await;
    let writes = pattern_tests::scale(60, 400) as i64;
    seed(&store, writes).await;
    follower(&store).catch_up().await.unwrap();
    let raw = Arc::new(raw(&store).await);
    let writer = {
        let raw = raw.clone();
        tokio::spawn(async move {
            for n in 0..writes {
                write_to_film(&raw, n, n).await;
                if n % 3 == 0 {
                    write_beside(&raw, n).await;
                }
                // A director renamed, an editor deleted or back (the sources of every film).
                match n % 10 {
                    4 => foreign_write(&raw, 8 * n, writes).await,
                    9 => foreign_write(&raw, 8 * n + 5, writes).await,
                    _ => {}
                }
                tokio::time::sleep(Duration::from_millis(80)).await;
            }
        })
    };
    let library = {
        let store = store.clone();
        tokio::spawn(async move {
            for n in 0..writes / 4 {
                let review = Review {
                    id: 500_000 + n,
                    film_id: n * 4 % writes,
                    rating: 3,
                    date: 1_000 + n,
                };
                review.insert(&store).await.unwrap();
                let sale = Sale {
                    qty: 1,
                    date: sale_day(100 + n),
                };
                SaleHistory::push(&store, &(n % 3), sale).await.unwrap();
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };
    let exe = std::env::current_exe().unwrap();
    let mut next = pattern_tests::rng(0x2545_f491_4f6c_dd1d);
    let mut killed = 0;
    while !writer.is_finished() {
        let mut child = std::process::Command::new(&exe)
            .args([
                "--exact",
                "follow::follower_child",
                "--ignored",
                "--nocapture",
            ])
            .env("PATTERN_FOLLOW_CHILD_DB", store.database().name())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300 + next(1_200))).await;
        // SIGKILL: no destructor, no abort of its open transaction, no lease given up.
        child.kill().unwrap();
        child.wait().unwrap();
        killed += 1;
    }
    writer.await.unwrap();
    library.await.unwrap();
    // The killed processes applied changes (the counters their commits added).
    let stored = pattern_tests::documents(&store, FOLLOW).await;
    let by_children = stored[0].get_i64("applied").unwrap_or(0);
    println!("{killed} followers killed; they applied {by_children} changes");
    assert!(by_children > 0, "{stored:?}");
    // The last one's lease expires within a second; then this process catches up.
    let f = follower(&store);
    loop {
        match f.catch_up().await {
            Ok(()) => break,
            Err(Error::LeaseHeld { .. } | Error::Store(store::Error::Contention { .. })) => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(killed > 3, "{killed}");
    assert_exact(&store, &format!("after {killed} processes killed")).await;
}

#[tokio::test]
async fn sixteen_foreign_writers_and_the_library_at_once() {
    let store = pattern_tests::mongo_store("follow_sixteen").await;
    let films = 24;
    seed(&store, films).await;
    let f = Arc::new(follower(&store));
    f.catch_up().await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let f = f.clone();
        tokio::spawn(async move {
            f.run(async move {
                let _ = stopped.await;
            })
            .await
        })
    };
    let each = pattern_tests::scale(12, 100) as i64;
    let mut writers = Vec::new();
    for w in 0..16_i64 {
        let raw = raw(&store).await;
        writers.push(tokio::spawn(async move {
            for i in 0..each {
                let n = w * 1_000 + i;
                foreign_write(&raw, n, films).await;
                if i % 4 == 0 {
                    write_beside(&raw, n).await;
                }
            }
        }));
    }
    let library = {
        let store = store.clone();
        tokio::spawn(async move {
            for n in 0..each * 2 {
                let review = Review {
                    id: 700_000 + n,
                    film_id: n % films,
                    rating: 4,
                    date: 2_000 + n,
                };
                review.insert(&store).await.unwrap();
                let sale = Sale {
                    qty: 2,
                    date: sale_day(200 + n),
                };
                SaleHistory::push(&store, &(n % 3), sale).await.unwrap();
            }
        })
    };
    for w in writers {
        w.await.unwrap();
    }
    library.await.unwrap();
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    println!("while they wrote: {:?}", f.status());
    // What the running follower had not reached yet when it stopped.
    f.catch_up().await.unwrap();
    let s = f.status();
    assert!(s.applied > 0 && s.skipped > 0, "{s:?}");
    assert_exact(&store, "after 16 writers and the library").await;
}

/// Version 1 of a person and a pet, as an older build writes them (no version field).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Named1 {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

/// Version 2, upgraded when read and written back: `name` is `full_name`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "people", version = 2, previous(Named1 = 1), write_back)]
struct Person {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
}

impl From<Named1> for Person {
    fn from(p: Named1) -> Self {
        Person {
            id: p.id,
            full_name: p.name,
        }
    }
}

/// Version 2, not written back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "pets", version = 2, previous(Named1 = 1))]
struct Pet {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
}

impl From<Named1> for Pet {
    fn from(p: Named1) -> Self {
        Pet {
            id: p.id,
            full_name: p.name,
        }
    }
}

#[tokio::test]
async fn older_versions_written_by_another_build_are_counted_and_written_back() {
    let store = pattern_tests::mongo_store("follow_versions").await;
    Person {
        id: 1,
        full_name: "Ada Lovelace".into(),
    }
    .insert(&store)
    .await
    .unwrap();
    let f = Follower::new(store.clone(), "people")
        .follow::<Person>()
        .follow::<Pet>();
    f.catch_up().await.unwrap();
    let raw = raw(&store).await;
    let (people, pets) = (
        raw.db.collection::<BsonDocument>("people"),
        raw.db.collection::<BsonDocument>("pets"),
    );
    people
        .insert_one(doc! {"_id": 2_i64, "name": "Alan Turing"})
        .await
        .unwrap();
    people
        .replace_one(doc! {"_id": 1_i64}, doc! {"_id": 1_i64, "name": "Ada King"})
        .await
        .unwrap();
    pets.insert_one(doc! {"_id": 3_i64, "name": "Rex"})
        .await
        .unwrap();
    // The current build's own writes are current: nothing to count.
    Person {
        id: 4,
        full_name: "Grace Hopper".into(),
    }
    .insert(&store)
    .await
    .unwrap();
    f.catch_up().await.unwrap();
    assert_eq!(f.status().older, 3, "{:?}", f.status());
    let stored = pattern_tests::documents(&store, "people").await;
    for d in &stored {
        assert_eq!(
            d.get("schema_version").and_then(pattern_tests::as_int),
            Some(2),
            "{d:?}"
        );
        assert!(d.get_str("full_name").is_ok(), "{d:?}");
    }
    assert_eq!(
        Person::get(&store, &1).await.unwrap().unwrap().full_name,
        "Ada King"
    );
    // Not written back: as the other build wrote it, read as version 2.
    let pet = &pattern_tests::documents(&store, "pets").await[0];
    assert_eq!(pet.get("schema_version"), None, "{pet:?}");
    assert_eq!(
        Pet::get(&store, &3).await.unwrap().unwrap().full_name,
        "Rex"
    );
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Sale {
    qty: i64,
    date: bson::DateTime,
}

/// A shop's sales, 4 a bucket, with the whole history's roll-up (a layout: its fields are never read).
#[derive(pattern_core::Bucket)]
#[allow(dead_code)]
#[bucket(
    collection = "sales",
    size = 4,
    time = "date",
    summary(sum = "qty"),
    rollup
)]
struct SaleHistory {
    #[bucket(key)]
    shop: i64,
    #[bucket(items)]
    history: Vec<Sale>,
}

#[tokio::test]
async fn roll_ups_follow_buckets_other_programs_write() {
    let store = pattern_tests::mongo_store("follow_rollups").await;
    let day = |d: i64| bson::DateTime::from_millis(1_698_278_400_000 + d * 86_400_000);
    for shop in 0..4 {
        for d in 0..10 {
            let sale = Sale {
                qty: d + 1,
                date: day(d),
            };
            SaleHistory::push(&store, &shop, sale).await.unwrap();
        }
    }
    let f = Follower::new(store.clone(), "sales").follow_buckets::<SaleHistory>();
    assert_eq!(f.rules(), ["roll-ups of sales"]);
    f.catch_up().await.unwrap();
    let raw = raw(&store).await;
    let sales = raw.db.collection::<BsonDocument>("sales");
    // Shop 0's newest bucket deleted (sales 9 and 10).
    let gone = sales
        .delete_one(doc! {"shop": 0_i64, "page": 3_i64})
        .await
        .unwrap();
    assert_eq!(gone.deleted_count, 1);
    // A sale pushed into shop 1's open bucket, its count and sum kept.
    let sale = bson::to_bson(&Sale {
        qty: 100,
        date: day(20),
    })
    .unwrap();
    let pushed = sales
        .update_one(
            doc! {"shop": 1_i64, "count": {"$lt": 4}},
            doc! {"$push": {"history": sale}, "$inc": {"count": 1, "qty_sum": 100_i64},
            "$max": {"date_max": day(20)}},
        )
        .await
        .unwrap();
    assert_eq!(pushed.matched_count, 1);
    // Shop 2's roll-up overwritten (in the roll-ups' collection, by the shop as its `_id`).
    raw.db
        .collection::<BsonDocument>("sales.rollups")
        .update_one(
            doc! {"_id": 2_i64},
            doc! {"$set": {"rollup_items": 999_i64}},
        )
        .await
        .unwrap();
    f.catch_up().await.unwrap();
    assert!(f.status().applied >= 3, "{:?}", f.status());
    let report = SaleHistory::verify(&store).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
    let total = |shop: i64| {
        let store = store.clone();
        async move { SaleHistory::summary(&store, &shop, ..).await.unwrap() }
    };
    assert_eq!(
        (total(0).await.items, total(0).await.qty_sum.as_i64()),
        (8, Some(36))
    );
    assert_eq!(
        (total(1).await.items, total(1).await.qty_sum.as_i64()),
        (11, Some(155))
    );
    assert_eq!(
        (total(2).await.items, total(2).await.qty_sum.as_i64()),
        (10, Some(55))
    );
}

/// A bucket written while an ingest batch's pending mark lists its key (the batch's own, or
/// another program's beside it) is left to the batch: the follower does not write the key's
/// roll-up, which the batch brings up to its buckets next (the whole-history summary counts
/// the buckets meanwhile). Once the batch's roll-up arrives and the mark is gone, the
/// follower's look at that change finds the roll-up in line.
#[tokio::test]
async fn a_key_an_ingest_batch_lists_is_left_to_the_batch() {
    let store = pattern_tests::mongo_store("follow_rollups_pending").await;
    let day = |d: i64| bson::DateTime::from_millis(1_698_278_400_000 + d * 86_400_000);
    for d in 0..10 {
        let sale = Sale {
            qty: d + 1,
            date: day(d),
        };
        SaleHistory::push(&store, &3, sale).await.unwrap();
    }
    let f = Follower::new(store.clone(), "sales").follow_buckets::<SaleHistory>();
    f.catch_up().await.unwrap();
    let raw = raw(&store).await;
    // A batch in flight: its mark, then its bucket (page 4: shop 3's 10 sales fill 2.5 buckets
    // of 4, so the batch's sale goes in a fourth).
    let marks = raw.db.collection::<BsonDocument>("pattern_bounded");
    let mark = doc! {"rollup_pending_of": "sales", "batch": bson::oid::ObjectId::new()};
    marks
        .insert_one(doc! {"_id": mark.clone(), "rollup_pending": [3_i64]})
        .await
        .unwrap();
    let sales = raw.db.collection::<BsonDocument>("sales");
    let sale = bson::to_bson(&Sale {
        qty: 100,
        date: day(20),
    })
    .unwrap();
    sales
        .update_one(
            doc! {"shop": 3_i64, "count": {"$lt": 4}},
            doc! {"$push": {"history": sale}, "$inc": {"count": 1, "qty_sum": 100_i64},
            "$max": {"date_max": day(20)}},
        )
        .await
        .unwrap();
    f.catch_up().await.unwrap();
    let rollups = raw.db.collection::<BsonDocument>("sales.rollups");
    let items = || async {
        let r = rollups
            .find_one(doc! {"_id": 3_i64})
            .await
            .unwrap()
            .unwrap();
        r.get_i64("rollup_items").unwrap()
    };
    assert_eq!(items().await, 10, "left to the batch");
    let total = SaleHistory::summary(&store, &3, ..).await.unwrap();
    assert_eq!((total.items, total.qty_sum.as_i64()), (11, Some(155)));
    // The batch's roll-up, then its mark deleted.
    rollups
        .update_one(
            doc! {"_id": 3_i64},
            doc! {"$inc": {"rollup_items": 1_i64, "qty_sum": 100_i64}},
        )
        .await
        .unwrap();
    marks.delete_one(doc! {"_id": mark}).await.unwrap();
    f.catch_up().await.unwrap();
    assert_eq!(items().await, 11);
    let total = SaleHistory::summary(&store, &3, ..).await.unwrap();
    assert_eq!((total.items, total.qty_sum.as_i64()), (11, Some(155)));
    let report = SaleHistory::verify(&store).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}
