//! Round trips per operation on MongoDB, counted with the driver's command monitoring (every
//! command the client sends, handshakes and monitoring aside), printed as a table with each
//! row's commands: the README's round-trip tables state exactly these.
//!
//!     cargo bench -p pattern-bench --bench round_trips
//!
//! Needs `MONGODB_URI` (`scripts/test.sh` starts a server and sets it). Under `cargo test` it
//! runs at a smaller scale (1,000 pushes instead of 10,000) and checks every row the same way:
//! a row whose commands differ from the ones it states fails the run.
//!
//! Targets: bucket push at most 1.1 round trips on average at size 10, also when every push
//! shares one second; page read 1; outlier push below the threshold 1; full outlier read a
//! fixed number whatever the overflow size.

mod documents;
mod polymorphic;
mod references;

use futures::TryStreamExt;
use pattern_bench::{book, scale, trade, Book, Trade, TradeHistory};
use pattern_core::store::MongoStore;
use pattern_core::store::Store;
use pattern_tests::{counted_mongo_store, CommandLog};

/// Epoch seconds of the first trade.
const T0: i64 = 1_698_335_223;

/// A customer's trades cut by day (`span`), 10 per bucket at most.
#[allow(dead_code)] // a layout: only the generated methods use it, never its fields
#[derive(pattern_core::Bucket)]
#[bucket(collection = "rt_daily", size = 10, time = "date", span = "1d")]
struct DailyTrades {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

/// What a row must show.
enum Want {
    /// Exactly these commands.
    Exactly(Vec<&'static str>),
    /// At most this many commands per operation on average.
    AtMost(f64),
}

/// One row of the table: what was done, how many times, the commands it sent.
struct Row {
    op: String,
    times: usize,
    commands: Vec<String>,
    want: Want,
}

impl Row {
    fn new(op: impl Into<String>, times: usize, commands: Vec<String>, want: Want) -> Row {
        Row {
            op: op.into(),
            times,
            commands,
            want,
        }
    }
    /// One operation (or `times` of them) that sent exactly `want`.
    fn exactly(
        op: impl Into<String>,
        times: usize,
        log: &CommandLog,
        want: &[&'static str],
    ) -> Row {
        Row::new(op, times, log.names(), Want::Exactly(want.to_vec()))
    }
    fn per_op(&self) -> f64 {
        self.commands.len() as f64 / self.times as f64
    }
    fn met(&self) -> bool {
        match &self.want {
            Want::Exactly(w) => self.commands == *w,
            Want::AtMost(x) => self.per_op() <= *x,
        }
    }
    fn target(&self) -> String {
        match &self.want {
            Want::Exactly(w) => summary(w),
            Want::AtMost(x) => format!("<= {x} per op"),
        }
    }
}

/// Commands as `2 find, 1 insert` in the order they first appear.
fn summary<S: AsRef<str>>(commands: &[S]) -> String {
    let mut names: Vec<(&str, usize)> = Vec::new();
    for c in commands {
        match names.iter_mut().find(|(n, _)| *n == c.as_ref()) {
            Some((_, k)) => *k += 1,
            None => names.push((c.as_ref(), 1)),
        }
    }
    if names.is_empty() {
        return "none".into();
    }
    names
        .iter()
        .map(|(n, k)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `n` copies of `commands`, in a row.
fn repeated(commands: &[&'static str], n: usize) -> Vec<&'static str> {
    commands
        .iter()
        .copied()
        .cycle()
        .take(commands.len() * n)
        .collect()
}

/// Trade `i` of a burst: every trade in the same second.
fn burst(i: i64) -> Trade {
    Trade {
        date: bson::DateTime::from_millis(T0 * 1000),
        ..trade(T0, i)
    }
}

/// Another process on the same database (and client, so its commands are logged too): a
/// store that has not pushed to any key. Its indexes are ensured here: these rows count pushes.
async fn cold(store: &MongoStore) -> MongoStore {
    let other = MongoStore::new(store.database().clone());
    TradeHistory::ensure_indexes(&other).await.unwrap();
    Book::ensure_indexes(&other).await.unwrap();
    other
}

#[tokio::main]
async fn main() {
    let pushes: usize = scale(10_000, 1_000);
    let (store, log) = counted_mongo_store("bench_round_trips").await;
    let mut rows = Vec::new();

    // First use: the indexes of the collection, once per store, before the first operation.
    log.clear();
    assert_eq!(TradeHistory::page(&store, &1, 1).await.unwrap(), None);
    let first_use = [
        "listIndexes",
        // A collection this store creates is marked "every bucket bounded", with its width
        // (`series::width`), before its indexes: another process that finds them finds it.
        "update pattern_bounded",
        "createIndexes",
        "createIndexes",
        "createIndexes",
        "createIndexes",
        "find",
        "find",
    ];
    rows.push(Row::exactly(
        "first operation of a store on a bucket collection (here a page read of an empty key)",
        1,
        &log,
        &first_use,
    ));
    let again = MongoStore::new(store.database().clone());
    log.clear();
    TradeHistory::ensure_indexes(&again).await.unwrap();
    TradeHistory::ensure_indexes(&again).await.unwrap();
    // The collection existed: its mark in `pattern_bounded` is read once (a span it names
    // that this writer does not keep to is cleared before any write).
    rows.push(Row::exactly(
        "ensure_indexes, twice, on a new store (the indexes exist)",
        1,
        &log,
        &[
            "listIndexes",
            "createIndexes",
            "createIndexes",
            "createIndexes",
            "createIndexes",
            "find pattern_bounded",
        ],
    ));

    // Bucket push, size 10, one key, one trade a second: the first push of this store to the
    // key, never seen, opens bucket 1 in one `findAndModify` upsert (the collection is the
    // library's: numbers dense from 1); then one `update` each, also when it opens a bucket.
    for (key, label, item) in [
        (123, "one trade a second", trade as fn(i64, i64) -> Trade),
        (125, "burst: every trade in the same second", |_, i| {
            burst(i)
        }),
    ] {
        let mut opening = Vec::new();
        log.clear();
        for i in 0..pushes as i64 {
            let before = log.len();
            TradeHistory::push(&store, &key, item(T0, i)).await.unwrap();
            if i % 10 == 0 && i > 0 {
                opening.extend(log.names()[before..].to_vec());
            }
        }
        let mut want = vec!["findAndModify"];
        want.extend(repeated(&["update"], pushes - 1));
        rows.push(Row::new(
            format!("bucket push, size 10, {label}, {pushes} pushes"),
            pushes,
            log.names(),
            Want::AtMost(1.1),
        ));
        // Beside them, the collection's width grows (`series::width`): an `update` of its
        // mark, while the first bucket fills, and never after.
        let (marks, data): (Vec<String>, Vec<String>) =
            (log.names().into_iter()).partition(|n| n.ends_with("pattern_bounded"));
        rows.push(Row::new(
            "  the same, exactly: the first push (a key never seen: opens bucket 1), then 1 update each",
            pushes,
            data,
            Want::Exactly(want),
        ));
        let widened = marks.len();
        let first_bucket = log.names()[..10 + widened].to_vec();
        assert!(
            first_bucket
                .iter()
                .filter(|n| n.ends_with("pattern_bounded"))
                .count()
                == widened,
            "the width grows while the first bucket fills: {first_bucket:?}"
        );
        rows.push(Row::new(
            format!("  beside them, the width growing with the first bucket ({widened})"),
            widened.max(1),
            marks,
            Want::Exactly(repeated(&["findAndModify pattern_bounded"], widened)),
        ));
        let opens = pushes / 10 - 1;
        rows.push(Row::new(
            format!("  of which pushes that open a bucket ({opens})"),
            opens,
            opening,
            Want::Exactly(repeated(&["update"], opens)),
        ));
    }

    // The first push of another process to a key: into the open bucket, then opening one.
    for i in 0..5 {
        TradeHistory::push(&store, &124, trade(T0, i))
            .await
            .unwrap();
    }
    let other = cold(&store).await;
    log.clear();
    TradeHistory::push(&other, &124, trade(T0, 5))
        .await
        .unwrap();
    rows.push(Row::exactly(
        "bucket push, first of a process to the key, a bucket open",
        1,
        &log,
        &["findAndModify"],
    ));
    let other = cold(&store).await;
    log.clear();
    TradeHistory::push(&other, &129, trade(T0, 0))
        .await
        .unwrap();
    rows.push(Row::exactly(
        "bucket push, first of a process to a key never seen (opens bucket 1)",
        1,
        &log,
        &["findAndModify"],
    ));
    for i in 6..10 {
        TradeHistory::push(&store, &124, trade(T0, i))
            .await
            .unwrap();
    }
    let other = cold(&store).await;
    log.clear();
    TradeHistory::push(&other, &124, trade(T0, 10))
        .await
        .unwrap();
    rows.push(Row::exactly(
        "bucket push, first of a process to the key, opening a bucket (bucket 1 refused, the newest read)",
        1,
        &log,
        &["findAndModify", "find", "insert"],
    ));
    // A bucket `_id` taken by a document this process could not know (another key's, here).
    for i in 0..10 {
        TradeHistory::push(&store, &128, trade(T0, i))
            .await
            .unwrap();
    }
    let taken = format!("128_{}", T0 + 10);
    store
        .insert_one("trades", bson::doc! {"_id": taken, "customerId": -1_i64})
        .await
        .unwrap();
    log.clear();
    TradeHistory::push(&store, &128, trade(T0, 10))
        .await
        .unwrap();
    rows.push(Row::exactly(
        "bucket push opening a bucket whose _id another document holds",
        1,
        &log,
        &["update", "find", "update"],
    ));
    // A batch: 25 trades onto a key whose open bucket holds 3.
    for i in 0..3 {
        TradeHistory::push(&store, &126, trade(T0, i))
            .await
            .unwrap();
    }
    let batch: Vec<Trade> = (3..28).map(|i| trade(T0, i)).collect();
    log.clear();
    TradeHistory::push_many(&store, &126, &batch).await.unwrap();
    rows.push(Row::exactly(
        "bucket push_many of 25 onto an open bucket holding 3 (fills it, opens 2)",
        1,
        &log,
        &["find", "update", "insert"],
    ));
    // A key's whole history at once: 1,000 trades onto a key with none.
    let history: Vec<Trade> = (0..1_000).map(|i| trade(T0, i)).collect();
    log.clear();
    TradeHistory::push_many(&store, &4242, &history)
        .await
        .unwrap();
    rows.push(Row::exactly(
        "bucket push_many of 1,000 onto a key with none (opens 100)",
        1,
        &log,
        &["find", "insert"],
    ));

    // Page reads at several depths, and past the last page.
    let last_page = (pushes / 10) as u64;
    for n in [1, last_page / 2, last_page] {
        log.clear();
        let page = TradeHistory::page(&store, &123, n).await.unwrap().unwrap();
        assert_eq!(page.items.len(), 10);
        rows.push(Row::exactly(
            format!("bucket page read, page {n}"),
            1,
            &log,
            &["find"],
        ));
    }
    log.clear();
    assert_eq!(
        TradeHistory::page(&store, &123, last_page + 1)
            .await
            .unwrap(),
        None
    );
    rows.push(Row::exactly(
        "bucket page read past the last page (counts the unnumbered buckets)",
        1,
        &log,
        &["find", "find"],
    ));
    log.clear();
    assert_eq!(
        TradeHistory::page(&store, &123, u64::MAX).await.unwrap(),
        None
    );
    rows.push(Row::exactly(
        "bucket page read of a number past 2^63-1",
        1,
        &log,
        &[],
    ));
    log.clear();
    let all: Vec<Trade> = TradeHistory::items(&store, &123)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), pushes);
    // One find per 512 buckets (the last one short, or carrying nothing over).
    let finds = (pushes / 10).div_ceil(512).max(1);
    rows.push(Row::exactly(
        format!("bucket items stream, {} buckets", pushes / 10),
        1,
        &log,
        &repeated(&["find"], finds),
    ));
    // 600 buckets in the seed's layout (no page number) then 600 numbered ones.
    for i in 0..600_i64 {
        let d = bson::doc! {"_id": format!("127_{i:04}"), "customerId": 127_i64, "count": 10,
        "history": [bson::to_bson(&trade(T0, i)).unwrap()]};
        store.insert_one("trades", d).await.unwrap();
    }
    let numbered: Vec<Trade> = (0..6000).map(|i| trade(T0 + 10_000, i)).collect();
    TradeHistory::push_many(&store, &127, &numbered)
        .await
        .unwrap();
    log.clear();
    let pages: Vec<_> = TradeHistory::pages(&store, &127)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(pages.len(), 1200);
    // One find per 512 buckets: the unnumbered ones and the numbered ones after them in the
    // same finds.
    rows.push(Row::exactly(
        "bucket pages stream, 600 unnumbered then 600 numbered buckets",
        1,
        &log,
        &repeated(&["find"], 3),
    ));
    log.clear();
    TradeHistory::counts(&store, &123).await.unwrap();
    rows.push(Row::exactly("bucket counts", 1, &log, &["aggregate"]));

    // Time series: a range read, the latest items, a bulk ingest over known keys.
    let from = bson::DateTime::from_millis((T0 + 100) * 1_000);
    let to = bson::DateTime::from_millis((T0 + 200) * 1_000);
    log.clear();
    let in_range: Vec<Trade> = TradeHistory::range(&store, &123, from..to)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(in_range.len(), 100);
    rows.push(Row::exactly(
        "bucket range read (the `_id` range the width allows, then the mark: one aggregate)",
        1,
        &log,
        &["aggregate"],
    ));
    log.clear();
    assert_eq!(
        TradeHistory::latest(&store, &123, 3).await.unwrap().len(),
        3
    );
    rows.push(Row::exactly(
        "bucket latest(3), within the newest bucket",
        1,
        &log,
        &["find"],
    ));
    log.clear();
    assert_eq!(
        TradeHistory::latest(&store, &123, 25).await.unwrap().len(),
        25
    );
    rows.push(Row::exactly(
        "bucket latest(25), past the newest bucket",
        1,
        &log,
        &["find", "find"],
    ));
    let batch = |round: i64| -> Vec<(i64, Trade)> {
        (0..1_000)
            .map(|k| (10_000 + k, trade(T0 + round * 1_000, k)))
            .collect()
    };
    log.clear();
    TradeHistory::ingest(&store, &batch(0)).await.unwrap();
    rows.push(Row::exactly(
        "bucket ingest, 1,000 items over 1,000 keys first seen",
        1,
        &log,
        &["find", "aggregate", "insert"],
    ));
    log.clear();
    TradeHistory::ingest(&store, &batch(1)).await.unwrap();
    rows.push(Row::exactly(
        "bucket ingest, 1,000 items over 1,000 keys this store knows (the first fills widen)",
        1,
        &log,
        &["findAndModify pattern_bounded", "update"],
    ));
    // Rounds 2 and 3 widen it again (each side grows to 1.5x what the fills need); round 4
    // does not.
    TradeHistory::ingest(&store, &batch(2)).await.unwrap();
    TradeHistory::ingest(&store, &batch(3)).await.unwrap();
    log.clear();
    TradeHistory::ingest(&store, &batch(4)).await.unwrap();
    rows.push(Row::exactly(
        "bucket ingest, 1,000 items over 1,000 keys this store knows, the width settled (round 4)",
        1,
        &log,
        &["update"],
    ));
    // Cut by day: the keys' newest buckets, then their open buckets in the batch's windows;
    // then, for keys this store wrote last and items in their newest bucket's day or later,
    // nothing to read.
    DailyTrades::ensure_indexes(&store).await.unwrap();
    log.clear();
    DailyTrades::ingest(&store, &batch(0)).await.unwrap();
    rows.push(Row::exactly(
        "bucket ingest cut by day, 1,000 items over 1,000 keys first seen",
        1,
        &log,
        &["aggregate", "find", "insert"],
    ));
    log.clear();
    DailyTrades::ingest(&store, &batch(1)).await.unwrap();
    rows.push(Row::exactly(
        "bucket ingest cut by day, 1,000 items over 1,000 keys this store knows",
        1,
        &log,
        &["update"],
    ));

    // Outlier: save, pushes below and above the threshold (50), then the reads.
    Book::ensure_indexes(&store).await.unwrap();
    log.clear();
    book(1, 0).save(&store).await.unwrap();
    rows.push(Row::exactly(
        "outlier save, under the threshold",
        1,
        &log,
        &["delete", "update"],
    ));
    log.clear();
    book(2, 50 + 1_200).save(&store).await.unwrap();
    rows.push(Row::exactly(
        "outlier save, 1,200 over the threshold (3 chunks of 500)",
        1,
        &log,
        &["delete", "update", "insert"],
    ));
    log.clear();
    for i in 0..50 {
        Book::push(&store, &1, format!("u{i}")).await.unwrap();
    }
    rows.push(Row::exactly(
        "outlier push below the threshold",
        50,
        &log,
        &repeated(&["update"], 50),
    ));
    log.clear();
    Book::push(&store, &1, "u50".into()).await.unwrap();
    rows.push(Row::exactly(
        "outlier push over the threshold, the parent's first (opens chunk 1)",
        1,
        &log,
        &["update", "update", "findAndModify"],
    ));
    let above = 996;
    log.clear();
    for i in 51..51 + above {
        Book::push(&store, &1, format!("u{i}")).await.unwrap();
    }
    rows.push(Row::exactly(
        format!("outlier push over the threshold, {above} more (chunks of 500, opens chunk 2)"),
        above,
        &log,
        &repeated(&["update"], 3 * above),
    ));
    let other = cold(&store).await;
    log.clear();
    Book::push(&other, &1, "cold".into()).await.unwrap();
    rows.push(Row::exactly(
        "outlier push over the threshold, first of a process to the parent, a chunk open",
        1,
        &log,
        &["update", "update", "findAndModify"],
    ));
    log.clear();
    Book::push_many(&store, &1, &["m1".into(), "m2".into()])
        .await
        .unwrap();
    rows.push(Row::exactly(
        "outlier push_many of 2, parent over the threshold",
        1,
        &log,
        &["find", "update", "find", "update"],
    ));
    book(3, 0).save(&store).await.unwrap();
    log.clear();
    Book::push_many(&store, &3, &["a".into(), "b".into()])
        .await
        .unwrap();
    rows.push(Row::exactly(
        "outlier push_many of 2, room in the main document",
        1,
        &log,
        &["find", "update"],
    ));
    log.clear();
    let t = Book::typical(&store, &1).await.unwrap().unwrap();
    assert!(t.has_extras);
    rows.push(Row::exactly("outlier typical read", 1, &log, &["find"]));
    log.clear();
    assert_eq!(
        Book::counts(&store, &1).await.map(|c| c.items).unwrap(),
        1_050
    );
    rows.push(Row::exactly(
        "outlier count, over the threshold",
        1,
        &log,
        &["find", "aggregate"],
    ));
    log.clear();
    assert!(Book::is_outlier(&store, &1).await.unwrap());
    rows.push(Row::exactly("outlier is_outlier", 1, &log, &["find"]));
    log.clear();
    let streamed: Vec<String> = Book::items(&store, &1).try_collect().await.unwrap();
    assert_eq!(streamed.len(), 1_050);
    rows.push(Row::exactly(
        "outlier stream, 2 chunks",
        1,
        &log,
        &["find", "find"],
    ));
    for (id, extras) in [
        (10, 0usize),
        (11, 200),
        (12, 2_000),
        (13, scale(20_000, 5_000)),
    ] {
        book(id, 50 + extras).save(&store).await.unwrap();
        log.clear();
        let all = Book::all_items(&store, &id).await.unwrap().unwrap();
        assert_eq!(all.len(), 50 + extras);
        let want: &[&str] = if extras == 0 {
            &["find"]
        } else {
            &["find", "find"]
        };
        rows.push(Row::exactly(
            format!("outlier full read, {extras} extras"),
            1,
            &log,
            want,
        ));
    }
    log.clear();
    assert!(Book::delete(&store, &2).await.unwrap());
    rows.push(Row::exactly(
        "outlier delete",
        1,
        &log,
        &["delete", "delete"],
    ));

    rows.extend(documents::rows(&store, &log).await);
    rows.extend(references::rows(&store, &log).await);
    rows.extend(polymorphic::rows(&store, &log).await);

    println!(
        "\nround trips per operation (MongoDB at {}):",
        pattern_tests::mongo_uri()
    );
    println!("| operation | round trips per op | commands | stated | met |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.3} | {} | {} | {} |",
            r.op,
            r.per_op(),
            summary(&r.commands),
            r.target(),
            if r.met() { "yes" } else { "NO" }
        );
    }
    let _ = store.database().drop().await;
    let missed: Vec<String> = rows
        .iter()
        .filter(|r| !r.met())
        .map(|r| format!("{}: sent {:?}", r.op, r.commands))
        .collect();
    assert!(
        missed.is_empty(),
        "rows that differ:\n{}",
        missed.join("\n")
    );
}
