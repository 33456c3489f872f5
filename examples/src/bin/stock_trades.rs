//! Replays the MongoDB manual's bucket-pattern page step by step: three stock trades, then the
//! MSFT trade of 2023-11-02, and checks that the collection ends with the page's final
//! documents (ids computed from the UTC dates, see the README), plus what the library adds to
//! each bucket: the page number (any page is one indexed lookup), the earliest and latest trade
//! time (range reads skip buckets outside the range) and the total quantity (a summary needs no
//! item read), with the marks saying the bucket kept them from its first trade. Then a range
//! read (the trades of one week) and a summary (quantity traded, all history and one week).
//!
//! In memory by default; on MongoDB (database `pattern_examples`) when `MONGODB_URI` is set:
//!
//!     cargo run -p examples --bin stock_trades

use bson::{doc, DateTime, Document};
use futures::TryStreamExt;
use pattern_core::store::AnyStore;
use pattern_core::testing::Fixtures;
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

/// One trade, as the page stores it inside a bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    #[serde(rename = "type")]
    kind: String,
    ticker: String,
    // The page writes `qty` in one bucket and `quantity` in the other: we write `qty` and read both.
    #[serde(alias = "quantity")]
    qty: i64,
    date: DateTime,
}

/// A customer's trade history, 10 trades a bucket, each bucket named after its first trade,
/// keeping its time bounds and its total quantity.
#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, time = "date", summary(sum = "qty"))]
#[allow(dead_code)]
struct TradeHistory {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

fn trade(kind: &str, ticker: &str, qty: i64, date: &str) -> Trade {
    let date = DateTime::parse_rfc3339_str(date).expect("a valid date");
    Trade {
        kind: kind.into(),
        ticker: ticker.into(),
        qty,
        date,
    }
}

fn show(title: &str, docs: &[Document]) {
    println!("{title}");
    for d in docs {
        let json = bson::Bson::Document(d.clone()).into_relaxed_extjson();
        println!("{}", serde_json::to_string_pretty(&json).expect("JSON"));
    }
}

/// The page's final documents, with the ids computed from the UTC dates, page numbers, time
/// bounds and total quantities.
fn seed_final_documents() -> Vec<Document> {
    let d = |s: &str| DateTime::parse_rfc3339_str(s).unwrap();
    vec![
        doc! {"_id": "123_1698335223", "customerId": 123, "bounded": true, "count": 3,
            "date_max": d("2023-11-02T11:43:10.000Z"), "date_min": d("2023-10-26T15:47:03.434Z"),
            "history": [
            {"type": "buy", "ticker": "MDB", "qty": 419, "date": d("2023-10-26T15:47:03.434Z")},
            {"type": "sell", "ticker": "MDB", "qty": 29, "date": d("2023-10-30T09:32:57.765Z")},
            {"type": "buy", "ticker": "MSFT", "qty": 42, "date": d("2023-11-02T11:43:10.000Z")},
        ], "page": 1, "qty_sum": 490, "summarized": ["qty_sum"]},
        doc! {"_id": "456_1698750962", "customerId": 456, "bounded": true, "count": 1,
            "date_max": d("2023-10-31T11:16:02.120Z"), "date_min": d("2023-10-31T11:16:02.120Z"),
            "history": [
            {"type": "buy", "ticker": "GOOG", "qty": 50, "date": d("2023-10-31T11:16:02.120Z")},
        ], "page": 1, "qty_sum": 50, "summarized": ["qty_sum"]},
    ]
}

/// Equal as JSON objects: field order and integer width aside.
fn same(a: &[Document], b: &[Document]) -> bool {
    let json = |docs: &[Document]| -> Vec<serde_json::Value> {
        docs.iter()
            .map(|d| bson::Bson::Document(d.clone()).into_relaxed_extjson())
            .collect()
    };
    json(a) == json(b)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_examples").await?;
    println!("store: {}", store.kind());
    store.drop_collection("trades").await?;

    // Step 1: the three trades of the page, pushed one by one.
    TradeHistory::push(
        &store,
        &123,
        trade("buy", "MDB", 419, "2023-10-26T15:47:03.434Z"),
    )
    .await?;
    TradeHistory::push(
        &store,
        &123,
        trade("sell", "MDB", 29, "2023-10-30T09:32:57.765Z"),
    )
    .await?;
    TradeHistory::push(
        &store,
        &456,
        trade("buy", "GOOG", 50, "2023-10-31T11:16:02.120Z"),
    )
    .await?;
    show(
        "\n== trades after the first three trades",
        &store.documents("trades").await?,
    );

    // Step 2: the page's insert of a new MSFT trade for customer 123.
    TradeHistory::push(
        &store,
        &123,
        trade("buy", "MSFT", 42, "2023-11-02T11:43:10Z"),
    )
    .await?;
    let docs = store.documents("trades").await?;
    show("\n== trades after the MSFT trade", &docs);

    // Reads: page 1 of customer 123, every trade, the counts.
    let page = TradeHistory::page(&store, &123, 1)
        .await?
        .expect("page 1 exists");
    println!(
        "\n== page 1 of customer 123: bucket {} with {} trades",
        page.id,
        page.items.len()
    );
    let all: Vec<Trade> = TradeHistory::items(&store, &123).try_collect().await?;
    let tickers: Vec<&str> = all.iter().map(|t| t.ticker.as_str()).collect();
    println!("every trade of customer 123: {tickers:?}");
    let counts = TradeHistory::counts(&store, &123).await?;
    println!(
        "customer 123: {} trades in {} bucket(s)",
        counts.items, counts.pages
    );

    // A range read: the trades of the week from 2023-10-29, read from the buckets whose time
    // bounds overlap it (and only those).
    let week = DateTime::parse_rfc3339_str("2023-10-29T00:00:00Z").unwrap()
        ..DateTime::parse_rfc3339_str("2023-11-05T00:00:00Z").unwrap();
    let in_week: Vec<Trade> = TradeHistory::range(&store, &123, week.clone())
        .try_collect()
        .await?;
    let tickers: Vec<&str> = in_week.iter().map(|t| t.ticker.as_str()).collect();
    println!("customer 123's trades in the week of 2023-10-29: {tickers:?}");
    // Summaries: whole buckets from their kept totals, the edges of a range from their items.
    let all_time = TradeHistory::summary(&store, &123, ..).await?;
    let weekly = TradeHistory::summary(&store, &123, week).await?;
    println!(
        "customer 123 traded {} shares in {} trades, {} of them in {} trades that week",
        all_time.qty_sum, all_time.items, weekly.qty_sum, weekly.items
    );
    let checks = [
        (
            tickers == ["MDB", "MSFT"],
            "the week's trades are MDB and MSFT",
        ),
        (
            all_time.qty_sum.as_i64() == Some(490),
            "490 shares over all history",
        ),
        (weekly.qty_sum.as_i64() == Some(71), "71 shares that week"),
    ];
    for (ok, what) in checks {
        if !ok {
            return Err(format!("expected {what}").into());
        }
    }

    if same(&docs, &seed_final_documents()) {
        println!("\nthe collection holds the page's final documents");
        Ok(())
    } else {
        show(
            "\nexpected the page's final documents:",
            &seed_final_documents(),
        );
        Err("the collection does not hold the page's final documents".into())
    }
}
