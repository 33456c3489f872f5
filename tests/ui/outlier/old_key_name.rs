// The overflow's back-pointer key was `reference` before 0.1: the error names its new spelling,
// `owner` (`reference` is Document's extended reference).
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales", reference = "book_id")]
pub struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    #[outlier(items)]
    pub buyers: Vec<String>,
}

fn main() {}
