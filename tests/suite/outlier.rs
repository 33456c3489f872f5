//! The outlier pattern, on both stores: the seed's layout, chunked overflow, atomic pushes under
//! concurrency, reads, threshold changes, errors, indexes.

use pattern_core::store;
use std::collections::{BTreeMap, HashSet};

use bson::{doc, Bson, Document};
use futures::TryStreamExt;
use pattern_core::outlier::Typical;
use pattern_core::store::AnyStore;
use pattern_core::{store::Store, Error, Outlier};
use pattern_tests::{assert_same_documents, counted_mongo_store, documents, on_both_stores};
use serde::{Deserialize, Serialize};

/// A book of the seed's sales collection, with the given threshold: `Book` (50), and the same
/// collections read and written with threshold 20 and 80.
#[rustfmt::skip] // rustfmt re-indents the attribute below on every run
macro_rules! book {
    ($name:ident, $threshold:literal) => {
        #[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[outlier(
                    collection = "sales",
                    threshold = $threshold,
                    overflow = "extra_sales",
                    owner = "book_id"
                )]
        struct $name {
            #[outlier(id)]
            #[serde(rename = "_id")]
            id: i64,
            title: String,
            year: i32,
            author: String,
            #[outlier(items)]
            customers_purchased: Vec<String>,
        }
    };
}

book!(Book, 50);
book!(Book20, 20);
book!(Book80, 80);

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Entry {
    writer: u32,
    n: u32,
}

/// Small threshold and chunks, String ids, every name overridden.
#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(
    collection = "feeds",
    threshold = 3,
    overflow = "feed_overflow",
    chunk = 4,
    flag = "big",
    owner = "feed",
    extra = "more",
    count = "n",
    seq = "page"
)]
struct Feed {
    #[outlier(id)]
    #[serde(rename = "_id")]
    name: String,
    #[outlier(items)]
    entries: Vec<Entry>,
}

fn users(range: std::ops::Range<u32>) -> Vec<String> {
    range.map(|i| format!("user{i:02}")).collect()
}

fn invisible_cities() -> Book {
    Book {
        id: 1,
        title: "Invisible Cities".into(),
        year: 1972,
        author: "Italo Calvino".into(),
        customers_purchased: users(0..3),
    }
}

fn wooden_amulet(buyers: Vec<String>) -> Book {
    Book {
        id: 2,
        title: "The Wooden Amulet".into(),
        year: 2023,
        author: "Lesley Moreno".into(),
        customers_purchased: buyers,
    }
}

fn entry(writer: u32, n: u32) -> Entry {
    Entry { writer, n }
}

fn feed(name: &str) -> Feed {
    Feed {
        name: name.into(),
        entries: vec![],
    }
}

/// The seed's books: a typical document as it is, and an outlier with its first 50 buyers and
/// `has_extras` in the main document, the rest in `extra_sales` referencing `book_id`.
async fn seed_layout(store: AnyStore) {
    invisible_cities().save(&store).await.unwrap();
    let amulet = wooden_amulet(users(0..1000));
    amulet.save(&store).await.unwrap();
    assert_same_documents(
        &documents(&store, "sales").await,
        &[
            doc! {"_id": 1_i64, "title": "Invisible Cities", "year": 1972, "author": "Italo Calvino",
            "customers_purchased": ["user00", "user01", "user02"]},
            doc! {"_id": 2_i64, "title": "The Wooden Amulet", "year": 2023, "author": "Lesley Moreno",
            "customers_purchased": users(0..50), "has_extras": true},
        ],
    );
    let overflow = documents(&store, "extra_sales").await;
    let mut chunks: Vec<Document> = overflow
        .iter()
        .map(|d| {
            let mut d = d.clone();
            d.remove("_id");
            d
        })
        .collect();
    chunks.sort_by_key(|d| d.get_i64("seq").unwrap());
    assert_same_documents(
        &chunks,
        &[
            doc! {"book_id": 2_i64, "count": 500, "customers_purchased_extra": users(50..550), "seq": 1_i64},
            doc! {"book_id": 2_i64, "count": 450, "customers_purchased_extra": users(550..1000), "seq": 2_i64},
        ],
    );
    assert!(overflow
        .iter()
        .all(|d| matches!(d.get("_id"), Some(Bson::ObjectId(_)))));
    // Reads.
    assert_eq!(Book::full(&store, &2).await.unwrap(), Some(amulet.clone()));
    assert_eq!(
        Book::all_items(&store, &2).await.unwrap(),
        Some(users(0..1000))
    );
    assert_eq!(
        Book::counts(&store, &2).await.map(|c| c.items).unwrap(),
        1000
    );
    assert!(Book::is_outlier(&store, &2).await.unwrap());
    assert!(!Book::is_outlier(&store, &1).await.unwrap());
    let typical = Book::typical(&store, &2).await.unwrap().unwrap();
    assert_eq!(
        typical,
        Typical {
            doc: wooden_amulet(users(0..50)),
            has_extras: true
        }
    );
    assert_eq!(
        Book::typical(&store, &1).await.unwrap(),
        Some(Typical {
            doc: invisible_cities(),
            has_extras: false
        })
    );
    assert_eq!(Book::typical(&store, &3).await.unwrap(), None);
    let streamed: Vec<String> = Book::items(&store, &2).try_collect().await.unwrap();
    assert_eq!(streamed, users(0..1000));
    // Saving again replaces the document and its overflow.
    wooden_amulet(users(0..60)).save(&store).await.unwrap();
    assert_eq!(
        Book::all_items(&store, &2).await.unwrap(),
        Some(users(0..60))
    );
    assert_eq!(documents(&store, "extra_sales").await.len(), 1);
    wooden_amulet(users(0..5)).save(&store).await.unwrap();
    assert!(!Book::is_outlier(&store, &2).await.unwrap());
    assert!(documents(&store, "extra_sales").await.is_empty());
    assert!(Book::delete(&store, &2).await.unwrap());
    assert!(!Book::delete(&store, &2).await.unwrap());
}

/// Pushes one by one follow the threshold; the overflow is chunked; every read agrees.
async fn pushes_fill_main_then_chunks(store: AnyStore) {
    feed("f").save(&store).await.unwrap();
    for n in 0..30 {
        Feed::push(&store, "f", entry(0, n)).await.unwrap();
        let (main, overflow) = (
            documents(&store, "feeds").await,
            documents(&store, "feed_overflow").await,
        );
        let flagged = main[0].get_bool("big").unwrap_or(false);
        assert!(main[0].get_array("entries").unwrap().len() <= 3);
        assert_eq!(
            flagged,
            !overflow.is_empty(),
            "flag disagrees with overflow after push {n}"
        );
    }
    let overflow = documents(&store, "feed_overflow").await;
    let mut sizes: Vec<(i64, usize)> = overflow
        .iter()
        .map(|d| {
            (
                d.get_i64("page").unwrap(),
                d.get_array("more").unwrap().len(),
            )
        })
        .collect();
    sizes.sort();
    assert_eq!(
        sizes,
        [(1, 4), (2, 4), (3, 4), (4, 4), (5, 4), (6, 4), (7, 3)]
    );
    assert!(overflow
        .iter()
        .all(|d| d.get_str("feed") == Ok("f")
            && pattern_tests::as_int(d.get("n").unwrap()).is_some()));
    let want: Vec<Entry> = (0..30).map(|n| entry(0, n)).collect();
    assert_eq!(
        Feed::all_items(&store, "f").await.unwrap(),
        Some(want.clone())
    );
    let streamed: Vec<Entry> = Feed::items(&store, "f").try_collect().await.unwrap();
    assert_eq!(streamed, want);
    assert_eq!(
        Feed::counts(&store, "f").await.map(|c| c.items).unwrap(),
        30
    );
    assert_eq!(
        Feed::full(&store, "f").await.unwrap().unwrap().entries,
        want
    );
}

/// `push_many` splits a batch between the main document and the overflow, in order.
async fn push_many_splits_in_order(store: AnyStore) {
    feed("g").save(&store).await.unwrap();
    let all: Vec<Entry> = (0..25).map(|n| entry(1, n)).collect();
    Feed::push_many(&store, "g", &all[..2]).await.unwrap();
    Feed::push_many(&store, "g", &all[2..11]).await.unwrap();
    Feed::push(&store, "g", all[11].clone()).await.unwrap();
    Feed::push_many(&store, "g", &all[12..]).await.unwrap();
    assert_eq!(Feed::all_items(&store, "g").await.unwrap(), Some(all));
    assert_eq!(
        documents(&store, "feeds").await[0]
            .get_array("entries")
            .unwrap()
            .len(),
        3
    );
    assert!(documents(&store, "feed_overflow").await.iter().all(|d| d
        .get_array("more")
        .unwrap()
        .len()
        <= 4));
}

/// Pushing to a parent that does not exist is `NotFound`, and writes nothing.
async fn push_to_missing_parent(store: AnyStore) {
    let e = Feed::push(&store, "ghost", entry(0, 0)).await.unwrap_err();
    assert!(
        matches!(e, Error::NotFound { ref collection, .. } if collection == "feeds"),
        "{e:?}"
    );
    let e = Feed::push_many(&store, "ghost", &[entry(0, 0)])
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e:?}");
    assert!(matches!(
        Feed::counts(&store, "ghost").await.map(|c| c.items),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(Feed::all_items(&store, "ghost").await.unwrap(), None);
    assert!(documents(&store, "feed_overflow").await.is_empty());
}

/// The seed's own overflow document (one unbounded array, no `count` nor `seq`) is read
/// first, and never written to: new extras go to chunks after it.
async fn seed_single_overflow_document_is_read(store: AnyStore) {
    store
        .insert_one("sales", doc! {"_id": 2_i64, "title": "The Wooden Amulet", "year": 2023, "author": "Lesley Moreno",
                                   "customers_purchased": users(0..50), "has_extras": true})
        .await
        .unwrap();
    store
        .insert_one(
            "extra_sales",
            doc! {"book_id": 2_i64, "customers_purchased_extra": users(50..1000)},
        )
        .await
        .unwrap();
    assert_eq!(
        Book::all_items(&store, &2).await.unwrap(),
        Some(users(0..1000))
    );
    Book::push(&store, &2, "user1000".into()).await.unwrap();
    Book::push_many(&store, &2, &users(1001..1003))
        .await
        .unwrap();
    assert_eq!(
        Book::all_items(&store, &2).await.unwrap(),
        Some(users(0..1003))
    );
    let streamed: Vec<String> = Book::items(&store, &2).try_collect().await.unwrap();
    assert_eq!(streamed, users(0..1003));
    assert_eq!(
        Book::counts(&store, &2).await.map(|c| c.items).unwrap(),
        1003
    );
    let legacy = documents(&store, "extra_sales")
        .await
        .into_iter()
        .find(|d| !d.contains_key("seq"))
        .unwrap();
    assert_eq!(
        legacy.get_array("customers_purchased_extra").unwrap().len(),
        950
    );
}

/// Written with threshold 50, then read and pushed with 20 and with 80: nothing is lost,
/// reads keep push order, pushes follow the new threshold.
async fn threshold_changes_lose_nothing(store: AnyStore) {
    wooden_amulet(users(0..60)).save(&store).await.unwrap(); // outlier at 50
    let mut small = wooden_amulet(users(0..30));
    small.id = 3;
    small.save(&store).await.unwrap(); // typical at 50
                                       // Threshold 20.
    assert_eq!(
        Book20::all_items(&store, &2).await.unwrap(),
        Some(users(0..60))
    );
    assert_eq!(
        Book20::all_items(&store, &3).await.unwrap(),
        Some(users(0..30))
    );
    let t = Book20::typical(&store, &3).await.unwrap().unwrap();
    assert_eq!(t.doc.customers_purchased, users(0..20));
    assert!(t.has_extras);
    assert!(Book20::is_outlier(&store, &3).await.unwrap());
    Book20::push(&store, &3, "user30".into()).await.unwrap();
    Book20::push(&store, &2, "user60".into()).await.unwrap();
    assert_eq!(
        Book20::all_items(&store, &3).await.unwrap(),
        Some(users(0..31))
    );
    assert_eq!(
        Book20::counts(&store, &3).await.map(|c| c.items).unwrap(),
        31
    );
    // The main array was not grown past the old 30: the push went to the overflow.
    let main3 = documents(&store, "sales")
        .await
        .into_iter()
        .find(|d| d.get_i64("_id") == Ok(3))
        .unwrap();
    assert_eq!(main3.get_array("customers_purchased").unwrap().len(), 30);
    assert_eq!(main3.get_bool("has_extras"), Ok(true));
    // Threshold 80: a flagged document keeps pushing to its overflow (push order), an unflagged
    // one fills its main array up to 80.
    let mut fresh = wooden_amulet(users(0..40));
    fresh.id = 4;
    fresh.save(&store).await.unwrap();
    for i in 40..85 {
        Book80::push(&store, &4, format!("user{i:02}"))
            .await
            .unwrap();
    }
    Book80::push(&store, &2, "user61".into()).await.unwrap();
    assert_eq!(
        Book80::all_items(&store, &2).await.unwrap(),
        Some(users(0..62))
    );
    assert_eq!(
        Book::all_items(&store, &2).await.unwrap(),
        Some(users(0..62))
    );
    assert_eq!(
        Book80::all_items(&store, &3).await.unwrap(),
        Some(users(0..31))
    );
    assert_eq!(
        Book80::all_items(&store, &4).await.unwrap(),
        Some(users(0..85))
    );
    let main4 = documents(&store, "sales")
        .await
        .into_iter()
        .find(|d| d.get_i64("_id") == Ok(4))
        .unwrap();
    assert_eq!(main4.get_array("customers_purchased").unwrap().len(), 80);
    assert_eq!(
        Book::all_items(&store, &4).await.unwrap(),
        Some(users(0..85))
    );
}

/// 16 tasks × 30 pushes to one document (× 500 with `PATTERN_FULL=1`): main array ≤
/// threshold, flag exactly when overflow exists, every item once, each writer's order kept.
async fn concurrent_pushes_to_one_document(store: AnyStore) {
    const WRITERS: u32 = 16;
    let pushes = pattern_tests::scale(30, 500);
    feed("hot").save(&store).await.unwrap();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for n in 0..pushes {
                    Feed::push(&store, "hot", entry(w, n)).await.expect("push");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let main = documents(&store, "feeds").await;
    assert!(main[0].get_array("entries").unwrap().len() <= 3);
    let overflow = documents(&store, "feed_overflow").await;
    assert_eq!(
        main[0].get_bool("big").unwrap_or(false),
        !overflow.is_empty()
    );
    let mut open = 0;
    let mut seqs = HashSet::new();
    for d in &overflow {
        let n = d.get_array("more").unwrap().len();
        assert!(n <= 4, "chunk holds {n}");
        assert_eq!(pattern_tests::as_int(d.get("n").unwrap()), Some(n as i64));
        open += usize::from(n < 4);
        assert!(
            seqs.insert(d.get_i64("page").unwrap()),
            "duplicate chunk number"
        );
    }
    assert!(open <= 1);
    let items = Feed::all_items(&store, "hot").await.unwrap().unwrap();
    assert_eq!(
        items.len() as u32,
        WRITERS * pushes,
        "items lost or duplicated"
    );
    assert_eq!(
        items.iter().collect::<HashSet<_>>().len(),
        items.len(),
        "an item was stored twice"
    );
    let mut last: BTreeMap<u32, u32> = BTreeMap::new();
    for e in &items {
        if let Some(prev) = last.insert(e.writer, e.n) {
            assert!(
                prev < e.n,
                "writer {}: {} read before {}",
                e.writer,
                prev,
                e.n
            );
        }
    }
}

/// Documents of the wrong shape, in the main or the overflow collection, give a decode error
/// naming the collection and `_id`.
async fn foreign_documents_give_decode_errors(store: AnyStore) {
    store
        .insert_one(
            "sales",
            doc! {"_id": 7_i64, "title": "x", "year": 1, "author": "y", "customers_purchased": "z"},
        )
        .await
        .unwrap();
    store
        .insert_one(
            "sales",
            doc! {"_id": 8_i64, "title": 5, "year": 1, "author": "y", "customers_purchased": []},
        )
        .await
        .unwrap();
    store
        .insert_one("sales", doc! {"_id": 9_i64, "title": "x", "year": 1, "author": "y", "customers_purchased": [], "has_extras": true})
        .await
        .unwrap();
    store
        .insert_one(
            "extra_sales",
            doc! {"_id": "bad-chunk", "book_id": 9_i64, "customers_purchased_extra": 5, "seq": 1},
        )
        .await
        .unwrap();
    let decode = |e: &Error, coll: &str, id: &str| matches!(e, Error::Store(store::Error::Decode { collection, id: got, .. }) if collection == coll && got.contains(id));
    let e = Book::typical(&store, &7).await.unwrap_err();
    assert!(decode(&e, "sales", "7"), "{e:?}");
    let e = Book::all_items(&store, &7).await.unwrap_err();
    assert!(decode(&e, "sales", "7"), "{e:?}");
    let e = Book::typical(&store, &8).await.unwrap_err();
    assert!(decode(&e, "sales", "8"), "{e:?}");
    let e = Book::all_items(&store, &9).await.unwrap_err();
    assert!(decode(&e, "extra_sales", "bad-chunk"), "{e:?}");
    let e = Book::counts(&store, &9).await.map(|c| c.items).unwrap_err();
    assert!(decode(&e, "extra_sales", "bad-chunk"), "{e:?}");
    let e = Book::items(&store, &9)
        .try_collect::<Vec<_>>()
        .await
        .unwrap_err();
    assert!(decode(&e, "extra_sales", "bad-chunk"), "{e:?}");
}

/// The overflow reference index exists after first use; ensuring it again changes nothing.
async fn overflow_index_is_created_idempotently(store: AnyStore) {
    Book::ensure_indexes(&store).await.unwrap();
    store.extensions().forget();
    Book::ensure_indexes(&store).await.unwrap();
    let mut names = store.index_names("extra_sales").await.unwrap();
    names.sort();
    assert_eq!(
        names,
        [
            "0_pattern_open_book_id_seq_count_lt_500",
            "_id_",
            "pattern_book_id_1_seq_-1_unique",
            "pattern_book_id_1_seq_1__id_1",
        ]
    );
}

on_both_stores!(
    seed_layout,
    pushes_fill_main_then_chunks,
    push_many_splits_in_order,
    push_to_missing_parent,
    seed_single_overflow_document_is_read,
    threshold_changes_lose_nothing,
    concurrent_pushes_to_one_document,
    foreign_documents_give_decode_errors,
    overflow_index_is_created_idempotently,
);

/// On MongoDB: a push below the threshold is one update; the typical read is one find on the
/// main collection; reading every item is two finds whatever the overflow's size.
#[tokio::test]
async fn mongo_outlier_round_trips() {
    let (store, log) = counted_mongo_store("outlier_round_trips").await;
    wooden_amulet(vec![]).save(&store).await.unwrap();
    log.clear();
    for i in 0..50 {
        Book::push(&store, &2, format!("user{i:02}")).await.unwrap();
    }
    assert_eq!(log.names(), vec!["update"; 50]);
    log.clear();
    let typical = Book::typical(&store, &2).await.unwrap().unwrap();
    assert!(!typical.has_extras);
    assert_eq!(log.names(), ["find"]);
    for (extra, total) in [(200u32, 250u32), (2000, 2050)] {
        let already = Book::counts(&store, &2).await.map(|c| c.items).unwrap() as u32;
        Book::push_many(&store, &2, &users(already..total))
            .await
            .unwrap();
        log.clear();
        let all = Book::all_items(&store, &2).await.unwrap().unwrap();
        assert_eq!(all.len() as u32, total, "after {extra} extras");
        assert_eq!(
            log.names(),
            ["find", "find"],
            "reading every item with {extra} extras"
        );
        log.clear();
        Book::typical(&store, &2).await.unwrap();
        assert_eq!(
            log.names(),
            ["find"],
            "the typical read touched the overflow"
        );
    }
    let _ = store.database().drop().await;
}
