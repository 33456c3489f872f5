//! Foreign documents, indexes, streams across batches and replies, same-second bursts, page
//! numbers at the edges.

use super::*;
use pattern_core::store;

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
    let is_decode = |r: &Error, id: &str| matches!(r, Error::Store(store::Error::Decode { collection, id: got, .. }) if collection == "trades" && got.contains(id));
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

/// In a collection another tool wrote first, a document of the key whose number is not a
/// number is never pushed into, though it has room: neither by the first push of the process
/// nor by the next ones (the push's filter says so: `OpenPush::filter`; test server T21).
async fn a_foreign_document_without_a_number_takes_no_push(store: AnyStore) {
    let foreign = doc! {
        "_id": "6_x", "customerId": 6_i64, "count": 1, "page": "x",
        "history": [bson::to_bson(&trade("buy", "F", 1, "2024-01-01T00:00:00Z")).unwrap()],
    };
    store.insert_one("trades", foreign.clone()).await.unwrap();
    for n in 0..3 {
        let t = trade("buy", "X", n, "2024-01-02T00:00:00Z");
        TradeHistory::push(&store, &6, t).await.unwrap();
    }
    let stored = pattern_tests::documents(&store, "trades").await;
    let kept = stored
        .iter()
        .find(|d| d.get_str("_id") == Ok("6_x"))
        .unwrap();
    assert_eq!(kept, &foreign, "the foreign document is as it was");
    let items: Vec<_> = TradeHistory::items(&store, &6).try_collect().await.unwrap();
    assert_eq!(items.len(), 3, "{items:?}");
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
pub(super) struct Blobs {
    #[bucket(key)]
    k: i64,
    #[bucket(items)]
    blobs: Vec<String>,
}

/// 200 items of 100 KiB: 20 MiB, more than one reply or command holds.
pub(super) fn big_blobs() -> Vec<String> {
    (0..200)
        .map(|i| format!("{i:03}{}", "x".repeat(100 * 1024)))
        .collect()
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
    let big = big_blobs();
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
    let all = tick_numbers(&store, "b").await;
    assert_eq!(all, (0..20).collect::<Vec<_>>());
    for p in 1..=7u64 {
        let page = Ticks::page(&store, "b", p).await.unwrap().unwrap();
        assert_eq!(page.id, Bson::String(want[p as usize - 1].clone()));
    }
}

/// A batch of new buckets whose second `_id` a document outside the series holds (one this
/// store could not know): the bucket before it stays, the refused one and those after it open
/// under the next free suffixes, nothing is written twice, the items stay in push order, and
/// the other document is left as it was.
async fn a_batch_refused_midway_goes_on(store: AnyStore) {
    let other = doc! {"_id": "m_1700000000_000001", "user": "o", "other": true};
    store.insert_one("ticks", other.clone()).await.unwrap();
    let batch: Vec<Tick> = (0..10).map(|i| tick(0, i, 1_700_000_000)).collect();
    Ticks::push_many(&store, "m", &batch).await.unwrap();
    let docs = documents(&store, "ticks").await;
    assert!(docs.contains(&other), "{docs:?}");
    let ids: Vec<&str> = (docs.iter())
        .filter(|d| !d.contains_key("other"))
        .map(|d| d.get_str("_id").unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "m_1700000000",
            "m_1700000000_000002",
            "m_1700000000_000003",
            "m_1700000000_000004"
        ]
    );
    let all = tick_numbers(&store, "m").await;
    assert_eq!(all, (0..10).collect::<Vec<_>>());
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
    assert!(
        matches!(e, Error::Store(store::Error::InvalidInput(_))),
        "{e:?}"
    );
}

/// A key's buckets as stored: each bucket's number (`None`: none) and its items, in `_id` order.
async fn buckets_of(store: &AnyStore, key: &str) -> Vec<(Option<i64>, Vec<u32>)> {
    let mut out: Vec<(Option<i64>, Vec<u32>)> = (documents(store, "ticks").await.iter())
        .filter(|d| d.get_str("user") == Ok(key))
        .map(|d| {
            let items = d.get_array("ticks").unwrap().iter();
            let n = items.map(|t| {
                pattern_tests::as_int(t.as_document().unwrap().get("n").unwrap()).unwrap() as u32
            });
            (d.get("page").and_then(pattern_tests::as_int), n.collect())
        })
        .collect();
    out.sort_by_key(|(page, _)| *page);
    out
}

/// A key's first push in a process (`forget`) numbers its bucket after the key's own. In a
/// collection the library created, a key never seen opens bucket 1 on a guess, which the
/// unique `{key, page}` index refuses when the key has buckets (then the newest is read); a
/// key with a bucket open fills it. In a collection of another tool (no mark), whose buckets
/// may have no number (and count), nothing is guessed: the newest is read.
async fn a_first_push_numbers_after_the_keys_buckets(store: AnyStore) {
    use pattern_core::store::query::{Filter, Update};
    let at = |n: u32| 1_700_000_000 + i64::from(n);
    let push = |key: &'static str, n: u32| {
        let store = store.clone();
        async move { Ticks::push(&store, key, tick(0, n, at(n))).await.unwrap() }
    };
    for n in 0..6 {
        push("full", n).await;
    }
    for n in 0..4 {
        push("open", n).await;
    }
    store.extensions().forget();
    push("full", 6).await;
    push("open", 4).await;
    push("new", 0).await;
    push("new", 1).await;
    let numbered = |pages: &[(i64, &[u32])]| {
        (pages.iter())
            .map(|(p, items)| (Some(*p), items.to_vec()))
            .collect::<Vec<_>>()
    };
    let full: [(i64, &[u32]); 3] = [(1, &[0, 1, 2]), (2, &[3, 4, 5]), (3, &[6])];
    assert_eq!(buckets_of(&store, "full").await, numbered(&full));
    let open: [(i64, &[u32]); 2] = [(1, &[0, 1, 2]), (2, &[3, 4])];
    assert_eq!(buckets_of(&store, "open").await, numbered(&open));
    let new: [(i64, &[u32]); 1] = [(1, &[0, 1])];
    assert_eq!(buckets_of(&store, "new").await, numbered(&new));

    // The same collection as another tool leaves it: its mark gone, key `old`'s two full
    // buckets without a number (the seed's layout, read first).
    for n in 0..6 {
        push("old", n).await;
    }
    let old = Filter::eq("user", "old");
    let mut unnumber = Update::default();
    unnumber.unset.push("page".into());
    store.update_many("ticks", &old, &unnumber).await.unwrap();
    store
        .delete_many("pattern_bounded", &Filter::eq("_id", "ticks"))
        .await
        .unwrap();
    store.extensions().forget();
    push("old", 6).await;
    push("fresh", 0).await;
    let old: Vec<(Option<i64>, Vec<u32>)> = vec![
        (None, vec![0, 1, 2]),
        (None, vec![3, 4, 5]),
        (Some(3), vec![6]),
    ];
    assert_eq!(buckets_of(&store, "old").await, old);
    assert_eq!(buckets_of(&store, "fresh").await, [(Some(1), vec![0])]);
    let items = tick_numbers(&store, "old").await;
    assert_eq!(items, (0..7).collect::<Vec<_>>());
}

on_both_stores!(
    a_first_push_numbers_after_the_keys_buckets,
    same_second_burst,
    a_batch_refused_midway_goes_on,
    page_numbers_past_the_largest,
    streams_cross_batches,
    foreign_documents_give_decode_errors,
    a_foreign_document_without_a_number_takes_no_push,
    indexes_are_created_idempotently,
);
