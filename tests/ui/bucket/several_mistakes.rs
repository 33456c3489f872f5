// Every mistake arrives at once.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(size = 0, colour = "red", count = "a.b")]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
    pub name: String,
    #[bucket(items, items)]
    pub history: Trade,
}

fn main() {}
