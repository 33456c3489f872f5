// An unknown key inside summary(...) is reported at that key, listing sum, min and max.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub qty: i64,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, summary(sum = "qty", avg = "price"))]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
