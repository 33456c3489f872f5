// A key type that is not a `KeyPart` is reported at the type.
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
    pub customer_id: u64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
