//! Replays the MongoDB manual's outlier-pattern page: "Invisible Cities" with 3 buyers, a
//! typical book, and "The Wooden Amulet" bought by user00..user999, an outlier: its first 50
//! buyers stay in `sales` with `has_extras: true`, the other 950 go to `extra_sales` in chunks
//! that reference the book by `book_id`. Prints both main documents and the overflow.
//!
//! In memory by default; on MongoDB (database `pattern_examples`) when `MONGODB_URI` is set:
//!
//!     cargo run -p examples --bin book_sales

use bson::Document;
use pattern_core::store::AnyStore;
use pattern_core::testing::Fixtures;
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales")]
struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    year: i32,
    author: String,
    #[outlier(items)]
    customers_purchased: Vec<String>,
}

fn user(i: u32) -> String {
    format!("user{i:02}")
}

fn show(title: &str, docs: &[Document]) {
    println!("{title}");
    for d in docs {
        println!("{}", bson::Bson::Document(d.clone()).into_relaxed_extjson());
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_examples").await?;
    println!("store: {}", store.kind());
    store.drop_collection("sales").await?;
    store.drop_collection("extra_sales").await?;

    // A typical book, inserted whole.
    let cities = Book {
        id: 1,
        title: "Invisible Cities".into(),
        year: 1972,
        author: "Italo Calvino".into(),
        customers_purchased: (0..3).map(user).collect(),
    };
    cities.save(&store).await?;

    // A popular book: inserted with no buyers, then 1,000 sales pushed one at a time, as an
    // application would record them. Each push is one atomic conditional update while the main
    // array has room; from the 51st on, the sale goes to the overflow.
    let amulet = Book {
        id: 2,
        title: "The Wooden Amulet".into(),
        year: 2023,
        author: "Lesley Moreno".into(),
        customers_purchased: vec![],
    };
    amulet.save(&store).await?;
    for i in 0..1000 {
        Book::push(&store, &2, user(i)).await?;
    }

    show(
        "\n== sales (main documents)",
        &store.documents("sales").await?,
    );
    show(
        "\n== extra_sales (overflow chunks)",
        &store.documents("extra_sales").await?,
    );

    let typical = Book::typical(&store, &2).await?.expect("book 2 exists");
    println!(
        "\ntypical read of book 2 (main document only): {} buyers shown, has_extras: {}",
        typical.doc.customers_purchased.len(),
        typical.has_extras
    );
    let all = Book::all_items(&store, &2).await?.expect("book 2 exists");
    println!(
        "every buyer of book 2: {} ({} .. {})",
        all.len(),
        all[0],
        all[all.len() - 1]
    );
    println!(
        "book 1 is an outlier: {}",
        Book::is_outlier(&store, &1).await?
    );
    println!(
        "book 2 is an outlier: {}",
        Book::is_outlier(&store, &2).await?
    );

    let expected: Vec<String> = (0..1000).map(user).collect();
    if all != expected || typical.doc.customers_purchased[..] != expected[..50] {
        return Err("the stored sales do not match the pushes".into());
    }
    println!("\nall 1000 sales of book 2 are stored, in order");
    Ok(())
}
