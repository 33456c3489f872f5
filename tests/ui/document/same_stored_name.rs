// Two fields stored under one name: reported at the second.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books")]
#[serde(rename_all = "camelCase")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i64,
    pub publisher_id: String,
    #[serde(rename = "publisherId")]
    pub publisher: String,
}

fn main() {}
