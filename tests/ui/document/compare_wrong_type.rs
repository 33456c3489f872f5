// A comparison with a value of another type than the field's does not compile.
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
    let _ = Book::find(Book::AVAILABLE.gt("three"));
}
