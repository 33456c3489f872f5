//! What the follower (`pattern_core::follow`) keeps up with, on MongoDB: another program
//! inserts reviews with the driver alone (no parent update), and the follower keeps each
//! film's computed values (count, sum) and subset (3 newest reviews) exact.
//!
//! - **Raw rate**: one process inserting reviews one after the other with the driver, as fast
//!   as it can: the writes per second a single foreign writer produces.
//! - **Follower throughput**: the same number of reviews written while no follower runs, then
//!   `catch_up` timed: changes applied per second, against the raw rate.
//! - **Lag** under a steady stream (half the smaller of the two rates): for each change, from
//!   its commit (the event's wall time) to the commit of its derived writes, read from the
//!   `follow.change` spans' `pattern.lag_ms`; median and p99.
//! - **Lag under one busy writer**: the raw client inserting as fast as it can (the raw
//!   rate); median and p99, and the median of the first and of the last tenth of its changes
//!   (a follower that keeps up has the same lag at the end as at the start).
//! - **Lag under writers that touch the same parents**: 8 tasks of the other program, each
//!   writing 25 times a second (200 writes a second in all), every tenth an update of a film
//!   (a field the follower does not keep: its transactions conflict with the follower's, which
//!   writes the same films), the rest new reviews; the reviews' lags, median and p99.
//!
//! Every film is checked against its reviews at the end (`verify`, `verify_subsets`).
//!
//!     cargo bench -p pattern-bench --bench follow
//!
//! Needs `MONGODB_URI` (`scripts/test.sh` starts a server and sets it). Under `cargo test` it
//! runs small.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{doc, Document as BsonDocument};
use pattern_bench::scale;
use pattern_core::document::{verify, verify_subsets};
use pattern_core::follow::Follower;
use pattern_core::Document;
use serde::{Deserialize, Serialize};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    reviews: i64,
    rating_sum: i64,
    recent: Vec<Review>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "reviews",
    computed(parent = Film, key = film_id, count = reviews, sum(rating = rating_sum)),
    subset(parent = Film, key = film_id, into = recent, keep = 3, order = date)
)]
struct Review {
    #[serde(rename = "_id")]
    id: i64,
    film_id: i64,
    rating: i64,
    date: i64,
}

/// The lags the follower's `follow.change` spans carry, of changes to the reviews (the
/// follower's own writes to the films come back as changes too: checked, in line, skipped).
#[derive(Clone, Default)]
struct Lags(Arc<Mutex<Vec<i64>>>);

#[derive(Default)]
struct LagOf {
    lag: Option<i64>,
    reviews: bool,
}

impl Visit for LagOf {
    fn record_i64(&mut self, field: &Field, value: i64) {
        if field.name() == "pattern.lag_ms" {
            self.lag = Some(value);
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "db.collection.name" {
            self.reviews = value == "reviews";
        }
    }
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

impl<S: tracing::Subscriber> Layer<S> for Lags {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        if attrs.metadata().name() == "follow.change" {
            let mut of = LagOf::default();
            attrs.record(&mut of);
            if let (Some(lag), true, Ok(mut all)) = (of.lag, of.reviews, self.0.lock()) {
                all.push(lag);
            }
        }
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    let lags = Lags::default();
    let subscriber = tracing_subscriber::registry().with(lags.clone());
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let films: i64 = scale(100, 5);
    let backlog: i64 = scale(3_000, 60);
    let steady: Duration = scale(Duration::from_secs(10), Duration::from_secs(1));
    let store = pattern_tests::mongo_store("bench_follow").await;
    Review::ensure_indexes(&store).await.unwrap();
    for id in 0..films {
        let film = Film {
            id,
            reviews: 0,
            rating_sum: 0,
            recent: vec![],
        };
        film.insert(&store).await.unwrap();
    }
    let follower = Arc::new(Follower::new(store.clone(), "bench").follow::<Review>());
    // The first run's whole pass, its position recorded.
    follower.catch_up().await.unwrap();
    let raw = pattern_tests::second_client(&store).await;
    let reviews = raw.database().collection::<BsonDocument>("reviews");
    let mut next_id = 0_i64;
    let review =
        move |id: i64| doc! {"_id": id, "film_id": id % films, "rating": id % 5 + 1, "date": id};

    // The raw rate, and the backlog the follower then applies.
    let started = Instant::now();
    for _ in 0..backlog {
        reviews.insert_one(review(next_id)).await.unwrap();
        next_id += 1;
    }
    let raw_rate = backlog as f64 / started.elapsed().as_secs_f64();
    // The follower started behind by the backlog: until it has applied it.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    lags.0.lock().unwrap().clear();
    let started = Instant::now();
    let running = {
        let follower = follower.clone();
        tokio::spawn(async move {
            follower
                .run(async move {
                    let _ = stopped.await;
                })
                .await
        })
    };
    while (lags.0.lock().unwrap().len() as u64) < backlog as u64 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let took = started.elapsed();
    let follow_rate = backlog as f64 / took.as_secs_f64();
    // Every backlog change committed (a batch reads the films as they are then: the changes
    // after it in the backlog find them in line, skipped).

    // The lag under a steady stream at half the smaller rate.
    let rate = raw_rate.min(follow_rate) / 2.0;
    let every = Duration::from_secs_f64(1.0 / rate);
    lags.0.lock().unwrap().clear();
    let started = Instant::now();
    let mut written = 0_u64;
    while started.elapsed() < steady {
        let due = every.mul_f64(written as f64);
        if let Some(wait) = due.checked_sub(started.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        reviews.insert_one(review(next_id)).await.unwrap();
        next_id += 1;
        written += 1;
    }
    // Until the follower has applied every change of the stream.
    let deadline = Instant::now() + Duration::from_secs(30);
    while (lags.0.lock().unwrap().len() as u64) < written && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut seen = lags.0.lock().unwrap().clone();
    seen.sort_unstable();
    assert!(
        seen.len() as u64 >= written,
        "{} lags for {written} writes",
        seen.len()
    );

    // One busy writer: the raw client inserting as fast as it can, as long again. The lag of
    // the first and the last tenth of its changes tells whether the follower keeps up.
    lags.0.lock().unwrap().clear();
    let started = Instant::now();
    let mut busy_written = 0_u64;
    while started.elapsed() < steady {
        reviews.insert_one(review(next_id)).await.unwrap();
        next_id += 1;
        busy_written += 1;
    }
    let busy_rate = busy_written as f64 / started.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(60);
    while (lags.0.lock().unwrap().len() as u64) < busy_written && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let in_order = lags.0.lock().unwrap().clone();
    assert!(
        in_order.len() as u64 >= busy_written,
        "{} lags for {busy_written} writes",
        in_order.len()
    );
    let tenth = (in_order.len() / 10).max(1);
    let median_of = |part: &[i64]| {
        let mut part = part.to_vec();
        part.sort_unstable();
        percentile(&part, 0.5)
    };
    let (early, late) = (
        median_of(&in_order[..tenth]),
        median_of(&in_order[in_order.len() - tenth..]),
    );
    let mut flat_out = in_order.clone();
    flat_out.sort_unstable();

    // Writers that touch the same parents: 8 tasks, each 25 writes a second, every 10th an
    // update of a film (a field the follower does not keep), the rest new reviews. The
    // follower's batches write the same films: its transactions conflict with theirs.
    lags.0.lock().unwrap().clear();
    let writers = 8_i64;
    let each = Duration::from_millis(40);
    let started = Instant::now();
    let films_coll = raw.database().collection::<BsonDocument>("films");
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (reviews, films_coll) = (reviews.clone(), films_coll.clone());
        let first = next_id + w * 1_000_000;
        tasks.push(tokio::spawn(async move {
            let (mut n, mut inserted) = (0_i64, 0_u64);
            while started.elapsed() < steady {
                if let Some(wait) = each.mul_f64(n as f64).checked_sub(started.elapsed()) {
                    tokio::time::sleep(wait).await;
                }
                let id = first + n;
                if n % 10 == 9 {
                    let film = doc! {"_id": id % films};
                    films_coll
                        .update_one(film, doc! {"$set": {"note": format!("writer {w} at {n}")}})
                        .await
                        .unwrap();
                } else {
                    reviews.insert_one(review(id)).await.unwrap();
                    inserted += 1;
                }
                n += 1;
            }
            inserted
        }));
    }
    let mut contended = 0_u64;
    for t in tasks {
        contended += t.await.unwrap();
    }
    let contended_rate = contended as f64 * 10.0 / 9.0 / steady.as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(30);
    while (lags.0.lock().unwrap().len() as u64) < contended && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    let mut busy = lags.0.lock().unwrap().clone();
    follower.catch_up().await.unwrap();
    busy.sort_unstable();
    assert!(
        busy.len() as u64 >= contended,
        "{} lags for {contended} reviews of 8 writers",
        busy.len()
    );

    assert!(verify::<Review, _>(&store).await.unwrap().is_empty());
    assert!(verify_subsets::<Review, _>(&store)
        .await
        .unwrap()
        .is_empty());
    println!("follow: {films} films, computed (count, sum) and subset (3 newest) of their reviews");
    println!(
        "| raw writes, one process | {raw_rate:.0} /s |\n| follower throughput ({backlog} changes behind) | \
         {follow_rate:.0} changes/s ({:.2}x the raw rate) |\n| lag at {rate:.0} writes/s for {}s ({} changes) | \
         median {} ms, p99 {} ms, max {} ms |",
        follow_rate / raw_rate,
        steady.as_secs(),
        seen.len(),
        percentile(&seen, 0.5),
        percentile(&seen, 0.99),
        seen.last().copied().unwrap_or(0),
    );
    println!(
        "| lag under one busy writer ({busy_rate:.0} writes/s for {}s, {} changes) | median {} ms, \
         p99 {} ms; the first tenth's median {early} ms, the last tenth's {late} ms |",
        steady.as_secs(),
        flat_out.len(),
        percentile(&flat_out, 0.5),
        percentile(&flat_out, 0.99),
    );
    println!(
        "| lag under {writers} writers, 10% to films ({contended_rate:.0} writes/s for {}s, {} reviews) | \
         median {} ms, p99 {} ms, max {} ms |",
        steady.as_secs(),
        busy.len(),
        percentile(&busy, 0.5),
        percentile(&busy, 0.99),
        busy.last().copied().unwrap_or(0),
    );
}
