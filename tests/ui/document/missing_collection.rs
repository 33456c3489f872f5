// No collection: reported at the struct's name, with the syntax.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i64,
}

fn main() {}
