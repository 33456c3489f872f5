// Beside an attribute mistake, the generated methods still exist (as stubs), so that their call
// sites add no "no function or associated item named ..." errors: the mistakes are reported
// alone. `Book`'s items field is read (its methods take `String`); `Channel` has no items
// field, so only the methods not named after it exist.
#![deny(warnings)]
use pattern_core::Outlier;
use serde::{Deserialize, Serialize};

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 0, overflow = "extra_sales")]
pub struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    pub title: String,
    #[outlier(items)]
    pub customers_purchased: Vec<String>,
}

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "channels", threshold = 100, overflow = "followers")]
pub struct Channel {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    pub followers: Vec<i64>,
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
    let book = Book { id: 1, title: "Dune".into(), customers_purchased: vec!["ann".into()] };
    assert_send(book.save(store)).await?;
    assert_send(Book::push(store, &1, "bob".to_owned())).await?;
    Book::push_many(store, &1, &["cy".to_owned()]).await?;
    let typical: Option<pattern_core::outlier::Typical<Book>> = assert_send(Book::typical(store, &1)).await?;
    let _ = typical.map(|t| (t.doc.title, t.has_extras));
    let full: Option<Book> = Book::full(store, &1).await?;
    let _ = full.map(|b| (b.id, b.customers_purchased));
    let all: Option<Vec<String>> = Book::all_items(store, &1).await?;
    let _ = all.map(|v| v.iter().map(String::len).sum::<usize>());
    drain(assert_send(Book::items(store, &1))).await?;
    let n: u64 = Book::counts(store, &1).await.map(|c| c.items)?;
    let _ = n;
    let _: bool = Book::is_outlier(store, &1).await?;
    let _: bool = Book::delete(store, &1).await?;
    Book::ensure_indexes(store).await?;

    let channel = Channel { id: 7, followers: vec![] };
    channel.save(store).await?;
    let _ = Channel::typical(store, &7).await?.map(|t| t.doc.followers.len());
    Channel::full(store, &7).await?;
    Channel::is_outlier(store, &7).await?;
    Channel::delete(store, &7).await?;
    Channel::ensure_indexes(store).await
}

fn main() {
    let store = pattern_core::MemoryStore::new();
    drop(calls(&store));
}
