// Missing required keys are reported at the struct name.
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(threshold = 50)]
pub struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    pub title: String,
    #[outlier(items)]
    pub customers_purchased: Vec<String>,
}

fn main() {}
