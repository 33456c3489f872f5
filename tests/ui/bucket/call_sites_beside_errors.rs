// Beside an attribute mistake, the generated methods still exist (as stubs), so that their call
// sites add no "no function or associated item named ..." errors: the mistakes are reported
// alone. `TradeHistory`'s items field is read (its methods take `Trade`), `Readings`'s is not a
// `Vec` (its methods take any item).
#![deny(warnings)]
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub date: bson::DateTime,
    pub price: f64,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 0, time = "date")]
pub struct TradeHistory {
    #[bucket(key)]
    pub customer_id: i64,
    #[bucket(items)]
    pub history: Vec<Trade>,
}

#[derive(Bucket)]
#[bucket(collection = "readings", size = 10)]
pub struct Readings {
    #[bucket(key)]
    pub sensor: String,
    #[bucket(items)]
    pub values: f64,
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

async fn drain<T>(s: impl futures::Stream<Item = pattern_core::Result<T>>) -> pattern_core::Result<usize> {
    use futures::StreamExt;
    let mut s = std::pin::pin!(s);
    let mut n = 0;
    while let Some(x) = s.next().await {
        x?;
        n += 1;
    }
    Ok(n)
}

async fn calls(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    let trade = || Trade { date: bson::DateTime::now(), price: 1.5 };
    assert_send(TradeHistory::push(store, &123, trade())).await?;
    TradeHistory::push_many(store, &123, &[trade(), trade()]).await?;
    TradeHistory::push_many(store, &123, &[]).await?;
    let page: Option<pattern_core::bucket::Page<Trade>> = assert_send(TradeHistory::page(store, &123, 1)).await?;
    let _ = page.map(|p| p.items.iter().map(|t| t.price).sum::<f64>());
    drain(assert_send(TradeHistory::pages(store, &123))).await?;
    drain(TradeHistory::items(store, &123)).await?;
    let counts: pattern_core::bucket::Counts = TradeHistory::counts(store, &123).await?;
    let _ = counts.items + counts.pages;
    TradeHistory::ensure_indexes(store).await?;

    let owned = String::from("abc");
    Readings::push(store, "abc", 2.0).await?;
    Readings::push_many(store, &owned, &[1.0, 2.0]).await?;
    Readings::page(store, "abc", 1).await?;
    drain(Readings::pages(store, "abc")).await?;
    drain(Readings::items(store, &owned)).await?;
    Readings::counts(store, "abc").await?;
    Readings::ensure_indexes(store).await
}

fn main() {
    let store = pattern_core::MemoryStore::new();
    drop(calls(&store));
}
