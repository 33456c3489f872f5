//! The computed pattern (`#[document(computed(...))]`) on both stores: a film keeps the count,
//! sum, minimum, maximum and average of its reviews' ratings, adjusted by every write of a
//! review in the same transaction; the extreme recomputed when it is deleted; a review moved to
//! another film; 16 concurrent writers; a seeded random sequence against a model; `verify` and
//! `recompute` after a write by another tool.

use super::*;
use pattern_core::store;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    reviews: i64,
    rating_sum: i64,
    rating_min: Option<i64>,
    rating_max: Option<i64>,
    rating_avg: Option<f64>,
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
    )
)]
struct Review {
    #[serde(rename = "_id")]
    id: i64,
    film_id: i64,
    rating: i64,
}

fn film(id: i64) -> Film {
    Film {
        id,
        title: format!("film {id}"),
        reviews: 0,
        rating_sum: 0,
        rating_min: None,
        rating_max: None,
        rating_avg: None,
    }
}

fn review(id: i64, film_id: i64, rating: i64) -> Review {
    Review {
        id,
        film_id,
        rating,
    }
}

/// What a film must hold for these ratings.
fn expect(id: i64, ratings: &[i64]) -> Film {
    let n = ratings.len() as i64;
    Film {
        id,
        title: format!("film {id}"),
        reviews: n,
        rating_sum: ratings.iter().sum(),
        rating_min: ratings.iter().min().copied(),
        rating_max: ratings.iter().max().copied(),
        rating_avg: (n > 0).then(|| ratings.iter().sum::<i64>() as f64 / n as f64),
    }
}

async fn got(store: &AnyStore, id: i64) -> Film {
    Film::get(store, &id).await.unwrap().unwrap()
}

async fn every_write_adjusts_the_parent(store: AnyStore) {
    film(1).insert(&store).await.unwrap();
    film(2).insert(&store).await.unwrap();
    review(10, 1, 4).insert(&store).await.unwrap();
    review(11, 1, 2).insert(&store).await.unwrap();
    review(12, 1, 5).insert(&store).await.unwrap();
    assert_eq!(got(&store, 1).await, expect(1, &[4, 2, 5]));
    // Deleting the current maximum, then the minimum: recomputed from the others.
    assert!(Review::delete(&store, &12).await.unwrap());
    assert_eq!(got(&store, 1).await, expect(1, &[4, 2]));
    assert!(Review::delete(&store, &11).await.unwrap());
    assert_eq!(got(&store, 1).await, expect(1, &[4]));
    // An update of the rating, then a move to another film.
    let set = Update::new().set(Review::RATING, 1_i64);
    assert!(Review::update_one(&store, Review::ID.eq(10_i64), set)
        .await
        .unwrap());
    assert_eq!(got(&store, 1).await, expect(1, &[1]));
    let moved = Update::new().set(Review::FILM_ID, 2_i64);
    assert!(Review::update_one(&store, Review::ID.eq(10_i64), moved)
        .await
        .unwrap());
    assert_eq!(got(&store, 1).await, expect(1, &[]));
    assert_eq!(got(&store, 2).await, expect(2, &[1]));
    // A save over it, and one of a new review.
    review(10, 2, 3).save(&store).await.unwrap();
    review(13, 2, 5).save(&store).await.unwrap();
    assert_eq!(got(&store, 2).await, expect(2, &[3, 5]));
    // A review of a film that does not exist: refused, nothing written.
    let r = review(14, 9, 5).insert(&store).await;
    assert!(matches!(r, Err(Error::NotFound { .. })), "{r:?}");
    assert!(Review::get(&store, &14).await.unwrap().is_none());
    assert!(Review::verify(&store).await.unwrap().is_empty());
}

async fn verify_and_recompute_after_another_tool(store: AnyStore) {
    film(1).insert(&store).await.unwrap();
    for (i, r) in [3, 4, 5].into_iter().enumerate() {
        review(i as i64, 1, r).insert(&store).await.unwrap();
    }
    // Another tool deletes a review behind the library's back.
    store
        .delete_many(
            "reviews",
            &pattern_core::store::query::Filter::eq("_id", 2_i64),
        )
        .await
        .unwrap();
    let drift = Review::verify(&store).await.unwrap();
    let fields: Vec<&str> = drift.iter().map(|d| d.field.as_str()).collect();
    assert_eq!(
        fields,
        ["reviews", "rating_sum", "rating_max", "rating_avg"]
    );
    Review::recompute(&store, &1_i64).await.unwrap();
    assert_eq!(got(&store, 1).await, expect(1, &[3, 4]));
    assert!(Review::verify(&store).await.unwrap().is_empty());
}

/// An insert updates the parent from its own values in one command when they are what the
/// library writes; when another tool left something else (a count as an Int32 or a string, a
/// sum as a Decimal128, an extreme as a string, a negative count, a sum at the edge of Int64),
/// the insert reads the parent and computes as every other write does: the same values as
/// before the one-command form, on both stores.
async fn an_insert_over_foreign_values_reads_the_parent(store: AnyStore) {
    use pattern_core::store::query::{Filter, FindOptions};
    let raw = |id: i64, fields: bson::Document| {
        let mut d = bson::doc! {"_id": id, "title": "t"};
        d.extend(fields);
        d
    };
    let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
    let cases = [
        // (the parent as another tool left it, the rating inserted, the parent after)
        (
            bson::doc! {"reviews": 2, "rating_sum": 7_i64, "rating_min": 3_i64, "rating_max": 4_i64},
            5,
            bson::doc! {"reviews": 3_i64, "rating_sum": 12_i64, "rating_min": 3_i64, "rating_max": 5_i64, "rating_avg": 4.0},
        ),
        (
            bson::doc! {"reviews": "two", "rating_sum": dec("7"), "rating_min": "low", "rating_max": Bson::Null},
            5,
            bson::doc! {"reviews": 1_i64, "rating_sum": 5_i64, "rating_min": 5_i64, "rating_max": 5_i64, "rating_avg": 5.0},
        ),
        (
            bson::doc! {"reviews": -1_i64, "rating_sum": 0_i64},
            5,
            bson::doc! {"reviews": 0_i64, "rating_sum": 5_i64, "rating_min": 5_i64, "rating_max": 5_i64, "rating_avg": Bson::Null},
        ),
        (
            bson::doc! {"reviews": 1_i64, "rating_sum": 2.5, "rating_min": 2.5, "rating_max": 2.5},
            2,
            bson::doc! {"reviews": 2_i64, "rating_sum": 4.5, "rating_min": 2_i64, "rating_max": 2.5, "rating_avg": 2.25},
        ),
    ];
    for (i, (stored, rating, want)) in cases.into_iter().enumerate() {
        let id = 100 + i as i64;
        store
            .insert_one("films", raw(id, stored.clone()))
            .await
            .unwrap();
        review(1000 + id, id, rating).insert(&store).await.unwrap();
        let found = store
            .find("films", &Filter::eq("_id", id), &FindOptions::default())
            .await
            .unwrap();
        for (k, v) in &want {
            assert_eq!(
                found[0].get(k),
                Some(v),
                "case {i}, `{k}`: {stored} -> {}",
                found[0]
            );
        }
    }
    // A sum that the rating would take past Int64: refused as every write refuses it, nothing
    // written.
    let edge = raw(
        200,
        bson::doc! {"reviews": 1_i64, "rating_sum": i64::MAX - 1},
    );
    store.insert_one("films", edge.clone()).await.unwrap();
    let r = review(2000, 200, 5).insert(&store).await;
    assert!(r.is_err(), "{r:?}");
    assert!(Review::get(&store, &2000).await.unwrap().is_none());
    let found = store
        .find(
            "films",
            &Filter::eq("_id", 200_i64),
            &FindOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(found[0], edge);
}

/// 16 tasks insert, re-rate and delete reviews of 3 films at once: every film's aggregates are
/// its reviews' after.
async fn sixteen_writers_keep_the_aggregates_exact(store: AnyStore) {
    for id in 0..3 {
        film(id).insert(&store).await.unwrap();
    }
    let per = pattern_tests::scale(6, 40) as i64;
    futures::future::join_all((0..16_i64).map(|t| {
        let store = &store;
        async move {
            for i in 0..per {
                let id = t * 1_000 + i;
                review(id, (t + i) % 3, (t * 7 + i) % 5 + 1)
                    .insert(store)
                    .await
                    .unwrap();
                if i % 3 == 1 {
                    let u = Update::new().set(Review::RATING, (i % 5) + 1);
                    Review::update_one(store, Review::ID.eq(id), u)
                        .await
                        .unwrap();
                }
                if i % 4 == 2 {
                    Review::delete(store, &(id - 1)).await.unwrap();
                }
            }
        }
    }))
    .await;
    let all = Review::find(Filter::everything())
        .all(&store)
        .await
        .unwrap();
    for f in 0..3 {
        let ratings: Vec<i64> = all
            .iter()
            .filter(|r| r.film_id == f)
            .map(|r| r.rating)
            .collect();
        let mut want = expect(f, &ratings);
        let have = got(&store, f).await;
        // Averages: the sums agree exactly; the mean within a rounding.
        let (a, b) = (have.rating_avg, want.rating_avg.take());
        assert!(
            a.zip(b).is_none_or(|(a, b)| (a - b).abs() < 1e-9),
            "{a:?} {b:?}"
        );
        let have = Film {
            rating_avg: None,
            ..have
        };
        assert_eq!(have, want, "film {f}");
    }
    assert!(Review::verify(&store).await.unwrap().is_empty());
}

/// A seeded random sequence of review writes against a model, every film compared after each.
async fn aggregates_match_a_model_of_random_writes(store: AnyStore) {
    use std::collections::BTreeMap;
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for id in 0..3 {
        film(id).insert(&store).await.unwrap();
    }
    let mut model: BTreeMap<i64, (i64, i64)> = BTreeMap::new(); // review -> (film, rating)
    for step in 0..pattern_tests::scale(120, 1_500) {
        let id = next(12) as i64;
        let (f, r) = (next(3) as i64, next(10) as i64 - 3);
        match next(4) {
            0 => {
                let done = review(id, f, r).insert(&store).await;
                match model.entry(id) {
                    std::collections::btree_map::Entry::Occupied(_) => {
                        assert!(matches!(
                            done,
                            Err(Error::Store(store::Error::DuplicateKey { .. }))
                        ));
                    }
                    std::collections::btree_map::Entry::Vacant(v) => {
                        done.unwrap();
                        v.insert((f, r));
                    }
                }
            }
            1 => {
                review(id, f, r).save(&store).await.unwrap();
                model.insert(id, (f, r));
            }
            2 => {
                let u = Update::new().set(Review::RATING, r).set(Review::FILM_ID, f);
                let applied = Review::update_one(&store, Review::ID.eq(id), u)
                    .await
                    .unwrap();
                assert_eq!(applied, model.contains_key(&id));
                if applied {
                    model.insert(id, (f, r));
                }
            }
            _ => {
                let deleted = Review::delete(&store, &id).await.unwrap();
                assert_eq!(deleted, model.remove(&id).is_some());
            }
        }
        for f in 0..3 {
            let ratings: Vec<i64> = model
                .values()
                .filter(|(g, _)| *g == f)
                .map(|(_, r)| *r)
                .collect();
            assert_eq!(
                got(&store, f).await,
                expect(f, &ratings),
                "step {step}, film {f}"
            );
        }
    }
}

/// A player keeps the count, sum and average of its games' `f64` scores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "players")]
struct Player {
    #[serde(rename = "_id")]
    id: i64,
    games: i64,
    score_sum: f64,
    score_avg: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "games",
    computed(
        parent = Player,
        key = player_id,
        count = games,
        sum(score = score_sum),
        avg(score = score_avg)
    )
)]
struct Game {
    #[serde(rename = "_id")]
    id: i64,
    player_id: i64,
    score: f64,
    note: String,
}

fn game(id: i64, player_id: i64, score: f64) -> Game {
    Game {
        id,
        player_id,
        score,
        note: String::new(),
    }
}

async fn player(store: &AnyStore, id: i64) -> Player {
    Player::get(store, &id).await.unwrap().unwrap()
}

/// Sums of doubles through library writes only: 0 again, exactly, once the children are gone
/// (0.1 + 0.2 - 0.1 - 0.2 is not 0 in floating point), the cancelled large value's partner
/// kept (1e20 + 1 - 1e20), an update of another field leaves the sum as it was, and `verify`
/// finds nothing at any point.
async fn sums_of_doubles_stay_exact(store: AnyStore) {
    let zero = Player {
        id: 1,
        games: 0,
        score_sum: 0.0,
        score_avg: None,
    };
    zero.insert(&store).await.unwrap();
    game(1, 1, 0.1).insert(&store).await.unwrap();
    game(2, 1, 0.2).insert(&store).await.unwrap();
    assert!(Game::verify(&store).await.unwrap().is_empty());
    assert!(Game::delete(&store, &1).await.unwrap());
    assert!(Game::delete(&store, &2).await.unwrap());
    assert_eq!(player(&store, 1).await, zero);
    assert!(Game::verify(&store).await.unwrap().is_empty());
    // Catastrophic cancellation: the 1 survives the large value's removal.
    game(3, 1, 1e20).insert(&store).await.unwrap();
    game(4, 1, 1.0).insert(&store).await.unwrap();
    assert!(Game::delete(&store, &3).await.unwrap());
    assert_eq!(player(&store, 1).await.score_sum, 1.0);
    assert!(Game::verify(&store).await.unwrap().is_empty());
    // An update that does not touch the score, a move, a change of the score.
    game(5, 1, 0.1).insert(&store).await.unwrap();
    game(6, 1, 0.2).insert(&store).await.unwrap();
    let sum = player(&store, 1).await.score_sum;
    let note = Update::new().set(Game::NOTE, "replayed");
    assert!(Game::update_one(&store, Game::ID.eq(5_i64), note)
        .await
        .unwrap());
    assert_eq!(player(&store, 1).await.score_sum, sum);
    Player {
        id: 2,
        ..zero.clone()
    }
    .insert(&store)
    .await
    .unwrap();
    let moved = Update::new().set(Game::PLAYER_ID, 2_i64);
    assert!(Game::update_one(&store, Game::ID.eq(6_i64), moved)
        .await
        .unwrap());
    let rescored = Update::new().set(Game::SCORE, 0.7);
    assert!(Game::update_one(&store, Game::ID.eq(5_i64), rescored)
        .await
        .unwrap());
    assert!(Game::verify(&store).await.unwrap().is_empty());
    for id in [4, 5, 6] {
        assert!(Game::delete(&store, &id).await.unwrap());
    }
    assert_eq!(player(&store, 1).await, zero);
    assert_eq!(player(&store, 2).await, Player { id: 2, ..zero });
    assert!(Game::verify(&store).await.unwrap().is_empty());
}

/// A seeded random sequence of `f64` scores written, moved and deleted: `verify` finds nothing
/// after any step, and the sums are 0 once every game is deleted.
async fn sums_of_doubles_match_a_random_sequence(store: AnyStore) {
    let mut next = pattern_tests::rng(0x51f1_5eed_0ddb_a11d);
    for id in 0..2 {
        Player {
            id,
            games: 0,
            score_sum: 0.0,
            score_avg: None,
        }
        .insert(&store)
        .await
        .unwrap();
    }
    let mut live = std::collections::BTreeSet::new();
    for step in 0..pattern_tests::scale(40, 400) {
        let id = next(8) as i64;
        let score = next(1_000) as f64 / 10.0 + 0.01 * next(7) as f64;
        let p = next(2) as i64;
        match next(3) {
            0 => {
                game(id, p, score).save(&store).await.unwrap();
                live.insert(id);
            }
            1 => {
                let u = Update::new()
                    .set(Game::SCORE, score)
                    .set(Game::PLAYER_ID, p);
                let done = Game::update_one(&store, Game::ID.eq(id), u).await.unwrap();
                assert_eq!(done, live.contains(&id));
            }
            _ => {
                assert_eq!(Game::delete(&store, &id).await.unwrap(), live.remove(&id));
            }
        }
        let drift = Game::verify(&store).await.unwrap();
        assert!(drift.is_empty(), "step {step}: {drift:?}");
    }
    for id in std::mem::take(&mut live) {
        Game::delete(&store, &id).await.unwrap();
    }
    for id in 0..2 {
        let p = player(&store, id).await;
        assert_eq!((p.games, p.score_sum, p.score_avg), (0, 0.0, None), "{p:?}");
    }
}

on_both_stores!(
    every_write_adjusts_the_parent,
    verify_and_recompute_after_another_tool,
    an_insert_over_foreign_values_reads_the_parent,
    sixteen_writers_keep_the_aggregates_exact,
    aggregates_match_a_model_of_random_writes,
    sums_of_doubles_stay_exact,
    sums_of_doubles_match_a_random_sequence,
);
