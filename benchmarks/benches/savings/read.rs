//! The reads compared, on either layout.

use std::time::{Duration, Instant};

use bson::doc;
use futures::TryStreamExt;
use mongodb::{Collection, Database};
use pattern_bench::{Book, Trade, TradeHistory};
use pattern_core::store::MongoStore;

use crate::load::TradeDoc;
use crate::{CUSTOMER, FLAT, UNBOUNDED};

/// One read, on either layout.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// `Book::typical` (layout A).
    Typical(i64),
    /// `Book::all_items` (layout A).
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
pub(crate) async fn run(op: Op, store: &MongoStore) -> usize {
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

pub(crate) fn flat(db: &Database) -> Collection<TradeDoc> {
    db.collection(FLAT)
}

/// One comparison: the same read on the library's layout and on the layout without the pattern.
pub(crate) struct Pair {
    pub(crate) group: &'static str,
    /// What is read (the benchmark's parameter).
    pub(crate) what: String,
    pub(crate) library: Op,
    /// `unbounded` or `per_trade`.
    pub(crate) other_name: &'static str,
    pub(crate) other: Op,
}

impl Pair {
    /// The two sides: (criterion id within the group, operation).
    pub(crate) fn sides(&self) -> [(String, Op); 2] {
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
pub(crate) async fn round_robin(
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
