// The items field must be a `Vec<T>`: reported at its type.
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
    #[bucket(items)]
    pub history: Option<Trade>,
}

fn main() {}
