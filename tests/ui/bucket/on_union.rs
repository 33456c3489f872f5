// On a union: reported at `union`.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10)]
pub union TradeHistory {
    a: i64,
    b: u64,
}

fn main() {}
