// `keywords` twice on a field, and `lowercase` twice: each reported at its second occurrence.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "volumes")]
pub struct Volume {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(keywords, keywords(lowercase, lowercase))]
    pub topics: Vec<String>,
}

fn main() {}
