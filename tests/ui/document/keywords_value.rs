// `keywords` takes no value.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "volumes")]
pub struct Volume {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(keywords = true)]
    pub topics: Vec<String>,
}

fn main() {}
