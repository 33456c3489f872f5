// An enum: reported at `enum`.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books")]
pub enum Book {
    One,
}

fn main() {}
