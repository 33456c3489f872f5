//! Mongo only: what the reads and the ingest send, counted with command monitoring, and what
//! the server examines for a one-day window of a long history (`explain` of the very queries
//! the range read sent).

use super::*;

use pattern_tests::recording_mongo_store;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Tick {
    n: i64,
    qty: i64,
    date: DateTime,
}

const TICK_SUMMARY: &[SummaryField] = &[SummaryField {
    op: SummaryOp::Sum,
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
            span: None,
            rollup: None,
        },
    };
    fn item_millis(t: &Tick) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

/// `PATTERN_TS_HISTORY` items, one a minute; without it 100,000 (1,000,000 with
/// `PATTERN_FULL=1`).
fn history_len() -> i64 {
    std::env::var("PATTERN_TS_HISTORY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| pattern_tests::scale(100_000, 1_000_000).into())
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

/// The names of the commands sent, but the writes of the collection's mark (its width
/// growing, `series::width`, which a collection's first buckets do a few times), and how many
/// of those there were.
fn beside_width(log: &std::sync::Mutex<Vec<(String, Document)>>) -> (Vec<String>, usize) {
    let (marks, rest): (Vec<_>, Vec<_>) =
        (commands(log).into_iter()).partition(|(n, c)| pattern_tests::on_marks(n, c));
    (rest.into_iter().map(|(n, _)| n).collect(), marks.len())
}

/// Key `k`'s ticks, in order.
async fn ticks_of(store: &pattern_core::store::MongoStore, k: i64) -> Vec<i64> {
    (bucket::items::<Ticks, _, _>(store, &k).map_ok(|t| t.n))
        .try_collect()
        .await
        .unwrap()
}

/// `verify_bucket` finds the ticks' layout clean.
async fn assert_clean(store: &pattern_core::store::MongoStore) {
    let v = pattern_core::adopt::verify_bucket(store, &Ticks::SPEC, &Default::default())
        .await
        .unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// The names of the commands sent since the last call, beside a collection's one-time set-up
/// (its indexes, its entry in `pattern_bounded`).
fn beside_set_up(log: &std::sync::Mutex<Vec<(String, Document)>>) -> Vec<String> {
    (commands(log).into_iter())
        .filter(|(n, c)| {
            !matches!(n.as_str(), "createIndexes" | "listIndexes")
                && !c.get_str(n).is_ok_and(|coll| coll.starts_with("pattern_"))
        })
        .map(|(n, _)| n)
        .collect()
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

/// [`Ticks`] cut into days.
struct DailyTicks;
impl Bucket for DailyTicks {
    type Key = i64;
    type Item = Tick;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        collection: "daily_ticks",
        keeps: Keeps {
            span: Some(DAY),
            ..Ticks::SPEC.keeps
        },
        ..Ticks::SPEC
    };
    fn item_millis(t: &Tick) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

/// A range read bounds its index scan on both sides: on a long history of a tick every 100
/// minutes (about 14 a day, as the benchmark's customers), an hour, a day and a month from
/// mid-day examine at most one index key and one document more than the buckets they return
/// (`explain` of the query sent), cut into days (2 buckets a day) or not (by the collection's
/// width, which reaches a bucket or so past the range). Each push is one command.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_spanned_range_examines_what_it_returns() {
    let (store, log) = recording_mongo_store("ts_span").await;
    let total = 5_000; // ~350 days
    let at = |n: i64| Tick {
        n,
        qty: n % 100,
        date: DateTime::from_millis(T0 + n * 6_000_000),
    };
    let batch: Vec<(i64, Tick)> = (0..total).map(|i| (7, at(i))).collect();
    bucket::ingest::<DailyTicks, _>(&store, &batch)
        .await
        .unwrap();
    bucket::ingest::<Ticks, _>(&store, &batch).await.unwrap();
    // One command a push: in time order, into a new day, and out of order into an open
    // bucket of an earlier day.
    commands(&log);
    for (i, t) in [at(total), at(total + 20), at(total - 3)]
        .into_iter()
        .enumerate()
    {
        bucket::push::<DailyTicks, _, _>(&store, &7, &t)
            .await
            .unwrap();
        assert_eq!(beside_set_up(&log), ["update"], "push {i}");
    }
    let from = T0 + (total / 2) * 6_000_000 + 37 * 60_000;
    for (what, len) in [("hour", 3_600_000), ("day", DAY), ("month", 30 * DAY)] {
        let range = date(from)..date(from + len);
        let want: Vec<i64> = (0..total)
            .filter(|n| (from..from + len).contains(&(T0 + n * 6_000_000)))
            .collect();
        let mut keys = Vec::new();
        for spanned in [true, false] {
            commands(&log);
            let got: Vec<i64> = if spanned {
                bucket::range::<DailyTicks, _, _>(&store, &7, range.clone())
                    .map_ok(|t| t.n)
                    .try_collect()
                    .await
            } else {
                bucket::range::<Ticks, _, _>(&store, &7, range.clone())
                    .map_ok(|t| t.n)
                    .try_collect()
                    .await
            }
            .unwrap();
            assert_eq!(got, want, "{what}");
            let sent = commands(&log);
            assert_eq!(sent.len(), 1, "{sent:?}");
            let (k, d, returned) = explain_keys(&store, &sent[0].1).await;
            println!(
                "one {what}, spanned {spanned}: {k} keys and {d} documents examined for {returned}"
            );
            // By the buckets' time-named `_id`s alone (no router here): one index serves it,
            // and it examines only what it returns. Without a span, the range reaches the
            // collection's width (`series::width`) to each side, and the collection's mark
            // comes after it in the same command (an `aggregate`).
            let filter = match sent[0].1.get_array("pipeline") {
                Ok(stages) => {
                    let first = stages[0].as_document().unwrap();
                    first.get_document("$match").unwrap().clone()
                }
                Err(_) => sent[0].1.get_document("filter").unwrap().clone(),
            };
            assert!(
                mentions(&filter, "_id") && !mentions(&filter, "k"),
                "{filter}"
            );
            assert_eq!(sent[0].0 == "aggregate", !spanned, "{sent:?}");
            assert!(d <= returned, "{what}: {d} documents for {returned}");
            assert!(k <= returned + 1, "{what}: {k} keys for {returned}");
            keys.push(k);
        }
        // The width reaches about one bucket past the range to each side (buckets of 10
        // ticks, about 17 hours, against the day's two).
        assert!(
            keys[1] <= keys[0] + 4,
            "{what}: the width bounds the scan: {keys:?}"
        );
    }
    // Whole days (`to` starts a window): nothing but the key that ends the scan.
    let midnight = (from / DAY + 1) * DAY;
    for days in [1, 7] {
        commands(&log);
        let to = midnight + days * DAY;
        let got: Vec<i64> = bucket::range::<DailyTicks, _, _>(&store, &7, date(midnight)..date(to))
            .map_ok(|t| t.n)
            .try_collect()
            .await
            .unwrap();
        let want: Vec<i64> = (0..total)
            .filter(|n| (midnight..to).contains(&(T0 + n * 6_000_000)))
            .collect();
        assert_eq!(got, want);
        let sent = commands(&log);
        let (k, d, returned) = explain_keys(&store, &sent[0].1).await;
        println!("{days} whole days: {k} keys and {d} documents examined for {returned}");
        assert!(
            k <= returned + 1 && d <= returned,
            "{days} days: {k} keys, {d} docs for {returned}"
        );
    }
    // Behind a `mongos` the same reads name the key (a router sends them to its shard), on the
    // bounds index: the same items, the scan still bounded on both sides.
    let routed = store.clone().with_routing(true);
    for (what, len) in [("hour", 3_600_000), ("day", DAY), ("month", 30 * DAY)] {
        commands(&log);
        let got: Vec<i64> =
            bucket::range::<DailyTicks, _, _>(&routed, &7, date(from)..date(from + len))
                .map_ok(|t| t.n)
                .try_collect()
                .await
                .unwrap();
        let want: Vec<i64> = (0..total)
            .filter(|n| (from..from + len).contains(&(T0 + n * 6_000_000)))
            .collect();
        assert_eq!(got, want, "routed {what}");
        let sent = commands(&log);
        assert_eq!(sent.len(), 1, "{sent:?}");
        let filter = sent[0].1.get_document("filter").unwrap();
        assert!(mentions(filter, "k"), "{filter}");
        let (k, d, returned) = explain_keys(&store, &sent[0].1).await;
        println!("one {what}, routed: {k} keys and {d} documents examined for {returned}");
        assert!(
            d <= returned && k <= returned + 2,
            "routed {what}: {k}, {d}, {returned}"
        );
    }
    let v = pattern_core::adopt::verify_bucket(&store, &DailyTicks::SPEC, &Default::default())
        .await
        .unwrap();
    assert!(v.is_clean(), "{v:?}");
    let _ = store.database().drop().await;
}

/// Whether `filter` has a condition on `field`, at any depth.
fn mentions(filter: &Document, field: &str) -> bool {
    filter.to_string().contains(&format!("\"{field}\":"))
}

/// `(totalDocsExamined, nReturned)` of the find, explained as sent.
async fn explain(store: &pattern_core::store::MongoStore, find: &Document) -> (i64, i64) {
    let (_, docs, returned) = explain_keys(store, find).await;
    (docs, returned)
}

/// `(totalKeysExamined, totalDocsExamined, nReturned)` of the find, explained as sent.
async fn explain_keys(store: &pattern_core::store::MongoStore, find: &Document) -> (i64, i64, i64) {
    let mut cmd = Document::new();
    for k in ["find", "filter", "sort", "projection"] {
        if let Some(v) = find.get(k) {
            cmd.insert(k, v.clone());
        }
    }
    // An `aggregate` (a read followed by the collection's mark): its `$match`, as a find.
    if let Ok(coll) = find.get_str("aggregate") {
        let first = find.get_array("pipeline").unwrap()[0]
            .as_document()
            .unwrap();
        cmd.insert("find", coll);
        cmd.insert("filter", first.get_document("$match").unwrap().clone());
    }
    let out = store
        .database()
        .run_command(doc! {"explain": cmd, "verbosity": "executionStats"})
        .await
        .expect("explain");
    let stats = out.get_document("executionStats").expect("executionStats");
    let n = |k: &str| stats.get(k).and_then(as_int).unwrap_or(-1);
    (
        n("totalKeysExamined"),
        n("totalDocsExamined"),
        n("nReturned"),
    )
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
    // The overlap, and the buckets without bounds (the collection's mark, none, was read
    // once by the push's set-up).
    assert_eq!(finds, 2);
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
/// The batch is two commands: every key's fill of its open bucket in one `update`, then the
/// new buckets in one `insert`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_ingest_after_pushes_reads_nothing() {
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
    // Its items lie further from their buckets' first items than the pushes' did: the
    // collection's width grows first (one write of its mark).
    let (sent, marks) = beside_width(&log);
    assert_eq!(sent, ["update", "insert"], "an ingest right after pushes");
    assert!(marks <= 1, "{marks} writes of the mark");
    for k in [0, 42, 77] {
        let got = ticks_of(&store, k).await;
        let mut want: Vec<i64> = Vec::new();
        want.extend((k < 50).then_some(k));
        want.push(1_000 + k);
        want.extend((k < 10).then_some(2_000 + k));
        want.extend((0..100).map(|j| 10_000 + j * 100 + k));
        assert_eq!(got, want, "key {k}");
    }
    assert_clean(&store).await;
    let _ = store.database().drop().await;
}

/// Keys this process has not seen are learned with two reads for the whole batch, never one
/// per key: one `find` of their open buckets, one `aggregate` of the newest bucket of each key
/// with none open (here 50 keys whose buckets another client filled, beside 10 with an open
/// bucket and 90 with no history). Every key's items then continue its history in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_first_seen_are_learned_in_two_reads() {
    let (store, log) = recording_mongo_store("ts_ingest_learn").await;
    let other = pattern_tests::second_client(&store).await;
    let pushes = |k: i64| if k < 50 { 20 } else { 5 };
    for k in 0..60 {
        for i in 0..pushes(k) {
            bucket::push::<Ticks, _, _>(&other, &k, &tick(i * 1_000 + k))
                .await
                .unwrap();
        }
    }
    commands(&log);
    let batch: Vec<(i64, Tick)> = (0..450).map(|i| (i % 150, tick(100_000 + i))).collect();
    assert_eq!(
        bucket::ingest::<Ticks, _>(&store, &batch).await.unwrap(),
        450
    );
    assert_eq!(
        beside_set_up(&log),
        ["find", "aggregate", "update", "insert"]
    );
    for k in [0, 49, 50, 59, 60, 149] {
        let got = ticks_of(&store, k).await;
        let before = if k < 60 { pushes(k) } else { 0 };
        let mut want: Vec<i64> = (0..before).map(|i| i * 1_000 + k).collect();
        want.extend((0..3).map(|j| 100_000 + j * 150 + k));
        assert_eq!(got, want, "key {k}");
    }
    assert_clean(&store).await;
    let _ = store.database().drop().await;
}

/// Once the keys' newest buckets are known, 1,000 items over 1,000 keys are one command
/// (their writes all of one kind: one `update` of their fills or one `insert` of new buckets).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_items_over_a_thousand_keys_is_one_command() {
    let (store, log) = recording_mongo_store("ts_ingest").await;
    let batch = |round: i64| -> Vec<(i64, Tick)> {
        (0..1_000).map(|k| (k, tick(round * 1_000 + k))).collect()
    };
    bucket::ingest::<Ticks, _>(&store, &batch(0)).await.unwrap();
    assert_eq!(
        beside_set_up(&log),
        ["find", "aggregate", "insert"],
        "1,000 keys first seen: learned in two reads"
    );
    let mut widened = Vec::new();
    for round in 1..12 {
        assert_eq!(
            bucket::ingest::<Ticks, _>(&store, &batch(round))
                .await
                .unwrap(),
            1_000
        );
        let (sent, marks) = beside_width(&log);
        // Ten ticks a bucket: each round fills every key's open bucket (one `update`), or,
        // every tenth, opens a new one for each (one `insert`).
        let kind = if round % 10 == 0 { "insert" } else { "update" };
        assert_eq!(sent, [kind], "round {round}");
        if marks > 0 {
            widened.push(round);
        }
    }
    // The width (`series::width`) grows while the first buckets fill, to half as much again
    // as they need each time (each key's items 1,000 minutes apart, 10 a bucket), then never.
    assert_eq!(widened, [1, 2, 3, 5, 8]);
    for k in [0, 499, 999] {
        let got = ticks_of(&store, k).await;
        assert_eq!(got, (0..12).map(|r| r * 1_000 + k).collect::<Vec<_>>());
    }
    let _ = store.database().drop().await;
}

/// With a lease on the width (`bucket::lease_width`), a range read that follows one that read
/// the mark is the `_id` range alone, one `find`; the first read of a process reads the mark
/// (one `aggregate`), and so does a read once the trust it gives has run out. A process's
/// first push relies on a width it has just learned: it returns a whole lease later.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leased_range_read_is_one_find() {
    use std::time::{Duration, Instant};
    let (store, log) = recording_mongo_store("ts_lease_read").await;
    for n in 0..30 {
        bucket::push::<Ticks, _, _>(&store, &1, &tick(n))
            .await
            .unwrap();
    }
    // Long enough that a loaded machine still sends the second read within it.
    let lease = Duration::from_secs(5);
    bucket::lease_width::<Ticks, _>(&store, lease)
        .await
        .unwrap();
    let read = || async {
        let window = date(T0 + 5 * 60_000)..date(T0 + 15 * 60_000);
        (bucket::range::<Ticks, _, _>(&store, &1, window).map_ok(|t| t.n))
            .try_collect::<Vec<i64>>()
            .await
            .unwrap()
    };
    let names = || {
        commands(&log)
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>()
    };
    names();
    let want: Vec<i64> = (5..15).collect();
    assert_eq!(read().await, want);
    assert_eq!(names(), ["aggregate"], "the read that learns the width");
    assert_eq!(read().await, want);
    assert_eq!(names(), ["find"], "a read within the lease");
    tokio::time::sleep(lease).await;
    assert_eq!(read().await, want);
    assert_eq!(names(), ["aggregate"], "a read once the trust ran out");
    // Another process's first push.
    let other = pattern_tests::second_client(&store).await;
    let started = Instant::now();
    bucket::push::<Ticks, _, _>(&other, &1, &tick(30))
        .await
        .unwrap();
    assert!(started.elapsed() >= lease, "{:?}", started.elapsed());
    let _ = store.database().drop().await;
}
