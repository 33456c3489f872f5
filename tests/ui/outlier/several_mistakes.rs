// Every mistake arrives at once.
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "sales", overflow = "sales", threshold = 0, chunk = "big", limit = 3, threshold = 5)]
pub struct Book {
    #[outlier(id)]
    pub id: i64,
    pub title: String,
    #[outlier(items)]
    pub customers_purchased: Option<String>,
}

fn main() {}
