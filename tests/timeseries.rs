//! Buckets as time series, on both stores: time bounds kept by the push (out-of-order items
//! included), range reads and `latest` against the items themselves, summaries kept on write
//! against summaries computed from the items (random ranges, buckets written before the
//! summary existed, partial ones, backfill), exact Decimal128 sums, Int64 overflow, bulk
//! ingest (order, invariants, concurrency, exactly which items were not written).
//!
//! `PATTERN_TS_CASES` sets the number of random ranges per differential test (default 60).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;

use bson::{doc, DateTime, Decimal128, Document};
use futures::TryStreamExt;
use pattern_core::bucket::{self, Number, Totals};
use pattern_core::{
    spec::{Aggregate, AggregateOp, BucketSpec, Keeps},
    store::Store,
    AnyStore, Bucket, Error,
};
use pattern_tests::{as_int, documents, on_both_stores};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    id: i64,
    qty: i64,
    price: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fee: Option<Decimal128>,
    date: DateTime,
}

const SUMMARY: &[Aggregate] = &[
    Aggregate {
        op: AggregateOp::Sum,
        item_field: "qty",
        field: "qty_sum",
    },
    Aggregate {
        op: AggregateOp::Min,
        item_field: "price",
        field: "price_min",
    },
    Aggregate {
        op: AggregateOp::Max,
        item_field: "price",
        field: "price_max",
    },
    Aggregate {
        op: AggregateOp::Sum,
        item_field: "fee",
        field: "fee_sum",
    },
];

/// The layout `#[bucket(collection = "trades", size = 5, time = "date", summary(sum = "qty",
/// min = "price", max = "price", sum = "fee"))]` gives, written out (the derive's own output
/// is checked in the UI tests).
struct Trades;
impl Bucket for Trades {
    type Key = i64;
    type Item = Trade;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        collection: "trades",
        key_field: "customerId",
        items_field: "history",
        count_field: "count",
        page_field: "page",
        size: 5,
        keeps: Keeps {
            bounds: Some(("date_min", "date_max")),
            summary: SUMMARY,
        },
    };
    fn item_millis(t: &Trade) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

/// The same collection before time bounds and summaries were kept.
struct Legacy;
impl Bucket for Legacy {
    type Key = i64;
    type Item = Trade;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        keeps: Keeps::NONE,
        ..Trades::SPEC
    };
    fn item_millis(t: &Trade) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

const DAY: i64 = 86_400_000;
const T0: i64 = 1_700_000_000_000;

/// A small deterministic generator (no dependency, same cases on every run).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn cases() -> usize {
    std::env::var("PATTERN_TS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60)
}

/// Trade `i`: about six hours apart, one in five pushed out of time order (up to two days
/// early), every third with a fee.
fn trade(rng: &mut Lcg, i: i64) -> Trade {
    let jitter = if rng.below(5) == 0 {
        -(rng.below(2 * DAY as u64) as i64)
    } else {
        rng.below(3_600_000) as i64
    };
    Trade {
        id: i,
        qty: 1 + rng.below(1_000) as i64,
        price: 10.0 + rng.below(10_000) as f64 / 100.0,
        fee: (i % 3 == 0).then(|| format!("0.{}", 1 + rng.below(99)).parse().unwrap()),
        date: DateTime::from_millis(T0 + i * DAY / 4 + jitter),
    }
}

/// What the summary is, from the items themselves.
fn expected(items: &[&Trade]) -> (u64, i64, Option<f64>, Option<f64>, Option<String>) {
    let qty = items.iter().map(|t| t.qty).sum();
    let min = items.iter().map(|t| t.price).reduce(f64::min);
    let max = items.iter().map(|t| t.price).reduce(f64::max);
    // Exact: in hundredths (every fee is 0.01..0.99).
    let cents: Vec<i64> = items
        .iter()
        .filter_map(|t| t.fee)
        .map(|f| (f.to_string().parse::<f64>().unwrap() * 100.0).round() as i64)
        .collect();
    let fee = (!cents.is_empty()).then(|| cents.iter().sum::<i64>());
    (
        items.len() as u64,
        qty,
        min,
        max,
        fee.map(|c| format!("{}.{:02}", c / 100, c % 100)),
    )
}

fn observed(t: &Totals) -> (u64, i64, Option<f64>, Option<f64>, Option<String>) {
    let v = |i: usize| t.values.get(i).copied().flatten();
    let fee = v(3).map(|n| match n {
        Number::Decimal128(d) => {
            // Normalized to two decimals: "1.5" and "1.50" are the same sum.
            let x: f64 = d.to_string().parse().unwrap();
            let c = (x * 100.0).round() as i64;
            format!("{}.{:02}", c / 100, c % 100)
        }
        other => panic!("a fee sum is a Decimal128, got {other:?}"),
    });
    (
        t.items,
        v(0).map_or(0, |n| n.as_i64().expect("an integer sum")),
        v(1).map(|n| n.as_f64()),
        v(2).map(|n| n.as_f64()),
        fee,
    )
}

fn date(ms: i64) -> DateTime {
    DateTime::from_millis(ms)
}

/// Every bucket keeps exactly the bounds and summary of its own items, and is marked
/// complete for them.
fn assert_buckets_complete(docs: &[Document]) {
    for d in docs {
        let items: Vec<Trade> = d
            .get_array("history")
            .unwrap()
            .iter()
            .map(|b| bson::from_bson(b.clone()).unwrap())
            .collect();
        let id = d.get("_id").unwrap();
        assert_eq!(d.get_bool("bounded"), Ok(true), "{id} not bounded");
        let marks: Vec<&str> = d
            .get_array("summarized")
            .unwrap()
            .iter()
            .filter_map(|b| b.as_str())
            .collect();
        assert_eq!(
            marks,
            ["qty_sum", "price_min", "price_max", "fee_sum"],
            "{id}"
        );
        let min = items.iter().map(|t| t.date).min().unwrap();
        let max = items.iter().map(|t| t.date).max().unwrap();
        assert_eq!(d.get_datetime("date_min"), Ok(&min), "{id}");
        assert_eq!(d.get_datetime("date_max"), Ok(&max), "{id}");
        let all: Vec<&Trade> = items.iter().collect();
        let (_, qty, pmin, pmax, _) = expected(&all);
        assert_eq!(as_int(d.get("qty_sum").unwrap()), Some(qty), "{id}");
        assert_eq!(d.get_f64("price_min").ok(), pmin, "{id}");
        assert_eq!(d.get_f64("price_max").ok(), pmax, "{id}");
    }
}

/// Pushes one at a time and several at a time keep the bounds of out-of-order items, and
/// the summary, in the same update (and the new buckets are born with them).
async fn bounds_and_summary_kept_on_push(store: AnyStore) {
    let mut rng = Lcg(7);
    let all: Vec<Trade> = (0..40).map(|i| trade(&mut rng, i)).collect();
    for t in &all[..13] {
        Trades::push_one(&store, t).await;
    }
    bucket::push_many::<Trades, _, _>(&store, &1, &all[13..31])
        .await
        .unwrap();
    for t in &all[31..] {
        Trades::push_one(&store, t).await;
    }
    let docs = documents(&store, "trades").await;
    assert_eq!(docs.len(), 8);
    assert_buckets_complete(&docs);
    // A range read of everything is every item, in push order.
    let read: Vec<Trade> = bucket::range::<Trades, _, _>(&store, &1, ..)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(read, all);
}

impl Trades {
    async fn push_one(store: &AnyStore, t: &Trade) {
        bucket::push::<Trades, _, _>(store, &1, t).await.unwrap();
    }
}

/// Writes a history for key 1: `legacy` items first as the collection held them before
/// bounds and summaries were kept (some buckets full, one open), then the rest pushed by a
/// writer that keeps them (into the open legacy bucket first: a partial summary, unmarked).
async fn history(store: &AnyStore, rng: &mut Lcg, legacy: i64, total: i64) -> Vec<Trade> {
    let all: Vec<Trade> = (0..total).map(|i| trade(rng, i)).collect();
    let (old, new) = all.split_at(legacy as usize);
    if !old.is_empty() {
        bucket::push_many::<Legacy, _, _>(store, &1, old)
            .await
            .unwrap();
    }
    for chunk in new.chunks(7) {
        match chunk {
            [one] => bucket::push::<Trades, _, _>(store, &1, one).await.unwrap(),
            many => bucket::push_many::<Trades, _, _>(store, &1, many)
                .await
                .unwrap(),
        }
    }
    // Another key, interleaved in time: never read by key 1's ranges.
    let other: Vec<Trade> = (0..12).map(|i| trade(rng, 1_000 + i)).collect();
    bucket::push_many::<Trades, _, _>(store, &2, &other)
        .await
        .unwrap();
    all
}

/// A random range over the history (some empty, some open-ended, some outside it).
fn random_range(rng: &mut Lcg, total: i64) -> (Option<i64>, Option<i64>) {
    let span = total * DAY / 4;
    let at = |rng: &mut Lcg| T0 - 3 * DAY + rng.below((span + 6 * DAY) as u64) as i64;
    let (a, b) = (at(rng), at(rng));
    let (a, b) = (a.min(b), a.max(b));
    match rng.below(10) {
        0 => (None, Some(b)),
        1 => (Some(a), None),
        2 => (Some(b), Some(a)), // empty (from after to)
        _ => (Some(a), Some(b)),
    }
}

fn bounds(r: (Option<i64>, Option<i64>)) -> (Bound<DateTime>, Bound<DateTime>) {
    let b = |x: Option<i64>| x.map_or(Bound::Unbounded, |ms| Bound::Included(date(ms)));
    let e = |x: Option<i64>| x.map_or(Bound::Unbounded, |ms| Bound::Excluded(date(ms)));
    (b(r.0), e(r.1))
}

async fn read_range(store: &AnyStore, r: (Option<i64>, Option<i64>)) -> Vec<Trade> {
    bucket::range::<Trades, _, _>(store, &1, bounds(r))
        .try_collect()
        .await
        .unwrap()
}

async fn summarize(
    store: &AnyStore,
    r: (Option<i64>, Option<i64>),
) -> pattern_core::Result<Totals> {
    bucket::summary::<Trades, _, _>(store, &1, bounds(r)).await
}

fn in_range(all: &[Trade], r: (Option<i64>, Option<i64>)) -> Vec<&Trade> {
    let ms = |t: &Trade| t.date.timestamp_millis();
    all.iter()
        .filter(|t| r.0.is_none_or(|a| ms(t) >= a) && r.1.is_none_or(|b| ms(t) < b))
        .collect()
}

/// Range reads return exactly the items in range, in push order, also over buckets written
/// before the bounds existed (treated as unbounded) and after `backfill` completes them.
async fn range_reads_match_the_items(store: AnyStore) {
    let mut rng = Lcg(11);
    let all = history(&store, &mut rng, 23, 140).await;
    for phase in ["before backfill", "after backfill"] {
        for _ in 0..cases() {
            let r = random_range(&mut rng, 140);
            let want: Vec<Trade> = in_range(&all, r).into_iter().cloned().collect();
            assert_eq!(read_range(&store, r).await, want, "{phase}: range {r:?}");
        }
        let completed = bucket::backfill::<Trades, _>(&store).await.unwrap();
        if phase == "before backfill" {
            // The 4 full legacy buckets and the open one pushed into since.
            assert_eq!(completed, 5);
            assert_buckets_complete(&documents(&store, "trades").await);
        } else {
            assert_eq!(completed, 0, "backfill is idempotent");
        }
    }
}

/// Summaries equal the ones computed from the items, for random ranges, with legacy and
/// partial buckets, before and after backfill.
async fn summaries_match_the_items(store: AnyStore) {
    let mut rng = Lcg(23);
    let all = history(&store, &mut rng, 17, 160).await;
    for phase in ["before backfill", "after backfill"] {
        for _ in 0..cases() {
            let r = random_range(&mut rng, 160);
            let got = summarize(&store, r).await.unwrap();
            assert_eq!(
                observed(&got),
                expected(&in_range(&all, r)),
                "{phase}: {r:?}"
            );
        }
        bucket::backfill::<Trades, _>(&store).await.unwrap();
    }
    // A key with nothing: zero items, no values.
    let none = bucket::summary::<Trades, _, _>(&store, &99, ..)
        .await
        .unwrap();
    assert_eq!(none.items, 0);
    assert!(none.values.iter().all(Option::is_none));
}

/// Decimal128 sums are exact (0.1 + 0.2 is 0.3, not 0.30000000000000004), kept and combined.
async fn decimal_sums_are_exact(store: AnyStore) {
    let fee = |s: &str| Some(s.parse::<Decimal128>().unwrap());
    let t = |i: i64, f: &str| Trade {
        id: i,
        qty: 1,
        price: 1.0,
        fee: fee(f),
        date: date(T0 + i * 1000),
    };
    let items: Vec<Trade> = (0..12)
        .map(|i| t(i, if i % 2 == 0 { "0.1" } else { "0.2" }))
        .collect();
    bucket::push_many::<Trades, _, _>(&store, &1, &items)
        .await
        .unwrap();
    let s = bucket::summary::<Trades, _, _>(&store, &1, ..)
        .await
        .unwrap();
    assert_eq!(s.values[3].map(|n| n.to_string()), Some("1.8".into()));
    // The first bucket's kept sum: 0.1 + 0.2 + 0.1 + 0.2 + 0.1.
    let docs = documents(&store, "trades").await;
    assert_eq!(
        docs[0].get("fee_sum").map(|b| b.to_string()),
        Some("0.7".into())
    );
    // Through an edge bucket (items read) too.
    let part = bucket::summary::<Trades, _, _>(&store, &1, date(T0 + 1000)..date(T0 + 4000))
        .await
        .unwrap();
    assert_eq!(part.values[3].map(|n| n.to_string()), Some("0.5".into()));
}

/// An Int64 sum that would overflow refuses the push whole (nothing written, nothing
/// wrapped), on the server's `$inc` as in the batch's own arithmetic.
async fn integer_sums_never_wrap(store: AnyStore) {
    let big = |i: i64, qty: i64| Trade {
        id: i,
        qty,
        price: 1.0,
        fee: None,
        date: date(T0 + i),
    };
    bucket::push::<Trades, _, _>(&store, &1, &big(0, i64::MAX - 1))
        .await
        .unwrap();
    let e = bucket::push::<Trades, _, _>(&store, &1, &big(1, 5)).await;
    assert!(
        matches!(e, Err(Error::Overflow { ref field, .. }) if field == "qty_sum"),
        "{e:?}"
    );
    let e = bucket::push_many::<Trades, _, _>(&store, &3, &[big(2, i64::MAX), big(3, 1)]).await;
    assert!(matches!(e, Err(Error::Overflow { .. })), "{e:?}");
    let docs = documents(&store, "trades").await;
    assert_eq!(docs.len(), 1, "nothing written for key 3");
    assert_eq!(as_int(docs[0].get("count").unwrap()), Some(1));
    assert_eq!(as_int(docs[0].get("qty_sum").unwrap()), Some(i64::MAX - 1));
    // Combining two buckets' sums on read overflows too, as an error.
    for i in 0..5 {
        bucket::push::<Trades, _, _>(&store, &4, &big(10 + i, i64::MAX / 5))
            .await
            .unwrap();
    }
    bucket::push::<Trades, _, _>(&store, &4, &big(20, i64::MAX / 2))
        .await
        .unwrap();
    let e = bucket::summary::<Trades, _, _>(&store, &4, ..).await;
    assert!(matches!(e, Err(Error::Overflow { .. })), "{e:?}");
}

/// `latest(n)` is the tail of the items, for every n around the bucket boundaries.
async fn latest_is_the_tail(store: AnyStore) {
    let mut rng = Lcg(5);
    let all = history(&store, &mut rng, 6, 33).await;
    for n in [0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 32, 33, 34, 100] {
        let got = bucket::latest::<Trades, _, _>(&store, &1, n).await.unwrap();
        let from = all.len().saturating_sub(n);
        assert_eq!(got, all[from..].to_vec(), "latest {n}");
    }
}

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
    assert!(matches!(*source, Error::Decode { .. }), "{source:?}");
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

/// Range and summary reads without the attributes they need say so.
async fn reads_need_their_attributes(store: AnyStore) {
    let r = bucket::range::<Legacy, _, _>(&store, &1, date(0)..date(1))
        .try_collect::<Vec<_>>()
        .await;
    assert!(
        matches!(r, Err(Error::InvalidInput(ref m)) if m.contains("time")),
        "{r:?}"
    );
    let s = bucket::summary::<Legacy, _, _>(&store, &1, ..).await;
    assert!(
        matches!(s, Err(Error::InvalidInput(ref m)) if m.contains("summary")),
        "{s:?}"
    );
}

on_both_stores!(
    bounds_and_summary_kept_on_push,
    range_reads_match_the_items,
    summaries_match_the_items,
    decimal_sums_are_exact,
    integer_sums_never_wrap,
    latest_is_the_tail,
    ingest_keeps_order_and_invariants,
    concurrent_ingest_and_pushes,
    ingest_reports_exactly_the_unwritten,
    reads_need_their_attributes,
);

/// Mongo only: what the reads and the ingest send, counted with command monitoring, and what
/// the server examines for a one-day window of a long history (`explain` of the very queries
/// the range read sent).
mod on_mongo {
    use super::*;
    use pattern_tests::recording_mongo_store;

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Tick {
        n: i64,
        qty: i64,
        date: DateTime,
    }

    const TICK_SUMMARY: &[Aggregate] = &[Aggregate {
        op: AggregateOp::Sum,
        item_field: "qty",
        field: "qty_sum",
    }];

    struct Ticks;
    impl Bucket for Ticks {
        type Key = i64;
        type Item = Tick;
        type Summary = Totals;
        const SPEC: BucketSpec<'static> = BucketSpec {
            collection: "ticks",
            key_field: "k",
            items_field: "ticks",
            count_field: "count",
            page_field: "page",
            size: 10,
            keeps: Keeps {
                bounds: Some(("date_min", "date_max")),
                summary: TICK_SUMMARY,
            },
        };
        fn item_millis(t: &Tick) -> Option<i64> {
            Some(t.date.timestamp_millis())
        }
    }

    /// `PATTERN_TS_HISTORY` items (default 1,000,000), one a minute.
    fn history_len() -> i64 {
        std::env::var("PATTERN_TS_HISTORY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_000_000)
    }

    fn tick(n: i64) -> Tick {
        Tick {
            n,
            qty: n % 100,
            date: DateTime::from_millis(T0 + n * 60_000),
        }
    }

    fn commands(log: &std::sync::Mutex<Vec<(String, Document)>>) -> Vec<(String, Document)> {
        std::mem::take(&mut *log.lock().unwrap())
    }

    /// A one-day window of a long history reads the buckets that overlap it and no other
    /// (documents examined, by `explain` of the query sent), in one find beside the check for
    /// buckets without bounds; `latest` is one find when the newest bucket holds enough.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_day_of_a_long_history_reads_only_its_buckets() {
        let (store, log) = recording_mongo_store("ts_day").await;
        let total = history_len();
        let started = std::time::Instant::now();
        let mut n = 0;
        while n < total {
            let batch: Vec<(i64, Tick)> = (n..(n + 100_000).min(total))
                .map(|i| (7, tick(i)))
                .collect();
            bucket::ingest::<Ticks, _>(&store, &batch).await.unwrap();
            n += batch.len() as i64;
        }
        println!(
            "ingested {total} items for one key in {:.1?}",
            started.elapsed()
        );
        commands(&log);
        // The day in the middle of the history: 1,440 items, 144 buckets (+1 straddling).
        let from = T0 + (total / 2) * 60_000;
        let day = date(from)..date(from + DAY);
        let items: Vec<Tick> = bucket::range::<Ticks, _, _>(&store, &7, day.clone())
            .try_collect()
            .await
            .unwrap();
        let want: Vec<i64> = (total / 2..(total / 2 + 1_440).min(total)).collect();
        assert_eq!(items.iter().map(|t| t.n).collect::<Vec<_>>(), want);
        let sent = commands(&log);
        let finds: Vec<&Document> = sent
            .iter()
            .filter(|(n, _)| n == "find")
            .map(|(_, c)| c)
            .collect();
        // The collection was empty at first use, so every bucket is bounded: one find.
        assert_eq!(sent.len(), 1, "one find of the overlap: {sent:?}");
        let overlapping = (want.len() as i64 + 9) / 10 + 1;
        for find in finds {
            let (docs, returned) = explain(&store, find).await;
            assert!(
                docs <= returned + 1,
                "examined {docs} documents for {returned}: {find}"
            );
            assert!(returned <= overlapping, "{returned} buckets for a day");
        }
        // The summary of the same day: the whole buckets from their sums, the edges by items.
        let s = bucket::summary::<Ticks, _, _>(&store, &7, day)
            .await
            .unwrap();
        assert_eq!(s.items, want.len() as u64);
        let qty: i64 = want.iter().map(|n| n % 100).sum();
        assert_eq!(s.values[0].and_then(|n| n.as_i64()), Some(qty));
        commands(&log);
        // latest: one find while the newest bucket holds enough, two past it.
        let started = std::time::Instant::now();
        let newest = bucket::latest::<Ticks, _, _>(&store, &7, 1).await.unwrap();
        println!("latest(1) of {total} items: {:.1?}", started.elapsed());
        assert_eq!(newest.iter().map(|t| t.n).collect::<Vec<_>>(), [total - 1]);
        assert_eq!(commands(&log).len(), 1);
        let started = std::time::Instant::now();
        let last = bucket::latest::<Ticks, _, _>(&store, &7, 25).await.unwrap();
        println!("latest(25): {:.1?}", started.elapsed());
        assert_eq!(last.len(), 25);
        assert_eq!(last[24].n, total - 1);
        assert_eq!(commands(&log).len(), 2);
        let _ = store.database().drop().await;
    }

    /// `(totalDocsExamined, nReturned)` of the find, explained as sent.
    async fn explain(store: &pattern_core::MongoStore, find: &Document) -> (i64, i64) {
        let mut cmd = Document::new();
        for k in ["find", "filter", "sort", "projection"] {
            if let Some(v) = find.get(k) {
                cmd.insert(k, v.clone());
            }
        }
        let out = store
            .database()
            .run_command(doc! {"explain": cmd, "verbosity": "executionStats"})
            .await
            .expect("explain");
        let stats = out.get_document("executionStats").expect("executionStats");
        let n = |k: &str| stats.get(k).and_then(as_int).unwrap_or(-1);
        (n("totalDocsExamined"), n("nReturned"))
    }

    /// A collection with buckets written before the bounds were kept: a range read also looks
    /// for buckets without bounds (a second find sent beside the overlap), until `backfill`
    /// has completed them and marked the collection; then one find.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn buckets_without_bounds_are_looked_for_until_backfill() {
        let (store, log) = recording_mongo_store("ts_mark").await;
        let old: Vec<Trade> = (0..12).map(|i| trade(&mut Lcg(1), i)).collect();
        bucket::push_many::<Legacy, _, _>(&store, &1, &old)
            .await
            .unwrap();
        let new: Vec<Trade> = (12..30).map(|i| trade(&mut Lcg(2), i)).collect();
        bucket::push_many::<Trades, _, _>(&store, &1, &new)
            .await
            .unwrap();
        commands(&log);
        let all: Vec<Trade> = bucket::range::<Trades, _, _>(&store, &1, ..)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(all.len(), 30);
        let finds = commands(&log)
            .into_iter()
            .filter(|(n, _)| n == "find")
            .count();
        // The collection's mark (read once per process: none), the overlap, and the buckets
        // without bounds.
        assert_eq!(finds, 3);
        bucket::backfill::<Trades, _>(&store).await.unwrap();
        commands(&log);
        let again: Vec<Trade> = bucket::range::<Trades, _, _>(&store, &1, ..)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(again, all);
        assert_eq!(commands(&log).len(), 1);
        // Another process learns the mark once, at first use.
        let other = pattern_tests::second_client(&store).await;
        let seen: Vec<Trade> = bucket::range::<Trades, _, _>(&other, &1, ..)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(seen, all);
        let _ = store.database().drop().await;
    }

    /// An ingest right after pushes needs no read: each push leaves what ingest needs (the
    /// key's newest bucket, its number and count) in the process, whichever way it went (into a
    /// known open bucket, a `findAndModify` into one another client opened, or a new bucket).
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn an_ingest_after_pushes_is_one_bulk_write() {
        let (store, log) = recording_mongo_store("ts_push_ingest").await;
        // Half the keys have an open bucket another client wrote: this process does not know it.
        let other = pattern_tests::second_client(&store).await;
        for k in 0..50 {
            bucket::push::<Ticks, _, _>(&other, &k, &tick(k))
                .await
                .unwrap();
        }
        for k in 0..100 {
            bucket::push::<Ticks, _, _>(&store, &k, &tick(1_000 + k))
                .await
                .unwrap();
        }
        for k in 0..10 {
            bucket::push::<Ticks, _, _>(&store, &k, &tick(2_000 + k))
                .await
                .unwrap();
        }
        commands(&log);
        let batch: Vec<(i64, Tick)> = (0..10_000).map(|i| (i % 100, tick(10_000 + i))).collect();
        assert_eq!(
            bucket::ingest::<Ticks, _>(&store, &batch).await.unwrap(),
            10_000
        );
        let sent: Vec<String> = commands(&log).into_iter().map(|(n, _)| n).collect();
        assert_eq!(sent, ["bulkWrite"], "an ingest right after pushes");
        for k in [0, 42, 77] {
            let got: Vec<i64> = bucket::items::<Ticks, _, _>(&store, &k)
                .map_ok(|t| t.n)
                .try_collect()
                .await
                .unwrap();
            let mut want: Vec<i64> = Vec::new();
            want.extend((k < 50).then_some(k));
            want.push(1_000 + k);
            want.extend((k < 10).then_some(2_000 + k));
            want.extend((0..100).map(|j| 10_000 + j * 100 + k));
            assert_eq!(got, want, "key {k}");
        }
        let v = pattern_core::adopt::verify_bucket(&store, &Ticks::SPEC, &Default::default())
            .await
            .unwrap();
        assert!(v.is_clean(), "{v:?}");
        let _ = store.database().drop().await;
    }

    /// Once the keys' newest buckets are known, 1,000 items over 1,000 keys are one command.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_thousand_items_over_a_thousand_keys_is_one_command() {
        let (store, log) = recording_mongo_store("ts_ingest").await;
        let batch = |round: i64| -> Vec<(i64, Tick)> {
            (0..1_000).map(|k| (k, tick(round * 1_000 + k))).collect()
        };
        bucket::ingest::<Ticks, _>(&store, &batch(0)).await.unwrap();
        let first: Vec<String> = commands(&log).into_iter().map(|(n, _)| n).collect();
        println!("first batch (keys unknown): {} commands", first.len());
        for round in 1..12 {
            assert_eq!(
                bucket::ingest::<Ticks, _>(&store, &batch(round))
                    .await
                    .unwrap(),
                1_000
            );
            let sent: Vec<String> = commands(&log).into_iter().map(|(n, _)| n).collect();
            assert_eq!(sent, ["bulkWrite"], "round {round}");
        }
        for k in [0, 499, 999] {
            let got: Vec<i64> = bucket::items::<Ticks, _, _>(&store, &k)
                .map_ok(|t| t.n)
                .try_collect()
                .await
                .unwrap();
            assert_eq!(got, (0..12).map(|r| r * 1_000 + k).collect::<Vec<_>>());
        }
        let _ = store.database().drop().await;
    }
}
