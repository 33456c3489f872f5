// An unknown key: reported at the key, listing the known ones.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books", shard = "_id")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i64,
}

fn main() {}
