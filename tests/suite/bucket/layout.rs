//! The seed's layout and ids, bucket sizes, streams and counts, batch pushes, isolation of keys,
//! ObjectId keys.

use super::*;
use pattern_core::store;

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
        Err(Error::Store(store::Error::InvalidInput(_)))
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
    let all = tick_numbers(&store, "s").await;
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

on_both_stores!(
    seed_replay_gives_seed_documents,
    seed_layout_without_page_numbers,
    full_bucket_opens_a_new_one,
    same_second_buckets_get_ordered_ids,
    streams_and_counts,
    push_many_keeps_order_and_size,
    push_many_after_deletes_behind_the_memo,
    keys_never_leak,
    object_id_keys,
);
