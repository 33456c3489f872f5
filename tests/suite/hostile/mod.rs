//! Documents written by other tools into our collections: arbitrary BSON under the keys our
//! reads and pushes touch. Every call returns `Ok` or a typed error (never a panic, never a
//! hang), on the in-memory store (many cases) and on MongoDB (fewer, each case a new database).

use bson::{Bson, Document};
use futures::TryStreamExt;
use pattern_core::store::AnyStore;
use pattern_core::{store::Store, Bucket, Error, Outlier};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

mod property;
mod tolerated;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    ticker: String,
    qty: i64,
    date: bson::DateTime,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 3, time = "date")]
#[allow(dead_code)]
struct TradeHistory {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(
    collection = "sales",
    threshold = 2,
    overflow = "extra_sales",
    chunk = 2
)]
struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[outlier(items)]
    customers_purchased: Vec<String>,
}
