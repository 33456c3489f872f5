//! Buckets cut by span (`#[bucket(span = "1d")]`), on both stores: every bucket holds items of
//! one window of the epoch-aligned days; a key has at most one open bucket per window; pushes
//! one at a time, several at a time, out of time order and by ingest all keep to it; range
//! reads and summaries agree with the items themselves over random ranges, before and after
//! a change of span clears the collection's mark.

use super::*;

/// [`Trades`] cut into days.
pub(super) struct Daily;
impl Bucket for Daily {
    type Key = i64;
    type Item = Trade;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        collection: "daily",
        keeps: Keeps {
            span: Some(DAY),
            ..Trades::SPEC.keeps
        },
        ..Trades::SPEC
    };
    fn item_millis(t: &Trade) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

/// The same collection cut into weeks (a writer with another span).
struct Weekly;
impl Bucket for Weekly {
    type Key = i64;
    type Item = Trade;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        keeps: Keeps {
            span: Some(7 * DAY),
            ..Daily::SPEC.keeps
        },
        ..Daily::SPEC
    };
    fn item_millis(t: &Trade) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

fn window(ms: i64, span: i64) -> i64 {
    ms.div_euclid(span) * span
}

/// Every bucket's items in one window of `span`, bounds and summary its own, at most `size`
/// items, at most one open bucket per key and window, pages 1..n; `verify` agrees.
async fn check_windows(store: &AnyStore, span: i64) {
    let docs = documents(store, "daily").await;
    assert!(!docs.is_empty());
    assert_buckets_complete(&docs);
    let mut open: HashSet<(i64, i64)> = HashSet::new();
    let mut pages: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for d in &docs {
        let key = d.get_i64("customerId").unwrap();
        let min = d.get_datetime("date_min").unwrap().timestamp_millis();
        let max = d.get_datetime("date_max").unwrap().timestamp_millis();
        let id = d.get("_id").unwrap();
        assert_eq!(
            window(min, span),
            window(max, span),
            "{id} spans two windows"
        );
        let count = d.get_i32("count").unwrap();
        assert!(count <= 5, "{id}");
        if count < 5 {
            assert!(
                open.insert((key, window(min, span))),
                "two open buckets of key {key} in the window of {id}"
            );
        }
        pages
            .entry(key)
            .or_default()
            .push(d.get_i64("page").unwrap());
    }
    for (key, mut p) in pages {
        p.sort();
        assert_eq!(p, (1..=p.len() as i64).collect::<Vec<_>>(), "key {key}");
    }
    let v = bucket::verify::<Daily, _>(store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// The items of `key` in `from..to` (ids, sorted: a bucket of an earlier window opened after a
/// later one is read in page order, so the read's order is the buckets').
fn want_ids(all: &BTreeMap<i64, Vec<Trade>>, key: i64, from: i64, to: i64) -> Vec<i64> {
    let mut ids: Vec<i64> = (all.get(&key).into_iter().flatten())
        .filter(|t| (from..to).contains(&t.date.timestamp_millis()))
        .map(|t| t.id)
        .collect();
    ids.sort();
    ids
}

/// Random ranges (aligned on days or not, short and long) read by `range` and `summary`
/// against the items.
async fn check_reads<B: Bucket<Key = i64, Item = Trade, Summary = Totals>>(
    store: &AnyStore,
    all: &BTreeMap<i64, Vec<Trade>>,
    rng: &mut Lcg,
) {
    let end = T0 + 130 * DAY / 4;
    for case in 0..cases() {
        let key = rng.below(3) as i64;
        let mut from = T0 - 2 * DAY + rng.below((end - T0 + 2 * DAY) as u64) as i64;
        if case % 3 == 0 {
            from = window(from, DAY);
        }
        let len = [3_600_000, DAY, 3 * DAY, 20 * DAY][case % 4] + rng.below(DAY as u64) as i64;
        let to = if case % 5 == 0 {
            window(from + len, DAY)
        } else {
            from + len
        };
        let mut got: Vec<i64> = bucket::range::<B, _, _>(store, &key, date(from)..date(to))
            .map_ok(|t| t.id)
            .try_collect()
            .await
            .unwrap();
        got.sort();
        let want = want_ids(all, key, from, to);
        assert_eq!(got, want, "range {from}..{to} of key {key}");
        let s = bucket::summary::<B, _, _>(store, &key, date(from)..date(to))
            .await
            .unwrap();
        let items: Vec<&Trade> = (all.get(&key).into_iter().flatten())
            .filter(|t| (from..to).contains(&t.date.timestamp_millis()))
            .collect();
        assert_eq!(observed(&s), expected(&items), "summary {from}..{to}");
    }
}

/// Pushes one at a time (one in five out of time order, up to two days early), several at a
/// time, and by ingest: every bucket keeps to its day, and the reads agree with the items.
async fn pushes_keep_to_their_windows(store: AnyStore) {
    let mut rng = Lcg(11);
    let mut all: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    let trades: Vec<(i64, Trade)> = (0..130).map(|i| (i % 3, trade(&mut rng, i))).collect();
    for (k, t) in &trades[..60] {
        bucket::push::<Daily, _, _>(&store, k, t).await.unwrap();
        all.entry(*k).or_default().push(t.clone());
    }
    // Several at a time: each to its own window's bucket.
    for chunk in trades[60..90].chunks(7) {
        for k in 0..3 {
            let mine: Vec<Trade> = (chunk.iter().filter(|(c, _)| *c == k))
                .map(|(_, t)| t.clone())
                .collect();
            bucket::push_many::<Daily, _, _>(&store, &k, &mine)
                .await
                .unwrap();
            all.entry(k).or_default().extend(mine);
        }
    }
    // Ingest: some keys' windows go back in time within a batch (the ordinary push takes
    // them), others' do not.
    for chunk in trades[90..].chunks(20) {
        let n = bucket::ingest::<Daily, _>(&store, chunk).await.unwrap();
        assert_eq!(n as usize, chunk.len());
        for (k, t) in chunk {
            all.entry(*k).or_default().push(t.clone());
        }
    }
    check_windows(&store, DAY).await;
    check_reads::<Daily>(&store, &all, &mut rng).await;
    // Every item once.
    for (key, items) in &all {
        let mut got: Vec<i64> = bucket::items::<Daily, _, _>(&store, key)
            .map_ok(|t| t.id)
            .try_collect()
            .await
            .unwrap();
        got.sort();
        let mut want: Vec<i64> = items.iter().map(|t| t.id).collect();
        want.sort();
        assert_eq!(got, want, "key {key}");
    }
}

/// Ingest in time order: each key's run of a window fills the window's open bucket and opens
/// new ones, across batches (the second batch learns the open buckets of its windows).
async fn ingest_cuts_by_window_across_batches(store: AnyStore) {
    let mut all: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    let at = |i: i64| Trade {
        id: i,
        qty: i,
        price: 1.0,
        fee: None,
        // Every 3 hours from an hour before a day starts: 8 a day, windows cut mid-batch.
        date: date(window(T0, DAY) + DAY - 3_600_000 + i * 3 * 3_600_000),
    };
    let items: Vec<(i64, Trade)> = (0..90).map(|i| (i % 2, at(i))).collect();
    for chunk in items.chunks(13) {
        bucket::ingest::<Daily, _>(&store, chunk).await.unwrap();
        for (k, t) in chunk {
            all.entry(*k).or_default().push(t.clone());
        }
    }
    check_windows(&store, DAY).await;
    for (key, want) in &all {
        let got: Vec<Trade> = bucket::items::<Daily, _, _>(&store, key)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(&got, want, "in time order, read in push order: key {key}");
    }
    // Per key 45 items, 4 a day: 12 days (the first holds one), each in one bucket of 4
    // (size 5): no more buckets than windows.
    let docs = documents(&store, "daily").await;
    let days: HashSet<(i64, i64)> = (items.iter())
        .map(|(k, t)| (*k, window(t.date.timestamp_millis(), DAY)))
        .collect();
    assert_eq!(docs.len(), days.len());
}

/// A writer with another span clears the collection's span mark: reads then bound the scan on
/// one side only, and still find every item, the days' buckets and the weeks' alike.
async fn another_span_clears_the_mark(store: AnyStore) {
    let mut rng = Lcg(5);
    let mut all: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    for i in 0..60 {
        let t = trade(&mut rng, i);
        bucket::push::<Daily, _, _>(&store, &(i % 3), &t)
            .await
            .unwrap();
        all.entry(i % 3).or_default().push(t);
    }
    for i in 60..130 {
        let t = trade(&mut rng, i);
        bucket::push::<Weekly, _, _>(&store, &(i % 3), &t)
            .await
            .unwrap();
        all.entry(i % 3).or_default().push(t);
    }
    let marks = documents(&store, "pattern_bounded").await;
    let mark = marks
        .iter()
        .find(|m| m.get_str("_id") == Ok("daily"))
        .unwrap();
    assert_eq!(mark.get_bool("bounded"), Ok(true));
    assert!(mark.get("span").is_none(), "{mark}");
    check_reads::<Weekly>(&store, &all, &mut rng).await;
    check_reads::<Daily>(&store, &all, &mut rng).await;
}

/// [`Daily`] keyed by text.
struct DailyByName;
impl Bucket for DailyByName {
    type Key = String;
    type Item = Trade;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        collection: "daily_names",
        ..Daily::SPEC
    };
    fn item_millis(t: &Trade) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

/// Where nothing routes by key, a range of a collection cut by span reads the buckets by their
/// time-named `_id`s (`<key>_<seconds>`), compared as text: another key whose text falls in
/// that range (`a_17000_...` lies between `a_1700000000` and `a_1700172800`) is read and left
/// out, and ranges whose seconds change their number of digits (2001-09-09, 1970) still find
/// every item.
async fn window_ids_keep_to_their_key(store: AnyStore) {
    let names = ["a", "a_17000", "a_1", "b"];
    let mut all: Vec<(String, Trade)> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        // Every 5 hours over 12 days; "b" around 2001-09-09T01:46:40Z (10^9 s) and 1970.
        let starts: &[i64] = if *name == "b" {
            &[1_000_000_000_000 - 6 * DAY, -3 * DAY]
        } else {
            &[T0]
        };
        for (j, start) in starts.iter().enumerate() {
            for i in 0..58 {
                let id = (k as i64) * 1_000 + (j as i64) * 100 + i;
                let t = Trade {
                    id,
                    qty: id,
                    price: 1.0,
                    fee: None,
                    date: date(start + i * 5 * 3_600_000),
                };
                all.push((name.to_string(), t));
            }
        }
    }
    for chunk in all.chunks(40) {
        bucket::ingest::<DailyByName, _>(&store, chunk)
            .await
            .unwrap();
    }
    let ranges = [
        (T0, T0 + DAY),
        (T0 + 7 * 3_600_000, T0 + 2 * DAY + 1),
        (window(T0, DAY) + DAY, window(T0, DAY) + 4 * DAY),
        (T0 - DAY, T0 + 20 * DAY),
        (1_000_000_000_000 - 2 * DAY, 1_000_000_000_000 + 2 * DAY),
        (1_000_000_000_000 - 6 * DAY, 1_000_000_000_000 - DAY),
        (-2 * DAY, DAY),
        (-3 * DAY, 1_000_000_000_000 + 7 * DAY),
    ];
    for name in names {
        for (from, to) in ranges {
            let mut got: Vec<i64> =
                bucket::range::<DailyByName, _, _>(&store, name, date(from)..date(to))
                    .map_ok(|t| t.id)
                    .try_collect()
                    .await
                    .unwrap();
            got.sort();
            let items: Vec<&Trade> = (all.iter())
                .filter(|(k, t)| k == name && (from..to).contains(&t.date.timestamp_millis()))
                .map(|(_, t)| t)
                .collect();
            let want: Vec<i64> = items.iter().map(|t| t.id).collect();
            assert_eq!(got, want, "range {from}..{to} of key {name}");
            let s = bucket::summary::<DailyByName, _, _>(&store, name, date(from)..date(to))
                .await
                .unwrap();
            assert_eq!(
                observed(&s),
                expected(&items),
                "summary {from}..{to} of {name}"
            );
        }
    }
}

on_both_stores!(
    window_ids_keep_to_their_key,
    pushes_keep_to_their_windows,
    ingest_cuts_by_window_across_batches,
    another_span_clears_the_mark,
);

/// Ingest on MongoDB not behind a router: a fill names the bucket by `_id` and count alone
/// (the key from `$setOnInsert`), and the batches stay exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ingest_unrouted_on_mongo() {
    let store = AnyStore::Mongo(pattern_tests::mongo_store("ingest_unrouted").await);
    ingest_cuts_by_window_across_batches(store.clone()).await;
    pattern_tests::drop_db(&store).await;
    let store = AnyStore::Mongo(pattern_tests::mongo_store("ingest_unrouted_push").await);
    pushes_keep_to_their_windows(store.clone()).await;
    pattern_tests::drop_db(&store).await;
}
