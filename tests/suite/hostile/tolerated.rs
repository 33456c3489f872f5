//! Foreign documents the library tolerates, with the behaviour RELIABILITY.md documents.

use super::*;
use pattern_core::store;

fn t(n: i64) -> Trade {
    Trade {
        ticker: format!("T{n}"),
        qty: n,
        date: bson::DateTime::from_millis(1_700_000_000_000 + n * 1000),
    }
}

fn t_doc(n: i64) -> Bson {
    bson::to_bson(&t(n)).unwrap()
}

fn names(r: std::ops::Range<u32>) -> Vec<String> {
    r.map(|i| format!("user{i:02}")).collect()
}

/// A bucket without `count` is read, and never pushed into: a push opens a new bucket.
async fn bucket_without_count(store: AnyStore) {
    let foreign = bson::doc! {"_id": "7_1", "customerId": 7_i64, "history": [t_doc(1)]};
    store.insert_one("trades", foreign.clone()).await.unwrap();
    TradeHistory::push(&store, &7, t(2)).await.unwrap();
    let pages: Vec<_> = TradeHistory::pages(&store, &7).try_collect().await.unwrap();
    let items: Vec<Vec<Trade>> = pages.iter().map(|p| p.items.clone()).collect();
    assert_eq!(items, vec![vec![t(1)], vec![t(2)]]);
    let c = TradeHistory::counts(&store, &7).await.unwrap();
    assert_eq!((c.items, c.pages), (2, 2));
    let docs = pattern_tests::documents(&store, "trades").await;
    assert_eq!(docs[0], foreign, "the foreign bucket was written to");
}

/// `count` disagreeing with the array: reads and counts follow the array; `count` alone decides
/// whether the bucket is open (a push goes in while `count < size`).
async fn bucket_count_disagrees_with_array(store: AnyStore) {
    // Claims 1 item, holds 4 (size is 3): open, by its count.
    store
        .insert_one(
            "trades",
            bson::doc! {"_id": "8_1", "customerId": 8_i64, "count": 1,
            "history": [t_doc(1), t_doc(2), t_doc(3), t_doc(4)]},
        )
        .await
        .unwrap();
    // Claims 3 items (full), holds 1: closed.
    store
        .insert_one(
            "trades",
            bson::doc! {"_id": "9_1", "customerId": 9_i64, "count": 3, "history": [t_doc(1)]},
        )
        .await
        .unwrap();
    assert_eq!(
        TradeHistory::page(&store, &8, 1)
            .await
            .unwrap()
            .unwrap()
            .items,
        vec![t(1), t(2), t(3), t(4)]
    );
    TradeHistory::push(&store, &8, t(5)).await.unwrap();
    TradeHistory::push(&store, &9, t(2)).await.unwrap();
    let c8 = TradeHistory::counts(&store, &8).await.unwrap();
    let c9 = TradeHistory::counts(&store, &9).await.unwrap();
    assert_eq!(
        (c8.items, c8.pages),
        (5, 1),
        "pushed into the bucket its count calls open"
    );
    assert_eq!(
        (c9.items, c9.pages),
        (2, 2),
        "a bucket its count calls full is left alone"
    );
    let all: Vec<Trade> = TradeHistory::items(&store, &8).try_collect().await.unwrap();
    assert_eq!(all, (1..=5).map(t).collect::<Vec<_>>());
}

/// Unknown extra fields are kept by pushes and ignored by reads.
async fn unknown_fields_are_kept(store: AnyStore) {
    store
        .insert_one(
            "trades",
            bson::doc! {"_id": "6_1", "customerId": 6_i64, "count": 1, "history": [t_doc(1)],
            "note": "by another tool"},
        )
        .await
        .unwrap();
    store
        .insert_one(
            "sales",
            bson::doc! {"_id": 6_i64, "title": "T", "customers_purchased": ["user00"],
            "isbn": "0-15-645380-0"},
        )
        .await
        .unwrap();
    TradeHistory::push(&store, &6, t(2)).await.unwrap();
    for u in names(1..4) {
        Book::push(&store, &6, u).await.unwrap();
    }
    let trades = pattern_tests::documents(&store, "trades").await;
    assert_eq!(trades[0].get_str("note").unwrap(), "by another tool");
    assert_eq!(trades[0].get_array("history").unwrap().len(), 2);
    let sales = pattern_tests::documents(&store, "sales").await;
    assert_eq!(sales[0].get_str("isbn").unwrap(), "0-15-645380-0");
    assert_eq!(
        Book::all_items(&store, &6).await.unwrap().unwrap(),
        names(0..4)
    );
}

/// A main array already over the threshold (written by another tool, or under a larger
/// threshold): the typical read shows the first `threshold` items and says it has extras; the
/// full read returns them all; the next push goes to the overflow and sets the flag.
async fn main_array_over_threshold(store: AnyStore) {
    store
        .insert_one(
            "sales",
            bson::doc! {"_id": 4_i64, "title": "T", "customers_purchased": names(0..5)},
        )
        .await
        .unwrap();
    let typical = Book::typical(&store, &4).await.unwrap().unwrap();
    assert_eq!(typical.doc.customers_purchased, names(0..2));
    assert!(typical.has_extras);
    assert_eq!(
        Book::all_items(&store, &4).await.unwrap().unwrap(),
        names(0..5)
    );
    Book::push(&store, &4, "user05".into()).await.unwrap();
    let docs = pattern_tests::documents(&store, "sales").await;
    assert_eq!(
        docs[0].get_array("customers_purchased").unwrap().len(),
        5,
        "main array untouched"
    );
    assert_eq!(docs[0].get_bool("has_extras"), Ok(true));
    assert_eq!(
        Book::all_items(&store, &4).await.unwrap().unwrap(),
        names(0..6)
    );
    assert_eq!(Book::counts(&store, &4).await.map(|c| c.items).unwrap(), 6);
}

/// Two overflow chunks of one parent with the same number (inserted by another tool before our
/// unique index existed): the index that keeps chunk numbers unique cannot be built, so every
/// read of the items and every push returns `store::Error::InvalidInput` saying so, until the
/// duplicates are merged or renumbered; nothing is written meanwhile. The typical read (main
/// document only) and the count (an aggregation, which counts both) still work.
async fn duplicate_overflow_chunks(store: AnyStore) {
    store
        .insert_one(
            "sales",
            bson::doc! {"_id": 3_i64, "title": "T", "customers_purchased": names(0..2),
            "has_extras": true},
        )
        .await
        .unwrap();
    for (oid, users) in [(1u8, names(2..4)), (2u8, names(4..5))] {
        let mut id = [0u8; 12];
        id[11] = oid;
        store
            .insert_one(
                "extra_sales",
                bson::doc! {"_id": bson::oid::ObjectId::from_bytes(id), "book_id": 3_i64,
                "count": users.len() as i32, "customers_purchased_extra": users, "seq": 1_i64},
            )
            .await
            .unwrap();
    }
    let before = pattern_tests::documents(&store, "extra_sales").await;
    let refused = |r: Result<(), Error>| match r {
        Err(Error::Store(store::Error::InvalidInput(m))) => {
            assert!(m.contains("same key and sequence number"), "{m}")
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    };
    refused(Book::all_items(&store, &3).await.map(drop));
    // The count is an aggregation that needs no index: it counts both chunks.
    assert_eq!(Book::counts(&store, &3).await.map(|c| c.items).unwrap(), 5);
    refused(Book::push(&store, &3, "user05".into()).await);
    assert_eq!(
        pattern_tests::documents(&store, "extra_sales").await,
        before
    );
    let typical = Book::typical(&store, &3).await.unwrap().unwrap();
    assert_eq!(
        (typical.doc.customers_purchased, typical.has_extras),
        (names(0..2), true)
    );

    // Renumbered by hand, everything works again, in order.
    let mut second = before[1].clone();
    second.insert("seq", 2_i64);
    store
        .delete_many(
            "extra_sales",
            &pattern_core::store::query::Filter::and([
                pattern_core::store::query::Filter::eq("book_id", 3_i64),
                pattern_core::store::query::Filter::eq("_id", second.get("_id").unwrap().clone()),
            ]),
        )
        .await
        .unwrap();
    store.insert_one("extra_sales", second).await.unwrap();
    Book::push(&store, &3, "user05".into()).await.unwrap();
    assert_eq!(
        Book::all_items(&store, &3).await.unwrap().unwrap(),
        names(0..6)
    );
}

/// Overflow chunks of a parent whose flag is not set (a tool wrote them without the flag): the
/// reads serve the main document alone (the flag says whether to look further); a push over
/// the threshold sets the flag, and from then on they are read, before the new item.
async fn overflow_without_flag(store: AnyStore) {
    store
        .insert_one(
            "sales",
            bson::doc! {"_id": 2_i64, "title": "T", "customers_purchased": names(0..2)},
        )
        .await
        .unwrap();
    store
        .insert_one(
            "extra_sales",
            bson::doc! {"book_id": 2_i64, "customers_purchased_extra": names(2..4)},
        )
        .await
        .unwrap();
    assert_eq!(
        Book::all_items(&store, &2).await.unwrap().unwrap(),
        names(0..2)
    );
    assert_eq!(Book::counts(&store, &2).await.map(|c| c.items).unwrap(), 2);
    Book::push(&store, &2, "user04".into()).await.unwrap();
    assert_eq!(
        Book::all_items(&store, &2).await.unwrap().unwrap(),
        names(0..5)
    );
}

/// Buckets and overflow chunks whose number (`page`, `seq`) is neither absent nor a number
/// (a string, null, an array, a document: written by another tool) are not part of the series:
/// no read returns or counts them, no push writes to them, and they are left as they were.
async fn number_not_a_number(store: AnyStore) {
    let odd = [
        Bson::String("x".into()),
        Bson::Null,
        Bson::Array(vec![Bson::String("a".into())]),
        Bson::Document(bson::doc! {"n": 1}),
        // Met by a bound on the number (`page >= n`), as an array holding a number is: the
        // newest-bucket read of `push_many` must still pass over it.
        Bson::Array(vec![Bson::Int64(1_000_000)]),
    ];
    let mut foreign = Vec::new();
    for (i, page) in odd.iter().enumerate() {
        // Open (count 1 below size 3), under the key the reads and pushes below touch.
        let d = bson::doc! {"_id": format!("4_f{i}"), "customerId": 4_i64, "count": 1,
        "history": [t_doc(100 + i as i64)], "page": page.clone()};
        store.insert_one("trades", d.clone()).await.unwrap();
        foreign.push(d);
    }
    // One unnumbered bucket in the seed's layout, which is part of the series (it comes first).
    store
        .insert_one(
            "trades",
            bson::doc! {"_id": "4_0", "customerId": 4_i64, "count": 3,
            "history": [t_doc(0), t_doc(1), t_doc(2)]},
        )
        .await
        .unwrap();
    for n in 3..10 {
        TradeHistory::push(&store, &4, t(n)).await.unwrap();
    }
    TradeHistory::push_many(&store, &4, &[t(10), t(11)])
        .await
        .unwrap();
    let want: Vec<Trade> = (0..12).map(t).collect();
    let items: Vec<Trade> = TradeHistory::items(&store, &4).try_collect().await.unwrap();
    assert_eq!(items, want);
    let pages: Vec<Vec<Trade>> = TradeHistory::pages(&store, &4)
        .map_ok(|p| p.items)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        pages,
        want.chunks(3).map(<[Trade]>::to_vec).collect::<Vec<_>>()
    );
    let c = TradeHistory::counts(&store, &4).await.unwrap();
    assert_eq!((c.items, c.pages), (12, 4));
    for n in 1..=4u64 {
        let page = TradeHistory::page(&store, &4, n).await.unwrap().unwrap();
        assert_eq!(page.items, pages[n as usize - 1], "page {n}");
    }
    assert_eq!(TradeHistory::page(&store, &4, 5).await.unwrap(), None);
    for d in &foreign {
        let id = d.get("_id").unwrap().clone();
        let stored = store
            .find(
                "trades",
                &pattern_core::store::query::Filter::eq("_id", id),
                &pattern_tests::read_back(),
            )
            .await
            .unwrap();
        assert_eq!(
            stored,
            std::slice::from_ref(d),
            "a foreign bucket was written to"
        );
    }

    // Overflow chunks of parent 4 numbered with a string: not read, not counted, not written.
    Book {
        id: 4,
        title: "b".into(),
        customers_purchased: names(0..2),
    }
    .save(&store)
    .await
    .unwrap();
    let chunk = bson::doc! {"_id": "odd", "book_id": 4_i64, "count": 1,
    "customers_purchased_extra": ["zz"], "seq": "one"};
    store
        .insert_one("extra_sales", chunk.clone())
        .await
        .unwrap();
    for i in 2..5 {
        Book::push(&store, &4, format!("user{i:02}")).await.unwrap();
    }
    let all = Book::all_items(&store, &4).await.unwrap().unwrap();
    assert_eq!(all, names(0..5));
    let streamed: Vec<String> = Book::items(&store, &4).try_collect().await.unwrap();
    assert_eq!(streamed, names(0..5));
    assert_eq!(Book::counts(&store, &4).await.map(|c| c.items).unwrap(), 5);
    assert_eq!(
        Book::full(&store, &4)
            .await
            .unwrap()
            .unwrap()
            .customers_purchased,
        names(0..5)
    );
    let odd_chunk = store
        .find(
            "extra_sales",
            &pattern_core::store::query::Filter::eq("_id", "odd"),
            &pattern_tests::read_back(),
        )
        .await
        .unwrap();
    assert_eq!(odd_chunk, [chunk], "the foreign chunk was written to");
}

/// A number field holding an array of numbers: a unique index on `{key, number}` files the
/// document under each of them (both stores' indexes are multikey, as MongoDB's), so the
/// buckets with those numbers cannot open there. The push says so, naming the document (not a
/// retry loop that ends in `Contention`), on both stores alike.
async fn number_field_holding_numbers(store: AnyStore) {
    let d = bson::doc! {"_id": "2_f", "customerId": 2_i64, "count": 3,
    "history": [t_doc(100)], "page": [1_i64, 2_i64]};
    store.insert_one("trades", d.clone()).await.unwrap();
    let e = TradeHistory::push(&store, &2, t(1)).await.unwrap_err();
    assert!(
        matches!(&e, Error::Store(store::Error::Decode { collection, id, reason })
            if collection == "trades" && id.contains("2_f") && reason.contains("holds number 1")),
        "{e:?}"
    );
}

/// A push into a document whose array field is not an array (written by another tool) is
/// `store::Error::Decode` naming the collection and the document, as a read of it is; nothing is
/// written.
async fn pushes_into_a_non_array_name_the_document(store: AnyStore) {
    let bucket = bson::doc! {"_id": "3_1", "customerId": 3_i64, "count": 1, "history": "text"};
    store.insert_one("trades", bucket.clone()).await.unwrap();
    let is_decode = |e: &Error, coll: &str, id: &str| {
        matches!(e, Error::Store(store::Error::Decode { collection, id: got, reason })
            if collection == coll && got.contains(id) && reason.contains("not an array"))
    };
    // The first push of this store to the key (`findAndModify`)...
    let e = TradeHistory::push(&store, &3, t(1)).await.unwrap_err();
    assert!(is_decode(&e, "trades", "3_1"), "{e:?}");
    // ... a batch (a compare-and-set on the newest bucket)...
    let e = TradeHistory::push_many(&store, &3, &[t(2), t(3)])
        .await
        .unwrap_err();
    assert!(is_decode(&e, "trades", "3_1"), "{e:?}");
    // ... and a push that knows the key's next number (the conditional upsert).
    store
        .delete_many(
            "trades",
            &pattern_core::store::query::Filter::eq("customerId", 3_i64),
        )
        .await
        .unwrap();
    TradeHistory::push(&store, &3, t(1)).await.unwrap();
    let filter = pattern_core::store::query::Filter::eq("customerId", 3_i64);
    let mut set = pattern_core::store::query::Update {
        set: vec![("history".into(), Bson::String("text".into()))],
        ..Default::default()
    };
    store
        .update_one("trades", &filter, &mut set, false)
        .await
        .unwrap();
    let before = pattern_tests::documents(&store, "trades").await;
    let e = TradeHistory::push(&store, &3, t(2)).await.unwrap_err();
    let id = before[0].get_str("_id").unwrap().to_owned();
    assert!(is_decode(&e, "trades", &id), "{e:?}");
    assert_eq!(pattern_tests::documents(&store, "trades").await, before);

    // The outlier's main document, and an overflow chunk.
    store
        .insert_one(
            "sales",
            bson::doc! {"_id": 3_i64, "title": "b", "customers_purchased": 7},
        )
        .await
        .unwrap();
    let e = Book::push(&store, &3, "u".into()).await.unwrap_err();
    assert!(is_decode(&e, "sales", "3"), "{e:?}");
    let e = Book::push_many(&store, &3, &["u".into(), "v".into()])
        .await
        .unwrap_err();
    assert!(is_decode(&e, "sales", "3"), "{e:?}");
    store
        .insert_one(
            "sales",
            bson::doc! {"_id": 2_i64, "title": "b", "customers_purchased": ["a", "b"], "has_extras": true},
        )
        .await
        .unwrap();
    store
        .insert_one(
            "extra_sales",
            bson::doc! {"_id": "c1", "book_id": 2_i64, "count": 1, "customers_purchased_extra": "c", "seq": 1_i64},
        )
        .await
        .unwrap();
    let e = Book::push(&store, &2, "d".into()).await.unwrap_err();
    assert!(is_decode(&e, "extra_sales", "c1"), "{e:?}");
}

pattern_tests::on_both_stores!(
    number_not_a_number,
    number_field_holding_numbers,
    pushes_into_a_non_array_name_the_document,
    bucket_without_count,
    bucket_count_disagrees_with_array,
    unknown_fields_are_kept,
    main_array_over_threshold,
    duplicate_overflow_chunks,
    overflow_without_flag,
);
