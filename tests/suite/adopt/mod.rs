//! Adopting the patterns on existing data, on both stores: analyze, migrate (outlier in place,
//! flat documents into buckets), verify. Migrations are checked item by item against the
//! source, interrupted after a batch and resumed, run beside live pushes, run twice, and run
//! dry; every defect `verify` knows is injected and found.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use futures::TryStreamExt;
use pattern_core::adopt::Missing;
use pattern_core::adopt::{
    self, analyze_bucket, analyze_outlier, migrate_bucket, migrate_outlier,
    money::{convert_money, Finish, MoneyConversion},
    verify_bucket, verify_outlier, LayoutDefect, Options, Source,
};
use pattern_core::bucket;
use pattern_core::bucket::Totals;
use pattern_core::outlier;
use pattern_core::store::AnyStore;
use pattern_core::{
    spec::{BucketSpec, Keeps, OutlierSpec, SeriesOrder, SeriesSpec, SummaryField, SummaryOp},
    store::Store,
    Bucket, Error, Outlier,
};
use pattern_tests::{documents, on_both_stores};
use serde::{Deserialize, Serialize};

mod buckets;
mod derived;
mod guards;
mod outliers;
mod planted;

// ---------------------------------------------------------------------------------------------
// Layouts

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Book {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
    buyers: Vec<i32>,
}

impl Outlier for Book {
    type Id = i32;
    type Item = i32;
    const SPEC: OutlierSpec<'static> = OutlierSpec {
        collection: "books",
        items_field: "buyers",
        threshold: 50,
        flag_field: "has_extras",
        overflow: SeriesSpec {
            collection: "books_extra",
            key_field: "book_id",
            items_field: "buyers_extra",
            count_field: "count",
            size: 20,
            order: SeriesOrder::Seq("seq"),
            keeps: Keeps::NONE,
        },
    };
}
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    ticker: String,
    #[serde(rename = "type")]
    kind: String,
    qty: i64,
    date: DateTime,
}

const SUMMARY: &[SummaryField] = &[SummaryField {
    op: SummaryOp::Sum,
    item_field: "qty",
    field: "qty_sum",
}];

struct History;
impl Bucket for History {
    type Key = i32;
    type Item = Trade;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        collection: "trade_history",
        key_field: "customerId",
        items_field: "history",
        count_field: "count",
        page_field: "page",
        size: 10,
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

const FLAT: Source<'static> = Source {
    collection: "trades",
    key_field: "customerId",
    time_field: "date",
};

// ---------------------------------------------------------------------------------------------
// Data

/// A small deterministic generator (no RNG dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Books `0..n` with arrays of lengths from `lens` (cycled): buyer numbers `id * 10_000 + i`.
async fn seed_books(store: &AnyStore, n: i32, lens: &[usize]) -> BTreeMap<i32, Vec<i32>> {
    let mut all = BTreeMap::new();
    let mut docs = Vec::new();
    for id in 0..n {
        let len = lens[id as usize % lens.len()];
        let buyers: Vec<i32> = (0..len as i32).map(|i| id * 10_000 + i).collect();
        docs.push(doc! {"_id": id, "title": format!("book {id}"), "buyers": buyers.clone()});
        all.insert(id, buyers);
    }
    store.insert_many("books", docs).await.unwrap();
    all
}

/// Flat trades: `customers` keys, `per` items each on average, inserted in shuffled order,
/// several in the same second. Returns each key's items in (date, _id) order.
async fn seed_trades(
    store: &AnyStore,
    customers: i32,
    per: u64,
    seed: u64,
) -> BTreeMap<i32, Vec<Trade>> {
    let mut rng = Lcg(seed);
    let mut rows = Vec::new();
    for c in 0..customers {
        let n = per / 2 + rng.below(per + 1);
        for i in 0..n {
            let secs = 1_700_000_000 + rng.below(5_000) as i64;
            let t = Trade {
                ticker: ["MDB", "GOOG", "AAPL"][rng.below(3) as usize].into(),
                kind: if i % 2 == 0 {
                    "buy".into()
                } else {
                    "sell".into()
                },
                qty: 1 + rng.below(100) as i64,
                date: DateTime::from_millis(secs * 1000 + rng.below(3) as i64 * 250),
            };
            rows.push((ObjectId::new(), c, t));
        }
    }
    // Shuffle the insertion order.
    for i in (1..rows.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        rows.swap(i, j);
    }
    let mut docs = Vec::new();
    let mut by_key: BTreeMap<i32, Vec<(DateTime, ObjectId, Trade)>> = BTreeMap::new();
    for (oid, c, t) in rows {
        docs.push(doc! {"_id": oid, "ticker": &t.ticker, "customerId": c, "type": &t.kind, "qty": t.qty, "date": t.date});
        by_key.entry(c).or_default().push((t.date, oid, t));
    }
    for chunk in docs.chunks(5_000) {
        store.insert_many("trades", chunk.to_vec()).await.unwrap();
    }
    by_key
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by_key(|a| (a.0, a.1));
            (k, v.into_iter().map(|(_, _, t)| t).collect())
        })
        .collect()
}

async fn book_items(store: &AnyStore, id: i32) -> Vec<i32> {
    outlier::all_items::<Book, _, _>(store, &id)
        .await
        .unwrap()
        .unwrap()
}

async fn history(store: &AnyStore, key: i32) -> Vec<Trade> {
    bucket::items::<History, _, _>(store, &key)
        .try_collect()
        .await
        .unwrap()
}

fn quiet() -> Options<'static> {
    Options::default()
}

/// Options whose progress callback panics once the migrate phase passed `after` documents:
/// a run that dies after some batches committed.
fn dying(after: u64, armed: &'static AtomicBool) -> Options<'static> {
    let die: &'static (dyn Fn(&adopt::Progress<'_>) + Send + Sync) =
        Box::leak(Box::new(move |p: &adopt::Progress<'_>| {
            if p.phase == "migrate"
                && p.done >= after
                && p.done > 0
                && armed.swap(false, Ordering::SeqCst)
            {
                panic!("killed by the test after {} documents", p.done);
            }
        }));
    Options {
        batch_items: 35,
        progress: Some(die),
        ..Options::default()
    }
}

async fn check_history(
    store: &AnyStore,
    expected: &BTreeMap<i32, Vec<Trade>>,
    extra: &BTreeMap<i32, Vec<Trade>>,
) {
    for (k, items) in expected {
        let mut want = items.clone();
        want.extend(extra.get(k).cloned().unwrap_or_default());
        let got = history(store, *k).await;
        assert_eq!(got.len(), want.len(), "customer {k}");
        assert!(got == want, "customer {k}: items differ");
    }
}
