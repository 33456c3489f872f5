// No field stored as `_id`: reported at the struct's name, with the fix.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books")]
pub struct Book {
    pub id: i64,
}

fn main() {}
