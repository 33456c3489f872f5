// Beside an attribute mistake, the typed paths and the generated methods still exist (the
// methods as stubs), so that their call sites add no "no function or associated item named
// ..." errors: the mistake is reported alone.
#![deny(warnings)]
use pattern_core::document::Update;
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books", shards = 2)]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i64,
    pub available: i32,
    #[document(keywords)]
    pub topics: Vec<String>,
}

async fn calls(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    let book = Book { id: 1, available: 3, topics: Vec::new() };
    book.insert(store).await?;
    book.save(store).await?;
    let _: Option<Book> = Book::get(store, &1).await?;
    let filter = Book::ID.eq(1).and(Book::AVAILABLE.gt(0));
    let _: bool = Book::update_one(store, filter, Update::new().inc(Book::AVAILABLE, -1)).await?;
    let _: Vec<Book> = Book::find(Book::TOPICS.contains("x")).all(store).await?;
    Book::ensure_indexes(store).await
}

fn main() {
    drop(calls(&pattern_core::MemoryStore::new()));
}
