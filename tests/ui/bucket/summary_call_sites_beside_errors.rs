// Beside an attribute mistake, the time-series methods exist too (as stubs), and so does
// `<Name>Summary` with the aggregates that could be read: their call sites and the reads of
// the summary's fields add no errors.
#![deny(warnings)]
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub qty: i64,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 0, time = "date", summary(sum = "qty", max = "price"))]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "readings", size = 10, summary(avg = "value"))]
pub struct Readings {
    #[bucket(key)]
    pub sensor: String,
    #[bucket(items)]
    pub values: f64,
}

async fn calls(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    use futures::TryStreamExt;
    let trade = || Trade { date: bson::DateTime::now(), qty: 1, price: 1.5 };
    let day = bson::DateTime::from_millis(0)..bson::DateTime::from_millis(86_400_000);
    let _: Vec<Trade> = TradeHistory::range(store, &123, day.clone()).try_collect().await?;
    let _: Vec<Trade> = TradeHistory::latest(store, &123, 10).await?;
    let s: TradeHistorySummary = TradeHistory::summary(store, &123, day).await?;
    let _ = (s.items, s.qty_sum, s.price_max);
    let _: u64 = TradeHistory::ingest(store, &[(123, trade())]).await?;
    let _: u64 = TradeHistory::backfill(store).await?;

    let _: ReadingsSummary = Readings::summary(store, "abc", ..).await?;
    let _: Vec<()> = Readings::latest(store, "abc", 1).await?;
    Readings::ingest(store, &[(String::from("abc"), 2.0)]).await?;
    Ok(())
}

fn main() {
    let store = pattern_core::MemoryStore::new();
    drop(calls(&store));
}
