// A keyword array must be a Vec<String>: reported at the type.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "volumes")]
pub struct Volume {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(keywords)]
    pub topics: Vec<u32>,
    #[document(keywords)]
    pub title: String,
}

fn main() {}
