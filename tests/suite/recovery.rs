//! Half-done work: the states a crash between the steps of a multi-step operation can leave,
//! injected directly into the collections. Each reads correctly, and later pushes complete it.
//!
//! - Outlier push above the threshold: flag set, item not yet in the overflow (the flag is
//!   written first, so the opposite state, items in the overflow of an unflagged parent, never
//!   arises from a crash).
//! - Outlier `save`: old overflow deleted, main document replaced with its flag, new overflow not
//!   yet written: the same state.
//! - An empty open bucket or chunk (`count: 0`, empty array), as a tool that pre-creates
//!   documents would leave: our own writes open a bucket or a chunk together with its items.

use bson::doc;
use futures::TryStreamExt;
use pattern_core::bucket::Counts;
use pattern_core::store::AnyStore;
use pattern_core::{store::Store, Bucket, Outlier};
use pattern_tests::{documents, on_both_stores};
use serde::{Deserialize, Serialize};

#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(
    collection = "sales",
    threshold = 3,
    overflow = "extra_sales",
    chunk = 2
)]
struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i64,
    #[outlier(items)]
    customers_purchased: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Tick {
    n: u32,
    at: i64,
}

#[derive(Bucket)]
#[bucket(collection = "ticks", size = 3, time = "at")]
#[allow(dead_code)]
struct Ticks {
    #[bucket(key)]
    user: String,
    #[bucket(items)]
    ticks: Vec<Tick>,
}

fn users(r: std::ops::Range<u32>) -> Vec<String> {
    r.map(|i| format!("u{i}")).collect()
}

async fn flag_set_but_overflow_not_written(store: AnyStore) {
    store
        .insert_one(
            "sales",
            doc! {"_id": 1_i64, "customers_purchased": users(0..3), "has_extras": true},
        )
        .await
        .unwrap();
    let typical = Book::typical(&store, &1).await.unwrap().unwrap();
    assert_eq!(typical.doc.customers_purchased, users(0..3));
    assert!(typical.has_extras);
    assert_eq!(
        Book::all_items(&store, &1).await.unwrap(),
        Some(users(0..3))
    );
    assert_eq!(Book::counts(&store, &1).await.map(|c| c.items).unwrap(), 3);
    // Later pushes complete it: they go to the overflow, in order.
    for u in users(3..8) {
        Book::push(&store, &1, u).await.unwrap();
    }
    assert_eq!(
        Book::all_items(&store, &1).await.unwrap(),
        Some(users(0..8))
    );
    assert_eq!(documents(&store, "extra_sales").await.len(), 3);
    // A flagged document below the threshold (a save cut short) still pushes to the overflow,
    // which keeps push order.
    store
        .insert_one(
            "sales",
            doc! {"_id": 2_i64, "customers_purchased": users(0..1), "has_extras": true},
        )
        .await
        .unwrap();
    Book::push_many(&store, &2, &users(1..4)).await.unwrap();
    assert_eq!(
        Book::all_items(&store, &2).await.unwrap(),
        Some(users(0..4))
    );
    let main = documents(&store, "sales")
        .await
        .into_iter()
        .find(|d| d.get_i64("_id") == Ok(2))
        .unwrap();
    assert_eq!(main.get_array("customers_purchased").unwrap().len(), 1);
}

async fn empty_open_chunk_is_filled(store: AnyStore) {
    store
        .insert_one(
            "sales",
            doc! {"_id": 3_i64, "customers_purchased": users(0..3), "has_extras": true},
        )
        .await
        .unwrap();
    store
        .insert_one(
            "extra_sales",
            doc! {"book_id": 3_i64, "count": 0, "customers_purchased_extra": [], "seq": 1_i64},
        )
        .await
        .unwrap();
    assert_eq!(
        Book::all_items(&store, &3).await.unwrap(),
        Some(users(0..3))
    );
    for u in users(3..6) {
        Book::push(&store, &3, u).await.unwrap();
    }
    assert_eq!(
        Book::all_items(&store, &3).await.unwrap(),
        Some(users(0..6))
    );
    let stream: Vec<String> = Book::items(&store, &3).try_collect().await.unwrap();
    assert_eq!(stream, users(0..6));
    let chunks = documents(&store, "extra_sales").await;
    assert_eq!(
        chunks.len(),
        2,
        "the empty chunk was filled before a new one opened"
    );
}

async fn empty_open_bucket_is_filled(store: AnyStore) {
    store
        .insert_one(
            "ticks",
            doc! {"_id": "k_1600000000", "user": "k", "count": 0, "ticks": []},
        )
        .await
        .unwrap();
    assert_eq!(
        Ticks::counts(&store, "k").await.unwrap(),
        Counts { items: 0, pages: 1 }
    );
    assert_eq!(
        Ticks::page(&store, "k", 1).await.unwrap().unwrap().items,
        vec![]
    );
    for n in 0..4 {
        Ticks::push(
            &store,
            "k",
            Tick {
                n,
                at: 1_600_000_100 + n as i64,
            },
        )
        .await
        .unwrap();
    }
    let items: Vec<u32> = Ticks::items(&store, "k")
        .map_ok(|t| t.n)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(items, [0, 1, 2, 3]);
    assert_eq!(
        Ticks::counts(&store, "k").await.unwrap(),
        Counts { items: 4, pages: 2 }
    );
}

on_both_stores!(
    flag_set_but_overflow_not_written,
    empty_open_chunk_is_filled,
    empty_open_bucket_is_filled
);
