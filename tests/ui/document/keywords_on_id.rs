// The `_id` cannot be a keyword array (MongoDB refuses arrays as `_id`).
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "volumes")]
pub struct Volume {
    #[document(keywords)]
    #[serde(rename = "_id")]
    pub topics: Vec<String>,
}

fn main() {}
