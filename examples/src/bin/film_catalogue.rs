//! A film catalogue: four patterns on one `films` collection, its reviews in `reviews`, its
//! directors in `directors`.
//!
//! - computed: each film keeps its reviews' count, rating sum, average and maximum, adjusted by
//!   every write of a review in the same transaction;
//! - subset: each film embeds its 10 newest reviews (`recent`), every review stays in `reviews`;
//! - approximation: each film's `views`, counted in the process and written once every 100;
//! - extended reference: each film holds a copy of its director's `name` and `photo`
//!   (`DirectorRef`), filled from `directors` by the film's writes and kept exact by every write
//!   of the director (`referenced_by(Film = director)`), so a film page needs no `$lookup`.
//!
//! Step by step: 3 directors, 4 films (one copy built with `copy_of`, the others naming the
//! director's `_id` alone, filled by the insert) and 25 reviews, each film's aggregates and
//! subset; the newest review of film 1 deleted (the 11th comes back in) and a rating of film 2
//! changed; 16 concurrent tasks recording views (stored a multiple of 100 before `flush`, exact
//! after); a review deleted by another tool behind the library's back, found by `verify` and
//! `verify_subsets`, repaired by `recompute` and `resubset`; a director's photo changed and
//! another renamed, every film's copy following, `verify_copies` empty, and a director's delete
//! refused while films hold copies of it.
//!
//! In memory by default; on MongoDB (database `pattern_film_catalogue`) when `MONGODB_URI` is
//! set:
//!
//!     cargo run -p examples --bin film_catalogue

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bson::DateTime;
use pattern_core::document::{copy_of, Update};
use pattern_core::store::query::Filter as StoreFilter;
use pattern_core::store::AnyStore;
use pattern_core::store::Store;
use pattern_core::{Document, Error, Reference};
use serde::{Deserialize, Serialize};

/// A director: the source of the copies films hold. Every write of a copied field (`name`,
/// `photo`) brings every film's copy in line in the same transaction; `born` is not copied.
#[derive(Document, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[document(collection = "directors", referenced_by(Film = director))]
struct Director {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    photo: String,
    born: i32,
}

/// The copy of a director a film holds: its `_id`, name and photo.
#[derive(Reference, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[reference(source = Director)]
struct DirectorRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    photo: String,
}

#[derive(Document, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[document(reference)]
    director: DirectorRef,
    review_count: i64,
    rating_sum: i64,
    rating_avg: Option<f64>,
    rating_max: Option<i64>,
    /// The 10 newest reviews.
    recent: Vec<Review>,
    #[document(approximate(every = 100))]
    views: i64,
}

#[derive(Document, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[document(
    collection = "reviews",
    subset(parent = Film, key = film_id, into = recent, keep = 10, order = date),
    computed(
        parent = Film,
        key = film_id,
        count = review_count,
        sum(rating = rating_sum),
        avg(rating = rating_avg),
        max(rating = rating_max)
    )
)]
struct Review {
    #[serde(rename = "_id")]
    id: i64,
    film_id: i64,
    critic: String,
    date: DateTime,
    rating: i64,
}

const COLLECTIONS: [&str; 4] = [
    "films",
    "reviews",
    "directors",
    pattern_core::document::REFERENCES,
];

/// `_id`, name, year of birth.
const DIRECTORS: [(i64, &str, i32); 3] = [
    (1, "Fritz Lang", 1890),
    (2, "F. W. Murnau", 1888),
    (3, "Robert Wiene", 1873),
];

/// The films with reviews: `_id`, title, director's `_id` and name.
const FILMS: [(i64, &str, i64, &str); 3] = [
    (1, "Metropolis", 1, "Fritz Lang"),
    (2, "Nosferatu", 2, "F. W. Murnau"),
    (3, "The Cabinet of Dr. Caligari", 3, "Robert Wiene"),
];

/// A fourth film, by the director of film 1, with no reviews.
const FILM_4: (i64, &str, i64) = (4, "M", 1);

const REVIEWS: i64 = 25;
const KEEP: usize = 10;
const EVERY: i64 = 100;

/// Views each of the 16 tasks records: of film 1, of film 2, and of film 3 (task `t`: `t`).
const TASKS: i64 = 16;
const VIEWS_1: i64 = 250;
const VIEWS_2: i64 = 37;

fn photo(name: &str) -> String {
    format!(
        "https://example.com/directors/{}.jpg",
        name.to_lowercase().replace(". ", "-").replace(' ', "-")
    )
}

fn film(id: i64, title: &str, director: DirectorRef) -> Film {
    Film {
        id,
        title: title.into(),
        director,
        review_count: 0,
        rating_sum: 0,
        rating_avg: None,
        rating_max: None,
        recent: Vec::new(),
        views: 0,
    }
}

/// Review `i` (1 to 25): odd ones of film 1, multiples of 4 of film 2, the others of film 3;
/// one a day in March 2024 (all days distinct), rated 1 to 5.
fn review(i: i64) -> Review {
    let film_id = if i % 2 == 1 {
        1
    } else if i % 4 == 0 {
        2
    } else {
        3
    };
    let day = (i * 7) % 25 + 1;
    Review {
        id: i,
        film_id,
        critic: format!("critic{i:02}"),
        date: DateTime::parse_rfc3339_str(format!("2024-03-{day:02}T20:30:00Z")).expect("a date"),
        rating: 1 + (i * 3) % 5,
    }
}

fn day(d: DateTime) -> String {
    d.try_to_rfc3339_string().expect("a date")[..10].to_owned()
}

/// The model's reviews of film `f`, newest first (date, then `_id`, descending).
fn newest(model: &[Review], f: i64) -> Vec<Review> {
    let mut of: Vec<Review> = model.iter().filter(|r| r.film_id == f).cloned().collect();
    of.sort_by_key(|r| std::cmp::Reverse((r.date, r.id)));
    of
}

/// Asserts that film `f` as stored holds its model reviews' aggregates and 10 newest, and
/// `views` views.
fn check(have: &Film, model: &[Review], views: i64) {
    let f = have.id;
    let all = newest(model, f);
    let ratings: Vec<i64> = all.iter().map(|r| r.rating).collect();
    let n = ratings.len() as i64;
    let sum: i64 = ratings.iter().sum();
    assert_eq!(have.review_count, n, "film {f}: count");
    assert_eq!(have.rating_sum, sum, "film {f}: sum");
    assert_eq!(
        have.rating_max,
        ratings.iter().max().copied(),
        "film {f}: max"
    );
    match (have.rating_avg, n) {
        (None, 0) => {}
        (Some(avg), n) if n > 0 => {
            let want = sum as f64 / n as f64;
            assert!((avg - want).abs() < 1e-9, "film {f}: avg {avg}, not {want}");
        }
        (avg, _) => panic!("film {f}: avg {avg:?} of {n} reviews"),
    }
    let keep: Vec<Review> = all.into_iter().take(KEEP).collect();
    assert_eq!(have.recent, keep, "film {f}: subset");
    assert_eq!(have.views, views, "film {f}: views");
}

async fn get(store: &AnyStore, f: i64) -> pattern_core::Result<Film> {
    Ok(Film::get(store, &f).await?.expect("the film"))
}

/// The copy film `f` holds, as stored (relaxed JSON).
fn copy_json(f: &Film) -> String {
    serde_json::to_string(&f.director).expect("a copy")
}

/// Asserts that film `f`'s copy equals its director as stored now.
async fn assert_copy_exact(store: &AnyStore, f: &Film) -> pattern_core::Result<()> {
    let d = Director::get(store, &f.director.id)
        .await?
        .expect("the director");
    assert_eq!(f.director, copy_of(&d)?, "film {}: its copy", f.id);
    Ok(())
}

fn summary(f: &Film) -> String {
    format!(
        "{} reviews, avg {:.2}, max {}, recent holds {}, newest {}",
        f.review_count,
        f.rating_avg.expect("an average"),
        f.rating_max.expect("a maximum"),
        f.recent.len(),
        day(f.recent[0].date)
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_film_catalogue").await?;
    println!("store: {}", store.kind());
    for coll in COLLECTIONS {
        store.drop_collection(coll).await?;
    }

    // 1. Directors, films holding a copy of theirs, reviews: every review insert adjusts its
    // film in the same transaction.
    for (id, name, born) in DIRECTORS {
        let photo = photo(name);
        let name = name.to_owned();
        Director {
            id,
            name,
            photo,
            born,
        }
        .insert(&store)
        .await?;
    }
    // Film 1: its copy built in one step from the director read (no extra round trip).
    let lang = Director::get(&store, &1).await?.expect("director 1");
    let (id, title, _, _) = FILMS[0];
    film(id, title, copy_of(&lang)?).insert(&store).await?;
    // The others name their director's `_id` alone: the insert fills the copy from `directors`.
    let (id4, title4, director4) = FILM_4;
    let others = FILMS[1..].iter().map(|&(id, title, d, _)| (id, title, d));
    for (id, title, director) in others.chain([(id4, title4, director4)]) {
        let only_id = DirectorRef {
            id: director,
            name: String::new(),
            photo: String::new(),
        };
        film(id, title, only_id).insert(&store).await?;
    }
    let mut model: Vec<Review> = Vec::new();
    for i in 1..=REVIEWS {
        let r = review(i);
        r.insert(&store).await?;
        model.push(r);
    }
    println!(
        "1. {} directors, {} films, {REVIEWS} reviews",
        DIRECTORS.len(),
        FILMS.len() + 1
    );
    let f1 = get(&store, 1).await?;
    println!(
        "   film 1's copy, built with copy_of(&director): {}",
        copy_json(&f1)
    );
    let f2 = get(&store, 2).await?;
    assert_eq!(f2.director.name, "F. W. Murnau");
    println!(
        "   film 2's copy, inserted with the director's _id only, filled from directors: {}",
        copy_json(&f2)
    );
    for id in 1..=4 {
        assert_copy_exact(&store, &get(&store, id).await?).await?;
    }
    for (id, title, _, director) in FILMS {
        let f = get(&store, id).await?;
        check(&f, &model, 0);
        assert_eq!(f.director.name, director);
        println!("   film {id} {title} ({director}): {}", summary(&f));
    }
    let f4 = get(&store, id4).await?;
    check(&f4, &model, 0);
    println!(
        "   film {id4} {title4} ({}): {} reviews",
        f4.director.name, f4.review_count
    );
    let before = get(&store, 1).await?;
    assert_eq!(before.review_count, 13);
    assert_eq!(before.recent.len(), KEEP);

    // 2. Film 1's newest review deleted, a rating of film 2 changed.
    let gone = before.recent[0].clone();
    assert!(Review::delete(&store, &gone.id).await?);
    model.retain(|r| r.id != gone.id);
    let film2 = get(&store, 2).await?;
    let top = newest(&model, 2)
        .into_iter()
        .max_by_key(|r| r.rating)
        .expect("a review of film 2");
    assert!(
        newest(&model, 2)
            .iter()
            .filter(|r| r.rating == top.rating)
            .count()
            == 1
    );
    let rerate = Update::new().set(Review::RATING, 2_i64);
    assert!(Review::update_one(&store, Review::ID.eq(top.id), rerate).await?);
    for r in model.iter_mut().filter(|r| r.id == top.id) {
        r.rating = 2;
    }
    println!(
        "2. review {} (film 1's newest, {}) deleted; review {} of film 2 re-rated {} -> 2",
        gone.id,
        day(gone.date),
        top.id,
        top.rating
    );
    let f1 = get(&store, 1).await?;
    check(&f1, &model, 0);
    let back = f1.recent.last().expect("a subset");
    assert!(!before.recent.iter().any(|r| r.id == back.id));
    println!(
        "   film 1: {} (review {} of {} came back in)",
        summary(&f1),
        back.id,
        day(back.date)
    );
    let f2 = get(&store, 2).await?;
    check(&f2, &model, 0);
    assert_ne!(f2.rating_max, film2.rating_max);
    assert!(f2.recent.iter().any(|r| r.id == top.id && r.rating == 2));
    println!(
        "   film 2: {} reviews, avg {:.2} (was {:.2}), max {} (was {}), its subset shows the new rating",
        f2.review_count,
        f2.rating_avg.expect("an average"),
        film2.rating_avg.expect("an average"),
        f2.rating_max.expect("a maximum"),
        film2.rating_max.expect("a maximum")
    );

    // 3. 16 tasks record views at once: one write per 100 views, the rest on `flush`.
    let writes: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let (store, writes) = (store.clone(), writes.clone());
            tokio::spawn(async move {
                for n in 0..VIEWS_1 {
                    let mut films = vec![1_i64];
                    if n < VIEWS_2 {
                        films.push(2);
                    }
                    if n < t {
                        films.push(3);
                    }
                    for f in films {
                        if Film::increment_views(&store, &f).await? {
                            writes[f as usize - 1].fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
                Ok::<(), pattern_core::Error>(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    let made = [TASKS * VIEWS_1, TASKS * VIEWS_2, (0..TASKS).sum::<i64>()];
    let writes: Vec<u64> = writes.iter().map(|w| w.load(Ordering::SeqCst)).collect();
    println!(
        "3. {TASKS} concurrent tasks record views: film 1 {}, film 2 {}, film 3 {} ({} increments, {} writes)",
        made[0],
        made[1],
        made[2],
        made.iter().sum::<i64>(),
        writes.iter().sum::<u64>()
    );
    let mut stored = Vec::new();
    for (i, made) in made.iter().enumerate() {
        let views = get(&store, i as i64 + 1).await?.views;
        assert_eq!(views % EVERY, 0, "film {}: {views}", i + 1);
        assert!(views <= *made && made - views < EVERY);
        assert_eq!(views, made / EVERY * EVERY);
        assert_eq!(writes[i] as i64, made / EVERY);
        stored.push(views);
    }
    println!(
        "   stored before flush: film 1 {}, film 2 {}, film 3 {} (multiples of {EVERY})",
        stored[0], stored[1], stored[2]
    );
    let flushed = Film::flush(&store).await?;
    let pending: i64 = made.iter().map(|m| m % EVERY).sum();
    assert_eq!(flushed as i64, pending);
    let mut after = Vec::new();
    for (i, made) in made.iter().enumerate() {
        let f = get(&store, i as i64 + 1).await?;
        check(&f, &model, *made);
        after.push(f.views);
    }
    println!(
        "   flush wrote {flushed} views; stored after flush: film 1 {}, film 2 {}, film 3 {} (exact)",
        after[0], after[1], after[2]
    );
    assert_eq!(Film::flush(&store).await?, 0);

    // 4. Another tool deletes a review behind the library's back.
    let victim = newest(&model, 3)
        .into_iter()
        .max_by_key(|r| r.rating)
        .expect("a review of film 3");
    let deleted = store
        .delete_many("reviews", &StoreFilter::eq("_id", victim.id))
        .await?;
    assert_eq!(deleted, 1);
    model.retain(|r| r.id != victim.id);
    println!(
        "4. a foreign tool deletes review {} of film 3 (rating {}) directly through the store",
        victim.id, victim.rating
    );
    let drift = Review::verify(&store).await?;
    assert!(!drift.is_empty());
    for d in &drift {
        assert_eq!(d.parent, "3");
        println!(
            "   verify: film {} {}: stored {}, computed {}",
            d.parent, d.field, d.stored, d.computed
        );
    }
    let fields: Vec<&str> = drift.iter().map(|d| d.field.as_str()).collect();
    for field in ["review_count", "rating_sum", "rating_avg", "rating_max"] {
        assert!(fields.contains(&field), "{fields:?}");
    }
    let subsets = Review::verify_subsets(&store).await?;
    assert_eq!(subsets, ["3"]);
    println!("   verify_subsets: films {subsets:?}");
    Review::recompute(&store, &3_i64).await?;
    Review::resubset(&store, &3_i64).await?;
    let drift = Review::verify(&store).await?;
    let subsets = Review::verify_subsets(&store).await?;
    assert!(drift.is_empty() && subsets.is_empty());
    println!(
        "   after recompute and resubset of film 3: verify {} drifts, verify_subsets {} films",
        drift.len(),
        subsets.len()
    );
    let f3 = get(&store, 3).await?;
    check(&f3, &model, made[2]);
    println!("   film 3: {}, views {}", summary(&f3), f3.views);

    // 5. The directors change: every copy follows, in the director's write's transaction.
    let new_photo = "https://example.com/directors/fritz-lang-1927.jpg".to_owned();
    let renamed = "Friedrich Wilhelm Murnau".to_owned();
    let set_photo = Update::new().set(Director::PHOTO, new_photo.clone());
    assert!(Director::update_one(&store, Director::ID.eq(1), set_photo).await?);
    let rename = Update::new().set(Director::NAME, renamed.clone());
    assert!(Director::update_one(&store, Director::ID.eq(2), rename).await?);
    println!(
        "5. Director::update_one: director 1's photo changed, director 2 renamed F. W. Murnau -> {renamed}"
    );
    for id in 1..=4 {
        let f = get(&store, id).await?;
        assert_copy_exact(&store, &f).await?;
        println!("   film {id} {}: {}", f.title, copy_json(&f));
    }
    assert_eq!(get(&store, 1).await?.director.photo, new_photo);
    assert_eq!(get(&store, 4).await?.director.photo, new_photo);
    assert_eq!(get(&store, 2).await?.director.name, renamed);
    let stale = Film::verify_copies(&store).await?;
    assert!(stale.is_empty(), "{stale:?}");
    println!("   every film's copy equals its director; verify_copies: {stale:?}");
    match Director::delete(&store, &3).await {
        Err(Error::StillReferenced { by, .. }) => {
            assert!(Director::get(&store, &3).await?.is_some());
            println!(
                "   delete of director 3 refused: StillReferenced by {} (film {}), nothing deleted",
                by.field, by.example
            );
        }
        other => panic!("the delete of director 3 went through: {other:?}"),
    }

    // 6. Everything as the model says.
    for (i, made) in made.iter().enumerate() {
        check(&get(&store, i as i64 + 1).await?, &model, *made);
    }
    check(&get(&store, id4).await?, &model, 0);
    let stored_reviews = Review::find(pattern_core::document::Filter::everything())
        .all(&store)
        .await?;
    assert_eq!(stored_reviews.len(), model.len());
    println!("film catalogue: aggregates, subsets, view counts and director copies exact");
    Ok(())
}
