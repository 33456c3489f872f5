//! The data, generated (never held whole).

use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{doc, Bson, DateTime, Document};
use mongodb::{Collection, Database};

use crate::{BOOKS, BOOK_CHUNK, SCRAMBLE, SEED_CHUNK, SOURCE, STEP_MS, T0, THRESHOLD};

/// The trades: `n` over `customers`.
#[derive(Clone, Copy)]
pub(crate) struct Trades {
    pub(crate) n: i64,
    pub(crate) customers: i64,
    /// `SCRAMBLE`'s inverse modulo `n`: the trade of a time slot.
    inverse: i64,
}

impl Trades {
    pub(crate) fn new(n: i64, customers: i64) -> Self {
        Trades {
            n,
            customers,
            inverse: inverse_mod(SCRAMBLE, n),
        }
    }

    pub(crate) fn customer(&self, i: i64) -> i64 {
        i % self.customers
    }

    fn millis(&self, i: i64) -> i64 {
        T0 + (i * SCRAMBLE % self.n) * STEP_MS
    }

    /// The trade at `millis`, if one is.
    pub(crate) fn at(&self, millis: i64) -> Option<i64> {
        let d = millis - T0;
        if d < 0 || d % STEP_MS != 0 || d / STEP_MS >= self.n {
            return None;
        }
        Some(((d / STEP_MS) as i128 * self.inverse as i128 % self.n as i128) as i64)
    }

    /// Trade `i` as migrated: the source document without `_id` and `customerId`.
    pub(crate) fn item(&self, i: i64) -> Document {
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
    pub(crate) fn of_customer(&self, c: i64) -> i64 {
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
pub(crate) struct Books {
    pub(crate) n: i32,
    pub(crate) max: i32,
}

impl Books {
    pub(crate) fn len(&self, i: i32) -> usize {
        if i % 10 == 0 {
            (50 + (i as i64 * 37 % (self.max as i64 - 49))) as usize
        } else {
            (i % 50) as usize
        }
    }

    /// Buyer `j` of book `i`: distinct over all books, not in increasing order.
    pub(crate) fn buyer(&self, i: i32, j: usize) -> i32 {
        (i * 10_000 + j as i32) ^ 0x2_A5A5
    }

    fn doc(&self, i: i32) -> Document {
        let buyers: Vec<Bson> = (0..self.len(i))
            .map(|j| Bson::Int32(self.buyer(i, j)))
            .collect();
        doc! {"_id": i, "title": format!("Book {i}"), "buyers": buyers}
    }

    pub(crate) fn total(&self) -> u64 {
        (0..self.n).map(|i| self.len(i) as u64).sum()
    }

    /// Items beyond the threshold: what the migration moves.
    pub(crate) fn beyond(&self) -> u64 {
        (0..self.n)
            .map(|i| self.len(i).saturating_sub(THRESHOLD) as u64)
            .sum()
    }

    pub(crate) fn over(&self) -> u64 {
        (0..self.n).filter(|&i| self.len(i) > THRESHOLD).count() as u64
    }
}

pub(crate) async fn seed_trades(db: &Database, t: Trades) -> Duration {
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

pub(crate) async fn seed_books(db: &Database, b: Books) -> Duration {
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
