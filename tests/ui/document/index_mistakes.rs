// `#[document(index)]` where an index exists already or nothing is stored.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[document(collection = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    #[document(index)]
    pub id: u32,
    #[document(keywords, index)]
    pub tags: Vec<String>,
    #[serde(skip)]
    #[document(index)]
    pub scratch: u32,
    #[document(index = true)]
    pub name: String,
}

fn main() {}
