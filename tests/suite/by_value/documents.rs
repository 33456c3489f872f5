//! The related patterns by value: computed aggregates and subsets whose children name their
//! parent in any number type, copies of a source whose `_id` is stored in another, approximate
//! counters of one document named in several.

use pattern_core::adopt::Options;
use pattern_core::Reference;

use super::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    reviews: i64,
    score_sum: f64,
    recent: Vec<Review>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "reviews",
    computed(parent = Film, key = film_id, count = reviews, sum(score = score_sum)),
    subset(parent = Film, key = film_id, into = recent, keep = 3, order = date)
)]
struct Review {
    #[serde(rename = "_id")]
    id: i64,
    film_id: i64,
    score: f64,
    date: i64,
}

async fn film(store: &AnyStore, id: i64) -> Film {
    Film::get(store, &id).await.unwrap().unwrap()
}

async fn raw_film(store: &AnyStore, id: i64) -> BsonDocument {
    let by_id = Filter::eq("_id", id);
    let found = store.find("films", &by_id, &Default::default()).await;
    found.unwrap().pop().expect("the film")
}

/// Four films, each with a review through the library (an Int64 key) and one by another
/// program naming the film in one of the four number types: every film's count, sum and
/// subset hold both, `verify` and `verify_subsets` find nothing (children grouped by their
/// key's value, subsets compared by value), and a review of pymongo's saved through the
/// library (its key rewritten as an Int64) stays one review of the same film: counted once in
/// the sum of doubles, in the subset once.
async fn children_name_their_parent_in_any_number_type(store: AnyStore) {
    for f in 0..4_i64 {
        let raw_key = forms(f)[f as usize].clone();
        Film {
            id: f,
            reviews: 0,
            score_sum: 0.0,
            recent: Vec::new(),
        }
        .insert(&store)
        .await
        .unwrap();
        Review {
            id: 10 * f,
            film_id: f,
            score: 0.5,
            date: 1,
        }
        .insert(&store)
        .await
        .unwrap();
        let raw = doc! {"_id": 10 * f + 1, "film_id": raw_key, "score": 0.25, "date": 2_i64};
        raw_insert(&store, "reviews", raw).await;
        Review::recompute(&store, &f).await.unwrap();
        Review::resubset(&store, &f).await.unwrap();
        // Read as stored: the subset holds the other program's review as it wrote it.
        let got = raw_film(&store, f).await;
        let recent = got.get_array("recent").unwrap().len();
        let count = pattern_tests::as_int(got.get("reviews").unwrap());
        assert_eq!(
            (count, got.get_f64("score_sum").unwrap(), recent),
            (Some(2), 0.75, 2),
            "film {f}"
        );
    }
    assert_eq!(Review::verify(&store).await.unwrap(), vec![]);
    assert_eq!(
        Review::verify_subsets(&store).await.unwrap(),
        Vec::<String>::new()
    );

    // Another program rewrites a date as the same value in another type: in line still.
    raw_set(
        &store,
        "reviews",
        Filter::eq("_id", 1_i64),
        "date",
        Bson::Int32(2),
    )
    .await;
    assert_eq!(
        Review::verify_subsets(&store).await.unwrap(),
        Vec::<String>::new()
    );

    // Film 0's review by pymongo (an Int32 key), read and saved through the library.
    let r = Review::get(&store, &1).await.unwrap().unwrap();
    r.save(&store).await.unwrap();
    let got = film(&store, 0).await;
    assert_eq!((got.reviews, got.score_sum), (2, 0.75), "{got:?}");
    let ids: Vec<i64> = got.recent.iter().map(|r| r.id).collect();
    assert_eq!(ids, [1, 0], "the subset holds each review once");
    assert_eq!(Review::verify(&store).await.unwrap(), vec![]);
    assert_eq!(
        Review::verify_subsets(&store).await.unwrap(),
        Vec::<String>::new()
    );
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "directors", referenced_by(Movie = director))]
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
#[document(collection = "movies")]
struct Movie {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    director: DirectorRef,
}

/// Directors written by another program with their `_id` in each number type, the movies'
/// copies (Int64 `_id`s) written through the library: `verify_copies` finds each source (none
/// `source_missing`), a rename by the other program is a stale copy `repair_copies` brings in
/// line, and afterwards nothing is stale.
async fn copies_find_a_source_whose_id_is_another_number_type(store: AnyStore) {
    for d in 1..=4_i64 {
        let id = forms(d)[d as usize - 1].clone();
        raw_insert(
            &store,
            "directors",
            doc! {"_id": id, "name": format!("d{d}")},
        )
        .await;
        let copy = DirectorRef {
            id: d,
            name: String::new(),
        };
        Movie {
            id: d,
            director: copy,
        }
        .insert(&store)
        .await
        .unwrap();
        let m = Movie::get(&store, &d).await.unwrap().unwrap();
        assert_eq!(m.director.name, format!("d{d}"), "filled from its source");
    }
    assert_eq!(Movie::verify_copies(&store).await.unwrap(), vec![]);
    for d in 1..=4_i64 {
        let renamed = Bson::String("renamed".into());
        raw_set(&store, "directors", Filter::eq("_id", d), "name", renamed).await;
    }
    let stale = Movie::verify_copies(&store).await.unwrap();
    assert_eq!(stale.len(), 4, "{stale:?}");
    assert!(
        stale
            .iter()
            .all(|s| !s.source_missing && s.differs == ["name"]),
        "{stale:?}"
    );
    let repaired = Movie::repair_copies(&store, &Options::default())
        .await
        .unwrap();
    assert_eq!(
        (repaired.copies, repaired.orphans.len()),
        (4, 0),
        "{repaired:?}"
    );
    assert_eq!(Movie::verify_copies(&store).await.unwrap(), vec![]);
    for d in 1..=4 {
        let m = Movie::get(&store, &d).await.unwrap().unwrap();
        assert_eq!(m.director.name, "renamed");
    }
}

/// A counter of a document whose `_id` type is the caller's (`Bson`): increments named by an
/// Int32, an Int64, a Double and a Decimal128 5 count for one document, so the third of
/// `every = 3` writes, and `pending` sees them whichever form it is asked with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "pages")]
struct Page {
    #[serde(rename = "_id")]
    id: Bson,
    #[document(approximate(every = 3))]
    views: i64,
}

async fn approximate_counters_key_a_document_by_value(store: AnyStore) {
    raw_insert(&store, "pages", doc! {"_id": 5_i32, "views": 0_i64}).await;
    let [a, b, c, d] = forms(5);
    assert!(!Page::increment_views(&store, &a).await.unwrap());
    assert!(!Page::increment_views(&store, &b).await.unwrap());
    let pending = pattern_core::document::pending::<Page, _, _>(&store, "views", &c).unwrap();
    assert_eq!(pending, 2);
    assert!(
        Page::increment_views(&store, &d).await.unwrap(),
        "the third increment of one document writes"
    );
    let by_id = Filter::eq("_id", 5_i64);
    let stored = store
        .find("pages", &by_id, &Default::default())
        .await
        .unwrap();
    assert_eq!(
        pattern_tests::as_int(stored[0].get("views").unwrap()),
        Some(3)
    );
}

on_both_stores!(
    children_name_their_parent_in_any_number_type,
    copies_find_a_source_whose_id_is_another_number_type,
    approximate_counters_key_a_document_by_value,
);
