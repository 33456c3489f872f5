// A size past i32::MAX is reported at the value.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 2147483648)]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
