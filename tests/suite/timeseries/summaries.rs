//! Bounds and summaries kept by the push, range reads and summaries against the items, exact
//! Decimal128 sums, Int64 overflow, `latest`, reads without their attributes.

use super::*;
use pattern_core::store;

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
    let big = sized;
    bucket::push::<Trades, _, _>(&store, &1, &big(0, i64::MAX - 1))
        .await
        .unwrap();
    let e = bucket::push::<Trades, _, _>(&store, &1, &big(1, 5)).await;
    assert!(
        matches!(e, Err(Error::Store(store::Error::Overflow { ref field, .. })) if field == "qty_sum"),
        "{e:?}"
    );
    let e = bucket::push_many::<Trades, _, _>(&store, &3, &[big(2, i64::MAX), big(3, 1)]).await;
    assert!(
        matches!(e, Err(Error::Store(store::Error::Overflow { .. }))),
        "{e:?}"
    );
    let docs = documents(&store, "trades").await;
    assert_eq!(docs.len(), 1, "nothing written for key 3");
    assert_eq!(as_int(docs[0].get("count").unwrap()), Some(1));
    assert_eq!(as_int(docs[0].get("qty_sum").unwrap()), Some(i64::MAX - 1));
    // An ingest's fill of the open bucket refuses the same (its pipeline's `$add` would give a
    // Double): the item goes to the ordinary push, whose error the ingest reports.
    bucket::ingest::<Trades, _>(&store, &[(6, big(30, i64::MAX - 1))])
        .await
        .unwrap();
    let e = bucket::ingest::<Trades, _>(&store, &[(6, big(31, 5))]).await;
    assert!(
        matches!(&e, Err(Error::Ingest { source, written: 0, .. }) if matches!(**source, Error::Store(store::Error::Overflow { .. }))),
        "{e:?}"
    );
    let six = documents(&store, "trades").await;
    let six: Vec<_> = six
        .iter()
        .filter(|d| d.get("customerId") == Some(&bson::Bson::Int64(6)))
        .collect();
    assert_eq!(six.len(), 1);
    assert_eq!(
        six[0].get("qty_sum"),
        Some(&bson::Bson::Int64(i64::MAX - 1))
    );
    assert_eq!(as_int(six[0].get("count").unwrap()), Some(1));
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
    assert!(
        matches!(e, Err(Error::Store(store::Error::Overflow { .. }))),
        "{e:?}"
    );
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

/// Range and summary reads without the attributes they need say so.
async fn reads_need_their_attributes(store: AnyStore) {
    let r = bucket::range::<Legacy, _, _>(&store, &1, date(0)..date(1))
        .try_collect::<Vec<_>>()
        .await;
    assert!(
        matches!(r, Err(Error::Store(store::Error::InvalidInput(ref m))) if m.contains("time")),
        "{r:?}"
    );
    let s = bucket::summary::<Legacy, _, _>(&store, &1, ..).await;
    assert!(
        matches!(s, Err(Error::Store(store::Error::InvalidInput(ref m))) if m.contains("summary")),
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
    reads_need_their_attributes,
);
