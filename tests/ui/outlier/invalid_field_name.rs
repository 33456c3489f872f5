// A name given by attribute must be a valid MongoDB field name.
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales", extra = "$extra")]
pub struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    pub title: String,
    #[outlier(items)]
    pub customers_purchased: Vec<String>,
}

fn main() {}
