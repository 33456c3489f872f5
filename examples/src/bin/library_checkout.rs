//! Replays the data-modeling article's atomic-operations recipe: the seed's book with 3 copies
//! available and `joe` in its checkout log, then the checkout update
//!
//!     db.books.update({_id: 123456789, available: {$gt: 0}},
//!                     {$inc: {available: -1}, $push: {checkout: {by: "abc", date: new Date()}}})
//!
//! as one typed conditional update, first alone, then from 16 readers at once: exactly the
//! copies left are checked out, `available` never goes below 0, and the log holds `joe` and
//! the winners.
//!
//! In memory by default; on MongoDB (database `pattern_examples`) when `MONGODB_URI` is set:
//!
//!     cargo run -p examples --bin library_checkout

use bson::DateTime;
use pattern_core::document::Update;
use pattern_core::store::AnyStore;
use pattern_core::testing::Fixtures;
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Checkout {
    by: String,
    date: DateTime,
}

#[derive(Document, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[document(collection = "books")]
struct Book {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    author: Vec<String>,
    published_date: DateTime,
    pages: i32,
    language: String,
    publisher_id: String,
    available: i32,
    checkout: Vec<Checkout>,
}

fn date(iso: &str) -> DateTime {
    DateTime::parse_rfc3339_str(iso).expect("a date")
}

/// The checkout of one copy by `by`: whether a copy was available (`nMatched: 1`).
async fn checkout(store: &AnyStore, by: &str) -> pattern_core::Result<bool> {
    Book::update_one(
        store,
        Book::ID.eq(123456789).and(Book::AVAILABLE.gt(0)),
        Update::new().inc(Book::AVAILABLE, -1).push(
            Book::CHECKOUT,
            Checkout {
                by: by.into(),
                date: DateTime::now(),
            },
        ),
    )
    .await
}

fn log(book: &Book) -> Vec<&str> {
    book.checkout.iter().map(|c| c.by.as_str()).collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_examples").await?;
    println!("store: {}", store.kind());
    store.drop_collection("books").await?;

    let book = Book {
        id: 123456789,
        title: "MongoDB: The Definitive Guide".into(),
        author: vec!["Kristina Chodorow".into(), "Mike Dirolf".into()],
        published_date: date("2010-09-24T00:00:00Z"),
        pages: 216,
        language: "English".into(),
        publisher_id: "oreilly".into(),
        available: 3,
        checkout: vec![Checkout {
            by: "joe".into(),
            date: date("2012-10-15T00:00:00Z"),
        }],
    };
    book.insert(&store).await?;
    for doc in store.documents("books").await? {
        println!("{}", bson::Bson::Document(doc).into_relaxed_extjson());
    }
    println!(
        "the filter: {:?}",
        Book::ID.eq(123456789).and(Book::AVAILABLE.gt(0))
    );

    let applied = checkout(&store, "abc").await?;
    let now = Book::get(&store, &123456789).await?.expect("the book");
    println!(
        "checkout by abc applied: {applied}; available: {}, log: {:?}",
        now.available,
        log(&now)
    );

    // 16 readers at once for the 2 copies left: each checkout is one conditional update, so
    // exactly 2 apply and the others match nothing.
    let readers: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let by = format!("reader{i:02}");
                checkout(&store, &by).await.map(|ok| (ok, by))
            })
        })
        .collect();
    let mut winners = Vec::new();
    for r in readers {
        let (ok, by) = r.await??;
        if ok {
            winners.push(by);
        }
    }
    winners.sort();
    let end = Book::get(&store, &123456789).await?.expect("the book");
    println!(
        "16 concurrent checkouts: {} applied, {} found no copy",
        winners.len(),
        16 - winners.len()
    );
    println!("available: {}", end.available);
    let mut after_abc: Vec<&str> = log(&end)[2..].to_vec();
    after_abc.sort();
    assert_eq!(after_abc, winners);
    println!(
        "log: joe, abc and the {} winners ({} entries)",
        winners.len(),
        end.checkout.len()
    );
    let late = checkout(&store, "late").await?;
    println!("one more checkout applied: {late}");
    Ok(())
}
