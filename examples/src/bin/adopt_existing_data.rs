//! Adopting the patterns on data that exists already, as the seed pages' "before" layouts
//! leave it: a `sales` collection of books whose `customers_purchased` arrays grew without bound
//! (every 100th book a bestseller with thousands of buyers), and a `trades` collection with one document per
//! trade (`{ticker, customerId, type, qty, date}`). For each: analyze, a dry run, the migration,
//! and a verification, through the methods the derives generate.
//!
//! In memory by default; on MongoDB (database `pattern_adopt`) when `MONGODB_URI` is set. With
//! `--seed-only` it only writes the "before" collections (what the README's walk-through with
//! the `pattern` command starts from):
//!
//!     cargo run -p examples --bin adopt_existing_data
//!     cargo run -p examples --bin adopt_existing_data -- --seed-only

use bson::{doc, oid::ObjectId, DateTime, Document};
use futures::TryStreamExt;
use pattern_core::adopt::{Options, Source};
use pattern_core::store::AnyStore;
use pattern_core::{store::Store, Bucket, Outlier};
use serde::{Deserialize, Serialize};

/// A book, as the outlier page stores it: the buyers' array capped at 50 in `sales`, the rest
/// in `extra_sales`.
#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales")]
struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[outlier(items)]
    customers_purchased: Vec<String>,
}

/// One trade inside a bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    ticker: String,
    #[serde(rename = "type")]
    kind: String,
    qty: i64,
    date: DateTime,
}

/// A customer's trades, 50 a bucket, with their time bounds and total quantity.
#[derive(Bucket)]
#[bucket(
    collection = "trade_history",
    size = 50,
    time = "date",
    summary(sum = "qty")
)]
#[allow(dead_code)]
struct TradeHistory {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

const TRADES: Source<'static> = Source {
    collection: "trades",
    key_field: "customerId",
    time_field: "date",
};

/// 1,000 books: most bought a few times, every 100th a bestseller with up to 4,000 buyers.
fn book(i: i64) -> Document {
    let buyers = if i % 100 == 7 {
        1_000 + (i * 37) % 3_000
    } else {
        i % 23
    };
    let customers: Vec<String> = (0..buyers).map(|u| format!("user{u:04}")).collect();
    doc! {"_id": i, "title": format!("Book {i}"), "customers_purchased": customers}
}

/// 10,000 trades of 200 customers (7 of them busy), inserted out of time order.
fn trade(i: i64) -> Document {
    // Every fifth trade by one of 7 busy customers.
    let customer = if i % 5 == 0 { i % 7 } else { (i * 7919) % 200 };
    let secs = 1_698_000_000 + (i * 104_729) % 2_000_000;
    let ticker = ["MDB", "GOOG", "AAPL", "MSFT"][(i % 4) as usize];
    doc! {
        "_id": ObjectId::new(), "ticker": ticker,
        "customerId": customer, "type": if i % 3 == 0 { "sell" } else { "buy" },
        "qty": 1 + i % 100, "date": DateTime::from_millis(secs * 1000),
    }
}

async fn seed(store: &AnyStore) -> pattern_core::Result<()> {
    for coll in [
        "sales",
        "extra_sales",
        "trades",
        "trade_history",
        pattern_core::adopt::CHECKPOINTS,
    ] {
        store.drop_collection(coll).await?;
    }
    store
        .insert_many("sales", (0..1_000).map(book).collect())
        .await?;
    store
        .insert_many("trades", (0..10_000).map(trade).collect())
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_adopt").await?;
    println!("store: {}", store.kind());
    seed(&store).await?;
    if std::env::args().any(|a| a == "--seed-only") {
        println!("seeded `sales` (1,000 books) and `trades` (10,000 trades)");
        return Ok(());
    }

    // Books: should the outlier pattern apply, and with what threshold?
    let a = Book::analyze(&store).await?;
    println!(
        "sales: {} books, buyers per book p50 {} p90 {} p99 {} max {}; {} over the threshold of {}",
        a.documents,
        a.lengths.p50,
        a.lengths.p90,
        a.lengths.p99,
        a.lengths.max,
        a.over_threshold,
        a.threshold
    );
    println!(
        "  largest document: {} bytes",
        a.largest.as_ref().map_or(0, |l| l.bytes)
    );
    println!(
        "  suggested threshold: {} ({})",
        a.suggestion.value, a.suggestion.reason
    );
    let dry = Book::migrate(
        &store,
        &Options {
            dry_run: true,
            ..Options::default()
        },
    )
    .await?;
    println!(
        "dry run: {} books would move {} buyers into {} overflow documents",
        dry.changed, dry.moved_items, dry.written
    );
    let done = Book::migrate(&store, &Options::default()).await?;
    let clean = done.verified.as_ref().is_some_and(|v| v.is_clean());
    println!(
        "migrated: {} books, {} buyers moved, {} overflow documents, {} transactions; verified: {}",
        done.changed,
        done.moved_items,
        done.written,
        done.batches,
        if clean { "clean" } else { "DEFECTS" }
    );
    let bestseller = Book::all_items(&store, &7).await?.unwrap_or_default();
    let typical = Book::typical(&store, &7).await?.expect("book 7");
    println!(
        "book 7: {} buyers, {} in its main document, has_extras {}",
        bestseller.len(),
        typical.doc.customers_purchased.len(),
        typical.has_extras
    );

    // Trades: how many per customer, and what bucket size?
    let t = TradeHistory::analyze_source(&store, &TRADES).await?;
    println!(
        "trades: {} trades of {} customers, per customer p50 {} p99 {} max {}",
        t.items, t.keys, t.per_key.p50, t.per_key.p99, t.per_key.max
    );
    println!(
        "  suggested size: {} ({})",
        t.suggestion.value, t.suggestion.reason
    );
    let dry = TradeHistory::migrate(
        &store,
        &TRADES,
        &Options {
            dry_run: true,
            ..Options::default()
        },
    )
    .await?;
    println!(
        "dry run: {} customers, {} trades into {} buckets",
        dry.changed, dry.moved_items, dry.written
    );
    let done = TradeHistory::migrate(&store, &TRADES, &Options::default()).await?;
    let clean = done.verified.as_ref().is_some_and(|v| v.is_clean());
    println!(
        "migrated: {} customers, {} trades into {} buckets, {} transactions; verified: {}",
        done.changed,
        done.moved_items,
        done.written,
        done.batches,
        if clean { "clean" } else { "DEFECTS" }
    );
    let first: Vec<Trade> = TradeHistory::items(&store, &0).try_collect().await?;
    let in_order = first.windows(2).all(|w| w[0].date <= w[1].date);
    println!(
        "customer 0: {} trades, in time order: {in_order}",
        first.len()
    );
    let again = TradeHistory::migrate(&store, &TRADES, &Options::default()).await?;
    println!(
        "a second run: already finished {}, {} written",
        again.already_finished, again.written
    );
    Ok(())
}
