// Span mistakes, each at its literal: a unit that is not s/m/h/d, zero, over 366 days, a
// granularity that is not a time-series collection's, both span and granularity, and a span
// without `time`.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "a", size = 10, time = "date", span = "1w")]
pub struct BadUnit {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "b", size = 10, time = "date", span = "0h")]
pub struct Zero {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "c", size = 10, time = "date", span = "367d")]
pub struct TooLong {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "d", size = 10, time = "date", granularity = "days")]
pub struct BadGranularity {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "e", size = 10, time = "date", span = "1d", granularity = "hours")]
pub struct Both {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "f", size = 10, span = "1d")]
pub struct NoTime {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
