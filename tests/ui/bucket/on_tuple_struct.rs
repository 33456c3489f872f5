// On a tuple struct: reported at its fields.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10)]
pub struct TradeHistory (#[bucket(key)] i64, #[bucket(items)] Vec<Trade>);

fn main() {}
