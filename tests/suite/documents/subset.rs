//! The subset pattern (`#[document(subset(...))]`) on both stores: a film embeds its 3 newest
//! reviews, all of them in `reviews`; every review write rewrites the subset in its
//! transaction (with the count of a computed parent beside it); a seeded random sequence
//! against a model; 16 concurrent writers; `verify_subsets` and `resubset` after another tool.

use super::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    reviews: i64,
    recent: Vec<Review>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "reviews",
    subset(parent = Film, key = film_id, into = recent, keep = 3, order = date),
    computed(parent = Film, key = film_id, count = reviews)
)]
struct Review {
    #[serde(rename = "_id")]
    id: i64,
    film_id: i64,
    date: i64,
}

fn review(id: i64, film_id: i64, date: i64) -> Review {
    Review { id, film_id, date }
}

async fn insert_films(store: &AnyStore, n: i64) {
    for id in 0..n {
        Film {
            id,
            reviews: 0,
            recent: Vec::new(),
        }
        .insert(store)
        .await
        .unwrap();
    }
}

/// The model's subset of film `f`: its 3 newest reviews (date, then `_id`, descending).
fn newest(model: &[Review], f: i64) -> Vec<Review> {
    let mut of: Vec<Review> = model.iter().filter(|r| r.film_id == f).cloned().collect();
    of.sort_by_key(|r| std::cmp::Reverse((r.date, r.id)));
    of.truncate(3);
    of
}

async fn film(store: &AnyStore, f: i64) -> Film {
    Film::get(store, &f).await.unwrap().unwrap()
}

async fn the_subset_follows_every_write(store: AnyStore) {
    insert_films(&store, 2).await;
    let mut model = Vec::new();
    for i in 0..6 {
        let r = review(i, 0, 100 + i);
        r.insert(&store).await.unwrap();
        model.push(r);
    }
    assert_eq!(film(&store, 0).await.recent, newest(&model, 0));
    assert_eq!(film(&store, 0).await.reviews, 6);
    // A review of the subset deleted: the next one is read back in.
    assert!(Review::delete(&store, &5).await.unwrap());
    model.retain(|r| r.id != 5);
    assert_eq!(film(&store, 0).await.recent, newest(&model, 0));
    // An old review made the newest enters it; a review moved to another film leaves it.
    let u = Update::new().set(Review::DATE, 999_i64);
    assert!(Review::update_one(&store, Review::ID.eq(0_i64), u)
        .await
        .unwrap());
    model[0].date = 999;
    assert_eq!(film(&store, 0).await.recent, newest(&model, 0));
    review(0, 1, 999).save(&store).await.unwrap();
    model[0].film_id = 1;
    assert_eq!(film(&store, 0).await.recent, newest(&model, 0));
    assert_eq!(film(&store, 1).await.recent, newest(&model, 1));
    let f1 = film(&store, 1).await;
    assert_eq!(f1.reviews, 1);
    // The subset as the child type, one read of the parent.
    assert_eq!(
        Review::subset(&store, &0_i64).await.unwrap().unwrap(),
        newest(&model, 0)
    );
    assert!(Review::verify_subsets(&store).await.unwrap().is_empty());
    // Another tool deletes a review of the subset: found, and rewritten.
    store
        .delete_many(
            "reviews",
            &pattern_core::store::query::Filter::eq("_id", 4_i64),
        )
        .await
        .unwrap();
    model.retain(|r| r.id != 4);
    assert_eq!(Review::verify_subsets(&store).await.unwrap(), ["0"]);
    Review::resubset(&store, &0_i64).await.unwrap();
    assert_eq!(film(&store, 0).await.recent, newest(&model, 0));
    assert!(Review::verify_subsets(&store).await.unwrap().is_empty());
    // A review of a film that does not exist: refused, nothing written.
    let r = review(50, 9, 1).insert(&store).await;
    assert!(matches!(r, Err(Error::NotFound { .. })), "{r:?}");
}

async fn subsets_match_a_model_of_random_writes(store: AnyStore) {
    let mut seed = 0x1234_5678_9abc_def1_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    insert_films(&store, 2).await;
    let mut model: Vec<Review> = Vec::new();
    for step in 0..pattern_tests::scale(120, 1_500) {
        let id = next(10) as i64;
        let (f, date) = (next(2) as i64, next(8) as i64);
        let exists = model.iter().any(|r| r.id == id);
        match next(4) {
            0 if !exists => {
                review(id, f, date).insert(&store).await.unwrap();
                model.push(review(id, f, date));
            }
            0 | 1 => {
                review(id, f, date).save(&store).await.unwrap();
                model.retain(|r| r.id != id);
                model.push(review(id, f, date));
            }
            2 => {
                let u = Update::new().set(Review::DATE, date);
                let applied = Review::update_one(&store, Review::ID.eq(id), u)
                    .await
                    .unwrap();
                assert_eq!(applied, exists);
                if let Some(r) = model.iter_mut().find(|r| r.id == id) {
                    r.date = date;
                }
            }
            _ => {
                assert_eq!(Review::delete(&store, &id).await.unwrap(), exists);
                model.retain(|r| r.id != id);
            }
        }
        for f in 0..2 {
            let have = film(&store, f).await;
            assert_eq!(have.recent, newest(&model, f), "step {step}, film {f}");
            let n = model.iter().filter(|r| r.film_id == f).count() as i64;
            assert_eq!(have.reviews, n, "step {step}, film {f}");
        }
    }
}

async fn sixteen_writers_keep_the_subsets(store: AnyStore) {
    insert_films(&store, 2).await;
    let per = pattern_tests::scale(5, 40) as i64;
    futures::future::join_all((0..16_i64).map(|t| {
        let store = &store;
        async move {
            for i in 0..per {
                let id = t * 1_000 + i;
                review(id, (t + i) % 2, (t * 13 + i * 7) % 50)
                    .insert(store)
                    .await
                    .unwrap();
                if i % 3 == 2 {
                    Review::delete(store, &(id - 2)).await.unwrap();
                }
            }
        }
    }))
    .await;
    let all = Review::find(Filter::everything())
        .all(&store)
        .await
        .unwrap();
    for f in 0..2 {
        assert_eq!(film(&store, f).await.recent, newest(&all, f), "film {f}");
    }
    assert!(Review::verify_subsets(&store).await.unwrap().is_empty());
}

/// A film deleted under its reviews: the orphans can still be updated (no parent to adjust),
/// saved, moved to a film that exists (which counts them and takes them into its subset) and
/// deleted; a review is never attached to a film that does not exist (`NotFound`, nothing
/// written).
async fn orphans_can_be_written(store: AnyStore) {
    insert_films(&store, 2).await;
    for (id, f) in [(10, 0), (11, 0), (12, 0), (20, 1)] {
        review(id, f, 100 + id).insert(&store).await.unwrap();
    }
    assert!(Film::delete(&store, &0).await.unwrap());
    let later = Update::new().set(Review::DATE, 500_i64);
    assert!(Review::update_one(&store, Review::ID.eq(10_i64), later)
        .await
        .unwrap());
    review(11, 0, 300).save(&store).await.unwrap();
    assert!(Review::delete(&store, &12).await.unwrap());
    // Moved to film 1: counted there, in its subset.
    let moved = Update::new().set(Review::FILM_ID, 1_i64);
    assert!(Review::update_one(&store, Review::ID.eq(10_i64), moved)
        .await
        .unwrap());
    let one = film(&store, 1).await;
    assert_eq!(one.reviews, 2);
    assert_eq!(one.recent, [review(10, 1, 500), review(20, 1, 120)]);
    // Never attached to a missing film: an insert, a save and a move are refused.
    for refused in [
        review(13, 0, 1).insert(&store).await,
        review(20, 7, 1).save(&store).await,
        Review::update_one(
            &store,
            Review::ID.eq(10_i64),
            Update::new().set(Review::FILM_ID, 9_i64),
        )
        .await
        .map(|_| ()),
    ] {
        assert!(
            matches!(refused, Err(Error::NotFound { .. })),
            "{refused:?}"
        );
    }
    assert_eq!(Review::get(&store, &13).await.unwrap(), None);
    assert_eq!(film(&store, 1).await, one);
    assert!(Review::delete(&store, &11).await.unwrap());
    assert!(Review::verify(&store).await.unwrap().is_empty());
    assert!(Review::verify_subsets(&store).await.unwrap().is_empty());
}

on_both_stores!(
    the_subset_follows_every_write,
    subsets_match_a_model_of_random_writes,
    sixteen_writers_keep_the_subsets,
    orphans_can_be_written,
);
