// The summary's fields share the bucket with the key, count and page fields and the time
// bounds: a collision is reported at the name given last. `min`/`max` of the time field is
// what the bounds already keep.
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub qty: i64,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, summary(sum = "qty"))]
pub struct KeyClash {
    #[bucket(key)]
    #[serde(rename = "qty_sum")]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, summary(max = "price"), count = "price_max")]
pub struct CountClash {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, page = "date_min", time = "date")]
pub struct PageClashesWithBounds {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, time = "date", summary(sum = "qty", min = "date"))]
pub struct MinOfTheTime {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

fn main() {}
