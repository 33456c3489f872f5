// `keywords` on the struct: it belongs on a field.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "volumes", keywords)]
pub struct Volume {
    #[serde(rename = "_id")]
    pub id: i64,
    pub topics: Vec<String>,
}

fn main() {}
