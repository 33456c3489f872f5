//! The data both sides hold, and the seed's documents as hand-written driver code declares them.

use pattern_bench::{Book, Trade};
use serde::{Deserialize, Serialize};

use crate::{T0, THRESHOLD};

/// The seed's bucket document, as hand-written driver code declares it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SeedBucket {
    #[serde(rename = "_id")]
    pub(crate) id: String,
    #[serde(rename = "customerId")]
    pub(crate) customer_id: i64,
    pub(crate) count: i32,
    pub(crate) history: Vec<Trade>,
}

/// The seed's main document, as hand-written driver code declares it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SeedBook {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    year: i32,
    author: String,
    pub(crate) customers_purchased: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) has_extras: bool,
}

/// An overflow document of the driver side: the seed's `{book_id, customers_purchased_extra}`,
/// chunked like the library's so both sides read the same data shape.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SeedExtra {
    pub(crate) book_id: i64,
    pub(crate) seq: i64,
    pub(crate) count: i32,
    pub(crate) customers_purchased_extra: Vec<String>,
}

/// Driver-side collections.
pub(crate) const TRADES_DRIVER: &str = "trades_driver";
/// The seed's buckets again, with the library's indexes instead of the seed's.
pub(crate) const TRADES_DRIVER_IX: &str = "trades_driver_ix";
pub(crate) const SALES_DRIVER: &str = "sales_driver";
/// The driver side of the pushes that keep a summary, with the library's indexes.
pub(crate) const TOTALS_DRIVER: &str = "trade_totals_driver";

/// A customer's trades keeping, beside the time bounds, the total quantity: the push of a
/// series with a summary.
#[derive(pattern_core::Bucket)]
#[bucket(
    collection = "trade_totals",
    size = 10,
    time = "date",
    summary(sum = "qty")
)]
#[allow(dead_code)]
pub(crate) struct TradeTotals {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}
/// The driver side of the pushes that keep a roll-up too.
pub(crate) const ROLLED_DRIVER: &str = "trade_rolled_driver";

/// [`TradeTotals`] with each key's roll-up: the whole history's total quantity in one
/// document, updated in the same command as each push.
#[derive(pattern_core::Bucket)]
#[bucket(
    collection = "trade_rolled",
    size = 10,
    time = "date",
    summary(sum = "qty"),
    rollup
)]
#[allow(dead_code)]
pub(crate) struct TradeRolled {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}
pub(crate) const EXTRA_DRIVER: &str = "extra_sales_driver";

/// Trade number `i` of a series, `i` seconds after [`T0`].
pub(crate) fn trade(i: i64) -> Trade {
    pattern_bench::trade(T0, i)
}

pub(crate) fn buyer(i: usize) -> String {
    format!("user{i:02}")
}

pub(crate) fn book(id: i64, buyers: usize) -> Book {
    Book {
        id,
        title: format!("Book {id}"),
        year: 2023,
        author: "Lesley Moreno".into(),
        customers_purchased: (0..buyers).map(buyer).collect(),
    }
}

pub(crate) fn seed_book(b: &Book) -> SeedBook {
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
