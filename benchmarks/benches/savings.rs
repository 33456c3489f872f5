//! What the patterns save on MongoDB, each against the same data kept without the pattern.
//!
//! Outlier: `books` documents (1,000 at full scale), 1% of them with 10,000 buyers (strings like
//! `"user00042"`), the others with 5 to 15. Layout A is the library's `#[derive(Outlier)]`
//! (threshold 50, chunks of 500 in `extra_sales`); layout B keeps the same documents with the
//! whole array embedded (`sales_unbounded`, hand-written driver code). Measured: the
//! typical-document read, `Book::typical` against `find_one` by `_id` on layout B, for an
//! outlier and for a typical book; and, for the other side of the trade, every buyer of an
//! outlier (`Book::all_customers_purchased`, two round trips, against the same `find_one`).
//!
//! Bucket: one customer's trades (10,000 at full scale) stored by `#[derive(Bucket)]` 10 per
//! bucket, against one document per trade (`trades_flat`, index `{customerId: 1, date: 1}`,
//! hand-written driver code). Measured: one page of 10 trades (`TradeHistory::page(n)` for page
//! 1 and the last page, against `find({customerId}).sort({date: 1}).skip(10 (n - 1)).limit(10)`)
//! and every trade of the customer (`TradeHistory::items` collected, against a `find` of all).
//!
//! Every read decodes into the same Rust types on both sides. Latency, one client, one operation
//! at a time: the median of criterion's samples, and the median of a round-robin pass that times
//! the two sides of each comparison in turn (at least 5 rounds, about 4 s), so that the load of
//! a shared machine or test server at any moment falls on both alike; the summary gives both
//! and their ratio layout B / library (above 1: the library is faster). Documents, bytes and
//! round trips are counted once per operation on a second client with command monitoring: the
//! sum over the server's replies to that operation (`bson::to_vec(&reply).len()`, so the cursor
//! envelope is included). Storage per collection is the server's `collStats` (`size`: BSON
//! bytes of the documents; `totalIndexSize`).
//!
//! The data is built with the library on a `MemoryStore` (which writes the same documents as
//! MongoDB) and copied to MongoDB with `insert_many`, so it is exactly the library's layout
//! without thousands of single pushes; every layout is then checked through its own read path.
//! It lives in its own database (`pt_bench_savings_<time>`), dropped at the end.
//!
//! Needs `MONGODB_URI`. Run: `cargo bench -p pattern-bench --bench savings` (full scale);
//! `cargo test -p pattern-bench --bench savings` runs each benchmark once at a smoke scale
//! (100 books, 500 trades).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use criterion::{BenchmarkId, Criterion, SamplingMode};
use futures::TryStreamExt;
use mongodb::event::command::CommandEvent;
use mongodb::{Collection, Database, IndexModel};
use pattern_bench::{Book, Samples, Trade, TradeHistory};
use pattern_core::{Bucket, MemoryStore, MongoStore, Outlier};
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;

/// Buyers of an outlier book.
const OUTLIER_ITEMS: usize = 10_000;
/// Every 100th book is an outlier (1%).
const OUTLIER_EVERY: i64 = 100;
/// Epoch seconds of the first trade; trades are a minute apart.
const T0: i64 = 1_700_000_000;
/// The customer whose trades are stored.
const CUSTOMER: i64 = 123;
/// Per-trade layout (B) of the bucket comparison.
const FLAT: &str = "trades_flat";
/// Unbounded-array layout (B) of the outlier comparison.
const UNBOUNDED: &str = "sales_unbounded";

/// One trade per document (layout B), the seed's per-trade schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct TradeDoc {
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[serde(rename = "type")]
    kind: String,
    ticker: String,
    qty: i64,
    price: f64,
    date: bson::DateTime,
}

impl TradeDoc {
    fn trade(self) -> Trade {
        let TradeDoc {
            kind,
            ticker,
            qty,
            price,
            date,
            ..
        } = self;
        Trade {
            kind,
            ticker,
            qty,
            price,
            date,
        }
    }
}

fn book(id: i64) -> Book {
    let n = if id % OUTLIER_EVERY == 0 {
        OUTLIER_ITEMS
    } else {
        5 + (id % 11) as usize
    };
    Book {
        id,
        title: format!("Book {id}"),
        year: 1950 + (id % 70) as i32,
        author: format!("Author {}", id % 97),
        customers_purchased: (0..n)
            .map(|i| format!("user{:05}", (i * 7 + id as usize) % 100_000))
            .collect(),
    }
}

fn trade(i: i64) -> Trade {
    Trade {
        kind: if i % 3 == 0 { "sell" } else { "buy" }.into(),
        ticker: ["MDB", "GOOG", "MSFT", "AAPL"][(i % 4) as usize].into(),
        qty: 1 + i % 500,
        price: 100.0 + (i % 400) as f64 / 4.0,
        date: bson::DateTime::from_millis((T0 + 60 * i) * 1000),
    }
}

/// One read, on either layout.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// `Book::typical` (layout A).
    Typical(i64),
    /// `Book::all_customers_purchased` (layout A).
    AllBuyers(i64),
    /// `find_one({_id})` on layout B, decoded as a `Book`.
    FindBook(i64),
    /// `TradeHistory::page(n)` (layout A).
    Page(u64),
    /// `find(..).sort(..).skip(10 (n - 1)).limit(10)` on layout B.
    FlatPage(u64),
    /// `TradeHistory::items` collected (layout A).
    AllTrades,
    /// Every trade of the customer on layout B, in date order.
    FlatAll,
}

/// Runs `op` on `store` (its database for the driver's side); returns the items it read
/// (buyers or trades), to check both sides read the same amount.
async fn run(op: Op, store: &MongoStore) -> usize {
    let db = store.database();
    match op {
        Op::Typical(id) => {
            let t = Book::typical(store, &id).await.unwrap().expect("a book");
            t.doc.customers_purchased.len()
        }
        Op::AllBuyers(id) => Book::all_items(store, &id)
            .await
            .unwrap()
            .expect("a book")
            .len(),
        Op::FindBook(id) => {
            let coll: Collection<Book> = db.collection(UNBOUNDED);
            let b = coll
                .find_one(doc! {"_id": id})
                .await
                .unwrap()
                .expect("a book");
            b.customers_purchased.len()
        }
        Op::Page(n) => {
            let page = TradeHistory::page(store, &CUSTOMER, n).await.unwrap();
            page.expect("a page").items.len()
        }
        Op::FlatPage(n) => {
            let trades: Vec<Trade> = flat(db)
                .find(doc! {"customerId": CUSTOMER})
                .sort(doc! {"date": 1})
                .skip(10 * (n - 1))
                .limit(10)
                .await
                .unwrap()
                .map_ok(TradeDoc::trade)
                .try_collect()
                .await
                .unwrap();
            trades.len()
        }
        Op::AllTrades => {
            let all: Vec<Trade> = TradeHistory::items(store, &CUSTOMER)
                .try_collect()
                .await
                .unwrap();
            all.len()
        }
        Op::FlatAll => {
            let all: Vec<Trade> = flat(db)
                .find(doc! {"customerId": CUSTOMER})
                .sort(doc! {"date": 1})
                .await
                .unwrap()
                .map_ok(TradeDoc::trade)
                .try_collect()
                .await
                .unwrap();
            all.len()
        }
    }
}

fn flat(db: &Database) -> Collection<TradeDoc> {
    db.collection(FLAT)
}

/// What the server sent back for one operation.
#[derive(Clone, Copy, Debug, Default)]
struct Wire {
    round_trips: usize,
    documents: usize,
    bytes: usize,
}

/// The replies a monitored client received, summed.
#[derive(Clone, Default)]
struct WireLog(Arc<Mutex<Wire>>);

impl WireLog {
    fn record(&self, reply: &Document) {
        let cursor = reply.get_document("cursor").ok();
        let batch = cursor.and_then(|c| {
            c.get_array("firstBatch")
                .or_else(|_| c.get_array("nextBatch"))
                .ok()
        });
        let mut w = self.0.lock().unwrap();
        w.round_trips += 1;
        w.documents += batch.map_or(0, Vec::len);
        w.bytes += bson::to_vec(reply).map_or(0, |v| v.len());
    }
    fn take(&self) -> Wire {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// A store on `db` whose client reports every reply to `log` (the shared command monitor).
async fn monitored_store(db: &str, log: WireLog) -> MongoStore {
    let mut opts = pattern_tests::client_options().await;
    pattern_tests::monitor(&mut opts, move |ev| {
        if let CommandEvent::Succeeded(s) = ev {
            let data = matches!(
                s.command_name.as_str(),
                "find" | "getMore" | "aggregate" | "findAndModify" | "count"
            );
            if data {
                log.record(&s.reply);
            }
        }
    });
    MongoStore::with_options(opts, db).expect("client")
}

/// Inserts documents in batches of 1,000.
async fn insert_all(db: &Database, coll: &str, docs: Vec<Document>) {
    let coll: Collection<Document> = db.collection(coll);
    for batch in docs.chunks(1_000) {
        coll.insert_many(batch.to_vec()).await.expect("insert_many");
    }
}

/// Loads both layouts of both comparisons, checks them through their read paths, and returns
/// the ids of the outlier and the typical book to read.
async fn load(store: &MongoStore, books: i64, trades: i64) -> (i64, i64) {
    let db = store.database();
    let start = Instant::now();

    // Outlier, layout A: the library's documents, built in memory and copied.
    let all_books: Vec<Book> = (1..=books).map(book).collect();
    let mem = MemoryStore::new();
    for b in &all_books {
        b.save(&mem).await.unwrap();
    }
    Book::ensure_indexes(store).await.unwrap();
    let overflow = Book::SPEC.overflow.collection;
    insert_all(
        db,
        Book::SPEC.collection,
        pattern_tests::documents(&mem, Book::SPEC.collection).await,
    )
    .await;
    insert_all(db, overflow, pattern_tests::documents(&mem, overflow).await).await;
    // Layout B: the same books, whole.
    let whole = all_books
        .iter()
        .map(|b| bson::to_document(b).unwrap())
        .collect();
    insert_all(db, UNBOUNDED, whole).await;

    let outlier = (books / 2 / OUTLIER_EVERY).max(1) * OUTLIER_EVERY;
    let typical = outlier - 1;
    for id in [outlier, typical] {
        let expect = &all_books[(id - 1) as usize].customers_purchased;
        let all = Book::all_items(store, &id).await.unwrap();
        assert_eq!(all.as_ref(), Some(expect), "layout A, book {id}");
        let t = Book::typical(store, &id).await.unwrap().unwrap();
        assert_eq!(t.has_extras, expect.len() > 50);
        assert_eq!(
            run(Op::FindBook(id), store).await,
            expect.len(),
            "layout B, book {id}"
        );
    }

    // Bucket, layout A: the library's buckets, built in memory and copied.
    let all_trades: Vec<Trade> = (0..trades).map(trade).collect();
    TradeHistory::push_many(&mem, &CUSTOMER, &all_trades)
        .await
        .unwrap();
    TradeHistory::ensure_indexes(store).await.unwrap();
    let buckets = TradeHistory::SPEC.collection;
    insert_all(db, buckets, pattern_tests::documents(&mem, buckets).await).await;
    // Layout B: one document per trade, with the index its reads need.
    flat(db)
        .create_index(
            IndexModel::builder()
                .keys(doc! {"customerId": 1, "date": 1})
                .build(),
        )
        .await
        .unwrap();
    let flat_docs = all_trades
        .iter()
        .map(|t| {
            let mut d = bson::to_document(t).unwrap();
            d.insert("customerId", CUSTOMER);
            d
        })
        .collect();
    insert_all(db, FLAT, flat_docs).await;

    let counts = TradeHistory::counts(store, &CUSTOMER).await.unwrap();
    assert_eq!(
        (counts.items, counts.pages),
        (trades as u64, (trades / 10) as u64)
    );
    let read: Vec<Trade> = TradeHistory::items(store, &CUSTOMER)
        .try_collect()
        .await
        .unwrap();
    assert!(read == all_trades, "layout A: every trade, in order");
    let last = (trades / 10) as u64;
    for n in [1, last] {
        let lib = TradeHistory::page(store, &CUSTOMER, n)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            lib.items[..],
            all_trades[(n as usize - 1) * 10..n as usize * 10]
        );
    }
    assert_eq!(run(Op::FlatAll, store).await, trades as usize);

    println!(
        "savings: loaded {books} books ({} outliers of {OUTLIER_ITEMS} buyers) and {trades} trades, \
         both layouts each, in {:.1?}",
        books / OUTLIER_EVERY,
        start.elapsed()
    );
    (outlier, typical)
}

/// `collStats` of a collection: (documents, BSON bytes, index bytes).
async fn coll_stats(db: &Database, coll: &str) -> (i64, i64, i64) {
    let s = db
        .run_command(doc! {"collStats": coll})
        .await
        .expect("collStats");
    let int = |k: &str| match s.get(k) {
        Some(Bson::Int32(x)) => *x as i64,
        Some(Bson::Int64(x)) => *x,
        Some(Bson::Double(x)) => *x as i64,
        _ => -1,
    };
    (int("count"), int("size"), int("totalIndexSize"))
}

/// One comparison: the same read on the library's layout and on the layout without the pattern.
struct Pair {
    group: &'static str,
    /// What is read (the benchmark's parameter).
    what: String,
    library: Op,
    /// `unbounded` or `per_trade`.
    other_name: &'static str,
    other: Op,
}

impl Pair {
    /// The two sides: (criterion id within the group, operation).
    fn sides(&self) -> [(String, Op); 2] {
        [
            (format!("library/{}", self.what), self.library),
            (format!("{}/{}", self.other_name, self.what), self.other),
        ]
    }
}

/// Median latency of each of `ops`, timed in turn round after round for `budget` (at least
/// `min_rounds`): whatever load the machine is under at a given moment falls on every
/// operation alike, which criterion's one-benchmark-after-another cannot promise on a shared
/// machine.
async fn round_robin(
    ops: &[Op],
    store: &MongoStore,
    budget: Duration,
    min_rounds: usize,
) -> Vec<Duration> {
    let mut times = vec![Vec::new(); ops.len()];
    let start = Instant::now();
    while times[0].len() < min_rounds || (start.elapsed() < budget && times[0].len() < 500) {
        for (i, op) in ops.iter().enumerate() {
            let t = Instant::now();
            run(*op, store).await;
            times[i].push(t.elapsed());
        }
    }
    times
        .into_iter()
        .map(|mut v| {
            v.sort();
            v[v.len() / 2]
        })
        .collect()
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("-".to_owned(), |d| format!("{:.2}", d.as_secs_f64() * 1e3))
}

fn main() {
    let books: i64 = pattern_bench::scale(1_000, 100);
    let trades: i64 = pattern_bench::scale(10_000, 500);
    let last_page = (trades / 10) as u64;
    let rt = Runtime::new().expect("a tokio runtime");
    let db_name = pattern_tests::unique_db("bench_savings");
    let (store, wire_log, monitored) = rt.block_on(async {
        let store = MongoStore::with_options(pattern_tests::client_options().await, &db_name)
            .expect("client");
        let log = WireLog::default();
        let monitored = monitored_store(&db_name, log.clone()).await;
        (store, log, monitored)
    });
    let (outlier, typical) = rt.block_on(load(&store, books, trades));

    let pair = |group, what: String, library, other_name, other| Pair {
        group,
        what,
        library,
        other_name,
        other,
    };
    let pairs = [
        pair(
            "savings/outlier_typical_read",
            format!("outlier_{outlier}"),
            Op::Typical(outlier),
            "unbounded",
            Op::FindBook(outlier),
        ),
        pair(
            "savings/outlier_typical_read",
            format!("typical_{typical}"),
            Op::Typical(typical),
            "unbounded",
            Op::FindBook(typical),
        ),
        pair(
            "savings/outlier_all_buyers",
            format!("outlier_{outlier}"),
            Op::AllBuyers(outlier),
            "unbounded",
            Op::FindBook(outlier),
        ),
        pair(
            "savings/bucket_page",
            "1".to_owned(),
            Op::Page(1),
            "per_trade",
            Op::FlatPage(1),
        ),
        pair(
            "savings/bucket_page",
            last_page.to_string(),
            Op::Page(last_page),
            "per_trade",
            Op::FlatPage(last_page),
        ),
        pair(
            "savings/bucket_all",
            "all".to_owned(),
            Op::AllTrades,
            "per_trade",
            Op::FlatAll,
        ),
    ];

    const SAMPLE_SIZE: usize = 20;
    let samples = Samples::default();
    let mut c = Criterion::default()
        .sample_size(SAMPLE_SIZE)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut groups: Vec<&'static str> = pairs.iter().map(|p| p.group).collect();
    groups.dedup();
    for name in &groups {
        let mut group = c.benchmark_group(*name);
        group.sampling_mode(SamplingMode::Flat);
        for p in pairs.iter().filter(|p| p.group == *name) {
            for (id, op) in p.sides() {
                let key = format!("{name}/{id}");
                let (store, samples) = (&store, &samples);
                group.bench_function(BenchmarkId::from_parameter(&id), |b| {
                    b.to_async(&rt).iter_custom(|iters| {
                        let key = key.clone();
                        async move {
                            let t = Instant::now();
                            for _ in 0..iters {
                                std::hint::black_box(run(op, store).await);
                            }
                            let took = t.elapsed();
                            samples.record(&key, iters, took);
                            took
                        }
                    })
                });
            }
        }
        group.finish();
    }
    c.final_summary();

    // Per pair: criterion's medians, round-robin medians (the groups criterion ran), and what
    // each side receives, once, on the monitored client (after one untracked call, which also
    // ensures the library's indexes on that client's store).
    let budget = Duration::from_secs(pattern_bench::scale(4, 0));
    let min_rounds = pattern_bench::scale(5, 1);
    let mut report = Vec::new();
    for p in &pairs {
        let ids = p.sides().map(|(id, _)| format!("{}/{id}", p.group));
        let criterion = ids.clone().map(|id| samples.median(&id, SAMPLE_SIZE));
        let ran = criterion.iter().any(Option::is_some);
        let (rr, wire) = rt.block_on(async {
            let ops = [p.library, p.other];
            let rr = if ran {
                round_robin(&ops, &store, budget, min_rounds).await
            } else {
                Vec::new()
            };
            let mut wire = Vec::new();
            for op in ops {
                run(op, &monitored).await;
                wire_log.take();
                let items = run(op, &monitored).await;
                wire.push((wire_log.take(), items));
            }
            (rr, wire)
        });
        report.push((criterion, rr, wire));
    }
    let stats = rt.block_on(async {
        let db = store.database();
        let mut out = Vec::new();
        for coll in ["sales", "extra_sales", UNBOUNDED, "trades", FLAT] {
            out.push((coll, coll_stats(db, coll).await));
        }
        out
    });
    rt.block_on(async {
        store
            .database()
            .drop()
            .await
            .expect("drop the benchmark database");
    });

    println!(
        "\nsavings: {books} books (1% with {OUTLIER_ITEMS} buyers; library threshold 50), \
         {trades} trades of one customer (library buckets of 10){}",
        if pattern_bench::full_scale() {
            ""
        } else {
            "\n(smoke scale: one unoptimized run each, not a measurement)"
        }
    );
    println!(
        "median ms: criterion's samples / round-robin (both sides timed in turn); \
         x = other / library (above 1: the library is faster); per side, once: \
         items decoded, round trips, documents and bytes the server returned"
    );
    println!(
        "{:<22} {:<12} {:<10} {:>8} {:>8} {:>11} {:>7} {:>6} {:>6} {:>10}",
        "group", "read", "side", "criter.", "r-robin", "x", "items", "trips", "docs", "bytes"
    );
    for (p, (criterion, rr, wire)) in pairs.iter().zip(&report) {
        let ratio = |v: &[Option<Duration>]| match v {
            [Some(lib), Some(other)] => format!("{:.2}", other.as_secs_f64() / lib.as_secs_f64()),
            _ => "-".to_owned(),
        };
        let rr: Vec<Option<Duration>> = (0..2).map(|i| rr.get(i).copied()).collect();
        for (i, side) in ["library", p.other_name].into_iter().enumerate() {
            let (w, items) = wire[i];
            let x = if i == 0 {
                format!("{}/{}", ratio(criterion), ratio(&rr))
            } else {
                String::new()
            };
            println!(
                "{:<22} {:<12} {:<10} {:>8} {:>8} {:>11} {:>7} {:>6} {:>6} {:>10}",
                if i == 0 {
                    p.group.trim_start_matches("savings/")
                } else {
                    ""
                },
                if i == 0 { p.what.as_str() } else { "" },
                side,
                ms(criterion[i]),
                ms(rr[i]),
                x,
                items,
                w.round_trips,
                w.documents,
                w.bytes
            );
        }
    }
    println!(
        "\n{:<16} {:>8} {:>12} {:>12}",
        "collection", "docs", "BSON bytes", "index bytes"
    );
    for (coll, (n, size, index)) in stats {
        println!("{coll:<16} {n:>8} {size:>12} {index:>12}");
    }
}
