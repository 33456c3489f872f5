// An unknown keywords option: reported at the option.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "volumes")]
pub struct Volume {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(keywords(uppercase))]
    pub topics: Vec<String>,
}

fn main() {}
