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
    #[document(approximate(every = 10))]
    pub views: i64,
}

async fn calls(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    let book = Book { id: 1, available: 3, topics: Vec::new(), views: 0 };
    book.insert(store).await?;
    book.save(store).await?;
    let _: Option<Book> = Book::get(store, &1).await?;
    let filter = Book::ID.eq(1).and(Book::AVAILABLE.gt(0));
    let _: bool = Book::update_one(store, filter, Update::new().inc(Book::AVAILABLE, -1)).await?;
    let _: Vec<Book> = Book::find(Book::TOPICS.contains("x")).all(store).await?;
    let _: bool = Book::increment_views(store, &1).await?;
    let _: u64 = Book::flush(store).await?;
    let _: bool = Book::delete(store, &1).await?;
    Book::ensure_indexes(store).await
}

fn main() {
    drop(calls(&pattern_core::MemoryStore::new()));
}
