// Roll-up mistakes, each at its token: `rollup` without `summary(...)` (there is nothing to
// roll up), and `rollup` given a value.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub qty: i64,
}

#[derive(Bucket)]
#[bucket(collection = "a", size = 10, time = "date", rollup)]
pub struct NoSummary {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "b", size = 10, summary(sum = "qty"), rollup = true)]
pub struct WithValue {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
