// On an enum: reported at `enum`.
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales")]
pub enum Book {
    Empty,
}

fn main() {}
