//! Shared pieces of the benchmarks (see BENCHMARKS.md at the workspace root).
//!
//! Every bench target runs at full scale under `cargo bench` (cargo passes `--bench`) and at a
//! smoke scale under `cargo test` (the README's test command), so the benchmarks never rot.

/// True under `cargo bench`; false under `cargo test`, which runs each bench once, small.
pub fn full_scale() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// `full` under `cargo bench`, `smoke` under `cargo test`.
pub fn scale<T>(full: T, smoke: T) -> T {
    if full_scale() {
        full
    } else {
        smoke
    }
}

/// The number in environment variable `name` (a probe's setting), or `default` when it is unset
/// or not one.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<std::time::Duration>) -> std::time::Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs a library call on the in-memory store: one poll, which always completes (the in-memory
/// store never waits, so this is an `.await` without an executor).
pub fn now<T>(f: impl std::future::Future<Output = T>) -> T {
    futures::FutureExt::now_or_never(f).expect("the in-memory store never waits")
}

/// `d` in milliseconds, two decimals: `1.75 ms`.
pub fn ms(d: std::time::Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pattern_core::{Bucket, Document, Outlier};
use serde::{Deserialize, Serialize};

/// A trade, as the bucket benchmarks store it (the seed's trade, with a price).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trade {
    /// "buy" or "sell" (stored as `type`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The stock traded.
    pub ticker: String,
    /// Shares traded.
    pub qty: i64,
    /// Price per share.
    pub price: f64,
    /// When it was traded.
    pub date: bson::DateTime,
}

/// A customer's trades, 10 per bucket, in the collection `trades`.
#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, time = "date")]
pub struct TradeHistory {
    /// The customer (stored as `customerId`).
    #[bucket(key)]
    #[serde(rename = "customerId")]
    pub customer_id: i64,
    /// The trades.
    #[bucket(items)]
    pub history: Vec<Trade>,
}

/// A film keeping the count, sum, maximum and average of its reviews' ratings (the computed
/// values of [`Review`]), in the collection `films`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "films")]
pub struct Film {
    /// The film (stored as `_id`).
    #[serde(rename = "_id")]
    pub id: i64,
    /// How many reviews it has.
    pub reviews: i64,
    /// The sum of their ratings.
    pub rating_sum: i64,
    /// The highest rating, none without reviews.
    pub rating_max: Option<i64>,
    /// The average rating, none without reviews.
    pub rating_avg: Option<f64>,
}

impl Film {
    /// Film `id`, with no reviews yet.
    pub fn unreviewed(id: i64) -> Film {
        Film {
            id,
            reviews: 0,
            rating_sum: 0,
            rating_max: None,
            rating_avg: None,
        }
    }
}

/// A review of a [`Film`], which keeps its values: the `related` benchmark's computed child.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(
    collection = "reviews",
    computed(parent = Film, key = film_id, count = reviews, sum(rating = rating_sum),
             max(rating = rating_max), avg(rating = rating_avg))
)]
pub struct Review {
    /// The review (stored as `_id`).
    #[serde(rename = "_id")]
    pub id: i64,
    /// The film reviewed.
    pub film_id: i64,
    /// Its rating.
    pub rating: i64,
}

/// The condition the library sends on a bucket's `page` (a number, or none), as its query
/// model renders it (`{$not: {$type: [every other type]}}`): for the probes that time the
/// server on each shape of a filter.
pub fn page_is_a_number() -> bson::Document {
    use pattern_core::store::query::Filter;
    let rendered = Filter::NumberOrMissing("page".into()).to_document();
    rendered
        .get_document("page")
        .expect("rendered on its path")
        .clone()
}

/// Trade number `i` of a series whose trade 0 is at epoch second `t0`: one a second, so every
/// bucket of a key starts in its own second.
pub fn trade(t0: i64, i: i64) -> Trade {
    Trade {
        kind: if i % 3 == 0 { "sell" } else { "buy" }.into(),
        ticker: "MDB".into(),
        qty: 1 + i % 500,
        price: 250.0 + (i % 100) as f64 / 4.0,
        date: bson::DateTime::from_millis((t0 + i) * 1000),
    }
}

/// Trade `i` of the `timeseries` benchmark's market (`T0_MILLIS` + `i * step` ms; four tickers):
/// customer `i % customers` trades it.
pub fn market_trade(i: i64, step: i64) -> Trade {
    Trade {
        kind: if i % 3 == 0 { "sell" } else { "buy" }.into(),
        ticker: ["MDB", "MSFT", "GOOG", "AAPL"][(i % 4) as usize].into(),
        qty: 1 + (i * 7_919) % 500,
        price: 100.0 + (i % 1_000) as f64 / 8.0,
        date: bson::DateTime::from_millis(MARKET_T0 + i * step),
    }
}

/// The first of [`market_trade`]'s times: 2023-11-14T22:13:20Z.
pub const MARKET_T0: i64 = 1_700_000_000_000;

/// A trade of `customer` as one flat document (the trade's fields and `customerId`): what the
/// `timeseries` benchmark inserts into the flat collection and the time-series collection.
pub fn flat_trade(customer: i64, t: &Trade) -> bson::Document {
    let mut d = bson::to_document(t).expect("a trade serializes");
    d.insert("customerId", customer);
    d
}

/// Creates the `timeseries` benchmark's time-series collection `ts_trades` in `db` (the
/// customer as its metaField, `granularity: "hours"`: a customer trades about every 1.7
/// hours, so with the default, `seconds`, whose buckets span at most an hour, every bucket
/// would hold one trade) and returns it.
pub async fn market_time_series(db: &mongodb::Database) -> mongodb::Collection<bson::Document> {
    db.create_collection("ts_trades")
        .timeseries(
            mongodb::options::TimeseriesOptions::builder()
                .time_field("date".to_string())
                .meta_field(Some("customerId".to_string()))
                .granularity(Some(mongodb::options::TimeseriesGranularity::Hours))
                .build(),
        )
        .await
        .expect("the time-series collection is created");
    db.collection("ts_trades")
}

/// A customer's trades, 10 a bucket, with the time bounds and the total quantity kept, and
/// each customer's whole-history total in its roll-up: the `timeseries` benchmark's buckets.
#[derive(Bucket)]
#[bucket(
    collection = "trades",
    size = 10,
    time = "date",
    summary(sum = "qty"),
    rollup
)]
pub struct History {
    /// The customer (stored as `customerId`).
    #[bucket(key)]
    #[serde(rename = "customerId")]
    pub customer_id: i64,
    /// The trades.
    #[bucket(items)]
    pub history: Vec<Trade>,
}

/// The same, each bucket holding the trades of one day at most (`span`): range reads bound
/// their index scan on both sides. The `timeseries` benchmark's buckets cut by day.
#[derive(Bucket)]
#[bucket(
    collection = "trades_daily",
    size = 10,
    time = "date",
    span = "1d",
    summary(sum = "qty")
)]
pub struct DailyHistory {
    /// The customer (stored as `customerId`).
    #[bucket(key)]
    #[serde(rename = "customerId")]
    pub customer_id: i64,
    /// The trades.
    #[bucket(items)]
    pub history: Vec<Trade>,
}

/// A book and its buyers, at most 50 in the main document `sales`, the rest in `extra_sales`.
#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales")]
pub struct Book {
    /// The book's id.
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    /// Its title.
    pub title: String,
    /// Year published.
    pub year: i32,
    /// Its author.
    pub author: String,
    /// Its buyers.
    #[outlier(items)]
    pub customers_purchased: Vec<String>,
}

/// Book `id` with `buyers` buyers named `user00000`, `user00001`...
pub fn book(id: i64, buyers: usize) -> Book {
    Book {
        id,
        title: format!("Book {id}"),
        year: 2023,
        author: "Lesley Moreno".into(),
        customers_purchased: (0..buyers).map(|i| format!("user{i:05}")).collect(),
    }
}

/// Per benchmark id, the (iterations, time) of every call criterion made to a routine
/// (`iter_custom`); the last `sample_size` calls are its measured samples, the ones before its
/// warm-up.
#[derive(Clone, Default)]
pub struct Samples(Arc<Mutex<BTreeMap<String, Vec<Call>>>>);

/// One call of a routine: (iterations, time).
type Call = (u64, Duration);

impl Samples {
    /// Records one call: `iters` operations took `took`.
    pub fn record(&self, id: &str, iters: u64, took: Duration) {
        let mut map = self.0.lock().unwrap();
        map.entry(id.to_owned()).or_default().push((iters, took));
    }

    /// Median time per operation over the last `n` calls of `id` (criterion's samples).
    pub fn median(&self, id: &str, n: usize) -> Option<Duration> {
        let map = self.0.lock().unwrap();
        let calls = map.get(id)?;
        let mut per: Vec<f64> = calls[calls.len().saturating_sub(n)..]
            .iter()
            .map(|(i, d)| d.as_secs_f64() / (*i).max(1) as f64)
            .collect();
        per.sort_by(f64::total_cmp);
        let m = per.len();
        (m > 0).then(|| Duration::from_secs_f64((per[(m - 1) / 2] + per[m / 2]) / 2.0))
    }
}
