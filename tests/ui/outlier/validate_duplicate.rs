// `validate` twice: reported at the second.
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales", validate)]
#[outlier(validate)]
pub struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    #[outlier(items)]
    pub customers_purchased: Vec<String>,
}

fn main() {}
