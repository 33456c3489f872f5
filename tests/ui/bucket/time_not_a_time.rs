// `time` names a field that is not a time: the bound error at the literal.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, time = "price")]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
