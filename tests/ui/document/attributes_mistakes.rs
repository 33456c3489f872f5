// An attributes field holds `Attributes<V>`, is not the `_id`, and holds neither keywords nor
// a reference.
use pattern_core::document::Attributes;
use pattern_core::Document;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(attributes)]
    pub specs: BTreeMap<String, i64>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "cables")]
pub struct Cable {
    #[serde(rename = "_id")]
    #[document(attributes)]
    pub id: i64,
    #[document(attributes, keywords)]
    pub tags: Attributes<String>,
}

fn main() {}
