//! Bulk ingest: order and invariants, beside concurrent pushes, exactly which items were not
//! written.

use super::*;
use pattern_core::store;

/// Ingest across keys: each key's items in order, every invariant of a push, nothing lost or
/// written twice, into keys with history (open legacy buckets too) and fresh ones; twice in
/// a row (the second run from the memo).
async fn ingest_keeps_order_and_invariants(store: AnyStore) {
    let mut rng = Lcg(3);
    let legacy: Vec<Trade> = (0..7).map(|i| trade(&mut rng, 10_000 + i)).collect();
    bucket::push_many::<Legacy, _, _>(&store, &0, &legacy)
        .await
        .unwrap();
    let first = trade(&mut rng, 20_000);
    bucket::push::<Trades, _, _>(&store, &1, &first)
        .await
        .unwrap();
    let mut expect: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    expect.insert(0, legacy);
    expect.insert(1, vec![first]);
    for round in 0..2 {
        let mut batch: Vec<(i64, Trade)> = Vec::new();
        for i in 0..1_300 {
            let key = (i * 7 + round) % 50;
            let t = trade(&mut rng, 100_000 * (round + 1) + i);
            expect.entry(key).or_default().push(t.clone());
            batch.push((key, t));
        }
        let n = bucket::ingest::<Trades, _>(&store, &batch).await.unwrap();
        assert_eq!(n, 1_300);
    }
    check_invariants(&store, &expect).await;
}

/// Every key's items in the expected order, pages 1..n, at most one open bucket (the
/// newest), counts agree, no bucket over size, bounds and summaries complete where marked.
async fn check_invariants(store: &AnyStore, expect: &BTreeMap<i64, Vec<Trade>>) {
    for (key, want) in expect {
        let got: Vec<Trade> = bucket::items::<Trades, _, _>(store, key)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(&got, want, "key {key}");
    }
    let docs = documents(store, "trades").await;
    let mut by_key: HashMap<i64, Vec<&Document>> = HashMap::new();
    for d in &docs {
        by_key
            .entry(d.get_i64("customerId").unwrap())
            .or_default()
            .push(d);
    }
    for (key, docs) in by_key {
        let mut pages: Vec<i64> = docs
            .iter()
            .filter_map(|d| d.get("page").and_then(as_int))
            .collect();
        pages.sort();
        let numbered = pages.len() as i64;
        assert_eq!(
            pages,
            (1..=numbered).collect::<Vec<_>>(),
            "key {key}: pages"
        );
        let mut open = 0;
        for d in &docs {
            let n = d.get_array("history").unwrap().len();
            assert!(n <= 5, "key {key}: a bucket holds {n}");
            assert_eq!(as_int(d.get("count").unwrap()), Some(n as i64), "key {key}");
            open += usize::from(n < 5);
        }
        assert!(open <= 1, "key {key}: {open} open buckets");
        let marked: Vec<Document> = docs
            .iter()
            .filter(|d| d.get_bool("bounded") == Ok(true))
            .map(|d| (*d).clone())
            .collect();
        assert_buckets_complete(&marked);
    }
}

/// Concurrent ingests and pushes to the same keys: every item once, each writer's items in
/// its order, every invariant.
async fn concurrent_ingest_and_pushes(store: AnyStore) {
    let writers = 4;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = Lcg(100 + w);
            let mut mine = Vec::new();
            for round in 0..6 {
                let batch: Vec<(i64, Trade)> = (0..120)
                    .map(|i| {
                        let n = (w as i64) * 1_000_000 + round * 1_000 + i;
                        (
                            (i % 12),
                            Trade {
                                id: n,
                                ..trade(&mut rng, i)
                            },
                        )
                    })
                    .collect();
                if w % 2 == 0 {
                    bucket::ingest::<Trades, _>(&store, &batch).await.unwrap();
                } else {
                    for (k, t) in &batch {
                        bucket::push::<Trades, _, _>(&store, k, t).await.unwrap();
                    }
                }
                mine.extend(batch);
            }
            mine
        }));
    }
    let mut sent: Vec<(i64, Trade)> = Vec::new();
    for t in tasks {
        sent.extend(t.await.unwrap());
    }
    let mut seen: HashSet<i64> = HashSet::new();
    for key in 0..12 {
        let got: Vec<Trade> = bucket::items::<Trades, _, _>(&store, &key)
            .try_collect()
            .await
            .unwrap();
        // Each writer's items of this key in its order.
        let mut last: HashMap<i64, i64> = HashMap::new();
        for t in &got {
            assert!(seen.insert(t.id), "item {} stored twice", t.id);
            let w = t.id / 1_000_000;
            if let Some(prev) = last.insert(w, t.id) {
                assert!(prev < t.id, "writer {w}: {} after {prev}", t.id);
            }
        }
    }
    assert_eq!(seen.len(), sent.len(), "items lost");
    let expect = BTreeMap::new();
    check_invariants(&store, &expect).await;
}

/// An ingest that stops on an error says exactly which items were not written: those are
/// not stored, every other one is, once; ingesting them again completes the load.
async fn ingest_reports_exactly_the_unwritten(store: AnyStore) {
    let mut rng = Lcg(9);
    // Key 5's open bucket holds a `history` that is not an array: no push can go there.
    store
        .insert_one(
            "trades",
            doc! {"_id": "5_0", "customerId": 5_i64, "count": 1, "history": "oops", "page": 1_i64},
        )
        .await
        .unwrap();
    let batch: Vec<(i64, Trade)> = (0..200).map(|i| (i % 10, trade(&mut rng, i))).collect();
    let e = bucket::ingest::<Trades, _>(&store, &batch).await;
    let Err(Error::Ingest {
        written,
        unwritten,
        source,
    }) = e
    else {
        panic!("expected Error::Ingest, got {e:?}");
    };
    assert!(
        matches!(*source, Error::Store(store::Error::Decode { .. })),
        "{source:?}"
    );
    let docs = documents(&store, "trades").await;
    let stored: HashSet<i64> = docs
        .iter()
        .filter(|d| d.get_i64("customerId") != Ok(5))
        .flat_map(|d| d.get_array("history").unwrap().clone())
        .map(|b| bson::from_bson::<Trade>(b).unwrap().id)
        .collect();
    let unwritten_ids: HashSet<i64> = unwritten.iter().map(|i| batch[*i].1.id).collect();
    assert_eq!(written as usize + unwritten.len(), batch.len());
    assert!(
        unwritten_ids.iter().all(|id| !stored.contains(id)),
        "an unwritten item is stored"
    );
    assert_eq!(
        stored.len() as u64,
        written,
        "written items stored once each"
    );
    let key5: HashSet<i64> = batch
        .iter()
        .filter(|(k, _)| *k == 5)
        .map(|(_, t)| t.id)
        .collect();
    assert_eq!(unwritten_ids, key5, "exactly key 5's items are not written");
    // Fix the bucket, ingest exactly the unwritten ones: everything once, in order.
    store
        .delete_many(
            "trades",
            &pattern_core::store::query::Filter::and([
                pattern_core::store::query::Filter::eq("customerId", 5_i64),
                pattern_core::store::query::Filter::eq("_id", "5_0"),
            ]),
        )
        .await
        .unwrap();
    let again: Vec<(i64, Trade)> = unwritten.iter().map(|i| batch[*i].clone()).collect();
    assert_eq!(
        bucket::ingest::<Trades, _>(&store, &again).await.unwrap(),
        again.len() as u64
    );
    let mut expect: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    for (k, t) in &batch {
        expect.entry(*k).or_default().push(t.clone());
    }
    check_invariants(&store, &expect).await;
}

/// `Store::first_per`, what ingest learns keys with: each value's first document in the sort
/// order, with the fields asked for, one per value (a missing value under `null`), on both
/// stores alike (one `aggregate` on MongoDB).
async fn first_per_gives_each_values_first(store: AnyStore) {
    use pattern_core::store::query::{Filter, Path};
    use pattern_core::store::Store;
    if let AnyStore::Mongo(m) = &store {
        // A collection of this test only, read by `k` (not its `_id`): left unsharded.
        pattern_tests::declare_unsharded(m.database().name(), "firsts");
    }
    let docs = [
        doc! {"_id": 1, "k": 1, "n": 1, "c": 10, "big": "x"},
        doc! {"_id": 2, "k": 1, "n": 3, "c": 7, "big": "x"},
        doc! {"_id": 3, "k": 1, "n": 2, "c": 10, "big": "x"},
        doc! {"_id": 4, "k": 2_i64, "n": 1, "c": 4, "big": "x"},
        doc! {"_id": 5, "k": 3, "n": 9, "c": 1, "big": "x"},
        doc! {"_id": 6, "n": 5, "c": 2, "big": "x"},
    ];
    for d in docs {
        store.insert_one("firsts", d).await.unwrap();
    }
    let newest = [(Path::from("n"), -1), (Path::from("_id"), -1)];
    let wanted = [Path::from("c")];
    let some = Filter::In("k".into(), vec![1.into(), 2.into(), 7.into()]);
    let mut got = store
        .first_per("firsts", &some, "k", &newest, &wanted)
        .await
        .unwrap();
    let int = |d: &Document, f: &str| as_int(d.get(f).unwrap()).unwrap();
    got.sort_by_key(|d| int(d, "_id"));
    let pick = |d: &Document| (int(d, "_id"), int(d, "c"));
    assert_eq!(got.iter().map(pick).collect::<Vec<_>>(), [(2, 7), (4, 4)]);
    if matches!(store, AnyStore::Mongo(_)) {
        // Only what is asked is read (the in-memory store returns whole documents).
        assert!(got.iter().all(|d| !d.contains_key("big")), "{got:?}");
    }
    let all = store
        .first_per("firsts", &Filter::everything(), "k", &newest, &[])
        .await
        .unwrap();
    let mut ids: Vec<i64> = all.iter().map(|d| int(d, "_id")).collect();
    ids.sort();
    assert_eq!(
        ids,
        [2, 4, 5, 6],
        "one per value, the missing one under null"
    );
    assert!(all.iter().all(|d| d.contains_key("big")), "whole documents");
}

on_both_stores!(
    first_per_gives_each_values_first,
    ingest_keeps_order_and_invariants,
    concurrent_ingest_and_pushes,
    ingest_reports_exactly_the_unwritten,
);
