//! The approximation pattern (`#[document(approximate(every = N))]`) on both stores: one write
//! per `N` increments, `flush` for the rest, and the crash bound (fewer than `N` increments lost
//! per counter, none counted twice) under 16 concurrent incrementers.

use std::sync::atomic::{AtomicU64, Ordering};

use super::*;

/// A film and its view count, written every 10 views.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[document(approximate(every = 10))]
    views: i64,
    #[document(approximate(every = 3))]
    likes: i32,
}

fn film(id: i64) -> Film {
    Film {
        id,
        title: format!("film {id}"),
        views: 0,
        likes: 0,
    }
}

async fn stored_views(store: &AnyStore, id: i64) -> i64 {
    Film::get(store, &id).await.unwrap().unwrap().views
}

async fn one_write_per_n_increments(store: AnyStore) {
    film(1).insert(&store).await.unwrap();
    for i in 1..10 {
        assert!(
            !Film::increment_views(&store, &1).await.unwrap(),
            "increment {i}"
        );
    }
    assert_eq!(stored_views(&store, 1).await, 0);
    let pending = pattern_core::document::pending::<Film, _, _>(&store, "views", &1).unwrap();
    assert_eq!(pending, 9);
    let estimate = pattern_core::document::estimate::<Film, _, _>(&store, "views", &1);
    assert_eq!(estimate.await.unwrap(), Some(9));
    assert!(
        Film::increment_views(&store, &1).await.unwrap(),
        "the 10th writes"
    );
    assert_eq!(stored_views(&store, 1).await, 10);
    for _ in 0..4 {
        Film::increment_views(&store, &1).await.unwrap();
        Film::increment_likes(&store, &1).await.unwrap();
    }
    assert_eq!(Film::flush(&store).await.unwrap(), 4 + 1);
    let f = Film::get(&store, &1).await.unwrap().unwrap();
    assert_eq!((f.views, f.likes), (14, 4));
    assert_eq!(
        Film::flush(&store).await.unwrap(),
        0,
        "nothing left to write"
    );
    assert_eq!(
        Film::__WRITES
            .iter()
            .filter(|w| w.starts_with("increment_") || **w == "flush")
            .count(),
        3
    );
}

async fn a_missing_document_keeps_its_count(store: AnyStore) {
    for _ in 0..9 {
        Film::increment_views(&store, &7).await.unwrap();
    }
    match Film::increment_views(&store, &7).await {
        Err(Error::NotFound { .. }) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }
    let pending = pattern_core::document::pending::<Film, _, _>(&store, "views", &7).unwrap();
    assert_eq!(pending, 10, "the batch is put back");
    film(7).insert(&store).await.unwrap();
    assert!(matches!(Film::flush(&store).await, Ok(10)));
    assert_eq!(stored_views(&store, 7).await, 10);
}

/// 16 tasks increment 3 films concurrently. Stopped without a flush (a crash: the process's
/// counts forgotten), each film's stored count is a multiple of 10 within 9 of the increments
/// made, never above; then the same with a flush: exact.
async fn a_crash_loses_fewer_than_n_per_counter(store: AnyStore) {
    for id in 1..=3 {
        film(id).insert(&store).await.unwrap();
    }
    let per_task = pattern_tests::scale(57, 1_000);
    let made: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
    run(&store, &made, per_task).await;
    store.extensions().forget(); // the crash
    for (f, made) in made.iter().enumerate() {
        let made = made.load(Ordering::SeqCst) as i64;
        let stored = stored_views(&store, f as i64 + 1).await;
        assert!(
            stored <= made && made - stored < 10,
            "film {f}: {stored} of {made}"
        );
        assert_eq!(stored % 10, 0);
    }
    // Again, ended by a flush: exact.
    let before: Vec<i64> =
        futures::future::join_all((1..=3).map(|id| stored_views(&store, id))).await;
    let again: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
    run(&store, &again, per_task).await;
    Film::flush(&store).await.unwrap();
    for (f, made) in again.iter().enumerate() {
        let stored = stored_views(&store, f as i64 + 1).await;
        assert_eq!(stored, before[f] + made.load(Ordering::SeqCst) as i64);
    }
}

/// 16 tasks, each `per_task` increments spread over the 3 films, counted in `made`.
async fn run(store: &AnyStore, made: &[AtomicU64], per_task: u32) {
    futures::future::join_all((0..16).map(|t| async move {
        for i in 0..per_task {
            let f = (t + i as usize) % 3;
            Film::increment_views(store, &(f as i64 + 1)).await.unwrap();
            made[f].fetch_add(1, Ordering::SeqCst);
        }
    }))
    .await;
}

/// A delete through the library drops what was counted for the document and not written: a
/// flush after it writes nothing and fails on nothing, and a document inserted again with its
/// `_id` starts from what it is written with.
async fn a_delete_drops_the_count(store: AnyStore) {
    film(4).insert(&store).await.unwrap();
    for _ in 0..2 {
        assert!(!Film::increment_likes(&store, &4).await.unwrap());
    }
    assert!(Film::delete(&store, &4).await.unwrap());
    let pending = pattern_core::document::pending::<Film, _, _>(&store, "likes", &4).unwrap();
    assert_eq!(pending, 0);
    assert_eq!(Film::flush(&store).await.unwrap(), 0);
    film(4).insert(&store).await.unwrap();
    assert!(!Film::increment_likes(&store, &4).await.unwrap());
    assert_eq!(Film::flush(&store).await.unwrap(), 1);
}

on_both_stores!(
    one_write_per_n_increments,
    a_missing_document_keeps_its_count,
    a_crash_loses_fewer_than_n_per_counter,
    a_delete_drops_the_count,
);
