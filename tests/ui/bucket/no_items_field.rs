// No `#[bucket(items)]` field: reported at the struct name.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10)]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
}

fn main() {}
