// `$push` to a field that is not an array does not compile.
use pattern_core::document::Update;
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Checkout {
    pub by: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i64,
    pub title: String,
    pub available: i32,
    pub checkout: Vec<Checkout>,
}

fn main() {
    let _ = Update::new().push(Book::AVAILABLE, 1);
}
