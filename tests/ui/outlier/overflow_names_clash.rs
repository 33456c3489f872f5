// The overflow document's names must be distinct.
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales", owner = "seq")]
pub struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    pub title: String,
    #[outlier(items)]
    pub customers_purchased: Vec<String>,
}

fn main() {}
