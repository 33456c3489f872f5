// Both derives in modules that import nothing (one without even the prelude), beside a user's
// own `Result`, with integer,
// String and ObjectId keys and `rename_all`; every generated method is called (type-checked
// against `MemoryStore`, never run) and its future or stream checked to be `Send`.
#![deny(warnings)]

pub mod items {
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Trade {
        pub date: bson::DateTime,
        pub price: f64,
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Reading {
        pub at: i64,
        pub value: f64,
    }
}

pub mod bucket_models {
    type Result<T> = std::result::Result<T, String>;

    /// Integer key, renamed; items timed by a `bson::DateTime`.
    #[derive(pattern_core::Bucket)]
    #[bucket(collection = "trades", size = 10, time = "date")]
    pub struct TradeHistory {
        #[bucket(key)]
        #[serde(rename = "customerId")]
        pub customer_id: i64,
        #[bucket(items)]
        pub history: Vec<super::items::Trade>,
    }

    /// String key, `rename_all`, no time field, a custom count field.
    #[derive(pattern_core::Bucket)]
    #[bucket(collection = "readings", size = 100, count = "n")]
    #[serde(rename_all = "camelCase")]
    pub struct SensorReadings {
        #[bucket(key)]
        pub sensor_name: String,
        #[bucket(items)]
        pub all_readings: std::vec::Vec<super::items::Reading>,
    }

    pub fn spec() -> Result<()> {
        use pattern_core::Bucket;
        assert_eq!(SensorReadings::SPEC.key_field, "sensorName");
        assert_eq!(SensorReadings::SPEC.items_field, "allReadings");
        assert_eq!(TradeHistory::SPEC.key_field, "customerId");
        Ok(())
    }
}

pub mod outlier_models {
    type Result<T> = std::result::Result<T, String>;

    #[derive(pattern_core::Outlier, serde::Serialize, serde::Deserialize)]
    #[outlier(collection = "sales", threshold = 50, overflow = "extra_sales")]
    pub struct Book {
        #[outlier(id)]
        #[serde(rename = "_id")]
        pub id: i64,
        pub title: String,
        #[outlier(items)]
        pub customers_purchased: Vec<String>,
    }

    /// ObjectId id, `rename_all`, every optional key.
    #[derive(pattern_core::Outlier, serde::Serialize, serde::Deserialize)]
    #[outlier(
        collection = "channels",
        overflow = "channel_followers",
        threshold = 1000,
        chunk = 200,
        flag = "overflowed",
        owner = "channel",
        extra = "more",
        count = "n",
        seq = "k"
    )]
    #[serde(rename_all = "camelCase")]
    pub struct Channel {
        #[outlier(id)]
        #[serde(rename = "_id")]
        pub id: bson::oid::ObjectId,
        pub display_name: String,
        #[outlier(items)]
        pub follower_ids: Vec<i64>,
    }

    pub fn spec() -> Result<()> {
        use pattern_core::Outlier;
        assert_eq!(Book::SPEC.overflow.key_field, "book_id");
        assert_eq!(Channel::SPEC.items_field, "followerIds");
        Ok(())
    }
}

/// Without even the prelude.
pub mod no_prelude {
    #![no_implicit_prelude]

    #[derive(::pattern_core::Bucket)]
    #[bucket(collection = "plain", size = 3)]
    pub struct Plain {
        #[bucket(key)]
        pub key: ::std::string::String,
        #[bucket(items)]
        pub values: ::std::vec::Vec<i64>,
    }

    #[derive(::pattern_core::Outlier, ::serde::Serialize, ::serde::Deserialize)]
    #[outlier(collection = "parents", overflow = "children", threshold = 5)]
    pub struct Parent {
        #[outlier(id)]
        #[serde(rename = "_id")]
        pub id: i32,
        #[outlier(items)]
        pub children: ::std::vec::Vec<::std::string::String>,
    }

    pub async fn exercise(store: &::pattern_core::MemoryStore) -> ::pattern_core::Result<()> {
        Plain::push(store, "k", 1).await?;
        Parent::push(store, &1, ::std::string::String::new()).await
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

async fn drain<T>(
    s: impl futures::Stream<Item = pattern_core::Result<T>>,
) -> pattern_core::Result<usize> {
    use futures::StreamExt;
    let mut s = std::pin::pin!(s);
    let mut n = 0;
    while let Some(x) = s.next().await {
        x?;
        n += 1;
    }
    Ok(n)
}

async fn buckets(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    use bucket_models::{SensorReadings, TradeHistory};
    use items::{Reading, Trade};
    let trade = || Trade {
        date: bson::DateTime::now(),
        price: 1.5,
    };
    assert_send(TradeHistory::push(store, &123, trade())).await?;
    assert_send(TradeHistory::push_many(store, &123, &[trade(), trade()])).await?;
    let page: Option<pattern_core::bucket::Page<Trade>> =
        assert_send(TradeHistory::page(store, &123, 1)).await?;
    let _ = page.map(|p| p.items.len());
    drain(assert_send(TradeHistory::pages(store, &123))).await?;
    drain(assert_send(TradeHistory::items(store, &123))).await?;
    let counts: pattern_core::bucket::Counts =
        assert_send(TradeHistory::counts(store, &123)).await?;
    let _ = counts.items + counts.pages;
    assert_send(TradeHistory::ensure_indexes(store)).await?;

    let reading = Reading {
        at: 1_698_335_223,
        value: 2.0,
    };
    let owned = String::from("abc");
    SensorReadings::push(store, "abc", reading).await?;
    SensorReadings::push_many(store, &owned, &[]).await?;
    SensorReadings::page(store, "abc", 1).await?;
    drain(SensorReadings::pages(store, "abc")).await?;
    let stream = SensorReadings::items(store, &owned);
    drop(owned); // the stream borrows the store only
    drain(stream).await?;
    SensorReadings::counts(store, "abc").await?;
    SensorReadings::ensure_indexes(store).await
}

async fn outliers(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    use outlier_models::{Book, Channel};
    let book = Book {
        id: 1,
        title: "Dune".into(),
        customers_purchased: vec!["ann".into()],
    };
    assert_send(book.save(store)).await?;
    assert_send(Book::push(store, &1, "bob".to_owned())).await?;
    assert_send(Book::push_many(store, &1, &["cy".to_owned()])).await?;
    let typical: Option<pattern_core::outlier::Typical<Book>> =
        assert_send(Book::typical(store, &1)).await?;
    let _ = typical.map(|t| (t.doc.title, t.has_extras));
    let full: Option<Book> = assert_send(Book::full(store, &1)).await?;
    let _ = full.map(|b| (b.id, b.customers_purchased));
    let all: Option<Vec<String>> = assert_send(Book::all_items(store, &1)).await?;
    let _ = all;
    drain(assert_send(Book::items(store, &1))).await?;
    let n: u64 = assert_send(Book::counts(store, &1)).await?.items;
    let _ = n;
    let _: bool = assert_send(Book::is_outlier(store, &1)).await?;
    let _: bool = assert_send(Book::delete(store, &1)).await?;
    assert_send(Book::ensure_indexes(store)).await?;

    let id = bson::oid::ObjectId::new();
    let channel = Channel {
        id,
        display_name: "news".into(),
        follower_ids: vec![],
    };
    channel.save(store).await?;
    Channel::push(store, &id, 7).await?;
    Channel::push_many(store, &id, &[8, 9]).await?;
    let _ = Channel::typical(store, &id)
        .await?
        .map(|t| t.doc.display_name);
    Channel::full(store, &id).await?;
    Channel::all_items(store, &id).await?;
    drain(Channel::items(store, &id)).await?;
    Channel::counts(store, &id).await.map(|c| c.items)?;
    Channel::is_outlier(store, &id).await?;
    Channel::delete(store, &id).await?;
    Channel::ensure_indexes(store).await
}

fn main() {
    bucket_models::spec().unwrap();
    outlier_models::spec().unwrap();
    // Type-checked only: building the futures does not run them.
    let store = pattern_core::MemoryStore::new();
    drop(buckets(&store));
    drop(outliers(&store));
    drop(no_prelude::exercise(&store));
}
