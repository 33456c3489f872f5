//! The bucket pattern, on both stores: the seed's layout, bucket sizes, reads, isolation of keys,
//! concurrency, errors, indexes. Every `async fn(AnyStore)` below runs against the in-memory
//! store (`memory::*`) and MongoDB (`mongo::*`).

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use bson::{doc, Bson, DateTime, Document};
use futures::TryStreamExt;
use pattern_core::bucket::Counts;
use pattern_core::store::{AnyStore, MongoStore};
use pattern_core::{store::Store, Bucket, Error};
use pattern_tests::{assert_same_documents, counted_mongo_store, documents, on_both_stores};
use serde::{Deserialize, Serialize};

mod concurrency;
mod edges;
mod layout;
mod stores;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    #[serde(rename = "type")]
    kind: String,
    ticker: String,
    // The seed writes `qty` in one bucket and `quantity` in the other: we write `qty`, read both.
    #[serde(alias = "quantity")]
    qty: i64,
    date: DateTime,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, time = "date")]
#[allow(dead_code)]
struct TradeHistory {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Tick {
    writer: u32,
    n: u32,
    at: i64,
}

/// String keys, 3 items a bucket, items timed by an integer of epoch seconds.
#[derive(Bucket)]
#[bucket(collection = "ticks", size = 3, time = "at")]
#[allow(dead_code)]
struct Ticks {
    #[bucket(key)]
    user: String,
    #[bucket(items)]
    ticks: Vec<Tick>,
}

/// The `n` of `user`'s ticks, in push order (every page of the key).
async fn tick_numbers(store: &impl Store, user: &str) -> Vec<u32> {
    (Ticks::items(store, user).map_ok(|t| t.n))
        .try_collect()
        .await
        .unwrap()
}

/// ObjectId keys, untimed items (the bucket `_id` uses the push time).
#[derive(Bucket)]
#[bucket(collection = "notes", size = 4)]
#[allow(dead_code)]
struct Notes {
    #[bucket(key)]
    owner: bson::oid::ObjectId,
    #[bucket(items)]
    notes: Vec<String>,
}

fn date(s: &str) -> DateTime {
    DateTime::parse_rfc3339_str(s).unwrap()
}

fn trade(kind: &str, ticker: &str, qty: i64, at: &str) -> Trade {
    Trade {
        kind: kind.into(),
        ticker: ticker.into(),
        qty,
        date: date(at),
    }
}

fn tick(writer: u32, n: u32, at: i64) -> Tick {
    Tick { writer, n, at }
}

fn trade_doc(t: &Trade) -> Document {
    doc! {"type": &t.kind, "ticker": &t.ticker, "qty": t.qty, "date": t.date}
}
