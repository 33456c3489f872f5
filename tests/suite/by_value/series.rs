//! Buckets and outliers by value: a key's buckets, roll-up and overflow written with the key
//! in each number type (another program rewrote them) are one series: `verify`, `backfill`,
//! the archive and its `verify_archive`, `analyze` and the outlier migration treat them as one
//! key, as the server's reads and pushes already do.

use bson::DateTime;
use pattern_core::adopt::{self, Options};
use pattern_core::bucket::{self, ArchiveAt, Totals};
use pattern_core::spec::{
    BucketSpec, Keeps, OutlierSpec, SeriesOrder, SeriesSpec, SummaryField, SummaryOp,
};
use pattern_core::{outlier, Bucket, Outlier};

use super::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Tick {
    qty: i64,
    date: DateTime,
}

const SUMMARY: &[SummaryField] = &[SummaryField {
    op: SummaryOp::Sum,
    item_field: "qty",
    field: "qty_sum",
}];

/// Two ticks a bucket, with time bounds, a summary and roll-ups.
struct Ticks;
impl Bucket for Ticks {
    type Key = i64;
    type Item = Tick;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        collection: "ticks",
        key_field: "device",
        items_field: "items",
        count_field: "count",
        page_field: "page",
        size: 2,
        keeps: Keeps {
            bounds: Some(("date_min", "date_max")),
            summary: SUMMARY,
            span: None,
            rollup: Some("ticks.rollups"),
        },
    };
    fn item_millis(t: &Tick) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

fn tick(i: i64) -> Tick {
    Tick {
        qty: i,
        date: DateTime::from_millis(i * 60_000),
    }
}

/// Device 5's eight ticks in four buckets through the library, then bucket `n` rewritten by
/// another program with the key in the `n`th number type (Int32, Int64, Double, Decimal128).
async fn mixed_series(store: &AnyStore) {
    for i in 1..=8 {
        bucket::push::<Ticks, _, _>(store, &5, &tick(i))
            .await
            .unwrap();
    }
    for (n, key) in forms(5).into_iter().enumerate() {
        let page = Filter::and([
            Filter::eq("device", 5_i64),
            Filter::eq("page", n as i64 + 1),
        ]);
        raw_set(store, "ticks", page, "device", key).await;
    }
}

/// `verify` walks the collection sorted by key and number: the four forms are one key, its
/// buckets numbered 1 to 4 and its roll-up counting all eight ticks.
async fn a_series_verifies_as_one_key(store: AnyStore) {
    mixed_series(&store).await;
    let v = bucket::verify::<Ticks, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
    // Pushes and reads through the library go on in the same series.
    for i in 9..=11 {
        bucket::push::<Ticks, _, _>(&store, &5, &tick(i))
            .await
            .unwrap();
    }
    let items = bucket::all_items::<Ticks, _, _>(&store, &5).await.unwrap();
    assert_eq!(items, (1..=11).map(tick).collect::<Vec<_>>());
    let v = bucket::verify::<Ticks, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// `backfill` merges the key's buckets into one roll-up (a key written in two forms is not
/// refused as out of order), which the whole-history summary then reads.
async fn backfill_rolls_up_one_key(store: AnyStore) {
    mixed_series(&store).await;
    bucket::backfill::<Ticks, _>(&store).await.unwrap();
    // One roll-up of the key, however its forms were written (found by value).
    let docs = store
        .find(
            "ticks.rollups",
            &Filter::eq("_id", 5_i64),
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(docs.len(), 1, "{docs:?}");
    let totals = bucket::summary::<Ticks, _, _>(&store, &5, ..)
        .await
        .unwrap();
    assert_eq!(totals.items, 8);
    assert_eq!(
        totals.values[0].map(|n| n.as_i64()),
        Some(Some((1..=8).sum::<i64>()))
    );
    assert!(bucket::verify::<Ticks, _>(&store).await.unwrap().is_clean());
}

/// The archive keeps the key's newest bucket live and moves the three before it;
/// `verify_archive` counts the key's pages across both sides as one key.
async fn the_archive_sees_one_key(store: AnyStore) {
    mixed_series(&store).await;
    let to = ArchiveAt {
        store: &store,
        collection: "ticks_old",
    };
    let cutoff = DateTime::from_millis(100 * 60_000);
    let done = bucket::archive::<Ticks, _, _>(&store, to, cutoff, &Options::default())
        .await
        .unwrap();
    assert_eq!((done.moved, done.newest_kept), (3, 1), "{done:?}");
    let defects = bucket::verify_archive::<Ticks, _, _>(&store, to)
        .await
        .unwrap();
    assert_eq!(defects, vec![]);
}

/// `analyze` counts one key with eight items.
async fn analyze_counts_one_key(store: AnyStore) {
    mixed_series(&store).await;
    let quiet = Options::default();
    let a = adopt::analyze_bucket(&store, &Ticks::SPEC, None, &quiet)
        .await
        .unwrap();
    assert_eq!((a.keys, a.items), (1, 8), "{a:?}");
}

/// Books keep two buyers in the main document, the rest in chunks of two.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Book {
    #[serde(rename = "_id")]
    id: i64,
    buyers: Vec<i64>,
}

impl Outlier for Book {
    type Id = i64;
    type Item = i64;
    const SPEC: OutlierSpec<'static> = OutlierSpec {
        collection: "books",
        items_field: "buyers",
        threshold: 2,
        flag_field: "has_extras",
        overflow: SeriesSpec {
            collection: "books_extra",
            key_field: "book_id",
            items_field: "buyers_extra",
            count_field: "count",
            size: 2,
            order: SeriesOrder::Seq("seq"),
            keeps: Keeps::NONE,
        },
    };
}

/// Book 5's overflow chunks rewritten with the parent in each number type: `verify` finds the
/// parent of each (no orphan, no flag without overflow), `analyze` counts the book's ten
/// buyers, and a full read has them all.
async fn overflow_finds_its_parent_by_value(store: AnyStore) {
    raw_insert(&store, "books", doc! {"_id": 5_i64, "buyers": []}).await;
    for b in 1..=10 {
        outlier::push::<Book, _, _>(&store, &5, &b).await.unwrap();
    }
    for (n, key) in forms(5).into_iter().enumerate() {
        let chunk = Filter::and([
            Filter::eq("book_id", 5_i64),
            Filter::eq("seq", n as i64 + 1),
        ]);
        raw_set(&store, "books_extra", chunk, "book_id", key).await;
    }
    let v = outlier::verify::<Book, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
    let a = adopt::analyze_outlier(&store, &Book::SPEC, &Options::default())
        .await
        .unwrap();
    assert_eq!(a.lengths.max, 10, "{a:?}");
    let full = outlier::full::<Book, _, _>(&store, &5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full.buyers, (1..=10).collect::<Vec<_>>());
}

/// The outlier migration of a book whose seed-layout overflow names it in another number type
/// (read, deleted by value and written again as chunks): every buyer kept, in order.
async fn the_outlier_migration_keeps_overflow_named_by_value(store: AnyStore) {
    for n in 0..4 {
        let id = 10 + n as i64;
        let parent = forms(id)[n].clone();
        let main = doc! {"_id": id, "buyers": [1_i64, 2_i64, 3_i64], "has_extras": true};
        raw_insert(&store, "books", main).await;
        raw_insert(
            &store,
            "books_extra",
            doc! {"book_id": parent, "buyers_extra": [4_i64, 5_i64]},
        )
        .await;
    }
    let report = adopt::migrate_outlier(&store, &Book::SPEC, &Options::default())
        .await
        .unwrap();
    assert!(report.verified.as_ref().unwrap().is_clean(), "{report:?}");
    for id in 10..14 {
        let full = outlier::full::<Book, _, _>(&store, &id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(full.buyers, [1, 2, 3, 4, 5], "book {id}");
    }
}

/// An ingest by a process that has not seen the key (what it remembers forgotten) learns the
/// key's buckets, written in four number forms, as one series: the open bucket's key is a
/// Decimal128, the batch's an `i64`. Its items continue the series, which stays clean.
async fn an_ingest_continues_the_series_by_value(store: AnyStore) {
    mixed_series(&store).await;
    bucket::push::<Ticks, _, _>(&store, &5, &tick(9))
        .await
        .unwrap();
    let open = Filter::and([Filter::eq("device", 5_i64), Filter::eq("page", 5_i64)]);
    raw_set(&store, "ticks", open, "device", forms(5)[3].clone()).await;
    store.extensions().forget();
    let batch: Vec<(i64, Tick)> = (10..=14).map(|i| (5, tick(i))).collect();
    assert_eq!(bucket::ingest::<Ticks, _>(&store, &batch).await.unwrap(), 5);
    let items = bucket::all_items::<Ticks, _, _>(&store, &5).await.unwrap();
    assert_eq!(items, (1..=14).map(tick).collect::<Vec<_>>());
    let v = bucket::verify::<Ticks, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// A `push_many` by a process that has not seen the key fills the open bucket another program
/// rewrote with its key a Double and its count an Int32 (as pymongo stores a small number):
/// the fill's condition on the count holds by value, the fill and its roll-up go in one batch,
/// and the series and its roll-up stay exact.
async fn push_many_fills_a_bucket_counted_in_another_number_type(store: AnyStore) {
    mixed_series(&store).await;
    bucket::push::<Ticks, _, _>(&store, &5, &tick(9))
        .await
        .unwrap();
    let open = || Filter::and([Filter::eq("device", 5_i64), Filter::eq("page", 5_i64)]);
    raw_set(&store, "ticks", open(), "count", Bson::Int32(1)).await;
    raw_set(&store, "ticks", open(), "device", forms(5)[2].clone()).await;
    store.extensions().forget();
    let more: Vec<Tick> = (10..=14).map(tick).collect();
    bucket::push_many::<Ticks, _, _>(&store, &5, &more)
        .await
        .unwrap();
    let items = bucket::all_items::<Ticks, _, _>(&store, &5).await.unwrap();
    assert_eq!(items, (1..=14).map(tick).collect::<Vec<_>>());
    let filled = store
        .find("ticks", &open(), &Default::default())
        .await
        .unwrap();
    assert_eq!(filled.len(), 1);
    assert_eq!(
        pattern_tests::as_int(filled[0].get("count").unwrap()),
        Some(2)
    );
    let total = bucket::summary::<Ticks, _, _>(&store, &5, ..)
        .await
        .unwrap();
    assert_eq!(total.items, 14);
    let v = bucket::verify::<Ticks, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

on_both_stores!(
    push_many_fills_a_bucket_counted_in_another_number_type,
    an_ingest_continues_the_series_by_value,
    a_series_verifies_as_one_key,
    backfill_rolls_up_one_key,
    the_archive_sees_one_key,
    analyze_counts_one_key,
    overflow_finds_its_parent_by_value,
    the_outlier_migration_keeps_overflow_named_by_value,
);
