//! Overhead of the generated code on MongoDB: each operation of `#[derive(Bucket)]` and
//! `#[derive(Outlier)]` against hand-written `mongodb` driver code that issues the seed's own
//! commands, on the same server, in the same run, through the same client (one connection
//! pool), on collections of the same size holding the same data. Target: median within 5%.
//!
//! Groups (each with a `library` and a `driver` function):
//! - `overhead/bucket_push`: one push into a bucket series of size 10. Library:
//!   `TradeHistory::push`. Driver: the seed's conditional upsert
//!   `updateOne({customerId: k, count: {$lt: 10}}, {$push: {history: t}, $inc: {count: 1},
//!   $setOnInsert: {_id: "<k>_<epoch>", customerId: k}}, {upsert: true})`, with the key matched by
//!   equality (the seed's `{_id: /^123_/}` regex leaks between keys) and served by a plain
//!   (not partial) index `{customerId: 1, count: 1}`. Every criterion sample pushes into a fresh
//!   key, so both sides go through the same bucket states (a bucket opened every 10 pushes);
//!   the sample's documents are deleted afterwards (untimed), so the collections keep their size.
//! - `overhead/bucket_push_ix`: the same two pushes, the driver's into a copy of its
//!   collection that has the library's indexes instead of `{customerId: 1, count: 1}`
//!   (`{customerId, page, _id}`, the partial open-bucket index, the unique page index): what the
//!   library's index design costs the server, apart from the code.
//! - `overhead/bucket_page`: page 3 of a key holding [`PAGES`] pages, rotating over the loaded
//!   keys. Library: `TradeHistory::page(.., 3)`. Driver: the seed's
//!   `find({_id: /^123_/}).sort({_id: 1}).skip(n-1).limit(1)` with the key matched by equality
//!   instead, `find_one({customerId: k}).sort({_id: 1}).skip(2)`, served by `{customerId: 1,
//!   _id: 1}` (the index the library reads through), decoded into a typed bucket struct.
//! - `overhead/outlier_push`: one push below the threshold (50). Library:
//!   `Book::push_customers_purchased`. Driver: `updateOne({_id, "customers_purchased.49":
//!   {$exists: false}}, {$push: {customers_purchased: x}})`. Each sample pushes 50 items into
//!   each of fresh, empty books (created and deleted untimed).
//! - `overhead/typical_read`: a book below the threshold (20 buyers). Library: `Book::typical`.
//!   Driver: `find_one({_id})` decoded into the same struct.
//! - `overhead/outlier_read`: every buyer of an outlier (1,000: 50 in the main document, 950 in
//!   two overflow chunks of 500). Library: `Book::all_customers_purchased`. Driver:
//!   `find_one({_id})`, then `find({book_id}).sort({seq: 1})`, concatenated.
//!
//! Data loaded on both sides: [`KEYS`] customers x `PAGES * 10` trades (the library through
//! `push_many`, the driver side as the seed's bucket documents through `insert_many`), [`BOOKS`]
//! typical books and [`OUTLIERS`] outliers (the library through `save`, the driver side as the
//! seed's documents, the overflow in the same chunked shape).
//!
//! After criterion's report it prints a table of medians per operation (the median of
//! criterion's samples, each the mean of one sample's operations) and the ratio library /
//! driver; then the same from an interleaved run (library and driver alternating operation by
//! operation, the median of single operations), which drift in a shared server's load cannot
//! bias towards either side; then the commands each side sent for 10 operations, as the
//! driver's command monitoring saw them.
//!
//! Needs `MONGODB_URI` (the SecantusDB test server, see `scripts/test.sh`, or any MongoDB).
//! Run: `cargo bench -p pattern-bench --bench overhead` (full scale, a few minutes).
//! `cargo test -p pattern-bench --bench overhead` runs each benchmark once, at a smoke scale.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use criterion::{Criterion, SamplingMode};
use futures::{StreamExt, TryStreamExt};
use mongodb::event::command::CommandEvent;
use mongodb::options::ClientOptions;
use mongodb::{Collection, Database, IndexModel};
use pattern_bench::{Book, Samples, Trade, TradeHistory};
use pattern_core::{store::Store, Bucket, MongoStore};
use pattern_tests::unique_db;
use serde::{Deserialize, Serialize};

/// Epoch seconds of trade 0; trade `i` of a series is `i` seconds later, so every bucket
/// starts in its own second.
const T0: i64 = 1_700_000_000;
/// Buckets per loaded customer.
const PAGES: i64 = 5;
/// The page the page benchmark reads (shallow: 2 index entries skipped).
const PAGE: u64 = 3;
/// Buyers of a typical book, of an outlier, and the threshold.
const TYPICAL_BUYERS: usize = 20;
const OUTLIER_BUYERS: usize = 1_000;
const THRESHOLD: usize = 50;
/// Id of the first outlier book (typical books are 0..BOOKS).
const OUTLIER_BASE: i64 = 100_000;
/// Operations traced per benchmark for the command listing.
const TRACED: u64 = 10;

/// Concurrent tasks loading the data.
const LOADERS: usize = 8;

/// The seed's bucket document, as hand-written driver code declares it.
#[derive(Debug, Serialize, Deserialize)]
struct SeedBucket {
    #[serde(rename = "_id")]
    id: String,
    #[serde(rename = "customerId")]
    customer_id: i64,
    count: i32,
    history: Vec<Trade>,
}

/// The seed's main document, as hand-written driver code declares it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct SeedBook {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    year: i32,
    author: String,
    customers_purchased: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    has_extras: bool,
}

/// An overflow document of the driver side: the seed's `{book_id, customers_purchased_extra}`,
/// chunked like the library's so both sides read the same data shape.
#[derive(Debug, Serialize, Deserialize)]
struct SeedExtra {
    book_id: i64,
    seq: i64,
    count: i32,
    customers_purchased_extra: Vec<String>,
}

/// Driver-side collections.
const TRADES_DRIVER: &str = "trades_driver";
/// The seed's buckets again, with the library's indexes instead of the seed's.
const TRADES_DRIVER_IX: &str = "trades_driver_ix";
const SALES_DRIVER: &str = "sales_driver";
const EXTRA_DRIVER: &str = "extra_sales_driver";

/// Trade number `i` of a series, `i` seconds after [`T0`].
fn trade(i: i64) -> Trade {
    pattern_bench::trade(T0, i)
}

fn buyer(i: usize) -> String {
    format!("user{i:02}")
}

fn book(id: i64, buyers: usize) -> Book {
    Book {
        id,
        title: format!("Book {id}"),
        year: 2023,
        author: "Lesley Moreno".into(),
        customers_purchased: (0..buyers).map(buyer).collect(),
    }
}

fn seed_book(b: &Book) -> SeedBook {
    SeedBook {
        id: b.id,
        title: b.title.clone(),
        year: b.year,
        author: b.author.clone(),
        customers_purchased: b
            .customers_purchased
            .iter()
            .take(THRESHOLD)
            .cloned()
            .collect(),
        has_extras: b.customers_purchased.len() > THRESHOLD,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    BucketPush,
    /// The bucket push again, the driver side on a collection with the library's indexes.
    BucketPushSameIndexes,
    BucketPage,
    OutlierPush,
    TypicalRead,
    OutlierRead,
}

const OPS: [Op; 6] = [
    Op::BucketPush,
    Op::BucketPushSameIndexes,
    Op::BucketPage,
    Op::OutlierPush,
    Op::TypicalRead,
    Op::OutlierRead,
];

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::BucketPush => "bucket_push",
            Op::BucketPushSameIndexes => "bucket_push_ix",
            Op::BucketPage => "bucket_page",
            Op::OutlierPush => "outlier_push",
            Op::TypicalRead => "typical_read",
            Op::OutlierRead => "outlier_read",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Library,
    Driver,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Library => "library",
            Side::Driver => "driver",
        }
    }
}

type Traced = Vec<(String, Document)>;

/// Which commands the client sends, recorded only while `recording` (the driver's command
/// monitoring): name and body, the session and cluster-time fields left out.
#[derive(Clone, Default)]
struct Trace(Arc<Mutex<Option<Traced>>>);

impl Trace {
    fn start(&self) {
        *self.0.lock().unwrap() = Some(Vec::new());
    }
    fn stop(&self) -> Vec<(String, Document)> {
        self.0.lock().unwrap().take().unwrap_or_default()
    }
    /// Has the client of `opts` report to this trace (the shared command monitor: handshakes
    /// and monitoring aside).
    fn install(&self, opts: &mut ClientOptions) {
        let sink = self.clone();
        pattern_tests::monitor(opts, move |ev| {
            let CommandEvent::Started(s) = ev else { return };
            let mut log = sink.0.lock().unwrap();
            let Some(log) = log.as_mut() else { return };
            let mut body = s.command.clone();
            for k in [
                "lsid",
                "$db",
                "$clusterTime",
                "txnNumber",
                "$readPreference",
            ] {
                body.remove(k);
            }
            log.push((s.command_name.clone(), body));
        });
    }
}

/// A short rendering of a command: arrays of more than 4 elements cut to their first two.
fn abbreviate(b: &Bson) -> Bson {
    match b {
        Bson::Document(d) => {
            Bson::Document(d.iter().map(|(k, v)| (k.clone(), abbreviate(v))).collect())
        }
        Bson::Array(a) if a.len() > 4 => Bson::Array(vec![
            abbreviate(&a[0]),
            abbreviate(&a[1]),
            Bson::String(format!("...{} more", a.len() - 2)),
        ]),
        Bson::Array(a) => Bson::Array(a.iter().map(abbreviate).collect()),
        other => other.clone(),
    }
}

fn median(mut v: Vec<Duration>) -> Option<Duration> {
    v.sort();
    let m = v.len();
    (m > 0).then(|| (v[(m - 1) / 2] + v[m / 2]) / 2)
}

/// Everything both sides run against.
struct Bench {
    store: MongoStore,
    db: Database,
    keys: i64,
    books: i64,
    outliers: i64,
    /// Fresh keys and book ids for the pushes (never loaded, never reused).
    fresh: AtomicI64,
}

/// What an untimed preparation made for a batch of operations: the first fresh key or book.
struct Batch {
    base: i64,
    count: i64,
}

impl Bench {
    fn trades_driver(&self) -> Collection<Document> {
        self.db.collection(TRADES_DRIVER)
    }
    fn sales_driver(&self) -> Collection<SeedBook> {
        self.db.collection(SALES_DRIVER)
    }
    fn extra_driver(&self) -> Collection<SeedExtra> {
        self.db.collection(EXTRA_DRIVER)
    }

    /// Loads both sides with the same data and creates their indexes.
    async fn load(&self) {
        let items: Vec<Trade> = (0..PAGES * 10).map(trade).collect();
        TradeHistory::ensure_indexes(&self.store).await.unwrap();
        futures::stream::iter(0..self.keys)
            .for_each_concurrent(LOADERS, |k| {
                let items = &items;
                async move {
                    TradeHistory::push_many(&self.store, &k, items)
                        .await
                        .unwrap()
                }
            })
            .await;
        let trades = self.trades_driver();
        trades
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"customerId": 1, "count": 1})
                    .build(),
            )
            .await
            .unwrap();
        trades
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"customerId": 1, "_id": 1})
                    .build(),
            )
            .await
            .unwrap();
        let buckets: Vec<Document> = (0..self.keys)
            .flat_map(|k| {
                items.chunks(10).map(move |c| {
                    let first = c[0].date.timestamp_millis() / 1000;
                    bson::to_document(&SeedBucket {
                        id: format!("{k}_{first}"),
                        customer_id: k,
                        count: c.len() as i32,
                        history: c.to_vec(),
                    })
                    .unwrap()
                })
            })
            .collect();
        for chunk in buckets.chunks(1_000) {
            trades.insert_many(chunk).await.unwrap();
        }
        // The same buckets under the library's indexes (created by the store, as the library
        // creates its own).
        for index in TradeHistory::SPEC.series().indexes() {
            self.store
                .create_index(TRADES_DRIVER_IX, &index)
                .await
                .unwrap();
        }
        let same = self.db.collection::<Document>(TRADES_DRIVER_IX);
        for chunk in buckets.chunks(1_000) {
            same.insert_many(chunk).await.unwrap();
        }

        Book::ensure_indexes(&self.store).await.unwrap();
        let books: Vec<Book> = (0..self.books)
            .map(|id| book(id, TYPICAL_BUYERS))
            .chain((0..self.outliers).map(|i| book(OUTLIER_BASE + i, OUTLIER_BUYERS)))
            .collect();
        futures::stream::iter(&books)
            .for_each_concurrent(
                LOADERS,
                |b| async move { b.save(&self.store).await.unwrap() },
            )
            .await;
        self.extra_driver()
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"book_id": 1, "seq": 1})
                    .build(),
            )
            .await
            .unwrap();
        let mains: Vec<SeedBook> = books.iter().map(seed_book).collect();
        for chunk in mains.chunks(1_000) {
            self.sales_driver().insert_many(chunk).await.unwrap();
        }
        let extras: Vec<SeedExtra> = books
            .iter()
            .filter(|b| b.customers_purchased.len() > THRESHOLD)
            .flat_map(|b| {
                b.customers_purchased[THRESHOLD..]
                    .chunks(pattern_core::outlier::DEFAULT_CHUNK as usize)
                    .enumerate()
                    .map(|(i, c)| SeedExtra {
                        book_id: b.id,
                        seq: i as i64 + 1,
                        count: c.len() as i32,
                        customers_purchased_extra: c.to_vec(),
                    })
            })
            .collect();
        if !extras.is_empty() {
            self.extra_driver().insert_many(extras).await.unwrap();
        }
    }

    /// Both sides read the same thing.
    async fn check(&self) {
        for k in [0, self.keys - 1] {
            let lib = TradeHistory::page(&self.store, &k, PAGE)
                .await
                .unwrap()
                .unwrap();
            let drv = self.driver_page(k).await.unwrap();
            assert_eq!(lib.items, drv.history, "page {PAGE} of key {k}");
        }
        let lib = Book::typical(&self.store, &0).await.unwrap().unwrap();
        let drv = self
            .sales_driver()
            .find_one(doc! {"_id": 0_i64})
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (lib.doc.customers_purchased, lib.has_extras),
            (drv.customers_purchased, drv.has_extras)
        );
        let lib = Book::all_items(&self.store, &OUTLIER_BASE)
            .await
            .unwrap()
            .unwrap();
        let drv = self.driver_all(OUTLIER_BASE).await;
        assert_eq!(lib.len(), OUTLIER_BUYERS);
        assert_eq!(lib, drv);
    }

    /// Untimed: fresh keys (bucket push) or fresh empty books (outlier push) for `n` operations.
    async fn prepare(&self, op: Op, side: Side, n: u64) -> Batch {
        let count = match op {
            Op::BucketPush | Op::BucketPushSameIndexes => 1,
            Op::OutlierPush => (n as usize).div_ceil(THRESHOLD) as i64,
            _ => return Batch { base: 0, count: 0 },
        };
        let base = self.fresh.fetch_add(count, Ordering::Relaxed);
        if op == Op::OutlierPush {
            let books: Vec<Book> = (base..base + count).map(|id| book(id, 0)).collect();
            match side {
                Side::Library => {
                    for b in &books {
                        b.save(&self.store).await.unwrap();
                    }
                }
                Side::Driver => {
                    let seeds: Vec<SeedBook> = books.iter().map(seed_book).collect();
                    self.sales_driver().insert_many(seeds).await.unwrap();
                }
            }
        }
        Batch { base, count }
    }

    /// Untimed: deletes what a batch of pushes wrote, so the collections keep their size.
    async fn cleanup(&self, op: Op, side: Side, batch: &Batch) {
        let ids: Vec<i64> = (batch.base..batch.base + batch.count).collect();
        match (op, side) {
            (Op::BucketPush | Op::BucketPushSameIndexes, Side::Library) => {
                // Every bucket holds its key field (the struct's `customerId`).
                let coll = self
                    .db
                    .collection::<Document>(TradeHistory::SPEC.collection);
                coll.delete_many(doc! {"customerId": {"$in": &ids}})
                    .await
                    .unwrap();
            }
            (Op::BucketPushSameIndexes, Side::Driver) => {
                self.db
                    .collection::<Document>(TRADES_DRIVER_IX)
                    .delete_many(doc! {"customerId": {"$in": &ids}})
                    .await
                    .unwrap();
            }
            (Op::BucketPush, Side::Driver) => {
                self.trades_driver()
                    .delete_many(doc! {"customerId": {"$in": &ids}})
                    .await
                    .unwrap();
            }
            (Op::OutlierPush, Side::Library) => {
                for id in &ids {
                    assert!(Book::delete(&self.store, id).await.unwrap());
                }
            }
            (Op::OutlierPush, Side::Driver) => {
                self.sales_driver()
                    .delete_many(doc! {"_id": {"$in": &ids}})
                    .await
                    .unwrap();
            }
            _ => {}
        }
    }

    /// Operation `i` of a batch: the timed part.
    async fn run(&self, op: Op, side: Side, batch: &Batch, i: u64) {
        let i = i as i64;
        match (op, side) {
            (Op::BucketPush | Op::BucketPushSameIndexes, Side::Library) => {
                TradeHistory::push(&self.store, &batch.base, trade(i))
                    .await
                    .unwrap();
            }
            (Op::BucketPush, Side::Driver) => {
                self.driver_push(TRADES_DRIVER, batch.base, &trade(i)).await
            }
            (Op::BucketPushSameIndexes, Side::Driver) => {
                self.driver_push(TRADES_DRIVER_IX, batch.base, &trade(i))
                    .await
            }
            (Op::BucketPage, Side::Library) => {
                let page = TradeHistory::page(&self.store, &(i % self.keys), PAGE)
                    .await
                    .unwrap();
                black_box(page.expect("a page"));
            }
            (Op::BucketPage, Side::Driver) => {
                black_box(self.driver_page(i % self.keys).await.expect("a page"));
            }
            (Op::OutlierPush, _) => {
                let id = batch.base + i / THRESHOLD as i64;
                let item = buyer(i as usize % THRESHOLD);
                if side == Side::Library {
                    Book::push(&self.store, &id, item).await.unwrap();
                } else {
                    self.driver_outlier_push(id, item).await;
                }
            }
            (Op::TypicalRead, Side::Library) => {
                let t = Book::typical(&self.store, &(i % self.books)).await.unwrap();
                black_box(t.expect("a book"));
            }
            (Op::TypicalRead, Side::Driver) => {
                let id = i % self.books;
                black_box(
                    self.sales_driver()
                        .find_one(doc! {"_id": id})
                        .await
                        .unwrap()
                        .expect("a book"),
                );
            }
            (Op::OutlierRead, Side::Library) => {
                let id = OUTLIER_BASE + i % self.outliers;
                let all = Book::all_items(&self.store, &id).await.unwrap();
                black_box(all.expect("a book"));
            }
            (Op::OutlierRead, Side::Driver) => {
                black_box(self.driver_all(OUTLIER_BASE + i % self.outliers).await);
            }
        }
    }

    /// The seed's push, the key matched by equality.
    async fn driver_push(&self, coll: &str, key: i64, t: &Trade) {
        let id = format!("{key}_{}", t.date.timestamp_millis() / 1000);
        self.db
            .collection::<Document>(coll)
            .update_one(
                doc! {"customerId": key, "count": {"$lt": 10}},
                doc! {
                    "$push": {"history": bson::to_bson(t).unwrap()},
                    "$inc": {"count": 1},
                    "$setOnInsert": {"_id": id, "customerId": key},
                },
            )
            .upsert(true)
            .await
            .unwrap();
    }

    /// The seed's page read, the key matched by equality.
    async fn driver_page(&self, key: i64) -> Option<SeedBucket> {
        self.db
            .collection::<SeedBucket>(TRADES_DRIVER)
            .find_one(doc! {"customerId": key})
            .sort(doc! {"_id": 1})
            .skip(PAGE - 1)
            .await
            .unwrap()
    }

    /// The seed's atomic form of its push below the threshold.
    async fn driver_outlier_push(&self, id: i64, item: String) {
        let field = format!("customers_purchased.{}", THRESHOLD - 1);
        let r = self
            .sales_driver()
            .update_one(
                doc! {"_id": id, field: {"$exists": false}},
                doc! {"$push": {"customers_purchased": item}},
            )
            .await
            .unwrap();
        assert_eq!(r.matched_count, 1, "below the threshold");
    }

    /// The seed's read of an outlier: the main document, then its overflow by `book_id`.
    async fn driver_all(&self, id: i64) -> Vec<String> {
        let main = self
            .sales_driver()
            .find_one(doc! {"_id": id})
            .await
            .unwrap()
            .expect("a book");
        let mut all = main.customers_purchased;
        if main.has_extras {
            let mut extras = self
                .extra_driver()
                .find(doc! {"book_id": id})
                .sort(doc! {"seq": 1})
                .await
                .unwrap();
            while let Some(e) = extras.try_next().await.unwrap() {
                all.extend(e.customers_purchased_extra);
            }
        }
        all
    }

    /// `n` operations, library and driver alternating (which goes first alternates too), each
    /// timed alone: the median of each side's single operations.
    async fn interleaved(&self, op: Op, n: u64) -> (Duration, Duration) {
        let lib_batch = self.prepare(op, Side::Library, n).await;
        let drv_batch = self.prepare(op, Side::Driver, n).await;
        let (mut lib, mut drv) = (Vec::new(), Vec::new());
        for i in 0..n {
            for side in if i % 2 == 0 {
                [Side::Library, Side::Driver]
            } else {
                [Side::Driver, Side::Library]
            } {
                let batch = if side == Side::Library {
                    &lib_batch
                } else {
                    &drv_batch
                };
                let t = Instant::now();
                self.run(op, side, batch, i).await;
                let took = t.elapsed();
                if side == Side::Library {
                    lib.push(took)
                } else {
                    drv.push(took)
                }
            }
        }
        self.cleanup(op, Side::Library, &lib_batch).await;
        self.cleanup(op, Side::Driver, &drv_batch).await;
        (median(lib).unwrap(), median(drv).unwrap())
    }

    /// The commands `TRACED` operations send, by name, with one example body of each.
    async fn trace(&self, trace: &Trace, op: Op, side: Side) -> String {
        let batch = self.prepare(op, side, TRACED).await;
        trace.start();
        for i in 0..TRACED {
            self.run(op, side, &batch, i).await;
        }
        let log = trace.stop();
        self.cleanup(op, side, &batch).await;
        let mut by_name: BTreeMap<String, (usize, Document)> = BTreeMap::new();
        for (name, body) in log {
            let coll = body.get_str(&name).unwrap_or_default().to_owned();
            by_name
                .entry(format!("{name} {coll}"))
                .or_insert((0, body))
                .0 += 1;
        }
        let mut out = String::new();
        for (name, (count, body)) in by_name {
            let body = abbreviate(&Bson::Document(body));
            out += &format!("    {count:>3} x {name}  e.g. {body}\n");
        }
        out
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let full = pattern_bench::full_scale();
    let sample_size = pattern_bench::scale(20, 10);
    let pairs = pattern_bench::scale(300, 3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let trace = Trace::default();
    let (bench, db_name) = rt.block_on(async {
        let mut opts = pattern_tests::client_options().await;
        trace.install(&mut opts);
        let db_name = unique_db("overhead");
        let store = MongoStore::with_options(opts, &db_name).expect("a client");
        let db = store.database().clone();
        let bench = Bench {
            store,
            db,
            keys: pattern_bench::scale(1_000, 10),
            books: pattern_bench::scale(1_000, 10),
            outliers: pattern_bench::scale(20, 2),
            fresh: AtomicI64::new(10_000_000),
        };
        let t = Instant::now();
        bench.load().await;
        bench.check().await;
        println!(
            "overhead: loaded {} customers x {} trades, {} typical books ({TYPICAL_BUYERS} buyers), \
             {} outliers ({OUTLIER_BUYERS} buyers), on each side, in {:.1?}",
            bench.keys,
            PAGES * 10,
            bench.books,
            bench.outliers,
            t.elapsed()
        );
        (bench, db_name)
    });

    let samples = Samples::default();
    let mut c = Criterion::default()
        .sample_size(sample_size)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10))
        .without_plots()
        .configure_from_args();
    for op in OPS {
        let mut group = c.benchmark_group(format!("overhead/{}", op.name()));
        group.sampling_mode(SamplingMode::Flat);
        for side in [Side::Library, Side::Driver] {
            let id = format!("{}/{}", op.name(), side.name());
            let (bench, samples) = (&bench, &samples);
            group.bench_function(side.name(), |b| {
                b.to_async(&rt).iter_custom(|iters| {
                    let id = id.clone();
                    async move {
                        let batch = bench.prepare(op, side, iters).await;
                        let t = Instant::now();
                        for i in 0..iters {
                            bench.run(op, side, &batch, i).await;
                        }
                        let took = t.elapsed();
                        bench.cleanup(op, side, &batch).await;
                        samples.record(&id, iters, took);
                        took
                    }
                })
            });
        }
        group.finish();
    }
    c.final_summary();

    let rows: Vec<(Op, Option<Duration>, Option<Duration>)> = OPS
        .iter()
        .map(|&op| {
            let m =
                |side: Side| samples.median(&format!("{}/{}", op.name(), side.name()), sample_size);
            (op, m(Side::Library), m(Side::Driver))
        })
        .collect();
    let interleaved: Vec<(Op, Duration, Duration)> = rt.block_on(async {
        let mut out = Vec::new();
        for op in OPS {
            let (lib, drv) = bench.interleaved(op, pairs).await;
            out.push((op, lib, drv));
        }
        out
    });
    let mut traces = Vec::new();
    rt.block_on(async {
        for op in OPS {
            for side in [Side::Library, Side::Driver] {
                traces.push((op, side, bench.trace(&trace, op, side).await));
            }
        }
    });

    let scale = if full { "full scale" } else { "smoke scale" };
    println!(
        "\noverhead ({scale}): median per operation, library / driver, same server, same client, \
         {} customers x {} buckets, {} books + {} outliers per side",
        bench.keys, PAGES, bench.books, bench.outliers
    );
    println!("criterion (median of {sample_size} samples, each the mean of its operations):");
    println!(
        "{:<14} {:>14} {:>14} {:>8}",
        "operation", "library", "driver", "ratio"
    );
    for (op, lib, drv) in &rows {
        if let (Some(lib), Some(drv)) = (lib, drv) {
            let ratio = lib.as_secs_f64() / drv.as_secs_f64();
            println!(
                "{:<14} {:>14} {:>14} {:>7.3}x",
                op.name(),
                ms(*lib),
                ms(*drv),
                ratio
            );
        }
    }
    println!(
        "interleaved ({pairs} pairs, library and driver alternating, median of single operations):"
    );
    println!(
        "{:<14} {:>14} {:>14} {:>8}",
        "operation", "library", "driver", "ratio"
    );
    for (op, lib, drv) in &interleaved {
        let ratio = lib.as_secs_f64() / drv.as_secs_f64();
        println!(
            "{:<14} {:>14} {:>14} {:>7.3}x",
            op.name(),
            ms(*lib),
            ms(*drv),
            ratio
        );
    }
    println!("\ncommands sent for {TRACED} operations (driver command monitoring):");
    for (op, side, text) in &traces {
        println!("  {} / {}:\n{text}", op.name(), side.name());
    }

    rt.block_on(async {
        bench.db.drop().await.ok();
    });
    println!("overhead: dropped database {db_name}");
}
