//! One oracle over every pattern that keeps related documents consistent, on both stores: a
//! seeded random sequence of writes to directors (the source of an extended reference, with a
//! fan-out of 2 so that propagations run in batches), films (holding a copy of their director,
//! the aggregates and the subset of their reviews, an approximate view counter) and reviews
//! (children), against a plain model; after every step every film is compared whole with what
//! the model says it holds: the director's copy, the count, sum, minimum, maximum and average of
//! its reviews' ratings, its 3 newest reviews, its views as written so far (the approximate
//! counter writes every 4th increment). `verify`, `verify_subsets` and `verify_copies` find
//! nothing at the end; after a flush the views are exact.

use std::collections::BTreeMap;

use pattern_core::Reference;

use super::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "directors", referenced_by(Film = director), fan_out = 2)]
struct Director {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    born: i32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Director)]
struct DirectorRef {
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
    reviews: i64,
    rating_sum: i64,
    rating_min: Option<i64>,
    rating_max: Option<i64>,
    rating_avg: Option<f64>,
    recent: Vec<Review>,
    #[document(approximate(every = 4))]
    views: i64,
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

/// The plain model: directors (name, born), films (title, director, views counted), reviews.
#[derive(Default)]
struct Model {
    directors: BTreeMap<i64, (String, i32)>,
    films: BTreeMap<i64, (String, i64, i64)>,
    reviews: BTreeMap<i64, Review>,
}

impl Model {
    /// The film `f` as the model says it is stored.
    fn film(&self, f: i64) -> Film {
        let (title, d, views) = self.films[&f].clone();
        let mut of: Vec<Review> = (self.reviews.values())
            .filter(|r| r.film_id == f)
            .cloned()
            .collect();
        let ratings: Vec<i64> = of.iter().map(|r| r.rating).collect();
        let n = ratings.len() as i64;
        of.sort_by_key(|r| std::cmp::Reverse((r.date, r.id)));
        of.truncate(3);
        Film {
            id: f,
            title,
            director: DirectorRef {
                id: d,
                name: self.directors[&d].0.clone(),
            },
            reviews: n,
            rating_sum: ratings.iter().sum(),
            rating_min: ratings.iter().min().copied(),
            rating_max: ratings.iter().max().copied(),
            rating_avg: (n > 0).then(|| ratings.iter().sum::<i64>() as f64 / n as f64),
            recent: of,
            // What the approximate counter has written: every 4th increment writes 4.
            views: views - views % 4,
        }
    }

    fn referenced(&self, d: i64) -> bool {
        self.films.values().any(|(_, fd, _)| *fd == d)
    }
}

async fn compare(store: &AnyStore, model: &Model, step: u32) {
    let stored = Film::find(Film::ID.gte(i64::MIN)).all(store).await.unwrap();
    assert_eq!(stored.len(), model.films.len(), "step {step}");
    for have in stored {
        let want = model.film(have.id);
        let close = match (have.rating_avg, want.rating_avg) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-9,
            (a, b) => a == b,
        };
        assert!(close, "step {step}, film {}: {have:?} {want:?}", have.id);
        let have = Film {
            rating_avg: want.rating_avg,
            ..have
        };
        assert_eq!(have, want, "step {step}, film {}", want.id);
    }
}

async fn every_related_document_matches_a_model(store: AnyStore) {
    let mut next = pattern_tests::rng(0x2545_f491_4f6c_dd1d_u64);
    let mut m = Model::default();
    for d in 0..2 {
        Director {
            id: d,
            name: format!("director {d}"),
            born: 1900,
        }
        .insert(&store)
        .await
        .unwrap();
        m.directors.insert(d, (format!("director {d}"), 1900));
    }
    let stale = |d: i64| DirectorRef {
        id: d,
        name: "stale".to_owned(),
    };
    let pick = |keys: Vec<i64>, r: u64| keys.get(r as usize % keys.len().max(1)).copied();
    for step in 0..pattern_tests::scale(150, 2_000) {
        let dirs: Vec<i64> = m.directors.keys().copied().collect();
        let films: Vec<i64> = m.films.keys().copied().collect();
        let reviews: Vec<i64> = m.reviews.keys().copied().collect();
        let r = next(1_000);
        match next(10) {
            // A director created.
            0 => {
                let d = dirs.last().map_or(0, |d| d + 1);
                let name = format!("director {d}");
                Director {
                    id: d,
                    name: name.clone(),
                    born: 1950,
                }
                .insert(&store)
                .await
                .unwrap();
                m.directors.insert(d, (name, 1950));
            }
            // A director renamed (typed update) or saved whole (a new birth year, or both).
            1 => {
                let d = pick(dirs, r).unwrap();
                let name = format!("director {d} v{step}");
                if r.is_multiple_of(2) {
                    Director::update_one(
                        &store,
                        Director::ID.eq(d),
                        Update::new().set(Director::NAME, name.clone()),
                    )
                    .await
                    .unwrap();
                    m.directors.get_mut(&d).unwrap().0 = name;
                } else {
                    let born = 1900 + (r % 90) as i32;
                    let name = if r.is_multiple_of(3) {
                        name
                    } else {
                        m.directors[&d].0.clone()
                    };
                    Director {
                        id: d,
                        name: name.clone(),
                        born,
                    }
                    .save(&store)
                    .await
                    .unwrap();
                    m.directors.insert(d, (name, born));
                }
            }
            // A director deleted: refused while a film holds a copy of it.
            2 => {
                let d = pick(dirs, r).unwrap();
                match Director::delete(&store, &d).await {
                    Ok(true) => {
                        assert!(!m.referenced(d), "step {step}");
                        m.directors.remove(&d);
                    }
                    Err(Error::StillReferenced { .. }) => assert!(m.referenced(d), "step {step}"),
                    other => panic!("step {step}: {other:?}"),
                }
            }
            // A film created, its copy filled from the source; or repointed.
            3 => {
                let d = pick(dirs, r).unwrap();
                match pick(films.clone(), r / 7).filter(|_| r.is_multiple_of(3)) {
                    Some(f) => {
                        Film::update_one(
                            &store,
                            Film::ID.eq(f),
                            Update::new().set(Film::DIRECTOR, stale(d)),
                        )
                        .await
                        .unwrap();
                        m.films.get_mut(&f).unwrap().1 = d;
                    }
                    None => {
                        let f = films.last().map_or(0, |f| f + 1);
                        let film = Film {
                            id: f,
                            title: format!("film {f}"),
                            director: stale(d),
                            reviews: 0,
                            rating_sum: 0,
                            rating_min: None,
                            rating_max: None,
                            rating_avg: None,
                            recent: Vec::new(),
                            views: 0,
                        };
                        film.insert(&store).await.unwrap();
                        m.films.insert(f, (format!("film {f}"), d, 0));
                    }
                }
            }
            // A review added.
            4 | 5 => {
                let Some(f) = pick(films, r) else { continue };
                let id = reviews.last().map_or(0, |i| i + 1);
                let review = Review {
                    id,
                    film_id: f,
                    rating: (r % 5) as i64 + 1,
                    date: (r / 5 % 20) as i64,
                };
                review.insert(&store).await.unwrap();
                m.reviews.insert(id, review);
            }
            // A review changed: its rating, its date, or moved to another film.
            6 => {
                let Some(id) = pick(reviews, r) else { continue };
                let mut review = m.reviews[&id].clone();
                let update = match r % 3 {
                    0 => {
                        review.rating = (r / 3 % 5) as i64 + 1;
                        Update::new().set(Review::RATING, review.rating)
                    }
                    1 => {
                        review.date = (r / 3 % 20) as i64;
                        Update::new().set(Review::DATE, review.date)
                    }
                    _ => {
                        review.film_id = pick(films, r / 3).unwrap();
                        Update::new().set(Review::FILM_ID, review.film_id)
                    }
                };
                assert!(Review::update_one(&store, Review::ID.eq(id), update)
                    .await
                    .unwrap());
                m.reviews.insert(id, review);
            }
            // A review deleted.
            7 => {
                let Some(id) = pick(reviews, r) else { continue };
                assert!(Review::delete(&store, &id).await.unwrap());
                m.reviews.remove(&id);
            }
            // A view counted.
            _ => {
                let Some(f) = pick(films, r) else { continue };
                Film::increment_views(&store, &f).await.unwrap();
                m.films.get_mut(&f).unwrap().2 += 1;
            }
        }
        compare(&store, &m, step).await;
    }
    assert!(Review::verify(&store).await.unwrap().is_empty());
    assert!(Review::verify_subsets(&store).await.unwrap().is_empty());
    assert!(Film::verify_copies(&store).await.unwrap().is_empty());
    assert!(Director::pending_propagations(&store)
        .await
        .unwrap()
        .is_empty());
    Film::flush(&store).await.unwrap();
    for (f, (_, _, views)) in &m.films {
        assert_eq!(Film::get(&store, f).await.unwrap().unwrap().views, *views);
    }
}

on_both_stores!(every_related_document_matches_a_model);
