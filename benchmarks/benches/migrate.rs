//! Migrating existing data into the patterns (issue 17, point 7): `pattern_core::adopt`'s
//! resumable migrations against a hand-written one-shot aggregation on the same server.
//!
//! - Buckets: 1,000,000 flat trades over 1,000 customers (`{_id, ticker, customerId, type,
//!   qty, date}`, inserted out of time order) into buckets of 100 that keep their time bounds
//!   (`migrate_bucket`), against `$sort` + `$group` + `$unwind` + `$group` + `$merge`.
//! - Outlier: 10,000 books with arrays of up to 5,000 buyers (every 10th book 50 to 5,000, the
//!   rest under 50) into the outlier layout, 50 kept, the rest in chunks of 500
//!   (`migrate_outlier`), against `$slice` + `$unwind` + `$group` + `$merge` then one pipeline
//!   `updateMany` of the main documents.
//!
//! Each run seeds a fresh database (in chunks generated on the fly: the process never holds
//! the data set), then migrates, timed, counting the commands its client sends and the
//! process's peak memory during the migration (`VmHWM`, reset before it through
//! `/proc/self/clear_refs`). Ours is then verified (`verify_bucket` / `verify_outlier`,
//! timed apart) and every result, ours and the aggregation's, checked item by item against the
//! data seeded (streamed, at both scales; at the smoke scale also against the source
//! collection as the server holds it).
//!
//!     cargo bench -p pattern-bench --bench migrate
//!
//! Needs `MONGODB_URI` (`scripts/bench.sh` starts a server and sets it). Under `cargo test` it
//! runs a smoke version (20,000 trades over 100 customers, 500 books of up to 500 buyers,
//! once each) that asserts our migrations are exact and verify clean; no speed assertion.
//!
//! Target: at least half the aggregation's throughput (items/s), while staying resumable and
//! exact. Printed at full scale, two runs of each, fresh database each.
//!
//! `migrate_bucket` reads the source in key and time order, sorted by the server
//! (`allowDiskUse`): it creates no index on the source. (An earlier version built one over the
//! 1,000,000 trades, which SecantusDB with `--cache-size 256M` never finished: it retried the
//! build for over 30 minutes, holding the lock every other DDL of the server waits on.) A
//! migration that gets no answer within 30 minutes (2 at the smoke scale) fails the run,
//! naming the commands it waits for.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{doc, Bson, DateTime, Document};
use futures::TryStreamExt;
use mongodb::event::command::CommandEvent;
use mongodb::{Collection, Database, IndexModel};
use pattern_bench::{full_scale, scale};
use pattern_core::adopt::{self, MigrateReport, Options, Source, Verified};
use pattern_core::{
    spec::{BucketSpec, Keeps, OutlierSpec, SeriesOrder, SeriesSpec},
    MongoStore,
};
use pattern_tests::as_int;

/// 2023-11-14T22:13:20Z.
const T0: i64 = 1_700_000_000_000;
/// One trade every 6 s overall (each of 1,000 customers about one every 100 minutes).
const STEP_MS: i64 = 6_000;
/// Trade `i` happens in time slot `i * SCRAMBLE mod n`: insertion order is not time order.
const SCRAMBLE: i64 = 7_919;
/// Documents per `insert_many` when seeding trades; books go 1,000 at a time.
const SEED_CHUNK: usize = 10_000;
const BOOK_CHUNK: usize = 1_000;

const BUCKET_SIZE: u32 = 100;
const THRESHOLD: usize = 50;
const CHUNK: u32 = 500;

/// Ours: bucket size 100, with the time bounds kept (the realistic case).
const TRADES: BucketSpec = BucketSpec {
    collection: "trade_history",
    key_field: "customerId",
    items_field: "history",
    count_field: "count",
    page_field: "page",
    size: BUCKET_SIZE,
    keeps: Keeps {
        bounds: Some(("date_min", "date_max")),
        summary: &[],
    },
};
/// The aggregation's output, as a bucket layout (for `verify_bucket` on it).
const TRADES_AGG: BucketSpec = BucketSpec {
    collection: "trade_history_agg",
    ..TRADES
};
const SOURCE: Source<'static> = Source {
    collection: "trades",
    key_field: "customerId",
    time_field: "date",
};

const BOOKS: OutlierSpec = OutlierSpec {
    collection: "books",
    items_field: "buyers",
    threshold: THRESHOLD as u32,
    flag_field: "has_extras",
    overflow: SeriesSpec {
        collection: "books_extra",
        key_field: "book_id",
        items_field: "buyers_extra",
        count_field: "count",
        size: CHUNK,
        order: SeriesOrder::Seq("seq"),
        keeps: Keeps::NONE,
    },
};
/// The aggregation's output, as an outlier layout (for `verify_outlier` on it).
const BOOKS_AGG: OutlierSpec = OutlierSpec {
    overflow: SeriesSpec {
        collection: "books_extra_agg",
        ..BOOKS.overflow
    },
    ..BOOKS
};

// ---------------------------------------------------------------------------------------
// The data, generated (never held whole).

/// The trades: `n` over `customers`.
#[derive(Clone, Copy)]
struct Trades {
    n: i64,
    customers: i64,
    /// `SCRAMBLE`'s inverse modulo `n`: the trade of a time slot.
    inverse: i64,
}

impl Trades {
    fn new(n: i64, customers: i64) -> Self {
        Trades {
            n,
            customers,
            inverse: inverse_mod(SCRAMBLE, n),
        }
    }

    fn customer(&self, i: i64) -> i64 {
        i % self.customers
    }

    fn millis(&self, i: i64) -> i64 {
        T0 + (i * SCRAMBLE % self.n) * STEP_MS
    }

    /// The trade at `millis`, if one is.
    fn at(&self, millis: i64) -> Option<i64> {
        let d = millis - T0;
        if d < 0 || d % STEP_MS != 0 || d / STEP_MS >= self.n {
            return None;
        }
        Some(((d / STEP_MS) as i128 * self.inverse as i128 % self.n as i128) as i64)
    }

    /// Trade `i` as migrated: the source document without `_id` and `customerId`.
    fn item(&self, i: i64) -> Document {
        let ticker = ["MDB", "MSFT", "GOOG", "AAPL"][(i % 4) as usize];
        doc! {
            "ticker": ticker,
            "type": if i % 3 == 0 { "sell" } else { "buy" },
            "qty": 1 + (i * 7_919) % 500,
            "date": DateTime::from_millis(self.millis(i)),
        }
    }

    fn source_doc(&self, i: i64) -> Document {
        let item = self.item(i);
        doc! {
            "_id": ObjectId::new(),
            "ticker": item.get("ticker").unwrap().clone(),
            "customerId": self.customer(i) as i32,
            "type": item.get("type").unwrap().clone(),
            "qty": item.get("qty").unwrap().clone(),
            "date": item.get("date").unwrap().clone(),
        }
    }

    /// Trades of customer `c`.
    fn of_customer(&self, c: i64) -> i64 {
        self.n / self.customers + i64::from(c < self.n % self.customers)
    }
}

fn inverse_mod(a: i64, n: i64) -> i64 {
    let (mut r0, mut r1, mut t0, mut t1) = (n as i128, a as i128, 0i128, 1i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (t0, t1) = (t1, t0 - q * t1);
    }
    assert_eq!(r0, 1, "{a} and {n} must be coprime");
    (t0.rem_euclid(n as i128)) as i64
}

/// The books: `n`, every 10th with 50 to `max` buyers, the others under 50.
#[derive(Clone, Copy)]
struct Books {
    n: i32,
    max: i32,
}

impl Books {
    fn len(&self, i: i32) -> usize {
        if i % 10 == 0 {
            (50 + (i as i64 * 37 % (self.max as i64 - 49))) as usize
        } else {
            (i % 50) as usize
        }
    }

    /// Buyer `j` of book `i`: distinct over all books, not in increasing order.
    fn buyer(&self, i: i32, j: usize) -> i32 {
        (i * 10_000 + j as i32) ^ 0x2_A5A5
    }

    fn doc(&self, i: i32) -> Document {
        let buyers: Vec<Bson> = (0..self.len(i))
            .map(|j| Bson::Int32(self.buyer(i, j)))
            .collect();
        doc! {"_id": i, "title": format!("Book {i}"), "buyers": buyers}
    }

    fn total(&self) -> u64 {
        (0..self.n).map(|i| self.len(i) as u64).sum()
    }

    /// Items beyond the threshold: what the migration moves.
    fn beyond(&self) -> u64 {
        (0..self.n)
            .map(|i| self.len(i).saturating_sub(THRESHOLD) as u64)
            .sum()
    }

    fn over(&self) -> u64 {
        (0..self.n).filter(|&i| self.len(i) > THRESHOLD).count() as u64
    }
}

async fn seed_trades(db: &Database, t: Trades) -> Duration {
    let coll: Collection<Document> = db.collection(SOURCE.collection);
    let started = Instant::now();
    let mut i = 0;
    while i < t.n {
        let end = (i + SEED_CHUNK as i64).min(t.n);
        let docs: Vec<Document> = (i..end).map(|k| t.source_doc(k)).collect();
        coll.insert_many(docs).await.unwrap();
        i = end;
    }
    started.elapsed()
}

async fn seed_books(db: &Database, b: Books) -> Duration {
    let coll: Collection<Document> = db.collection(BOOKS.collection);
    let started = Instant::now();
    let mut i = 0;
    while i < b.n {
        let end = (i + BOOK_CHUNK as i32).min(b.n);
        let docs: Vec<Document> = (i..end).map(|k| b.doc(k)).collect();
        coll.insert_many(docs).await.unwrap();
        i = end;
    }
    started.elapsed()
}

// ---------------------------------------------------------------------------------------
// Measuring: commands, memory.

/// A `VmXXX` figure of `/proc/self/status`, in KiB (0 where there is none).
fn vm_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resets the process's peak resident size (`VmHWM`) to its current one (Linux).
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The commands a client sent (the driver's handshakes and monitoring aside), by name: how
/// many, and the time they took on the server and the wire; and those that took over a second.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Logged>>);

#[derive(Default)]
struct Logged {
    by_name: Commands,
    /// Started, not finished: request id -> ("name collection", when).
    open: HashMap<i32, (String, Instant)>,
    slow: Vec<String>,
}

type Commands = BTreeMap<String, (usize, Duration)>;

impl Log {
    fn event(&self, ev: CommandEvent) {
        let mut l = self.0.lock().unwrap();
        let (id, name, took) = match ev {
            CommandEvent::Started(e) => {
                let target = e.command.get_str(&e.command_name).unwrap_or("");
                l.open.insert(
                    e.request_id,
                    (format!("{} {target}", e.command_name), Instant::now()),
                );
                return;
            }
            CommandEvent::Succeeded(e) => (e.request_id, e.command_name, e.duration),
            CommandEvent::Failed(e) => (e.request_id, e.command_name, e.duration),
            _ => return,
        };
        let what = l.open.remove(&id).map_or_else(|| name.clone(), |o| o.0);
        if took > Duration::from_secs(1) {
            l.slow.push(format!("{what} {:.1} s", took.as_secs_f64()));
        }
        let e = l.by_name.entry(name).or_default();
        e.0 += 1;
        e.1 += took;
    }
    fn clear(&self) {
        let mut l = self.0.lock().unwrap();
        l.by_name.clear();
        l.slow.clear();
    }
    /// The commands sent and not answered yet, with how long ago they were sent.
    fn pending(&self) -> Vec<String> {
        let l = self.0.lock().unwrap();
        l.open
            .values()
            .map(|(what, at)| format!("{what} (sent {:.0} s ago)", at.elapsed().as_secs_f64()))
            .collect()
    }
    fn take(&self) -> (Commands, Vec<String>) {
        let mut l = self.0.lock().unwrap();
        (std::mem::take(&mut l.by_name), std::mem::take(&mut l.slow))
    }
}

/// A store on a fresh database whose client logs its commands (the shared command monitor:
/// handshakes and monitoring aside).
async fn counted_store(name: &str) -> (MongoStore, Log) {
    let log = Log::default();
    let sink = log.clone();
    let store = pattern_tests::monitored_mongo_store(name, move |ev| sink.event(ev)).await;
    (store, log)
}

/// What one run of a migration measured.
struct Run {
    who: &'static str,
    /// Items moved (bucket: every trade; outlier: the buyers beyond the threshold).
    items: u64,
    read: u64,
    written: u64,
    /// Documents in the source collection (the round trips' denominator).
    source_docs: u64,
    seed: Duration,
    took: Duration,
    commands: Commands,
    slow: Vec<String>,
    rss_before: u64,
    peak: u64,
    peak_reset: bool,
    verify: Option<(Duration, Verified)>,
    exact: Exact,
    check: Duration,
}

impl Run {
    fn rate(&self) -> f64 {
        self.items as f64 / self.took.as_secs_f64()
    }
    /// Time in commands that create or drop collections and indexes: on a shared server they
    /// wait for the storage engine's schema lock (other clients' creates and drops,
    /// checkpoints), whatever the migration does.
    fn ddl(&self) -> Duration {
        [
            "create",
            "createIndexes",
            "drop",
            "dropIndexes",
            "listIndexes",
        ]
        .iter()
        .filter_map(|n| self.commands.get(*n))
        .map(|c| c.1)
        .sum()
    }
    fn total_commands(&self) -> usize {
        self.commands.values().map(|c| c.0).sum()
    }
}

/// Timed, with its commands and the process's peak memory.
struct Measured<T> {
    value: T,
    took: Duration,
    commands: Commands,
    /// Commands that took over a second.
    slow: Vec<String>,
    rss_before: u64,
    peak: u64,
    peak_reset: bool,
}

async fn measure<T>(log: &Log, work: impl std::future::Future<Output = T>) -> Measured<T> {
    let rss_before = vm_kib("VmRSS");
    let peak_reset = reset_peak();
    log.clear();
    let started = Instant::now();
    // A server that never answers (SecantusDB livelocks building an index over a large
    // collection: see the module's doc) fails the run instead of hanging it.
    let limit = Duration::from_secs(scale(1_800, 120));
    let Ok(value) = tokio::time::timeout(limit, work).await else {
        panic!(
            "no answer after {} s; commands waiting: {:?} (a SecantusDB server logs \
             `create_index retrying on write conflicts` while it livelocks on an index build)",
            limit.as_secs(),
            log.pending()
        );
    };
    let took = started.elapsed();
    let (commands, slow) = log.take();
    Measured {
        value,
        took,
        commands,
        slow,
        rss_before,
        peak: vm_kib("VmHWM"),
        peak_reset,
    }
}

// ---------------------------------------------------------------------------------------
// Exactness.

/// What a check of a migrated layout found: how many problems, the first few.
#[derive(Default)]
struct Exact {
    items: u64,
    problems: u64,
    first: Vec<String>,
}

impl Exact {
    fn bad(&mut self, what: String) {
        self.problems += 1;
        if self.first.len() < 3 {
            self.first.push(what);
        }
    }
    fn ok(&self) -> bool {
        self.problems == 0
    }
    fn summary(&self) -> String {
        if self.ok() {
            format!("exact ({} items)", self.items)
        } else {
            format!(
                "NOT exact: {} problems, e.g. {}",
                self.problems,
                self.first.join("; ")
            )
        }
    }
}

fn int(d: &Document, f: &str) -> Option<i64> {
    d.get(f).and_then(as_int)
}

/// Streams a bucket collection in key and page order and checks it against the trades seeded:
/// each customer's buckets numbered 1, 2, 3..., all full but the last, counts right, time bounds
/// right, and its items exactly its trades in time order, each as seeded.
async fn check_buckets(db: &Database, coll: &str, t: Trades) -> Exact {
    let mut ex = Exact::default();
    let mut cur = db
        .collection::<Document>(coll)
        .find(doc! {})
        .sort(doc! {"customerId": 1, "page": 1, "_id": 1})
        .batch_size(1_000)
        .await
        .unwrap();
    let mut per_customer = vec![0i64; t.customers as usize];
    // (customer, next page, last item's millis, last bucket full)
    let mut at: Option<(i64, i64, i64, bool)> = None;
    while let Some(b) = cur.try_next().await.unwrap() {
        let id = b.get("_id").cloned().unwrap_or(Bson::Null);
        let Some(c) = int(&b, "customerId").filter(|c| (0..t.customers).contains(c)) else {
            ex.bad(format!("bucket {id}: customerId {:?}", b.get("customerId")));
            continue;
        };
        if at.map(|a| a.0) != Some(c) {
            at = Some((c, 1, i64::MIN, true));
        }
        let (_, next, last, full) = at.as_mut().unwrap();
        if !*full {
            ex.bad(format!("customer {c}: bucket {id} after one not full"));
        }
        if int(&b, "page") != Some(*next) {
            ex.bad(format!(
                "customer {c}: page {:?}, expected {next}",
                b.get("page")
            ));
        }
        *next += 1;
        let Ok(items) = b.get_array("history") else {
            ex.bad(format!("bucket {id}: no history"));
            continue;
        };
        if int(&b, "count") != Some(items.len() as i64) {
            ex.bad(format!(
                "bucket {id}: count {:?}, {} items",
                b.get("count"),
                items.len()
            ));
        }
        if items.is_empty() || items.len() > BUCKET_SIZE as usize {
            ex.bad(format!("bucket {id}: {} items", items.len()));
        }
        *full = items.len() == BUCKET_SIZE as usize;
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for item in items {
            ex.items += 1;
            per_customer[c as usize] += 1;
            let Some(item) = item.as_document() else {
                ex.bad(format!("bucket {id}: an item is not a document"));
                continue;
            };
            let Ok(date) = item.get_datetime("date") else {
                ex.bad(format!("bucket {id}: an item without a date"));
                continue;
            };
            let ms = date.timestamp_millis();
            if ms <= *last {
                ex.bad(format!(
                    "customer {c}: items out of time order in bucket {id}"
                ));
            }
            *last = ms;
            lo = lo.min(ms);
            hi = hi.max(ms);
            match t.at(ms) {
                Some(i) if t.customer(i) == c && *item == t.item(i) => {}
                _ => ex.bad(format!("customer {c}: item {item} was not seeded as such")),
            }
        }
        let bound = |f: &str| b.get_datetime(f).ok().map(|d| d.timestamp_millis());
        if !items.is_empty() && (bound("date_min") != Some(lo) || bound("date_max") != Some(hi)) {
            ex.bad(format!(
                "bucket {id}: time bounds {:?}..{:?}",
                b.get("date_min"),
                b.get("date_max")
            ));
        }
    }
    for (c, &got) in per_customer.iter().enumerate() {
        let want = t.of_customer(c as i64);
        if got != want {
            ex.bad(format!("customer {c}: {got} items, {want} seeded"));
        }
    }
    ex
}

/// A bucket collection's items in key and page order, with their key.
async fn bucket_items(db: &Database, coll: &str) -> Vec<(i64, Bson)> {
    let buckets: Vec<Document> = db
        .collection::<Document>(coll)
        .find(doc! {})
        .sort(doc! {"customerId": 1, "page": 1, "_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut out = Vec::new();
    for b in buckets {
        let c = int(&b, "customerId").unwrap_or(-1);
        for item in b.get_array("history").cloned().unwrap_or_default() {
            out.push((c, item));
        }
    }
    out
}

/// The source trades as the server holds them, in the migration's order, as items.
async fn source_items(db: &Database) -> Vec<(i64, Bson)> {
    let docs: Vec<Document> = db
        .collection::<Document>(SOURCE.collection)
        .find(doc! {})
        .sort(doc! {"customerId": 1, "date": 1, "_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.into_iter()
        .map(|mut d| {
            d.remove("_id");
            let c = d
                .remove("customerId")
                .as_ref()
                .and_then(as_int)
                .unwrap_or(-1);
            (c, Bson::Document(d))
        })
        .collect()
}

/// Streams the books and their overflow and checks them against the books seeded: at most
/// 50 buyers in each main document, flagged exactly when it has overflow, chunks numbered 1,
/// 2, 3... of at most 500, all full but the last, counts right, and main + overflow exactly
/// the buyers seeded, in order.
async fn check_books(db: &Database, overflow: &str, b: Books) -> Exact {
    let mut ex = Exact::default();
    let mut mains = db
        .collection::<Document>(BOOKS.collection)
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .batch_size(1_000)
        .await
        .unwrap();
    let mut chunks = db
        .collection::<Document>(overflow)
        .find(doc! {})
        .sort(doc! {"book_id": 1, "seq": 1, "_id": 1})
        .batch_size(1_000)
        .await
        .unwrap();
    let mut pending = chunks.try_next().await.unwrap();
    let mut expected_id = 0i32;
    let ints = |a: &[Bson]| -> Option<Vec<i32>> {
        a.iter()
            .map(|v| match v {
                Bson::Int32(x) => Some(*x),
                _ => None,
            })
            .collect()
    };
    while let Some(m) = mains.try_next().await.unwrap() {
        let Some(i) = int(&m, "_id") else {
            ex.bad(format!("a book with _id {:?}", m.get("_id")));
            continue;
        };
        let i = i as i32;
        if i != expected_id {
            ex.bad(format!("book {i}, expected book {expected_id}"));
        }
        expected_id = i + 1;
        if m.get_str("title").ok() != Some(format!("Book {i}").as_str()) {
            ex.bad(format!("book {i}: title {:?}", m.get("title")));
        }
        let Some(mut got) = m.get_array("buyers").ok().and_then(|a| ints(a)) else {
            ex.bad(format!("book {i}: buyers {:?}", m.get("buyers")));
            continue;
        };
        if got.len() > THRESHOLD {
            ex.bad(format!(
                "book {i}: {} buyers in the main document",
                got.len()
            ));
        }
        // Its chunks; any of a book before it is an orphan.
        let mut seq = 1;
        let mut full = true;
        while let Some(ch) = pending.take() {
            let parent = int(&ch, "book_id").unwrap_or(i64::MIN);
            if parent > i64::from(i) {
                pending = Some(ch);
                break;
            }
            if parent < i64::from(i) {
                ex.bad(format!("overflow chunk {:?} of no book", ch.get("_id")));
            } else {
                if !full {
                    ex.bad(format!("book {i}: a chunk after one not full"));
                }
                if int(&ch, "seq") != Some(seq) {
                    ex.bad(format!(
                        "book {i}: chunk seq {:?}, expected {seq}",
                        ch.get("seq")
                    ));
                }
                seq += 1;
                match ch
                    .get_array(BOOKS.overflow.items_field)
                    .ok()
                    .and_then(|a| ints(a))
                {
                    Some(items) => {
                        if int(&ch, "count") != Some(items.len() as i64) {
                            ex.bad(format!(
                                "book {i}: chunk count {:?}, {} items",
                                ch.get("count"),
                                items.len()
                            ));
                        }
                        if items.is_empty() || items.len() > CHUNK as usize {
                            ex.bad(format!("book {i}: a chunk of {} items", items.len()));
                        }
                        full = items.len() == CHUNK as usize;
                        got.extend(items);
                    }
                    None => ex.bad(format!("book {i}: chunk without an array of integers")),
                }
            }
            pending = chunks.try_next().await.unwrap();
        }
        let flagged = m.get_bool(BOOKS.flag_field).unwrap_or(false);
        if flagged != (seq > 1) {
            ex.bad(format!("book {i}: flagged {flagged}, {} chunks", seq - 1));
        }
        ex.items += got.len() as u64;
        let want: Vec<i32> = (0..b.len(i)).map(|j| b.buyer(i, j)).collect();
        if got != want {
            let at = got.iter().zip(&want).position(|(g, w)| g != w);
            ex.bad(format!(
                "book {i}: {} buyers (want {}), first difference at {:?}",
                got.len(),
                want.len(),
                at
            ));
        }
    }
    if expected_id != b.n {
        ex.bad(format!("{expected_id} books, {} seeded", b.n));
    }
    while let Some(ch) = pending {
        ex.bad(format!("overflow chunk {:?} of no book", ch.get("_id")));
        pending = chunks.try_next().await.unwrap();
    }
    ex
}

/// Every book's buyers, main then overflow chunks in order (smoke scale: held whole).
async fn book_buyers(db: &Database, overflow: Option<&str>) -> Vec<(i64, Vec<Bson>)> {
    let mains: Vec<Document> = db
        .collection::<Document>(BOOKS.collection)
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut out: Vec<(i64, Vec<Bson>)> = mains
        .iter()
        .map(|m| {
            (
                int(m, "_id").unwrap(),
                m.get_array("buyers").cloned().unwrap_or_default(),
            )
        })
        .collect();
    if let Some(ov) = overflow {
        let chunks: Vec<Document> = db
            .collection::<Document>(ov)
            .find(doc! {})
            .sort(doc! {"book_id": 1, "seq": 1, "_id": 1})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        for ch in chunks {
            let parent = int(&ch, "book_id").unwrap();
            let at = out.binary_search_by_key(&parent, |(id, _)| *id).unwrap();
            out[at].1.extend(
                ch.get_array(BOOKS.overflow.items_field)
                    .cloned()
                    .unwrap_or_default(),
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The runs.

fn opts() -> Options<'static> {
    Options {
        verify: false,
        ..Options::default()
    }
}

async fn fresh(name: &str) -> (MongoStore, Log, Database) {
    let (store, log) = counted_store(name).await;
    let db = store.database().clone();
    (store, log, db)
}

async fn trades_ours(t: Trades) -> Run {
    let (store, log, db) = fresh("bench_migrate_trades").await;
    let seed = seed_trades(&db, t).await;
    let m = measure(
        &log,
        adopt::migrate_bucket(&store, &TRADES, &SOURCE, &opts()),
    )
    .await;
    let report: MigrateReport = m.value.expect("migrate_bucket");
    assert_eq!(report.retries, 0, "nothing else writes: no retry expected");
    let started = Instant::now();
    let verified = adopt::verify_bucket(&store, &TRADES, &Options::default())
        .await
        .expect("verify_bucket");
    let verify = started.elapsed();
    let started = Instant::now();
    let exact = check_buckets(&db, TRADES.collection, t).await;
    if !full_scale() {
        let got = bucket_items(&db, TRADES.collection).await;
        assert!(
            got == source_items(&db).await,
            "ours: the buckets' items are not the source's, in order"
        );
    }
    let check = started.elapsed();
    let _ = db.drop().await;
    Run {
        who: "ours (migrate_bucket)",
        items: report.moved_items,
        read: report.scanned,
        written: report.written,
        source_docs: t.n as u64,
        seed,
        took: m.took,
        commands: m.commands,
        slow: m.slow,
        rss_before: m.rss_before,
        peak: m.peak,
        peak_reset: m.peak_reset,
        verify: Some((verify, verified)),
        exact,
        check,
    }
}

/// The hand-written one-shot aggregation into `trade_history_agg` (bucket `_id`s: ObjectIds
/// generated by `$merge`).
fn trades_pipeline(into: &str, out: bool) -> Vec<Document> {
    let size = f64::from(BUCKET_SIZE);
    let last = if out {
        doc! {"$out": into}
    } else {
        doc! {"$merge": {"into": into}}
    };
    vec![
        doc! {"$sort": {"customerId": 1, "date": 1, "_id": 1}},
        doc! {"$group": {
            "_id": "$customerId",
            "items": {"$push": {"ticker": "$ticker", "type": "$type", "qty": "$qty", "date": "$date"}},
        }},
        doc! {"$unwind": {"path": "$items", "includeArrayIndex": "i"}},
        doc! {"$group": {
            "_id": {"c": "$_id", "p": {"$floor": {"$divide": ["$i", size]}}},
            "history": {"$push": "$items"},
            "count": {"$sum": 1},
            "date_min": {"$min": "$items.date"},
            "date_max": {"$max": "$items.date"},
        }},
        doc! {"$project": {
            "_id": 0, "customerId": "$_id.c", "page": {"$add": ["$_id.p", 1]},
            "count": 1, "history": 1, "date_min": 1, "date_max": 1,
        }},
        last,
    ]
}

/// Runs `pipeline` on `coll` to its end (`$merge`/`$out`: no result documents).
async fn aggregate(
    db: &Database,
    coll: &str,
    pipeline: Vec<Document>,
) -> mongodb::error::Result<()> {
    let _: Vec<Document> = db
        .collection::<Document>(coll)
        .aggregate(pipeline)
        .allow_disk_use(true)
        .await?
        .try_collect()
        .await?;
    Ok(())
}

/// `$merge` where the server takes it, else `$out` (remembered for the next runs).
async fn aggregate_into(
    db: &Database,
    coll: &str,
    pipeline: impl Fn(bool) -> Vec<Document>,
    stage: &mut &'static str,
) {
    if *stage == "$merge" {
        match aggregate(db, coll, pipeline(false)).await {
            Ok(()) => return,
            Err(e) => {
                println!("  ($merge refused by the server: {e}; using $out)");
                *stage = "$out";
                let _ = db.collection::<Document>(coll).drop().await;
            }
        }
    }
    aggregate(db, coll, pipeline(true))
        .await
        .expect("aggregation");
}

async fn trades_agg(t: Trades, stage: &mut &'static str) -> Run {
    let (_store, log, db) = fresh("bench_migrate_trades_agg").await;
    let seed = seed_trades(&db, t).await;
    let into = TRADES_AGG.collection;
    let m = measure(
        &log,
        aggregate_into(
            &db,
            SOURCE.collection,
            |out| trades_pipeline(into, out),
            stage,
        ),
    )
    .await;
    let out: Collection<Document> = db.collection(into);
    let written = out.count_documents(doc! {}).await.unwrap();
    // Untimed: the index the checks' key-and-page order needs (ours has it from the start).
    out.create_index(
        IndexModel::builder()
            .keys(doc! {"customerId": 1, "page": 1, "_id": 1})
            .build(),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let verified = adopt::verify_bucket(&_store, &TRADES_AGG, &Options::default())
        .await
        .expect("verify_bucket on the aggregation's output");
    let verify = started.elapsed();
    let started = Instant::now();
    let exact = check_buckets(&db, into, t).await;
    if !full_scale() {
        let same = bucket_items(&db, into).await == source_items(&db).await;
        println!("  aggregation (smoke): items equal to the source's, in order: {same}");
    }
    let check = started.elapsed();
    let _ = db.drop().await;
    Run {
        who: "aggregation",
        items: t.n as u64,
        read: t.n as u64,
        written,
        source_docs: t.n as u64,
        seed,
        took: m.took,
        commands: m.commands,
        slow: m.slow,
        rss_before: m.rss_before,
        peak: m.peak,
        peak_reset: m.peak_reset,
        verify: Some((verify, verified)),
        exact,
        check,
    }
}

async fn books_ours(b: Books) -> Run {
    let (store, log, db) = fresh("bench_migrate_books").await;
    let seed = seed_books(&db, b).await;
    let before = if full_scale() {
        None
    } else {
        Some(book_buyers(&db, None).await)
    };
    let m = measure(&log, adopt::migrate_outlier(&store, &BOOKS, &opts())).await;
    let report = m.value.expect("migrate_outlier");
    assert_eq!(report.retries, 0, "nothing else writes: no retry expected");
    let started = Instant::now();
    let verified = adopt::verify_outlier(&store, &BOOKS, &Options::default())
        .await
        .expect("verify_outlier");
    let verify = started.elapsed();
    let started = Instant::now();
    let exact = check_books(&db, BOOKS.overflow.collection, b).await;
    if let Some(before) = before {
        let after = book_buyers(&db, Some(BOOKS.overflow.collection)).await;
        assert!(
            after == before,
            "ours: main + overflow are not the source's buyers, in order"
        );
    }
    let check = started.elapsed();
    assert_eq!(report.moved_items, b.beyond(), "items moved");
    assert_eq!(report.changed, b.over(), "documents rewritten");
    let _ = db.drop().await;
    Run {
        who: "ours (migrate_outlier)",
        items: report.moved_items,
        read: report.scanned,
        written: report.written + report.changed,
        source_docs: b.n as u64,
        seed,
        took: m.took,
        commands: m.commands,
        slow: m.slow,
        rss_before: m.rss_before,
        peak: m.peak,
        peak_reset: m.peak_reset,
        verify: Some((verify, verified)),
        exact,
        check,
    }
}

fn books_pipeline(into: &str, out: bool) -> Vec<Document> {
    let chunk = f64::from(CHUNK);
    let last = if out {
        doc! {"$out": into}
    } else {
        doc! {"$merge": {"into": into}}
    };
    vec![
        doc! {"$match": {format!("buyers.{THRESHOLD}"): {"$exists": true}}},
        doc! {"$project": {
            "_id": 0, "book_id": "$_id",
            "extra": {"$slice": ["$buyers", THRESHOLD as i32, 1_000_000]},
        }},
        doc! {"$unwind": {"path": "$extra", "includeArrayIndex": "i"}},
        doc! {"$group": {
            "_id": {"b": "$book_id", "s": {"$floor": {"$divide": ["$i", chunk]}}},
            "buyers_extra": {"$push": "$extra"},
            "count": {"$sum": 1},
        }},
        doc! {"$project": {
            "_id": 0, "book_id": "$_id.b", "seq": {"$add": ["$_id.s", 1]},
            "count": 1, "buyers_extra": 1,
        }},
        last,
    ]
}

async fn books_agg(b: Books, stage: &mut &'static str) -> Run {
    let (store, log, db) = fresh("bench_migrate_books_agg").await;
    let seed = seed_books(&db, b).await;
    let before = if full_scale() {
        None
    } else {
        Some(book_buyers(&db, None).await)
    };
    let into = BOOKS_AGG.overflow.collection;
    let books: Collection<Document> = db.collection(BOOKS.collection);
    let m = measure(&log, async {
        aggregate_into(
            &db,
            BOOKS.collection,
            |out| books_pipeline(into, out),
            stage,
        )
        .await;
        books
            .update_many(
                doc! {format!("buyers.{THRESHOLD}"): {"$exists": true}},
                vec![doc! {"$set": {
                    "buyers": {"$slice": ["$buyers", THRESHOLD as i32]},
                    "has_extras": true,
                }}],
            )
            .await
            .expect("updateMany")
            .modified_count
    })
    .await;
    let out: Collection<Document> = db.collection(into);
    let chunks = out.count_documents(doc! {}).await.unwrap();
    out.create_index(
        IndexModel::builder()
            .keys(doc! {"book_id": 1, "seq": 1, "_id": 1})
            .build(),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let verified = adopt::verify_outlier(&store, &BOOKS_AGG, &Options::default())
        .await
        .expect("verify_outlier on the aggregation's output");
    let verify = started.elapsed();
    let started = Instant::now();
    let exact = check_books(&db, into, b).await;
    if let Some(before) = before {
        let same = book_buyers(&db, Some(into)).await == before;
        println!(
            "  aggregation (smoke): main + overflow equal to the source's buyers, in order: {same}"
        );
    }
    let check = started.elapsed();
    let _ = db.drop().await;
    Run {
        who: "aggregation",
        items: b.beyond(),
        read: b.n as u64,
        written: chunks + m.value,
        source_docs: b.n as u64,
        seed,
        took: m.took,
        commands: m.commands,
        slow: m.slow,
        rss_before: m.rss_before,
        peak: m.peak,
        peak_reset: m.peak_reset,
        verify: Some((verify, verified)),
        exact,
        check,
    }
}

// ---------------------------------------------------------------------------------------
// Printing.

fn breakdown(c: &Commands) -> String {
    let mut v: Vec<(&String, &(usize, Duration))> = c.iter().collect();
    v.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, (n, d))| format!("{k} {n} ({:.2} s)", d.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_runs(title: &str, runs: &[(usize, Run)]) {
    println!("\n### {title}\n");
    println!(
        "| run | items | docs read | docs written | wall (s) | items/s | commands | per source doc | by name (time on the wire) | RSS before (MiB) | peak VmHWM (MiB) | verify (s) | check |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (k, r) in runs {
        let verify = match &r.verify {
            Some((d, v)) if v.is_clean() => {
                format!("{:.2} clean ({} docs)", d.as_secs_f64(), v.documents)
            }
            Some((d, v)) => format!(
                "{:.2} {} defects, e.g. {:?}",
                d.as_secs_f64(),
                v.defects.len(),
                v.defects.first()
            ),
            None => "-".into(),
        };
        println!(
            "| {} #{} | {} | {} | {} | {:.2} | {:.0} | {} | {:.4} | {} | {:.1} | {:.1}{} | {} | {} |",
            r.who,
            k + 1,
            r.items,
            r.read,
            r.written,
            r.took.as_secs_f64(),
            r.rate(),
            r.total_commands(),
            r.total_commands() as f64 / r.source_docs as f64,
            breakdown(&r.commands),
            mib(r.rss_before),
            mib(r.peak),
            if r.peak_reset { "" } else { " (not reset)" },
            verify,
            r.exact.summary(),
        );
    }
    let secs = |who: &str, ddl: bool| -> (u64, f64) {
        runs.iter()
            .filter(|(_, r)| r.who.starts_with(who))
            .fold((0, 0.0), |(i, s), (_, r)| {
                let t = if ddl {
                    r.took
                } else {
                    r.took.saturating_sub(r.ddl())
                };
                (i + r.items, s + t.as_secs_f64())
            })
    };
    let ratio_of = |ddl: bool| {
        let (oi, os) = secs("ours", ddl);
        let (ai, asec) = secs("aggregation", ddl);
        (oi as f64 / os) / (ai as f64 / asec)
    };
    let (ratio, without_ddl) = (ratio_of(true), ratio_of(false));
    for (k, r) in runs {
        println!(
            "  {} #{}: seeded in {:.1} s; {:.2} s of the wall time in DDL commands; checked item by item in {:.1} s{}",
            r.who,
            k + 1,
            r.seed.as_secs_f64(),
            r.ddl().as_secs_f64(),
            r.check.as_secs_f64(),
            if r.slow.is_empty() {
                String::new()
            } else {
                format!("; commands over 1 s: {}", r.slow.join(", "))
            }
        );
    }
    println!(
        "\nthroughput ours / aggregation (items over wall time, all runs): {ratio:.2}, target >= 0.5: {}{}",
        if ratio >= 0.5 { "met" } else { "missed" },
        if full_scale() { "" } else { " (smoke scale: not the target's figure)" }
    );
    println!(
        "the same without the time in DDL commands (create/drop of collections and indexes): {without_ddl:.2}"
    );
}

fn main() {
    if std::env::var("MONGODB_URI").map_or(true, |u| u.trim().is_empty()) {
        panic!(
            "the migrate benchmark needs a MongoDB server and MONGODB_URI is not set: run it with \
             `scripts/bench.sh --bench migrate`, which starts the test server and sets it, or point \
             MONGODB_URI at a server of your own"
        );
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(run());
}

async fn run() {
    let started = Instant::now();
    let runs: usize = scale(2, 1);
    let t = Trades::new(scale(1_000_000, 20_000), scale(1_000, 100));
    let b = Books {
        n: scale(10_000, 500),
        max: scale(5_000, 500),
    };
    println!(
        "{} trades over {} customers -> buckets of {BUCKET_SIZE} keeping date_min/date_max; \
         {} books, {} buyers in all, {} books over {THRESHOLD} with {} buyers beyond it -> \
         outlier, chunks of {CHUNK}. {runs} run(s) of each, a fresh database each.",
        t.n,
        t.customers,
        b.n,
        b.total(),
        b.over(),
        b.beyond()
    );
    let mut stage = "$merge";

    let mut bucket_runs = Vec::new();
    for k in 0..runs {
        let r = trades_ours(t).await;
        println!(
            "  bucket, ours #{}: {:.2} s, {}",
            k + 1,
            r.took.as_secs_f64(),
            r.exact.summary()
        );
        bucket_runs.push((k, r));
        let r = trades_agg(t, &mut stage).await;
        println!(
            "  bucket, aggregation #{}: {:.2} s, {}",
            k + 1,
            r.took.as_secs_f64(),
            r.exact.summary()
        );
        bucket_runs.push((k, r));
    }
    bucket_runs.sort_by_key(|(k, r)| (!r.who.starts_with("ours"), *k));
    let trades_stage = stage;

    let mut outlier_runs = Vec::new();
    for k in 0..runs {
        let r = books_ours(b).await;
        println!(
            "  outlier, ours #{}: {:.2} s, {}",
            k + 1,
            r.took.as_secs_f64(),
            r.exact.summary()
        );
        outlier_runs.push((k, r));
        let r = books_agg(b, &mut stage).await;
        println!(
            "  outlier, aggregation #{}: {:.2} s, {}",
            k + 1,
            r.took.as_secs_f64(),
            r.exact.summary()
        );
        outlier_runs.push((k, r));
    }
    outlier_runs.sort_by_key(|(k, r)| (!r.who.starts_with("ours"), *k));

    print_runs(
        &format!(
            "Flat trades into buckets ({} trades, {} customers; aggregation ends in {trades_stage})",
            t.n, t.customers
        ),
        &bucket_runs,
    );
    print_runs(
        &format!(
            "Books into the outlier layout ({} books, {} buyers beyond {THRESHOLD} moved; aggregation ends in {stage} + updateMany)",
            b.n,
            b.beyond()
        ),
        &outlier_runs,
    );
    println!(
        "\n(total bench time {:.1} s)",
        started.elapsed().as_secs_f64()
    );

    // Ours must be exact and verify clean at every scale; the aggregation is reported only.
    for (_, r) in bucket_runs.iter().chain(&outlier_runs) {
        if r.who.starts_with("ours") {
            assert!(r.exact.ok(), "{}: {}", r.who, r.exact.summary());
            let (_, v) = r.verify.as_ref().unwrap();
            assert!(
                v.is_clean(),
                "{}: verification found {:?}",
                r.who,
                v.defects
            );
        }
    }
}
