// #[derive(Document)] with renames, keyword arrays and raw identifiers, in a module that
// imports nothing and beside a user's own `Result`; every typed path and method used.
#![deny(warnings)]

mod user {
    #[allow(dead_code)]
    type Result<T> = std::result::Result<T, String>;

    #[derive(serde::Serialize, serde::Deserialize, Clone)]
    pub struct Checkout {
        pub by: String,
    }

    #[derive(pattern_core::Document, serde::Serialize, serde::Deserialize, Clone)]
    #[document(collection = "books")]
    #[serde(rename_all = "camelCase")]
    pub struct Book {
        #[serde(rename = "_id")]
        pub id: i64,
        pub r#type: String,
        pub available: i32,
        pub price: f64,
        pub checkout: Vec<Checkout>,
        #[document(keywords(lowercase))]
        pub search_topics: Vec<String>,
        #[document(keywords)]
        pub tags: Vec<std::string::String>,
        #[serde(skip)]
        #[allow(dead_code)] // the case builds calls, it reads no document
        pub cache: Option<u8>,
        pub note: Option<String>,
    }
}

use pattern_core::document::{Field, Filter, Update};
use user::{Book, Checkout};

#[derive(serde::Deserialize)]
struct Title {
    #[allow(dead_code)]
    r#type: String,
}

async fn calls(store: &pattern_core::store::AnyStore) -> pattern_core::Result<()> {
    let _: Field<Book, String> = Book::TYPE;
    let _: Field<Book, Vec<String>> = Book::SEARCH_TOPICS;
    assert_eq!(Book::SEARCH_TOPICS.name(), "searchTopics");
    let filter: Filter<Book> = Book::ID
        .eq(1)
        .and(Book::AVAILABLE.gt(0))
        .or(Book::NOTE.eq(None).and(Book::PRICE.lte(9.5)));
    let update = Update::new()
        .inc(Book::AVAILABLE, -1)
        .inc(Book::PRICE, 0.5)
        .push(Book::CHECKOUT, Checkout { by: "abc".into() })
        .pull(Book::TAGS, "old".to_owned())
        .set(Book::NOTE, Some("n".to_owned()));
    let _: bool = Book::update_one(store, filter, update).await?;
    let found: Vec<Title> = Book::find(Book::SEARCH_TOPICS.contains_all(["a", "b"]))
        .project(Book::TYPE)
        .descending(Book::PRICE)
        .limit(3)
        .all_as(store)
        .await?;
    drop(found);
    let one: Option<Book> = Book::find(Book::TAGS.contains_any(["x"]).and(Book::ID.is_in([1, 2])))
        .one(store)
        .await?;
    if let Some(book) = one {
        book.save(store).await?;
        book.insert(store).await?;
    }
    let _: Option<Book> = Book::get(store, &1).await?;
    Book::ensure_indexes(store).await
}

fn main() {
    let store = pattern_core::store::AnyStore::Memory(pattern_core::MemoryStore::new());
    drop(calls(&store));
}
