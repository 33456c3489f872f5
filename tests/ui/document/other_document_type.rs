// A filter or update of one document type cannot be used with another.
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

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "volumes")]
pub struct Volume {
    #[serde(rename = "_id")]
    pub id: i64,
}

async fn mixed(store: &pattern_core::MemoryStore) {
    let _ = Volume::update_one(store, Book::ID.eq(1), Update::new().inc(Book::AVAILABLE, -1)).await;
}

fn main() {
    drop(mixed(&pattern_core::MemoryStore::new()));
}
