// Several mistakes at once: every one is reported together.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "", validate)]
pub struct Volume {
    pub id: i64,
    #[document(keywords(upper))]
    pub topics: Vec<String>,
    #[document(keyword)]
    pub tags: Vec<String>,
    #[document(keywords)]
    pub pages: i32,
}

fn main() {}
