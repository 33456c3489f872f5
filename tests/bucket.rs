//! The bucket pattern, on both stores: the seed's layout, bucket sizes, reads, isolation of keys,
//! concurrency, errors, indexes. Every `async fn(AnyStore)` below runs against the in-memory
//! store (`memory::*`) and MongoDB (`mongo::*`).

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use bson::{doc, Bson, DateTime, Document};
use futures::TryStreamExt;
use pattern_core::{store::Store, AnyStore, Bucket, Counts, Error, MongoStore};
use pattern_tests::{assert_same_documents, counted_mongo_store, documents, on_both_stores};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    #[serde(rename = "type")]
    kind: String,
    ticker: String,
    // The seed writes `qty` in one bucket and `quantity` in the other: we write `qty`, read both.
    #[serde(alias = "quantity")]
    qty: i64,
    date: DateTime,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, time = "date")]
#[allow(dead_code)]
struct TradeHistory {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Tick {
    writer: u32,
    n: u32,
    at: i64,
}

/// String keys, 3 items a bucket, items timed by an integer of epoch seconds.
#[derive(Bucket)]
#[bucket(collection = "ticks", size = 3, time = "at")]
#[allow(dead_code)]
struct Ticks {
    #[bucket(key)]
    user: String,
    #[bucket(items)]
    ticks: Vec<Tick>,
}

/// ObjectId keys, untimed items (the bucket `_id` uses the push time).
#[derive(Bucket)]
#[bucket(collection = "notes", size = 4)]
#[allow(dead_code)]
struct Notes {
    #[bucket(key)]
    owner: bson::oid::ObjectId,
    #[bucket(items)]
    notes: Vec<String>,
}

fn date(s: &str) -> DateTime {
    DateTime::parse_rfc3339_str(s).unwrap()
}

fn trade(kind: &str, ticker: &str, qty: i64, at: &str) -> Trade {
    Trade {
        kind: kind.into(),
        ticker: ticker.into(),
        qty,
        date: date(at),
    }
}

fn tick(writer: u32, n: u32, at: i64) -> Tick {
    Tick { writer, n, at }
}

fn trade_doc(t: &Trade) -> Document {
    doc! {"type": &t.kind, "ticker": &t.ticker, "qty": t.qty, "date": t.date}
}

/// The seed's three trades, then its MSFT trade: the documents at each step are the seed's
/// (ids from the UTC dates: 1698335223, not the page's 1698349623, see patterns.md).
async fn seed_replay_gives_seed_documents(store: AnyStore) {
    let t1 = trade("buy", "MDB", 419, "2023-10-26T15:47:03.434Z");
    let t2 = trade("sell", "MDB", 29, "2023-10-30T09:32:57.765Z");
    let t3 = trade("buy", "GOOG", 50, "2023-10-31T11:16:02.120Z");
    TradeHistory::push(&store, &123, t1.clone()).await.unwrap();
    TradeHistory::push(&store, &123, t2.clone()).await.unwrap();
    TradeHistory::push(&store, &456, t3.clone()).await.unwrap();
    // Beside the seed's fields: the page number, and the time bounds `time = "date"` keeps
    // (marked complete: the bucket kept them from its first item).
    let b456 = doc! {"_id": "456_1698750962", "customerId": 456_i64, "bounded": true, "count": 1,
    "date_max": t3.date, "date_min": t3.date, "history": [trade_doc(&t3)], "page": 1_i64};
    assert_same_documents(
        &documents(&store, "trades").await,
        &[
            doc! {"_id": "123_1698335223", "customerId": 123_i64, "bounded": true, "count": 2,
            "date_max": t2.date, "date_min": t1.date,
            "history": [trade_doc(&t1), trade_doc(&t2)], "page": 1_i64},
            b456.clone(),
        ],
    );
    let t4 = trade("buy", "MSFT", 42, "2023-11-02T11:43:10Z");
    TradeHistory::push(&store, &123, t4.clone()).await.unwrap();
    let final_docs = documents(&store, "trades").await;
    assert_same_documents(
        &final_docs,
        &[
            doc! {"_id": "123_1698335223", "customerId": 123_i64, "bounded": true, "count": 3,
            "date_max": t4.date, "date_min": t1.date,
            "history": [trade_doc(&t1), trade_doc(&t2), trade_doc(&t4)], "page": 1_i64},
            b456,
        ],
    );
    // The seed's field order, _id, customerId, count, history, with the fields we add in the
    // lexicographic order an upsert gives them.
    let keys: Vec<&str> = final_docs[0].keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "_id",
            "customerId",
            "bounded",
            "count",
            "date_max",
            "date_min",
            "history",
            "page"
        ]
    );
    let page = TradeHistory::page(&store, &123, 1).await.unwrap().unwrap();
    assert_eq!(page.items, vec![t1, t2, t4]);
    assert_eq!(page.id, Bson::String("123_1698335223".into()));
    assert!(TradeHistory::page(&store, &123, 2).await.unwrap().is_none());
}

/// Buckets in the seed's exact layout (no page number, as the seed's recipe or an earlier
/// version writes them) are read and filled; the buckets opened after them are numbered after
/// them, and every page is found by its number.
async fn seed_layout_without_page_numbers(store: AnyStore) {
    let t1 = trade("buy", "MDB", 419, "2023-10-26T15:47:03.434Z");
    let t2 = trade("sell", "MDB", 29, "2023-10-30T09:32:57.765Z");
    let seed = doc! {"_id": "123_1698335223", "customerId": 123_i64, "count": 2, "history": [trade_doc(&t1), trade_doc(&t2)]};
    let older = doc! {"_id": "123_1600000000", "customerId": 123_i64, "count": 10,
    "history": (0..10).map(|_| trade_doc(&t1)).collect::<Vec<_>>()};
    store.insert_one("trades", seed).await.unwrap();
    store.insert_one("trades", older).await.unwrap();
    let more: Vec<Trade> = (0..9)
        .map(|i| trade("buy", "MSFT", 42 + i, "2023-11-02T11:43:10Z"))
        .collect();
    for t in &more {
        TradeHistory::push(&store, &123, t.clone()).await.unwrap();
    }
    let docs = documents(&store, "trades").await;
    assert_eq!(docs.len(), 3);
    // The seed's bucket took 8 (to 10), without gaining a number; the 9th opened page 3.
    let seed_after = docs
        .iter()
        .find(|d| d.get_str("_id") == Ok("123_1698335223"))
        .unwrap();
    assert_eq!(seed_after.get_i32("count"), Ok(10));
    assert!(!seed_after.contains_key("page"));
    let new = docs.iter().find(|d| d.contains_key("page")).unwrap();
    assert_eq!(new.get_i64("page"), Ok(3));
    let p1 = TradeHistory::page(&store, &123, 1).await.unwrap().unwrap();
    let p2 = TradeHistory::page(&store, &123, 2).await.unwrap().unwrap();
    let p3 = TradeHistory::page(&store, &123, 3).await.unwrap().unwrap();
    assert_eq!(p1.id, Bson::String("123_1600000000".into()));
    assert_eq!(p2.items[..2], [t1, t2]);
    assert_eq!(p2.items[2..], more[..8]);
    assert_eq!(p3.items, more[8..]);
    assert!(TradeHistory::page(&store, &123, 4).await.unwrap().is_none());
    let pages: Vec<_> = TradeHistory::pages(&store, &123)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(pages, [p1, p2, p3]);
}

/// A bucket never holds more than `size` items; a full bucket opens a new one, named after
/// its own first item.
async fn full_bucket_opens_a_new_one(store: AnyStore) {
    let base = 1_700_000_000;
    for i in 0..25 {
        Ticks::push(&store, "k", tick(0, i, base + i as i64 * 60))
            .await
            .unwrap();
    }
    let docs = documents(&store, "ticks").await;
    let counts: Vec<i64> = docs
        .iter()
        .map(|d| pattern_tests::as_int(d.get("count").unwrap()).unwrap())
        .collect();
    assert_eq!(counts, [3, 3, 3, 3, 3, 3, 3, 3, 1]);
    for (i, d) in docs.iter().enumerate() {
        assert_eq!(
            d.get_str("_id").unwrap(),
            format!("k_{}", base + i as i64 * 3 * 60)
        );
        assert_eq!(d.get_array("ticks").unwrap().len() as i64, counts[i]);
    }
    for n in 1..=9u64 {
        let page = Ticks::page(&store, "k", n).await.unwrap().unwrap();
        let want: Vec<u32> = ((n as u32 - 1) * 3..(n as u32 * 3).min(25)).collect();
        assert_eq!(
            page.items.iter().map(|t| t.n).collect::<Vec<_>>(),
            want,
            "page {n}"
        );
    }
    assert!(Ticks::page(&store, "k", 10).await.unwrap().is_none());
    assert!(matches!(
        Ticks::page(&store, "k", 0).await,
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(
        Ticks::counts(&store, "k").await.unwrap(),
        Counts {
            items: 25,
            pages: 9
        }
    );
}

/// Buckets whose first items fall in the same second get distinct ids that keep page order.
async fn same_second_buckets_get_ordered_ids(store: AnyStore) {
    for i in 0..10 {
        Ticks::push(&store, "s", tick(0, i, 1_700_000_000))
            .await
            .unwrap();
    }
    let ids: Vec<String> = documents(&store, "ticks")
        .await
        .iter()
        .map(|d| d.get_str("_id").unwrap().to_owned())
        .collect();
    assert_eq!(
        ids,
        [
            "s_1700000000",
            "s_1700000000_000001",
            "s_1700000000_000002",
            "s_1700000000_000003"
        ]
    );
    let all: Vec<u32> = Ticks::items(&store, "s")
        .map_ok(|t| t.n)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all, (0..10).collect::<Vec<_>>());
}

/// The streams walk every page and item in order; counts agree.
async fn streams_and_counts(store: AnyStore) {
    let items: Vec<Tick> = (0..200)
        .map(|i| tick(1, i, 1_600_000_000 + i as i64))
        .collect();
    for t in &items {
        Ticks::push(&store, "walk", t.clone()).await.unwrap();
    }
    let pages: Vec<_> = Ticks::pages(&store, "walk").try_collect().await.unwrap();
    assert_eq!(pages.len(), 67);
    assert!(pages.iter().all(|p| p.items.len() <= 3));
    let streamed: Vec<Tick> = Ticks::items(&store, "walk").try_collect().await.unwrap();
    assert_eq!(streamed, items);
    assert_eq!(
        Ticks::counts(&store, "walk").await.unwrap(),
        Counts {
            items: 200,
            pages: 67
        }
    );
    assert_eq!(
        Ticks::counts(&store, "nobody").await.unwrap(),
        Counts::default()
    );
    let none: Vec<Tick> = Ticks::items(&store, "nobody").try_collect().await.unwrap();
    assert!(none.is_empty());
}

/// `push_many` fills the open bucket, then whole buckets, keeping order.
async fn push_many_keeps_order_and_size(store: AnyStore) {
    let all: Vec<Tick> = (0..40)
        .map(|i| tick(2, i, 1_650_000_000 + i as i64))
        .collect();
    Ticks::push_many(&store, "m", &all[..1]).await.unwrap();
    Ticks::push_many(&store, "m", &all[1..24]).await.unwrap();
    Ticks::push(&store, "m", all[24].clone()).await.unwrap();
    Ticks::push_many(&store, "m", &all[25..]).await.unwrap();
    Ticks::push_many(&store, "m", &[]).await.unwrap();
    let streamed: Vec<Tick> = Ticks::items(&store, "m").try_collect().await.unwrap();
    assert_eq!(streamed, all);
    let docs = documents(&store, "ticks").await;
    assert_eq!(docs.len(), 14);
    assert!(docs
        .iter()
        .all(|d| d.get_array("ticks").unwrap().len() <= 3));
}

/// `push_many` looks for the key's newest bucket from the page number this process remembers;
/// when buckets were deleted behind that memo it still continues after the newest one left (or
/// at page 1 when none is left), losing nothing.
async fn push_many_after_deletes_behind_the_memo(store: AnyStore) {
    use pattern_core::store::query::Filter;
    let all: Vec<Tick> = (0..15)
        .map(|i| tick(3, i, 1_660_000_000 + i as i64))
        .collect();
    let pages = |docs: Vec<Document>| -> Vec<i64> {
        docs.iter().map(|d| d.get_i64("page").unwrap()).collect()
    };
    Ticks::push_many(&store, "d", &all[..9]).await.unwrap(); // pages 1-3 full: next is 4
    let page3 = Filter::and([Filter::eq("user", "d"), Filter::eq("page", 3_i64)]);
    assert_eq!(store.delete_many("ticks", &page3).await.unwrap(), 1);
    Ticks::push_many(&store, "d", &all[9..12]).await.unwrap();
    let streamed: Vec<Tick> = Ticks::items(&store, "d").try_collect().await.unwrap();
    assert_eq!(streamed, [&all[..6], &all[9..12]].concat());
    assert_eq!(pages(documents(&store, "ticks").await), [1, 2, 3]);

    assert_eq!(
        store
            .delete_many("ticks", &Filter::eq("user", "d"))
            .await
            .unwrap(),
        3
    );
    Ticks::push_many(&store, "d", &all[12..]).await.unwrap();
    let streamed: Vec<Tick> = Ticks::items(&store, "d").try_collect().await.unwrap();
    assert_eq!(streamed, &all[12..]);
    assert_eq!(pages(documents(&store, "ticks").await), [1]);
}

/// Keys that a regex on `_id` would confuse each see only their own items.
async fn keys_never_leak(store: AnyStore) {
    let keys = [
        "12",
        "12_3",
        "a.b",
        "aXb",
        "^x$",
        "x",
        "{\"$gt\": \"\"}",
        "$where",
        "",
        "ключ_🔑",
        "1_2",
        "1",
    ];
    for (w, key) in keys.into_iter().enumerate() {
        for n in 0..7 {
            Ticks::push(&store, key, tick(w as u32, n, 1_500_000_000 + n as i64))
                .await
                .unwrap();
        }
    }
    for (w, key) in keys.into_iter().enumerate() {
        let items: Vec<Tick> = Ticks::items(&store, key).try_collect().await.unwrap();
        assert_eq!(items.len(), 7, "key {key:?}");
        assert!(
            items.iter().all(|t| t.writer == w as u32),
            "key {key:?} sees another key's items"
        );
        assert_eq!(
            Ticks::counts(&store, key).await.unwrap(),
            Counts { items: 7, pages: 3 },
            "key {key:?}"
        );
        for n in 1..=3 {
            let page = Ticks::page(&store, key, n).await.unwrap().unwrap();
            assert!(
                page.items.iter().all(|t| t.writer == w as u32),
                "key {key:?} page {n}"
            );
        }
        assert!(
            Ticks::page(&store, key, 4).await.unwrap().is_none(),
            "key {key:?}"
        );
    }
}

/// ObjectId keys, and items without a time field.
async fn object_id_keys(store: AnyStore) {
    let (a, b) = (bson::oid::ObjectId::new(), bson::oid::ObjectId::new());
    for i in 0..6 {
        Notes::push(&store, &a, format!("a{i}")).await.unwrap();
        Notes::push(&store, &b, format!("b{i}")).await.unwrap();
    }
    let got: Vec<String> = Notes::items(&store, &a).try_collect().await.unwrap();
    assert_eq!(got, (0..6).map(|i| format!("a{i}")).collect::<Vec<_>>());
    let first = Notes::page(&store, &b, 1).await.unwrap().unwrap();
    assert!(first
        .id
        .as_str()
        .unwrap()
        .starts_with(&format!("{}_", b.to_hex())));
    assert_eq!(
        Notes::counts(&store, &b).await.unwrap(),
        Counts { items: 6, pages: 2 }
    );
}

/// Checks every invariant of a key's buckets after concurrent writers; returns the items.
async fn check_invariants(store: &AnyStore, key: &str, writers: u32, per_writer: u32) {
    let docs = documents(store, "ticks").await;
    let mine: Vec<&Document> = docs
        .iter()
        .filter(|d| d.get_str("user") == Ok(key))
        .collect();
    let mut open = 0;
    let mut numbers: Vec<i64> = mine
        .iter()
        .map(|d| pattern_tests::as_int(d.get("page").unwrap()).unwrap())
        .collect();
    numbers.sort();
    assert_eq!(
        numbers,
        (1..=mine.len() as i64).collect::<Vec<_>>(),
        "pages not numbered 1..n"
    );
    for d in &mine {
        let n = d.get_array("ticks").unwrap().len();
        assert!(n <= 3, "bucket {} holds {n} items", d.get("_id").unwrap());
        assert_eq!(
            pattern_tests::as_int(d.get("count").unwrap()),
            Some(n as i64),
            "count disagrees"
        );
        open += usize::from(n < 3);
    }
    // A bucket is opened only when the newest is full, so at most one is open: the newest.
    assert!(open <= 1, "{open} open buckets for one key");
    let items: Vec<Tick> = Ticks::items(store, key).try_collect().await.unwrap();
    assert_eq!(
        items.len() as u32,
        writers * per_writer,
        "items lost or duplicated"
    );
    let unique: HashSet<&Tick> = items.iter().collect();
    assert_eq!(unique.len(), items.len(), "an item was stored twice");
    // Each writer's items are read back in the order it pushed them (pages are in number
    // order, and each writer opens bucket n + 1 only after it saw bucket n full).
    let mut last: BTreeMap<u32, u32> = BTreeMap::new();
    for t in &items {
        if let Some(prev) = last.insert(t.writer, t.n) {
            assert!(
                prev < t.n,
                "writer {} pushed {} after {}",
                t.writer,
                prev,
                t.n
            );
        }
    }
    let pages: Vec<_> = Ticks::pages(store, key).try_collect().await.unwrap();
    for (i, page) in pages.iter().enumerate() {
        let direct = Ticks::page(store, key, i as u64 + 1)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(direct, *page, "page {} read directly differs", i + 1);
    }
    assert_eq!(
        Ticks::counts(store, key).await.unwrap().items,
        u64::from(writers * per_writer)
    );
}

async fn concurrent_writers(store: AnyStore, key: &'static str, same_second: bool) {
    const WRITERS: u32 = 16;
    // All in one second, every bucket opening collides: 100 pushes a writer is 534 such
    // collisions, and keeps the MongoDB run short.
    let pushes: u32 = if same_second { 100 } else { 500 };
    let base = 1_690_000_000;
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for n in 0..pushes {
                    // Every writer's items share seconds with the others', so buckets are opened
                    // concurrently in the same second all the time.
                    let at = if same_second {
                        base
                    } else {
                        base + i64::from(n)
                    };
                    Ticks::push(&store, key, tick(w, n, at))
                        .await
                        .expect("push");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    check_invariants(&store, key, WRITERS, pushes).await;
}

/// 16 tasks × 500 pushes to one key: nothing lost or duplicated, no bucket over size, one
/// open bucket, each writer's order kept, and no duplicate-key error reaches the caller.
async fn concurrent_pushes_to_one_key(store: AnyStore) {
    concurrent_writers(store, "hot", false).await;
}

/// The same (16 tasks × 100 pushes), with every item in the same second: every bucket opened
/// collides on `_id`.
async fn concurrent_pushes_same_second(store: AnyStore) {
    concurrent_writers(store, "burst", true).await;
}

/// A document of the wrong shape gives a decode error naming the collection and `_id`.
async fn foreign_documents_give_decode_errors(store: AnyStore) {
    store
        .insert_one(
            "trades",
            doc! {"_id": "9_1", "customerId": 9_i64, "count": 1, "history": ["not a trade"]},
        )
        .await
        .unwrap();
    store
        .insert_one(
            "trades",
            doc! {"_id": "8_1", "customerId": 8_i64, "count": 1, "history": "not an array"},
        )
        .await
        .unwrap();
    store
        .insert_one(
            "trades",
            doc! {"_id": "7_1", "customerId": 7_i64, "history": [], "count": "three"},
        )
        .await
        .unwrap();
    let is_decode = |r: &Error, id: &str| matches!(r, Error::Decode { collection, id: got, .. } if collection == "trades" && got.contains(id));
    let e = TradeHistory::page(&store, &9, 1).await.unwrap_err();
    assert!(is_decode(&e, "9_1"), "{e:?}");
    let e = TradeHistory::items(&store, &9)
        .try_collect::<Vec<_>>()
        .await
        .unwrap_err();
    assert!(is_decode(&e, "9_1"), "{e:?}");
    let e = TradeHistory::page(&store, &8, 1).await.unwrap_err();
    assert!(is_decode(&e, "8_1"), "{e:?}");
    let e = TradeHistory::counts(&store, &8).await.unwrap_err();
    assert!(is_decode(&e, "8_1"), "{e:?}");
    // A bucket whose count is not a number is never pushed into (it is not open): the push
    // opens a new bucket and nothing is lost.
    TradeHistory::push(&store, &7, trade("buy", "X", 1, "2024-01-01T00:00:00Z"))
        .await
        .unwrap();
    assert_eq!(
        TradeHistory::counts(&store, &7).await.unwrap(),
        Counts { items: 1, pages: 2 }
    );
}

/// The indexes the reads need exist after first use, and ensuring them again changes nothing.
/// An open-bucket index under an older name (`pattern_open_...`) and one for another `size`
/// are replaced.
async fn indexes_are_created_idempotently(store: AnyStore) {
    for name in [
        "pattern_open_customerId_page_count_lt_10",
        "0_pattern_open_customerId_page_count_lt_4",
    ] {
        let size = name.rsplit('_').next().unwrap().parse::<i32>().unwrap();
        let spec = pattern_core::store::query::IndexSpec {
            name: name.into(),
            keys: vec![
                ("customerId".into(), 1),
                ("page".into(), -1),
                ("_id".into(), -1),
            ],
            unique: false,
            partial: Some(pattern_core::store::query::Filter::Lt(
                "count".into(),
                Bson::Int32(size),
            )),
        };
        store.create_index("trades", &spec).await.unwrap();
    }
    TradeHistory::ensure_indexes(&store).await.unwrap();
    TradeHistory::ensure_indexes(&store).await.unwrap();
    store.extensions().forget();
    TradeHistory::ensure_indexes(&store).await.unwrap();
    let mut names = store.index_names("trades").await.unwrap();
    names.sort();
    assert_eq!(
        names,
        [
            "0_pattern_open_customerId_page_count_lt_10",
            "_id_",
            "pattern_customerId_1_bounded_1_date_max_1_date_min_1",
            "pattern_customerId_1_page_-1_unique",
            "pattern_customerId_1_page_1__id_1",
        ]
    );
}

/// A single item per bucket, so that streams cross batch boundaries.
#[derive(Bucket)]
#[bucket(collection = "blobs", size = 1)]
#[allow(dead_code)]
struct Blobs {
    #[bucket(key)]
    k: i64,
    #[bucket(items)]
    blobs: Vec<String>,
}

/// The streams return every bucket when a key has more than one batch of them
/// (`STREAM_BATCH`), and when one batch of them is more than a 16 MiB reply: a server may cut a
/// batch short (SecantusDB returns at most 101 documents in a first batch), and the rest must
/// still come (found by the round-trip benchmark: a stream of 1,000 buckets returned 101).
async fn streams_cross_batches(store: AnyStore) {
    let batch = pattern_core::bucket::STREAM_BATCH as usize;
    let small: Vec<String> = (0..batch + 90).map(|i| format!("s{i}")).collect();
    Blobs::push_many(&store, &1, &small).await.unwrap();
    let got: Vec<String> = Blobs::items(&store, &1).try_collect().await.unwrap();
    assert_eq!(got, small);
    // 200 buckets of 100 KiB: 20 MiB, more than one reply holds.
    let big: Vec<String> = (0..200)
        .map(|i| format!("{i:03}{}", "x".repeat(100 * 1024)))
        .collect();
    Blobs::push_many(&store, &2, &big).await.unwrap();
    let pages: Vec<_> = Blobs::pages(&store, &2).try_collect().await.unwrap();
    assert_eq!(pages.len(), 200);
    assert!(pages.iter().zip(&big).all(|(p, b)| p.items == [b.clone()]));
}

/// A burst: buckets that open within one second take the next suffix after the newest
/// bucket's, whether this store opened it, found it open, or read it; batches too. Items and
/// pages stay in push order.
async fn same_second_burst(store: AnyStore) {
    for i in 0..12 {
        Ticks::push(&store, "b", tick(0, i, 1_700_000_000))
            .await
            .unwrap();
    }
    // A store that has not seen the key (another process): it reads the newest bucket.
    store.extensions().forget();
    Ticks::push(&store, "b", tick(0, 12, 1_700_000_000))
        .await
        .unwrap();
    store.extensions().forget();
    let batch: Vec<Tick> = (13..20).map(|i| tick(0, i, 1_700_000_000)).collect();
    Ticks::push_many(&store, "b", &batch).await.unwrap();
    let ids: Vec<String> = documents(&store, "ticks")
        .await
        .iter()
        .map(|d| d.get_str("_id").unwrap().to_owned())
        .collect();
    let want: Vec<String> = (0..7)
        .map(|k| match k {
            0 => "b_1700000000".to_owned(),
            k => format!("b_1700000000_{k:06}"),
        })
        .collect();
    assert_eq!(ids, want);
    let all: Vec<u32> = Ticks::items(&store, "b")
        .map_ok(|t| t.n)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all, (0..20).collect::<Vec<_>>());
    for p in 1..=7u64 {
        let page = Ticks::page(&store, "b", p).await.unwrap().unwrap();
        assert_eq!(page.id, Bson::String(want[p as usize - 1].clone()));
    }
}

/// Page numbers past 2^63-1 (numbers are stored as Int64): `None` on both stores, nothing
/// sent; page 0 is `InvalidInput`.
async fn page_numbers_past_the_largest(store: AnyStore) {
    Ticks::push(&store, "h", tick(0, 0, 1_700_000_000))
        .await
        .unwrap();
    let largest = i64::MAX as u64;
    for n in [largest, largest + 1, u64::MAX - 1, u64::MAX] {
        assert_eq!(Ticks::page(&store, "h", n).await.unwrap(), None, "page {n}");
    }
    let e = Ticks::page(&store, "h", 0).await.unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
}

on_both_stores!(
    same_second_burst,
    page_numbers_past_the_largest,
    seed_replay_gives_seed_documents,
    streams_cross_batches,
    seed_layout_without_page_numbers,
    full_bucket_opens_a_new_one,
    same_second_buckets_get_ordered_ids,
    streams_and_counts,
    push_many_keeps_order_and_size,
    push_many_after_deletes_behind_the_memo,
    keys_never_leak,
    object_id_keys,
    concurrent_pushes_to_one_key,
    concurrent_pushes_same_second,
    foreign_documents_give_decode_errors,
    indexes_are_created_idempotently,
);

/// On MongoDB a push is one round trip, two when it opens a bucket; a page read is one, however
/// deep.
#[tokio::test]
async fn mongo_push_and_page_round_trips() {
    let (store, log) = counted_mongo_store("round_trips").await;
    Ticks::push(&store, "rt", tick(0, 0, 1_700_000_000))
        .await
        .unwrap(); // creates the indexes
    log.clear();
    for n in 1..=300 {
        Ticks::push(&store, "rt", tick(0, n, 1_700_000_000 + i64::from(n)))
            .await
            .unwrap();
    }
    // Each push is one `update`, the seed's conditional upsert, also the 100 that open a
    // bucket (size 3): the store knows the next page number from its earlier pushes.
    assert_eq!(log.count("update"), 300, "{:?}", log.names());
    assert_eq!(
        log.len(),
        300,
        "pushes sent other commands: {:?}",
        log.names()
    );
    log.clear();
    let page = Ticks::page(&store, "rt", 50).await.unwrap().unwrap();
    assert_eq!(page.items[0].n, 147);
    assert_eq!(log.names(), ["find"]);
    log.clear();
    let all: Vec<Tick> = Ticks::items(&store, "rt").try_collect().await.unwrap();
    assert_eq!(all.len(), 301);
    assert_eq!(
        log.count("find"),
        101usize.div_ceil(pattern_core::bucket::STREAM_BATCH as usize),
        "{:?}",
        log.names()
    );
    log.clear();
    Ticks::counts(&store, "rt").await.unwrap();
    assert_eq!(log.names(), ["aggregate"]);
    // A store that has not seen the key's newest bucket (another process did) opens the next
    // one with three: the miss, a read of the newest bucket, the insert. Then one again.
    for n in 301..=302 {
        Ticks::push(&store, "rt", tick(0, n, 1_700_000_000 + i64::from(n)))
            .await
            .unwrap(); // fills bucket 101
    }
    store.extensions().forget();
    log.clear();
    Ticks::push(&store, "rt", tick(0, 303, 1_700_000_303))
        .await
        .unwrap();
    let sent = without_index_commands(&log);
    assert_eq!(sent, ["findAndModify", "find", "insert"]);
    log.clear();
    Ticks::push(&store, "rt", tick(0, 304, 1_700_000_304))
        .await
        .unwrap();
    assert_eq!(log.names(), ["update"]);
    // Into an open bucket it has not seen: one `findAndModify`, whose reply gives the bucket's
    // number; then `update` again.
    store.extensions().forget();
    log.clear();
    for n in 305..=306 {
        Ticks::push(&store, "rt", tick(0, n, 1_700_000_000 + i64::from(n)))
            .await
            .unwrap();
    }
    let sent = without_index_commands(&log);
    assert_eq!(sent, ["findAndModify", "update"]);
    let last = Ticks::page(&store, "rt", 102).await.unwrap().unwrap();
    assert_eq!(
        last.items.iter().map(|t| t.n).collect::<Vec<_>>(),
        [303, 304, 305]
    );
    let newest = Ticks::page(&store, "rt", 103).await.unwrap().unwrap();
    assert_eq!(newest.items.iter().map(|t| t.n).collect::<Vec<_>>(), [306]);
    let _ = store.database().drop().await;
}

/// On MongoDB a burst within one second opens each bucket with one `update`, like any other
/// push: the suffix follows the newest bucket's. A store that has not seen the key reads the
/// newest bucket and opens the next without a refusal. When an `_id` is taken by a document it
/// could not know, the refusal is followed by a read of the free suffix and one more `update`:
/// the taken `_id` is never sent again.
#[tokio::test]
async fn mongo_same_second_burst_round_trips() {
    let (store, log) = counted_mongo_store("burst_round_trips").await;
    Ticks::push(&store, "b", tick(0, 0, 1_700_000_000))
        .await
        .unwrap(); // creates the indexes
    log.clear();
    for i in 1..12 {
        Ticks::push(&store, "b", tick(0, i, 1_700_000_000))
            .await
            .unwrap();
    }
    assert_eq!(log.names(), vec!["update"; 11]);
    store.extensions().forget();
    log.clear();
    Ticks::push(&store, "b", tick(0, 12, 1_700_000_000))
        .await
        .unwrap(); // opens bucket 5
    assert_eq!(
        without_index_commands(&log),
        ["findAndModify", "find", "insert"]
    );
    // A document of another key holds the `_id` bucket 7 would get.
    store
        .insert_one(
            "ticks",
            doc! {"_id": "b_1700000000_000006", "user": "other"},
        )
        .await
        .unwrap();
    log.clear();
    for i in 13..18 {
        Ticks::push(&store, "b", tick(0, i, 1_700_000_000))
            .await
            .unwrap(); // fills 5, opens and fills 6
    }
    assert_eq!(log.names(), vec!["update"; 5]);
    log.clear();
    Ticks::push(&store, "b", tick(0, 18, 1_700_000_000))
        .await
        .unwrap(); // opens 7
    assert_eq!(log.names(), ["update", "find", "update"]);
    let ids: Vec<String> = documents(&store, "ticks")
        .await
        .iter()
        .filter(|d| d.get_str("user") == Ok("b"))
        .map(|d| d.get_str("_id").unwrap().to_owned())
        .collect();
    assert_eq!(ids.last().unwrap(), "b_1700000000_000007");
    assert_eq!(ids.len(), 7);
    let _ = store.database().drop().await;
}

/// The commands of `log` but the index ones (a store that forgot what it ensured re-checks its
/// indexes).
fn without_index_commands(log: &pattern_tests::CommandLog) -> Vec<String> {
    log.names()
        .into_iter()
        .filter(|n| n != "createIndexes" && n != "listIndexes")
        .collect()
}

/// Two processes pushing in turn to one key: each remembers the next page number from its own
/// pushes, so when the other one opened that page its upsert collides on the unique page
/// index; it then finds the open bucket. Nothing is lost or reordered, pages stay dense and
/// full, and a push stays one round trip except around a bucket the other process opened.
#[tokio::test]
async fn mongo_two_processes_push_in_turn() {
    let (a, log) = counted_mongo_store("two_processes").await;
    let b = pattern_tests::second_client(&a).await;
    let n = 90;
    for i in 0..n {
        let store = if i % 2 == 0 { &a } else { &b };
        Ticks::push(store, "k", tick(0, i, 1_700_000_000 + i64::from(i)))
            .await
            .unwrap();
    }
    let pages = Ticks::counts(&a, "k").await.unwrap();
    assert_eq!(pages.items, u64::from(n));
    assert_eq!(pages.pages, u64::from(n).div_ceil(3));
    for p in 1..=pages.pages {
        let page = Ticks::page(&b, "k", p).await.unwrap().unwrap();
        let want: Vec<u32> = (3 * (p as u32 - 1)..3 * p as u32).collect();
        assert_eq!(
            page.items.iter().map(|t| t.n).collect::<Vec<_>>(),
            want,
            "page {p}"
        );
    }
    // Process `a` made 45 pushes; the ones after `b` opened a bucket cost a collision and a
    // `findAndModify` more.
    let writes = log.count("update") + log.count("findAndModify") + log.count("insert");
    println!(
        "process a: {writes} writes for 45 pushes: {:?}",
        log.names()
    );
    assert!(writes <= 45 * 2, "{:?}", log.names());
    let _ = a.database().drop().await;
}

/// An unreachable server gives `Error::Unavailable` within the configured time, not a hang.
#[tokio::test]
async fn unreachable_server_is_a_typed_error() {
    let store = MongoStore::connect(
        "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300&connectTimeoutMS=300",
        "nowhere",
    )
    .await
    .unwrap();
    let start = Instant::now();
    let err = Ticks::push(&store, "k", tick(0, 0, 0)).await.unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    let err = Ticks::page(&store, "k", 1).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
}

/// The in-memory store dumps the documents it holds as Extended JSON, one per line.
#[tokio::test]
async fn memory_store_dumps_extended_json() {
    let store = pattern_core::MemoryStore::new();
    TradeHistory::push(
        &store,
        &123,
        trade("buy", "MDB", 419, "2023-10-26T15:47:03.434Z"),
    )
    .await
    .unwrap();
    let json = store.dump_extjson("trades");
    assert_eq!(json.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["_id"], "123_1698335223");
    assert_eq!(v["customerId"], 123);
    assert_eq!(v["history"][0]["date"]["$date"], "2023-10-26T15:47:03.434Z");
}
