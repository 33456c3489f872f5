// `$inc` on a String field does not compile: String is not a number.
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
    let _ = Update::new().inc(Book::TITLE, 1);
}
