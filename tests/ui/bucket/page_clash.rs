// The page number stored under the items field's name.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, page = "history")]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
