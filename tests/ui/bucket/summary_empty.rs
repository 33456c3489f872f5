// summary() with no aggregate is reported at the whole summary().
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub qty: i64,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, summary())]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
