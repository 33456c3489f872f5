// On a tuple struct: reported at its fields.
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales")]
pub struct Book (#[outlier(id)] i64, #[outlier(items)] Vec<String>);

fn main() {}
