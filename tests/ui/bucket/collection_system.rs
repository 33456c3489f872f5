// A reserved collection name is reported at the literal.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "system.trades", size = 10)]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
