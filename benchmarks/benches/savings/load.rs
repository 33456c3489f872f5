//! The data, and both layouts of it loaded and checked.

use std::time::Instant;

use bson::{doc, Bson, Document};
use futures::TryStreamExt;
use mongodb::{Collection, Database, IndexModel};
use pattern_bench::{Book, Trade, TradeHistory};
use pattern_core::store::MongoStore;
use pattern_core::{Bucket, MemoryStore, Outlier};
use serde::{Deserialize, Serialize};

use crate::read::{flat, run, Op};
use crate::{CUSTOMER, FLAT, OUTLIER_EVERY, OUTLIER_ITEMS, T0, UNBOUNDED};

/// One trade per document (layout B), the seed's per-trade schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TradeDoc {
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[serde(rename = "type")]
    kind: String,
    ticker: String,
    qty: i64,
    price: f64,
    date: bson::DateTime,
}

impl TradeDoc {
    pub(crate) fn trade(self) -> Trade {
        let TradeDoc {
            kind,
            ticker,
            qty,
            price,
            date,
            ..
        } = self;
        Trade {
            kind,
            ticker,
            qty,
            price,
            date,
        }
    }
}

fn book(id: i64) -> Book {
    let n = if id % OUTLIER_EVERY == 0 {
        OUTLIER_ITEMS
    } else {
        5 + (id % 11) as usize
    };
    Book {
        id,
        title: format!("Book {id}"),
        year: 1950 + (id % 70) as i32,
        author: format!("Author {}", id % 97),
        customers_purchased: (0..n)
            .map(|i| format!("user{:05}", (i * 7 + id as usize) % 100_000))
            .collect(),
    }
}

fn trade(i: i64) -> Trade {
    Trade {
        kind: if i % 3 == 0 { "sell" } else { "buy" }.into(),
        ticker: ["MDB", "GOOG", "MSFT", "AAPL"][(i % 4) as usize].into(),
        qty: 1 + i % 500,
        price: 100.0 + (i % 400) as f64 / 4.0,
        date: bson::DateTime::from_millis((T0 + 60 * i) * 1000),
    }
}

/// Inserts documents in batches of 1,000.
async fn insert_all(db: &Database, coll: &str, docs: Vec<Document>) {
    let coll: Collection<Document> = db.collection(coll);
    for batch in docs.chunks(1_000) {
        coll.insert_many(batch.to_vec()).await.expect("insert_many");
    }
}

/// Loads both layouts of both comparisons, checks them through their read paths, and returns
/// the ids of the outlier and the typical book to read.
pub(crate) async fn load(store: &MongoStore, books: i64, trades: i64) -> (i64, i64) {
    let db = store.database();
    let start = Instant::now();

    // Outlier, layout A: the library's documents, built in memory and copied.
    let all_books: Vec<Book> = (1..=books).map(book).collect();
    let mem = MemoryStore::new();
    for b in &all_books {
        b.save(&mem).await.unwrap();
    }
    Book::ensure_indexes(store).await.unwrap();
    let overflow = Book::SPEC.overflow.collection;
    insert_all(
        db,
        Book::SPEC.collection,
        pattern_tests::documents(&mem, Book::SPEC.collection).await,
    )
    .await;
    insert_all(db, overflow, pattern_tests::documents(&mem, overflow).await).await;
    // Layout B: the same books, whole.
    let whole = all_books
        .iter()
        .map(|b| bson::to_document(b).unwrap())
        .collect();
    insert_all(db, UNBOUNDED, whole).await;

    let outlier = (books / 2 / OUTLIER_EVERY).max(1) * OUTLIER_EVERY;
    let typical = outlier - 1;
    for id in [outlier, typical] {
        let expect = &all_books[(id - 1) as usize].customers_purchased;
        let all = Book::all_items(store, &id).await.unwrap();
        assert_eq!(all.as_ref(), Some(expect), "layout A, book {id}");
        let t = Book::typical(store, &id).await.unwrap().unwrap();
        assert_eq!(t.has_extras, expect.len() > 50);
        assert_eq!(
            run(Op::FindBook(id), store).await,
            expect.len(),
            "layout B, book {id}"
        );
    }

    // Bucket, layout A: the library's buckets, built in memory and copied.
    let all_trades: Vec<Trade> = (0..trades).map(trade).collect();
    TradeHistory::push_many(&mem, &CUSTOMER, &all_trades)
        .await
        .unwrap();
    TradeHistory::ensure_indexes(store).await.unwrap();
    let buckets = TradeHistory::SPEC.collection;
    insert_all(db, buckets, pattern_tests::documents(&mem, buckets).await).await;
    // Layout B: one document per trade, with the index its reads need.
    flat(db)
        .create_index(
            IndexModel::builder()
                .keys(doc! {"customerId": 1, "date": 1})
                .build(),
        )
        .await
        .unwrap();
    let flat_docs = all_trades
        .iter()
        .map(|t| {
            let mut d = bson::to_document(t).unwrap();
            d.insert("customerId", CUSTOMER);
            d
        })
        .collect();
    insert_all(db, FLAT, flat_docs).await;

    let counts = TradeHistory::counts(store, &CUSTOMER).await.unwrap();
    assert_eq!(
        (counts.items, counts.pages),
        (trades as u64, (trades / 10) as u64)
    );
    let read: Vec<Trade> = TradeHistory::items(store, &CUSTOMER)
        .try_collect()
        .await
        .unwrap();
    assert!(read == all_trades, "layout A: every trade, in order");
    let last = (trades / 10) as u64;
    for n in [1, last] {
        let lib = TradeHistory::page(store, &CUSTOMER, n)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            lib.items[..],
            all_trades[(n as usize - 1) * 10..n as usize * 10]
        );
    }
    assert_eq!(run(Op::FlatAll, store).await, trades as usize);

    println!(
        "savings: loaded {books} books ({} outliers of {OUTLIER_ITEMS} buyers) and {trades} trades, \
         both layouts each, in {:.1?}",
        books / OUTLIER_EVERY,
        start.elapsed()
    );
    (outlier, typical)
}

/// `collStats` of a collection: (documents, BSON bytes, index bytes).
pub(crate) async fn coll_stats(db: &Database, coll: &str) -> (i64, i64, i64) {
    let s = db
        .run_command(doc! {"collStats": coll})
        .await
        .expect("collStats");
    let int = |k: &str| match s.get(k) {
        Some(Bson::Int32(x)) => *x as i64,
        Some(Bson::Int64(x)) => *x,
        Some(Bson::Double(x)) => *x as i64,
        _ => -1,
    };
    (int("count"), int("size"), int("totalIndexSize"))
}
