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
use pattern_core::store::AnyStore;
use pattern_core::{
    spec::{BucketSpec, Keeps, SummaryField, SummaryOp},
    store::Store,
    Bucket, Error,
};
use pattern_tests::{as_int, documents, on_both_stores};
use serde::{Deserialize, Serialize};

mod archive;
mod archive_rollups;
mod ingest;
mod on_mongo;
mod rollups;
mod spans;
mod summaries;
mod width;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    id: i64,
    qty: i64,
    price: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fee: Option<Decimal128>,
    date: DateTime,
}

const SUMMARY: &[SummaryField] = &[
    SummaryField {
        op: SummaryOp::Sum,
        item_field: "qty",
        field: "qty_sum",
    },
    SummaryField {
        op: SummaryOp::Min,
        item_field: "price",
        field: "price_min",
    },
    SummaryField {
        op: SummaryOp::Max,
        item_field: "price",
        field: "price_max",
    },
    SummaryField {
        op: SummaryOp::Sum,
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
            span: None,
            rollup: None,
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

/// A new process's store over the same data, routed as `store` is: on MongoDB a store over the
/// same database that has seen nothing (the in-memory store is its data and its memory: another
/// task of the same process).
pub(super) async fn new_process(store: &AnyStore) -> AnyStore {
    let routed = match store {
        AnyStore::Mongo(m) => m.routes_by_shard_key().await.unwrap(),
        _ => false,
    };
    process_routed(store, routed)
}

/// [`new_process`], behind a router (`routed`) or not.
pub(super) fn process_routed(store: &AnyStore, routed: bool) -> AnyStore {
    match store {
        AnyStore::Mongo(m) => {
            let fresh = pattern_core::store::MongoStore::new(m.database().clone());
            AnyStore::Mongo(fresh.with_routing(routed))
        }
        other => other.clone(),
    }
}

/// Trade `i`, of quantity `qty` (sums near Int64's ends), at `T0 + i` ms.
fn sized(i: i64, qty: i64) -> Trade {
    Trade {
        id: i,
        qty,
        price: 1.0,
        fee: None,
        date: date(T0 + i),
    }
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
