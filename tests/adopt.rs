//! Adopting the patterns on existing data, on both stores: analyze, migrate (outlier in place,
//! flat documents into buckets), verify. Migrations are checked item by item against the
//! source, interrupted after a batch and resumed, run beside live pushes, run twice, and run
//! dry; every defect `verify` knows is injected and found.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use futures::TryStreamExt;
use pattern_core::adopt::{
    self, analyze_bucket, analyze_outlier, convert_money, migrate_bucket, migrate_outlier,
    verify_bucket, verify_outlier, Finish, LayoutDefect, MoneyConversion, Options, Source,
};
use pattern_core::bucket;
use pattern_core::bucket::Totals;
use pattern_core::outlier;
use pattern_core::{
    spec::{Aggregate, AggregateOp, BucketSpec, Keeps, OutlierSpec, SeriesOrder, SeriesSpec},
    store::Store,
    AnyStore, Bucket, Error, Missing, Outlier,
};
use pattern_tests::{documents, on_both_stores};
use serde::{Deserialize, Serialize};

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

const SUMMARY: &[Aggregate] = &[Aggregate {
    op: AggregateOp::Sum,
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

// ---------------------------------------------------------------------------------------------
// Outlier

async fn outlier_migration_moves_each_tail_in_order(store: AnyStore) {
    let lens = [0, 3, 50, 51, 120, 49, 200];
    let original = seed_books(&store, 40, &lens).await;
    // A document in the seed's layout already: flagged, 60 items in the main array (a push
    // raced), and a seed-layout overflow document.
    store
        .update_many(
            "books",
            &pattern_core::store::query::Filter::eq("_id", 6),
            &pattern_core::store::query::Update {
                set: vec![("has_extras".into(), Bson::Boolean(true))],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    store
        .insert_one(
            "books_extra",
            doc! {"book_id": 6, "buyers_extra": [1, 2, 3]},
        )
        .await
        .unwrap();
    let mut expected = original.clone();
    expected.get_mut(&6).unwrap().extend([1, 2, 3]);
    let untouched_before: Vec<Document> = documents(&store, "books")
        .await
        .into_iter()
        .filter(|d| d.get_array("buyers").unwrap().len() <= 50)
        .collect();

    let opts = Options {
        batch_items: 150,
        ..Options::default()
    };
    let report = migrate_outlier(&store, &Book::SPEC, &opts).await.unwrap();
    let over = original.values().filter(|v| v.len() > 50).count() as u64;
    assert_eq!(report.changed, over, "{report:?}");
    let moved: u64 = original
        .values()
        .map(|v| v.len().saturating_sub(50) as u64)
        .sum();
    assert_eq!(report.moved_items, moved);
    assert!(report.batches > 1, "small batches: {report:?}");
    assert!(report.verified.as_ref().unwrap().is_clean(), "{report:?}");
    for (id, items) in &expected {
        assert_eq!(&book_items(&store, *id).await, items, "book {id}");
    }
    // Documents under the threshold are untouched, byte for byte.
    let after = documents(&store, "books").await;
    for d in &untouched_before {
        assert!(after.contains(d), "{d}");
    }
    // Chunks of 20, numbered from 1.
    let chunks = documents(&store, "books_extra").await;
    assert!(chunks
        .iter()
        .all(|c| c.get_i32("count").unwrap() <= 20 && c.get_i64("seq").is_ok()));
    // A second run changes nothing.
    let before = (
        documents(&store, "books").await,
        documents(&store, "books_extra").await,
    );
    let again = migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert_eq!(
        (again.changed, again.batches, again.written),
        (0, 0, 0),
        "{again:?}"
    );
    assert!(again.already_finished);
    assert_eq!(
        before,
        (
            documents(&store, "books").await,
            documents(&store, "books_extra").await
        )
    );
}

async fn outlier_migration_resumes_after_dying(store: AnyStore) {
    static ARMED: AtomicBool = AtomicBool::new(false);
    let original = seed_books(&store, 30, &[10, 75, 130]).await;
    ARMED.store(true, Ordering::SeqCst);
    let s = store.clone();
    let died =
        tokio::spawn(async move { migrate_outlier(&s, &Book::SPEC, &dying(3, &ARMED)).await })
            .await;
    assert!(died.is_err(), "the first run dies");
    let half: Vec<Document> = documents(&store, "books").await;
    assert!(
        half.iter()
            .any(|d| d.get_bool("has_extras").unwrap_or(false)),
        "some batches committed"
    );
    let report = migrate_outlier(
        &store,
        &Book::SPEC,
        &Options {
            batch_items: 35,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    assert!(report.resumed_from.is_some(), "{report:?}");
    assert!(report.verified.unwrap().is_clean());
    for (id, items) in &original {
        assert_eq!(&book_items(&store, *id).await, items, "book {id}");
    }
}

async fn outlier_migration_keeps_live_pushes(store: AnyStore) {
    let original = seed_books(&store, 20, &[80, 10, 300]).await;
    let stop = Arc::new(AtomicBool::new(false));
    let pusher = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut pushed: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) || n < 60 {
                let id = (n * 7) % 20;
                let item = -(n + 1);
                outlier::push::<Book, _, _>(&store, &id, &item)
                    .await
                    .unwrap();
                pushed.entry(id).or_default().push(item);
                n += 1;
                tokio::task::yield_now().await;
            }
            pushed
        })
    };
    // A reader beside them never sees an item twice or misses one: each read is the original
    // array followed by some of the pushes, in order.
    let reader = {
        let (store, stop, original) = (store.clone(), stop.clone(), original.clone());
        tokio::spawn(async move {
            let mut reads = 0;
            while !stop.load(Ordering::SeqCst) {
                for (id, items) in &original {
                    let got = book_items(&store, *id).await;
                    assert_eq!(&got[..items.len()], &items[..], "book {id} read {reads}");
                    let rest = &got[items.len()..];
                    assert!(
                        rest.iter().all(|i| *i < 0) && rest.windows(2).all(|w| w[0] > w[1]),
                        "book {id}: after the original, {} items not all pushes in order: {:?}...",
                        rest.len(),
                        &rest[..rest.len().min(8)]
                    );
                    let n = outlier::counts::<Book, _, _>(&store, id)
                        .await
                        .unwrap()
                        .items;
                    assert!(
                        n >= got.len() as u64,
                        "book {id}: count {n} < {} read before",
                        got.len()
                    );
                    reads += 1;
                }
            }
            reads
        })
    };
    let report = migrate_outlier(
        &store,
        &Book::SPEC,
        &Options {
            batch_items: 40,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    let pushed = pusher.await.unwrap();
    let reads = reader.await.unwrap();
    assert!(reads > 0);
    for (id, items) in &original {
        let mut want = items.clone();
        want.extend(pushed.get(id).cloned().unwrap_or_default());
        assert_eq!(
            book_items(&store, *id).await,
            want,
            "book {id} ({report:?})"
        );
    }
    assert!(verify_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap()
        .is_clean());
}

async fn outlier_dry_run_writes_nothing(store: AnyStore) {
    seed_books(&store, 10, &[10, 70]).await;
    let before = documents(&store, "books").await;
    let opts = Options {
        dry_run: true,
        ..Options::default()
    };
    let report = migrate_outlier(&store, &Book::SPEC, &opts).await.unwrap();
    assert_eq!(
        (report.changed, report.moved_items, report.written),
        (5, 100, 5),
        "{report:?}"
    );
    assert_eq!(documents(&store, "books").await, before);
    assert!(documents(&store, "books_extra").await.is_empty());
    assert!(documents(&store, adopt::CHECKPOINTS).await.is_empty());
}

async fn outlier_analysis_reports_the_distribution(store: AnyStore) {
    // 100 books: 95 with 1..=19 items, 5 with 500.
    let lens: Vec<usize> = (0..100)
        .map(|i| if i % 20 == 7 { 500 } else { 1 + i % 19 })
        .collect();
    seed_books(&store, 100, &lens).await;
    let a = analyze_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert_eq!(a.documents, 100);
    assert_eq!(a.over_threshold, 5);
    assert_eq!(a.lengths.max, 500);
    assert_eq!(a.lengths.p50, 10, "{:?}", a.lengths);
    assert_eq!(a.lengths.p90, 18);
    assert_eq!(a.lengths.p99, 500);
    assert!(a.largest.as_ref().unwrap().bytes > 500 * 7);
    assert_eq!(a.lengths.bars.iter().map(|b| b.count).sum::<u64>(), 100);
    // 5% are outliers: p99 is one of them, so the suggestion keeps 99% whole at 500.
    assert_eq!(a.suggestion.value, 500, "{}", a.suggestion.reason);
    // Migrated, the flagged documents' overflow still counts.
    migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    let b = analyze_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert_eq!((b.lengths.max, b.flagged, b.over_threshold), (500, 5, 5));
}

async fn outlier_verify_finds_each_defect(store: AnyStore) {
    seed_books(&store, 6, &[10, 120]).await;
    migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert!(verify_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap()
        .is_clean());
    let f = |id: i32| pattern_core::store::query::Filter::eq("_id", id);
    let set = |k: &'static str, v: Bson| pattern_core::store::query::Update {
        set: vec![(k.into(), v)],
        ..Default::default()
    };
    // Book 0: 60 items in the main array. Book 2: flagged without overflow. Book 1: its
    // overflow's flag removed. Book 3: chunk 2 renumbered 5, chunk 1's count wrong.
    store
        .update_many(
            "books",
            &f(0),
            &set("buyers", Bson::Array((0..60).map(Bson::Int32).collect())),
        )
        .await
        .unwrap();
    store
        .update_many("books", &f(2), &set("has_extras", Bson::Boolean(true)))
        .await
        .unwrap();
    store
        .update_many("books", &f(1), &set("has_extras", Bson::Boolean(false)))
        .await
        .unwrap();
    let f3 = |seq: i64| {
        pattern_core::store::query::Filter::and([
            pattern_core::store::query::Filter::eq("book_id", 3),
            pattern_core::store::query::Filter::eq("seq", seq),
        ])
    };
    store
        .update_many("books_extra", &f3(2), &set("seq", Bson::Int64(5)))
        .await
        .unwrap();
    store
        .update_many("books_extra", &f3(1), &set("count", Bson::Int32(7)))
        .await
        .unwrap();
    // An orphan chunk.
    store
        .insert_one(
            "books_extra",
            doc! {"book_id": 99, "count": 1, "buyers_extra": [1], "seq": 1i64},
        )
        .await
        .unwrap();
    let v = verify_outlier(&store, &Book::SPEC, &quiet()).await.unwrap();
    let kinds: Vec<String> = v.defects.iter().map(|d| format!("{d:?}")).collect();
    let has = |pred: &dyn Fn(&LayoutDefect) -> bool| v.defects.iter().any(pred);
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::OverThreshold {
                id: Bson::Int32(0),
                items: 60,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::FlagWithoutOverflow {
                id: Bson::Int32(2),
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::OverflowWithoutFlag {
                id: Bson::Int32(1),
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::NotDense {
                key: Bson::Int32(3),
                expected: 2,
                found: 3,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::CountMismatch {
                count: 7,
                items: 20,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::OrphanOverflow {
                parent: Bson::Int32(99),
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert_eq!(v.defects.len(), 6, "{kinds:#?}");
}

// ---------------------------------------------------------------------------------------------
// Bucket

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

async fn bucket_migration_keeps_each_keys_order(store: AnyStore) {
    let expected = seed_trades(&store, 12, 40, 7).await;
    let source_before = documents(&store, "trades").await;
    let indexes_before = store.index_names("trades").await.unwrap();
    let opts = Options {
        batch_items: 35,
        ..Options::default()
    };
    let report = migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
        .await
        .unwrap();
    let items: usize = expected.values().map(Vec::len).sum();
    assert_eq!(report.moved_items, items as u64, "{report:?}");
    assert_eq!(report.changed, 12);
    assert!(report.batches > 5);
    assert!(report.verified.as_ref().unwrap().is_clean(), "{report:?}");
    check_history(&store, &expected, &BTreeMap::new()).await;
    // The source is as it was, its indexes too.
    assert_eq!(documents(&store, "trades").await, source_before);
    assert_eq!(store.index_names("trades").await.unwrap(), indexes_before);
    // Bounds and summaries as the push keeps them.
    for (k, items) in &expected {
        let s = bucket::summary::<History, _, _>(&store, k, ..)
            .await
            .unwrap();
        assert_eq!(s.items, items.len() as u64);
        let sum: i64 = items.iter().map(|t| t.qty).sum();
        assert_eq!(
            s.values[0],
            Some(bucket::Number::Int64(sum)),
            "customer {k}"
        );
        let day: Vec<Trade> = bucket::range::<History, _, _>(
            &store,
            k,
            DateTime::from_millis(1_700_001_000_000)..DateTime::from_millis(1_700_002_000_000),
        )
        .try_collect()
        .await
        .unwrap();
        let want: Vec<Trade> = items
            .iter()
            .filter(|t| (1_700_001_000_000..1_700_002_000_000).contains(&t.date.timestamp_millis()))
            .cloned()
            .collect();
        assert_eq!(day, want, "customer {k}");
    }
    // Pages 1..n, `_id`s `<key>_<seconds of the first item>`.
    for d in documents(&store, "trade_history").await {
        let first = d.get_array("history").unwrap()[0]
            .as_document()
            .unwrap()
            .get_datetime("date")
            .unwrap();
        let id = d.get_str("_id").unwrap();
        let secs = first.timestamp_millis().div_euclid(1000);
        assert!(
            id.starts_with(&format!("{}_", d.get_i32("customerId").unwrap())),
            "{id}"
        );
        let at: i64 = id.split('_').nth(1).unwrap().parse().unwrap();
        assert!(at >= secs, "{id} vs {secs}");
    }
    // A second run changes nothing.
    let before = documents(&store, "trade_history").await;
    let again = migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
        .await
        .unwrap();
    assert!(again.already_finished && again.batches == 0, "{again:?}");
    assert_eq!(documents(&store, "trade_history").await, before);
    // Other settings than the checkpoint's are refused.
    let mut other = History::SPEC;
    other.size = 20;
    let err = migrate_bucket(&store, &other, &FLAT, &opts)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("other settings"), "{err}");
    // So are other kept values (buckets without the summary would follow buckets with it).
    let mut other = History::SPEC;
    other.keeps.summary = &[];
    let err = migrate_bucket(&store, &other, &FLAT, &opts)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("other settings"), "{err}");
}

async fn bucket_migration_resumes_after_dying(store: AnyStore) {
    static ARMED: AtomicBool = AtomicBool::new(false);
    let expected = seed_trades(&store, 8, 60, 11).await;
    for kill_after in [60u64, 60] {
        ARMED.store(true, Ordering::SeqCst);
        let s = store.clone();
        let died = tokio::spawn(async move {
            migrate_bucket(&s, &History::SPEC, &FLAT, &dying(kill_after, &ARMED)).await
        })
        .await;
        assert!(died.is_err(), "the run dies");
    }
    let report = migrate_bucket(
        &store,
        &History::SPEC,
        &FLAT,
        &Options {
            batch_items: 35,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    assert!(report.resumed_from.is_some(), "{report:?}");
    assert!(report.verified.as_ref().unwrap().is_clean(), "{report:?}");
    check_history(&store, &expected, &BTreeMap::new()).await;
}

async fn bucket_migration_can_remove_the_source(store: AnyStore) {
    static ARMED: AtomicBool = AtomicBool::new(false);
    let expected = seed_trades(&store, 6, 50, 3).await;
    ARMED.store(true, Ordering::SeqCst);
    let s = store.clone();
    let mut dies = dying(120, &ARMED);
    dies.remove_source = true;
    assert!(
        tokio::spawn(async move { migrate_bucket(&s, &History::SPEC, &FLAT, &dies).await })
            .await
            .is_err()
    );
    let left = documents(&store, "trades").await.len();
    let total: usize = expected.values().map(Vec::len).sum();
    assert!(left < total && left > 0, "{left} of {total}");
    let opts = Options {
        batch_items: 35,
        remove_source: true,
        ..Options::default()
    };
    migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
        .await
        .unwrap();
    assert!(documents(&store, "trades").await.is_empty());
    check_history(&store, &expected, &BTreeMap::new()).await;
}

async fn bucket_migration_keeps_live_pushes(store: AnyStore) {
    let expected = seed_trades(&store, 10, 60, 5).await;
    let stop = Arc::new(AtomicBool::new(false));
    let pusher = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut pushed: BTreeMap<i32, Vec<Trade>> = BTreeMap::new();
            let mut n = 0i64;
            while !stop.load(Ordering::SeqCst) || n < 60 {
                let key = (n % 10) as i32;
                let t = Trade {
                    ticker: "LIVE".into(),
                    kind: "buy".into(),
                    qty: n,
                    date: DateTime::from_millis(1_800_000_000_000 + n),
                };
                bucket::push::<History, _, _>(&store, &key, &t)
                    .await
                    .unwrap();
                pushed.entry(key).or_default().push(t);
                n += 1;
                tokio::task::yield_now().await;
            }
            pushed
        })
    };
    let report = migrate_bucket(
        &store,
        &History::SPEC,
        &FLAT,
        &Options {
            batch_items: 25,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    let pushed = pusher.await.unwrap();
    check_history(&store, &expected, &pushed).await;
    let v = verify_bucket(&store, &History::SPEC, &quiet())
        .await
        .unwrap();
    assert!(v.is_clean(), "{v:?} {report:?}");
}

async fn bucket_dry_run_writes_nothing(store: AnyStore) {
    let expected = seed_trades(&store, 5, 30, 9).await;
    let opts = Options {
        dry_run: true,
        ..Options::default()
    };
    let report = migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
        .await
        .unwrap();
    let items: usize = expected.values().map(Vec::len).sum();
    let buckets: usize = expected.values().map(|v| v.len().div_ceil(10)).sum();
    assert_eq!(
        (report.moved_items, report.changed, report.written),
        (items as u64, 5, buckets as u64)
    );
    assert!(documents(&store, "trade_history").await.is_empty());
    assert!(documents(&store, adopt::CHECKPOINTS).await.is_empty());
    // Not even the target's indexes.
    assert!(store.index_names("trade_history").await.unwrap().is_empty());
}

async fn bucket_analysis_reports_items_per_key(store: AnyStore) {
    // 10 customers with 5 items, 1 with 500.
    let mut docs = Vec::new();
    for c in 0..11 {
        let n = if c == 10 { 500 } else { 5 };
        for i in 0..n {
            docs.push(doc! {"customerId": c, "ticker": "MDB", "type": "buy", "qty": i, "date": DateTime::from_millis(i * 1000)});
        }
    }
    docs.push(doc! {"ticker": "no key"});
    store.insert_many("trades", docs).await.unwrap();
    let a = analyze_bucket(&store, &History::SPEC, Some(&FLAT), &quiet())
        .await
        .unwrap();
    assert_eq!(
        (a.documents, a.keys, a.items, a.without_key),
        (551, 11, 550, 1)
    );
    assert_eq!((a.per_key.p50, a.per_key.max), (5, 500));
    assert_eq!(a.buckets_at_size, 10 + 50);
    assert_eq!(a.suggestion.value, 10, "{}", a.suggestion.reason);
    // The bucket collection itself, once migrated.
    migrate_bucket(&store, &History::SPEC, &FLAT, &quiet())
        .await
        .unwrap();
    let b = analyze_bucket(&store, &History::SPEC, None, &quiet())
        .await
        .unwrap();
    assert_eq!((b.keys, b.items, b.documents), (11, 550, 60));
}

async fn bucket_verify_finds_each_defect(store: AnyStore) {
    seed_trades(&store, 4, 40, 1).await;
    migrate_bucket(&store, &History::SPEC, &FLAT, &quiet())
        .await
        .unwrap();
    assert!(verify_bucket(&store, &History::SPEC, &quiet())
        .await
        .unwrap()
        .is_clean());
    use pattern_core::store::query::{Filter, Update};
    let page = |k: i32, p: i64| Filter::and([Filter::eq("customerId", k), Filter::eq("page", p)]);
    let set = |k: &'static str, v: Bson| Update {
        set: vec![(k.into(), v)],
        ..Default::default()
    };
    // Customer 0: page 1's count wrong. Customer 1: page 2 renumbered 7. Customer 2: page 1
    // holds 11 items. Customer 3: page 1 opened (9 items) beside its open last page.
    store
        .update_many("trade_history", &page(0, 1), &set("count", Bson::Int32(3)))
        .await
        .unwrap();
    store
        .update_many("trade_history", &page(1, 2), &set("page", Bson::Int64(7)))
        .await
        .unwrap();
    let eleven: Vec<Bson> = (0..11)
        .map(|i| {
            Bson::Document(
                doc! {"ticker": "X", "type": "buy", "qty": i, "date": DateTime::from_millis(0)},
            )
        })
        .collect();
    store
        .update_many(
            "trade_history",
            &page(2, 1),
            &Update {
                set: vec![
                    ("history".into(), Bson::Array(eleven)),
                    ("count".into(), Bson::Int32(11)),
                ],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let nine: Vec<Bson> = (0..9)
        .map(|i| {
            Bson::Document(
                doc! {"ticker": "X", "type": "buy", "qty": i, "date": DateTime::from_millis(0)},
            )
        })
        .collect();
    store
        .update_many(
            "trade_history",
            &page(3, 1),
            &Update {
                set: vec![
                    ("history".into(), Bson::Array(nine)),
                    ("count".into(), Bson::Int32(9)),
                ],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let v = verify_bucket(&store, &History::SPEC, &quiet())
        .await
        .unwrap();
    let kinds: Vec<String> = v.defects.iter().map(|d| format!("{d:?}")).collect();
    let has = |pred: &dyn Fn(&LayoutDefect) -> bool| v.defects.iter().any(pred);
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::CountMismatch {
                count: 3,
                items: 10,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::NotDense {
                key: Bson::Int32(1),
                expected: 2,
                found: 3,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::OverSize {
                items: 11,
                size: 10,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::SeveralOpen {
                key: Bson::Int32(3),
                ..
            }
        )),
        "{kinds:#?}"
    );
}

async fn index_reports_sort_needed_stale_and_users(store: AnyStore) {
    use pattern_core::adopt::{index_report_bucket, index_report_outlier, index_report_tree};
    use pattern_core::store::query::IndexSpec;
    // Nothing yet: every needed index missing.
    let r = &index_report_bucket(&store, &History::SPEC).await.unwrap()[0];
    assert!(
        !r.exists && r.present.is_empty() && r.missing.len() == 4,
        "{r:?}"
    );
    bucket::ensure_indexes::<History, _>(&store).await.unwrap();
    let r = &index_report_bucket(&store, &History::SPEC).await.unwrap()[0];
    assert!(r.is_complete() && r.present.len() == 4, "{r:?}");
    // A user's index and a stale one of the library (an earlier version's `{key, _id}`).
    let index = |name: &str, field: &str| IndexSpec {
        name: name.into(),
        keys: vec![(field.into(), 1)],
        unique: false,
        partial: None,
    };
    store
        .create_index("trade_history", &index("by_ticker", "history.ticker"))
        .await
        .unwrap();
    store
        .create_index(
            "trade_history",
            &index("pattern_customerId_1__id_1", "customerId"),
        )
        .await
        .unwrap();
    let r = &index_report_bucket(&store, &History::SPEC).await.unwrap()[0];
    assert_eq!(r.stale, ["pattern_customerId_1__id_1"], "{r:?}");
    assert!(
        r.users.contains(&"by_ticker".to_string()) && !r.is_complete(),
        "{r:?}"
    );
    // The same layout without `time`: the bounds index is the library's, stale for it.
    let mut plain = History::SPEC;
    plain.keeps = Keeps::NONE;
    let r = &index_report_bucket(&store, &plain).await.unwrap()[0];
    assert!(r.stale.iter().any(|n| n.contains("bounded")), "{r:?}");
    // Outlier: nothing needed on the main collection, the series' on the overflow.
    seed_books(&store, 3, &[60]).await;
    let r = index_report_outlier(&store, &Book::SPEC).await.unwrap();
    assert!(r[0].missing.is_empty() && r[0].exists, "{r:?}");
    assert_eq!(r[1].missing.len(), 3, "{r:?}");
    migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    let r = index_report_outlier(&store, &Book::SPEC).await.unwrap();
    assert!(r.iter().all(|x| x.is_complete()), "{r:?}");
    // A tree: the model's indexes by the seed's names.
    let tree =
        pattern_core::spec::TreeSpec::new("categories", pattern_core::spec::TreeModel::Ancestors);
    let r = &index_report_tree(&store, &tree).await.unwrap()[0];
    assert_eq!(r.missing, ["ancestors_1", "parent_1"], "{r:?}");
    pattern_core::tree::raw::ensure_indexes(&store, &tree)
        .await
        .unwrap();
    let r = &index_report_tree(&store, &tree).await.unwrap()[0];
    assert!(r.is_complete() && r.present.len() == 2, "{r:?}");
}

async fn two_runs_at_once_stay_exact(store: AnyStore) {
    let expected = seed_trades(&store, 10, 60, 21).await;
    let opts = Options {
        batch_items: 30,
        verify: false,
        ..Options::default()
    };
    let (a, b) = tokio::join!(
        migrate_bucket(&store, &History::SPEC, &FLAT, &opts),
        migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
    );
    // One finishes; the other finishes too (the first was done before it started) or stops
    // when it finds the checkpoint moved by the other, with nothing of its batch kept.
    let stopped = [&a, &b]
        .iter()
        .filter(|r| match r {
            Ok(_) => false,
            Err(pattern_core::Error::Contention { what, .. }) => {
                assert!(what.contains("another run"), "{what}");
                true
            }
            Err(e) => panic!("unexpected error: {e}"),
        })
        .count();
    eprintln!(
        "two runs: {} stopped; a: {:?}; b: {:?}",
        stopped,
        a.as_ref().map(|r| (r.batches, r.already_finished)),
        b.as_ref().map(|r| (r.batches, r.already_finished))
    );
    assert!(stopped <= 1, "{a:?} {b:?}");
    // Running it again completes whatever the stopped run left, exactly.
    let last = migrate_bucket(&store, &History::SPEC, &FLAT, &Options::default())
        .await
        .unwrap();
    assert!(last.verified.unwrap().is_clean());
    check_history(&store, &expected, &BTreeMap::new()).await;
}

on_both_stores!(
    two_runs_at_once_stay_exact,
    index_reports_sort_needed_stale_and_users,
    outlier_migration_moves_each_tail_in_order,
    outlier_migration_resumes_after_dying,
    outlier_migration_keeps_live_pushes,
    outlier_dry_run_writes_nothing,
    outlier_analysis_reports_the_distribution,
    outlier_verify_finds_each_defect,
    bucket_migration_keeps_each_keys_order,
    bucket_migration_resumes_after_dying,
    bucket_migration_can_remove_the_source,
    bucket_migration_keeps_live_pushes,
    bucket_dry_run_writes_nothing,
    bucket_analysis_reports_items_per_key,
    bucket_verify_finds_each_defect,
    outlier_settings_are_pinned_by_the_checkpoint,
    bucket_settings_are_pinned_by_the_checkpoint,
    money_settings_are_pinned_by_the_checkpoint,
    a_typo_is_refused_before_anything_is_written,
);

/// Plants an index that breaks the targeting rule on purpose (a stale one of another
/// reference): left out of the targeting check.
mod planted {
    use super::*;

    async fn the_librarys_stale_indexes_of_another_reference_are_dropped(store: AnyStore) {
        let original = seed_books(&store, 10, &[75, 130]).await;
        // The overflow collection's indexes as a run with the default reference of the CLI
        // (`books_id`, a typo) left them: their unique `{books_id, seq}` refuses every second chunk.
        let typo = SeriesSpec {
            key_field: "books_id",
            ..Book::SPEC.overflow
        };
        for index in typo.indexes() {
            store.create_index("books_extra", &index).await.unwrap();
        }
        let mine = |names: &[String]| names.iter().any(|n| n.contains("books_id"));
        assert!(mine(&store.index_names("books_extra").await.unwrap()));
        let r = migrate_outlier(&store, &Book::SPEC, &quiet())
            .await
            .unwrap();
        assert!(r.verified.unwrap().is_clean());
        let names = store.index_names("books_extra").await.unwrap();
        assert!(!mine(&names), "stale indexes left: {names:?}");
        for index in Book::SPEC.overflow.indexes() {
            assert!(
                names.contains(&index.name),
                "{} missing from {names:?}",
                index.name
            );
        }
        for (id, items) in &original {
            assert_eq!(&book_items(&store, *id).await, items, "book {id}");
        }
    }

    on_both_stores!(untargeted: the_librarys_stale_indexes_of_another_reference_are_dropped);
}

// ---------------------------------------------------------------------------------------------
// Guards: the settings a checkpoint pins, the data a first run checks

/// What a refused run must leave as it was: the named collections' documents, the
/// checkpoints, and the database's collections.
async fn snapshot(store: &AnyStore, colls: &[&str]) -> (Vec<Vec<Document>>, Vec<String>) {
    let mut docs = Vec::new();
    for c in colls.iter().chain([&adopt::CHECKPOINTS]) {
        docs.push(documents(store, c).await);
    }
    (docs, store.collection_names().await.unwrap())
}

/// `r` is a refusal for other settings than the checkpoint's, naming `setting`.
fn refused_for<T: std::fmt::Debug>(r: Result<T, Error>, setting: &str, finished: bool) {
    match r {
        Err(Error::SettingsChanged {
            finished: f,
            stored,
            given,
            ..
        }) => {
            assert_eq!(f, finished, "{stored} {given}");
            assert!(
                stored.contains_key(setting) && given.contains_key(setting),
                "{setting}: {stored} vs {given}"
            );
            assert_ne!(stored.get(setting), given.get(setting));
        }
        other => panic!("{setting}: expected SettingsChanged, got {other:?}"),
    }
}

/// Book's layout with each setting that shapes an outlier migration changed in turn.
fn outlier_variants() -> Vec<(&'static str, OutlierSpec<'static>)> {
    let s = Book::SPEC;
    let ov = |o: SeriesSpec<'static>| OutlierSpec { overflow: o, ..s };
    vec![
        (
            "threshold",
            OutlierSpec {
                threshold: 100,
                ..s
            },
        ),
        (
            "array",
            OutlierSpec {
                items_field: "buyers2",
                ..s
            },
        ),
        (
            "flag",
            OutlierSpec {
                flag_field: "has_more",
                ..s
            },
        ),
        (
            "overflow",
            ov(SeriesSpec {
                collection: "books_more",
                ..s.overflow
            }),
        ),
        (
            "reference",
            ov(SeriesSpec {
                key_field: "sale_id",
                ..s.overflow
            }),
        ),
        (
            "extra",
            ov(SeriesSpec {
                items_field: "more",
                ..s.overflow
            }),
        ),
        (
            "chunk",
            ov(SeriesSpec {
                size: 7,
                ..s.overflow
            }),
        ),
        (
            "count",
            ov(SeriesSpec {
                count_field: "n",
                ..s.overflow
            }),
        ),
        (
            "seq",
            ov(SeriesSpec {
                order: SeriesOrder::Seq("number"),
                ..s.overflow
            }),
        ),
    ]
}

async fn outlier_settings_are_pinned_by_the_checkpoint(store: AnyStore) {
    static ARMED: AtomicBool = AtomicBool::new(false);
    let original = seed_books(&store, 30, &[10, 75, 130]).await;
    ARMED.store(true, Ordering::SeqCst);
    let s = store.clone();
    let died =
        tokio::spawn(async move { migrate_outlier(&s, &Book::SPEC, &dying(3, &ARMED)).await })
            .await;
    assert!(died.is_err(), "the first run dies");
    let colls = ["books", "books_extra", "books_more"];
    let before = snapshot(&store, &colls).await;
    let part_way = before.0[3]
        .iter()
        .find(|d| d.get_str("_id") == Ok("outlier:books"));
    assert_eq!(part_way.unwrap().get_str("state"), Ok("running"));
    for (setting, spec) in outlier_variants() {
        refused_for(
            migrate_outlier(&store, &spec, &quiet()).await,
            setting,
            false,
        );
        let dry = Options {
            dry_run: true,
            ..quiet()
        };
        refused_for(migrate_outlier(&store, &spec, &dry).await, setting, false);
        assert!(
            snapshot(&store, &colls).await == before,
            "{setting}: data changed"
        );
    }
    // With its own settings it resumes and finishes; then every other layout is refused.
    let done = migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert!(done.resumed_from.is_some() && done.verified.unwrap().is_clean());
    let finished = snapshot(&store, &colls).await;
    for (setting, spec) in outlier_variants() {
        let r = migrate_outlier(&store, &spec, &quiet()).await;
        if let Err(e) = &r {
            assert!(
                e.to_string().contains("finished with other settings"),
                "{e}"
            );
            assert!(
                e.to_string()
                    .contains("deleteOne({_id: \"outlier:books\"})"),
                "{e}"
            );
        }
        refused_for(r, setting, true);
        assert!(
            snapshot(&store, &colls).await == finished,
            "{setting}: data changed"
        );
    }
    for (id, items) in &original {
        assert_eq!(&book_items(&store, *id).await, items, "book {id}");
    }
}

/// History's layout and source with each setting that shapes a bucket migration changed.
fn bucket_variants() -> Vec<(&'static str, BucketSpec<'static>, Source<'static>, bool)> {
    let (s, f) = (History::SPEC, FLAT);
    let spec = |b: BucketSpec<'static>| (b, f, false);
    let mut all = vec![
        ("size", spec(BucketSpec { size: 20, ..s })),
        (
            "items",
            spec(BucketSpec {
                items_field: "trades",
                ..s
            }),
        ),
        (
            "count",
            spec(BucketSpec {
                count_field: "n",
                ..s
            }),
        ),
        (
            "page",
            spec(BucketSpec {
                page_field: "number",
                ..s
            }),
        ),
        (
            "target_key",
            spec(BucketSpec {
                key_field: "customer",
                ..s
            }),
        ),
        (
            "bounds",
            spec(BucketSpec {
                keeps: Keeps {
                    bounds: None,
                    ..s.keeps
                },
                ..s
            }),
        ),
        (
            "summary",
            spec(BucketSpec {
                keeps: Keeps {
                    summary: &[],
                    ..s.keeps
                },
                ..s
            }),
        ),
        (
            "key",
            (
                s,
                Source {
                    key_field: "customer",
                    ..f
                },
                false,
            ),
        ),
        (
            "time",
            (
                s,
                Source {
                    time_field: "when",
                    ..f
                },
                false,
            ),
        ),
        ("remove_source", (s, f, true)),
    ];
    all.drain(..).map(|(n, (b, f, r))| (n, b, f, r)).collect()
}

/// Every variant of [`bucket_variants`] refused, `colls` and the checkpoints unchanged.
async fn bucket_variants_refused(store: &AnyStore, colls: &[&str], finished: bool) {
    let before = snapshot(store, colls).await;
    for (setting, spec, from, remove) in bucket_variants() {
        let opts = Options {
            remove_source: remove,
            ..quiet()
        };
        let r = migrate_bucket(store, &spec, &from, &opts).await;
        refused_for(r, setting, finished);
        assert!(
            snapshot(store, colls).await == before,
            "{setting}: data changed"
        );
    }
}

async fn bucket_settings_are_pinned_by_the_checkpoint(store: AnyStore) {
    static ARMED: AtomicBool = AtomicBool::new(false);
    let expected = seed_trades(&store, 8, 60, 11).await;
    ARMED.store(true, Ordering::SeqCst);
    let s = store.clone();
    let died =
        tokio::spawn(
            async move { migrate_bucket(&s, &History::SPEC, &FLAT, &dying(60, &ARMED)).await },
        )
        .await;
    assert!(died.is_err(), "the run dies");
    let colls = ["trades", "trade_history"];
    bucket_variants_refused(&store, &colls, false).await;
    let done = migrate_bucket(&store, &History::SPEC, &FLAT, &quiet())
        .await
        .unwrap();
    assert!(done.resumed_from.is_some() && done.verified.unwrap().is_clean());
    bucket_variants_refused(&store, &colls, true).await;
    check_history(&store, &expected, &BTreeMap::new()).await;
}

/// The seed's clothes, 300 of them, prices as longs scaled by 100.
async fn seed_clothes(store: &AnyStore) {
    let docs: Vec<Document> = (0..300)
        .map(|i| doc! {"_id": i, "price": 1000 + i as i64})
        .collect();
    store.insert_many("clothes", docs).await.unwrap();
}

fn conversion(form: pattern_core::money::Form, finish: Finish) -> MoneyConversion<'static> {
    MoneyConversion {
        collection: "clothes",
        from: "price",
        form,
        to: "priceDec",
        finish,
    }
}

async fn money_settings_are_pinned_by_the_checkpoint(store: AnyStore) {
    use pattern_core::money::Form;
    static ARMED: AtomicBool = AtomicBool::new(false);
    seed_clothes(&store).await;
    // A run that dies part-way through its finish step (the decimal moved into `price`).
    let die: &'static (dyn Fn(&adopt::Progress<'_>) + Send + Sync) =
        Box::leak(Box::new(|p: &adopt::Progress<'_>| {
            if p.phase == "finish" && p.done >= 100 && ARMED.swap(false, Ordering::SeqCst) {
                panic!("killed by the test after {} documents", p.done);
            }
        }));
    let dying = Options {
        batch_items: 50,
        progress: Some(die),
        ..Options::default()
    };
    let into_old = conversion(Form::Scaled(2), Finish::IntoOld);
    ARMED.store(true, Ordering::SeqCst);
    let s = store.clone();
    let died = tokio::spawn(async move { convert_money(&s, &into_old, &dying).await }).await;
    assert!(died.is_err(), "the run dies");
    let before = snapshot(&store, &["clothes"]).await;
    let moved = |d: &&Document| matches!(d.get("price"), Some(Bson::Decimal128(_)));
    assert!(before.0[0].iter().filter(moved).count() >= 100, "part-way");
    let part_way = [
        ("form", conversion(Form::Scaled(3), Finish::IntoOld)),
        ("form", conversion(Form::Text, Finish::IntoOld)),
        ("finish", conversion(Form::Scaled(2), Finish::DropOld)),
        ("finish", conversion(Form::Scaled(2), Finish::KeepBoth)),
    ];
    for (setting, conv) in part_way {
        refused_for(convert_money(&store, &conv, &quiet()).await, setting, false);
        let same = snapshot(&store, &["clothes"]).await == before;
        assert!(same, "{setting}: data changed");
    }
    let done = convert_money(&store, &into_old, &quiet()).await.unwrap();
    assert!(done.resumed_from.is_some() && done.verified.unwrap().is_clean());
    // Finished: another form is refused; another finish step may follow.
    let finished = snapshot(&store, &["clothes"]).await;
    let other = conversion(Form::Scaled(3), Finish::IntoOld);
    refused_for(convert_money(&store, &other, &quiet()).await, "form", true);
    assert!(snapshot(&store, &["clothes"]).await == finished);
    let keep = conversion(Form::Scaled(2), Finish::KeepBoth);
    let r = convert_money(&store, &keep, &quiet()).await.unwrap();
    assert_eq!((r.converted, r.replaced), (0, 0), "{r:?}");
    let one = &documents(&store, "clothes").await[7];
    let want = doc! {"_id": 7, "price": Bson::Decimal128("10.07".parse().unwrap())};
    assert_eq!(one, &want);
}

/// `r` is a refusal of data that is not there: `missing`, with `found` among what it names.
fn not_found<T: std::fmt::Debug>(r: Result<T, Error>, missing: Missing, found: &str) {
    match r {
        Err(Error::SourceNotFound {
            missing: m,
            found: f,
            ..
        }) => {
            assert_eq!(*m, missing);
            assert!(f.iter().any(|x| x == found), "{found} not in {f:?}");
        }
        other => panic!("expected SourceNotFound {missing:?}, got {other:?}"),
    }
}

fn field(name: &str, holding: &str) -> Missing {
    Missing::Field {
        field: name.into(),
        holding: holding.into(),
    }
}

async fn a_typo_is_refused_before_anything_is_written(store: AnyStore) {
    use pattern_core::money::Form;
    seed_books(&store, 5, &[60]).await;
    seed_trades(&store, 3, 10, 5).await;
    store
        .insert_one("clothes", doc! {"_id": 1, "price": 1999_i64})
        .await
        .unwrap();
    let colls = ["books", "trades", "clothes"];
    let before = snapshot(&store, &colls).await;
    // Outlier: no such collection; no document with the array; an overflow collection whose
    // documents lack the reference.
    let spec = OutlierSpec {
        collection: "bokos",
        ..Book::SPEC
    };
    not_found(
        migrate_outlier(&store, &spec, &quiet()).await,
        Missing::Collection,
        "books",
    );
    let spec = OutlierSpec {
        items_field: "customers_purchased",
        ..Book::SPEC
    };
    let holding = "the array to cap";
    not_found(
        migrate_outlier(&store, &spec, &quiet()).await,
        field("customers_purchased", holding),
        "buyers",
    );
    let dry = Options {
        dry_run: true,
        ..quiet()
    };
    not_found(
        migrate_outlier(&store, &spec, &dry).await,
        field("customers_purchased", holding),
        "title",
    );
    let other = OutlierSpec {
        overflow: SeriesSpec {
            collection: "trades",
            ..Book::SPEC.overflow
        },
        ..Book::SPEC
    };
    let holding = "the reference to the main document";
    not_found(
        migrate_outlier(&store, &other, &quiet()).await,
        field("book_id", holding),
        "customerId",
    );
    // Bucket: no such source; no key; no time.
    let from = Source {
        collection: "trade",
        ..FLAT
    };
    not_found(
        migrate_bucket(&store, &History::SPEC, &from, &quiet()).await,
        Missing::Collection,
        "trades",
    );
    let from = Source {
        key_field: "customer_id",
        ..FLAT
    };
    not_found(
        migrate_bucket(&store, &History::SPEC, &from, &quiet()).await,
        field("customer_id", "the key"),
        "customerId",
    );
    let from = Source {
        time_field: "time",
        ..FLAT
    };
    not_found(
        migrate_bucket(&store, &History::SPEC, &from, &quiet()).await,
        field("time", "the item's time"),
        "date",
    );
    // Money: no such collection; neither field.
    let conv = MoneyConversion {
        collection: "cloths",
        ..conversion(Form::Scaled(2), Finish::KeepBoth)
    };
    not_found(
        convert_money(&store, &conv, &quiet()).await,
        Missing::Collection,
        "clothes",
    );
    let conv = MoneyConversion {
        from: "prix",
        to: "prixDec",
        ..conversion(Form::Scaled(2), Finish::KeepBoth)
    };
    not_found(
        convert_money(&store, &conv, &quiet()).await,
        field("prix` or `prixDec", "an amount"),
        "price",
    );
    // Nothing was created: no checkpoint, no overflow or bucket collection, no index.
    assert!(snapshot(&store, &colls).await == before);
    for c in ["books_extra", "trade_history", adopt::CHECKPOINTS] {
        assert!(
            store.index_names(c).await.unwrap().is_empty(),
            "{c} has indexes"
        );
    }
    // A run that moves nothing (every array within the threshold) creates nothing either.
    let high = OutlierSpec {
        threshold: 100,
        ..Book::SPEC
    };
    let r = migrate_outlier(&store, &high, &quiet()).await.unwrap();
    assert_eq!((r.changed, r.batches), (0, 0), "{r:?}");
    assert!(snapshot(&store, &colls).await == before);
}

// ---------------------------------------------------------------------------------------------
// The derives' generated methods

mod derived {
    use super::*;

    #[derive(pattern_core::Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[outlier(
        collection = "sales",
        threshold = 3,
        overflow = "extra_sales",
        chunk = 2
    )]
    struct Sale {
        #[outlier(id)]
        #[serde(rename = "_id")]
        id: i32,
        #[outlier(items)]
        customers: Vec<i32>,
    }

    #[allow(dead_code)] // only a layout: its documents are read through the methods
    #[derive(pattern_core::Bucket)]
    #[bucket(
        collection = "trade_pages",
        size = 4,
        time = "date",
        summary(sum = "qty")
    )]
    struct TradePages {
        #[bucket(key)]
        #[serde(rename = "customerId")]
        customer_id: i32,
        #[bucket(items)]
        history: Vec<Trade>,
    }

    async fn generated_methods_analyze_migrate_verify(store: AnyStore) {
        let docs: Vec<Document> = (0..6)
            .map(|i| doc! {"_id": i, "customers": (0..i * 2).collect::<Vec<i32>>()})
            .collect();
        store.insert_many("sales", docs).await.unwrap();
        let a = Sale::analyze(&store).await.unwrap();
        assert_eq!((a.documents, a.over_threshold, a.lengths.max), (6, 4, 10));
        let r = Sale::migrate(&store, &Options::default()).await.unwrap();
        assert_eq!(r.changed, 4);
        assert!(Sale::verify(&store).await.unwrap().is_clean());
        assert!(Sale::index_report(&store)
            .await
            .unwrap()
            .iter()
            .all(|r| r.is_complete()));
        for i in 0..6 {
            assert_eq!(
                Sale::all_items(&store, &i).await.unwrap().unwrap(),
                (0..i * 2).collect::<Vec<i32>>()
            );
        }

        let expected = seed_trades(&store, 3, 9, 2).await;
        let before = TradePages::analyze_source(&store, &FLAT).await.unwrap();
        assert_eq!(
            before.items,
            expected.values().map(|v| v.len() as u64).sum::<u64>()
        );
        let r = TradePages::migrate(&store, &FLAT, &Options::default())
            .await
            .unwrap();
        assert_eq!(r.changed, 3);
        assert!(TradePages::verify(&store).await.unwrap().is_clean());
        assert!(TradePages::index_report(&store).await.unwrap()[0].is_complete());
        assert_eq!(
            TradePages::analyze(&store).await.unwrap().items,
            before.items
        );
        for (k, items) in &expected {
            let got: Vec<Trade> = TradePages::items(&store, k).try_collect().await.unwrap();
            assert_eq!(&got, items);
        }
    }

    on_both_stores!(generated_methods_analyze_migrate_verify);
}
