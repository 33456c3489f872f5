// `#[bucket(summary(...))]` with a time field, in modules that import nothing (one without even
// the prelude), beside a user's own `Result`: every time-series method is called (type-checked
// against `MemoryStore`, never run), its future or stream checked to be `Send`, and every field
// of the generated summary read with its type. A private struct's summary fields need not be
// read (no dead-code warning).
#![deny(warnings)]

pub mod items {
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Trade {
        pub date: bson::DateTime,
        pub qty: i64,
        #[serde(rename = "unitPrice")]
        pub unit_price: f64,
        pub fee: Option<f64>,
    }
}

pub mod models {
    type Result<T> = std::result::Result<T, String>;

    /// Summed, least and greatest fields, one field summed and bounded both.
    #[derive(pattern_core::Bucket)]
    #[bucket(
        collection = "trades",
        size = 10,
        time = "date",
        summary(
            sum = "qty",
            min = "unitPrice",
            max = "unitPrice",
            sum = "fee",
            max = "qty"
        )
    )]
    pub struct TradeHistory {
        #[bucket(key)]
        #[serde(rename = "customerId")]
        pub customer_id: i64,
        #[bucket(items)]
        pub history: Vec<super::items::Trade>,
    }

    /// Private, never summarized: its summary struct's fields are never read.
    #[derive(pattern_core::Bucket)]
    #[bucket(collection = "fees", size = 10, summary(sum = "fee"), rollup)]
    struct Fees {
        #[bucket(key)]
        account: String,
        #[bucket(items)]
        fees: Vec<super::items::Trade>,
    }

    /// Cut into days.
    #[derive(pattern_core::Bucket)]
    #[bucket(collection = "daily", size = 10, time = "date", span = "1d")]
    pub struct Daily {
        #[bucket(key)]
        pub customer_id: i64,
        #[bucket(items)]
        pub history: Vec<super::items::Trade>,
    }

    /// Cut as a time-series collection of granularity `hours` (30 days).
    #[derive(pattern_core::Bucket)]
    #[bucket(
        collection = "monthly",
        size = 10,
        time = "date",
        granularity = "hours"
    )]
    pub struct Monthly {
        #[bucket(key)]
        pub customer_id: i64,
        #[bucket(items)]
        pub history: Vec<super::items::Trade>,
    }

    pub fn spec() -> Result<()> {
        use pattern_core::{
            spec::{SummaryField, SummaryOp},
            Bucket,
        };
        let keeps = TradeHistory::SPEC.keeps;
        assert_eq!(keeps.bounds, Some(("date_min", "date_max")));
        assert_eq!(
            keeps.summary[..2],
            [
                SummaryField {
                    op: SummaryOp::Sum,
                    item_field: "qty",
                    field: "qty_sum"
                },
                SummaryField {
                    op: SummaryOp::Min,
                    item_field: "unitPrice",
                    field: "unitPrice_min"
                },
            ]
        );
        assert_eq!(keeps.summary.len(), 5);
        assert_eq!(Fees::SPEC.keeps.summary.len(), 1);
        // The user's own fields read as a user's code would: only a generated item could be
        // left unread, and dead code is denied here.
        let fees = Fees {
            account: "a".into(),
            fees: Vec::new(),
        };
        assert_eq!((fees.account.as_str(), fees.fees.len()), ("a", 0));
        assert_eq!(keeps.span, None);
        assert_eq!(
            (keeps.rollup, Fees::SPEC.keeps.rollup),
            (None, Some("fees.rollups"))
        );
        assert_eq!(Daily::SPEC.keeps.span, Some(86_400_000));
        assert_eq!(Monthly::SPEC.keeps.span, Some(30 * 86_400_000));
        let s = TradeHistorySummary::from(pattern_core::bucket::Totals {
            items: 0,
            values: vec![],
        });
        assert_eq!(s.qty_sum, pattern_core::bucket::Number::Int32(0));
        assert_eq!(s.unitPrice_min, None);
        Ok(())
    }
}

/// Without even the prelude.
pub mod no_prelude {
    #![no_implicit_prelude]

    #[derive(::pattern_core::Bucket)]
    #[bucket(
        collection = "plain",
        size = 3,
        time = "at",
        summary(sum = "value", min = "value")
    )]
    pub struct Plain {
        #[bucket(key)]
        pub key: ::std::string::String,
        #[bucket(items)]
        pub values: ::std::vec::Vec<Reading>,
    }

    #[derive(::serde::Serialize, ::serde::Deserialize)]
    pub struct Reading {
        pub at: i64,
        pub value: f64,
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

async fn calls(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    use futures::TryStreamExt;
    use models::{TradeHistory, TradeHistorySummary};
    use pattern_core::bucket::Number;
    let trade = || items::Trade {
        date: bson::DateTime::now(),
        qty: 1,
        unit_price: 1.5,
        fee: None,
    };
    let (from, to) = (bson::DateTime::from_millis(0), bson::DateTime::now());

    let day: Vec<items::Trade> = assert_send(TradeHistory::range(store, &123, from..to))
        .try_collect()
        .await?;
    let _ = day.len();
    let _: Vec<items::Trade> = TradeHistory::range(store, &123, ..).try_collect().await?;
    let _: Vec<items::Trade> = TradeHistory::range(store, &123, from..=to)
        .try_collect()
        .await?;
    let last: Vec<items::Trade> = assert_send(TradeHistory::latest(store, &123, 10)).await?;
    let _ = last.len();
    let s: TradeHistorySummary = assert_send(TradeHistory::summary(store, &123, ..)).await?;
    let _: TradeHistorySummary = TradeHistory::summary(store, &123, from..).await?;
    let (items, qty, low, high, fees, most): (
        u64,
        Number,
        Option<Number>,
        Option<Number>,
        Number,
        Option<Number>,
    ) = (
        s.items,
        s.qty_sum,
        s.unitPrice_min,
        s.unitPrice_max,
        s.fee_sum,
        s.qty_max,
    );
    let _ = (items, qty, low, high, fees, most);
    let _ = format!("{:?}", s.clone() == s);
    let written: u64 = assert_send(TradeHistory::ingest(
        store,
        &[(123, trade()), (456, trade())],
    ))
    .await?;
    let completed: u64 = assert_send(TradeHistory::backfill(store)).await?;
    let _ = written + completed;

    let owned = String::from("abc");
    let _: Vec<no_prelude::Reading> = no_prelude::Plain::range(store, &owned, ..)
        .try_collect()
        .await?;
    let _: Vec<no_prelude::Reading> = no_prelude::Plain::latest(store, "abc", 1).await?;
    let p: no_prelude::PlainSummary = no_prelude::Plain::summary(store, "abc", ..).await?;
    let _ = (p.items, p.value_sum, p.value_min);
    no_prelude::Plain::ingest(
        store,
        &[(owned.clone(), no_prelude::Reading { at: 1, value: 2.0 })],
    )
    .await?;
    no_prelude::Plain::backfill(store).await?;
    Ok(())
}

fn main() {
    let store = pattern_core::MemoryStore::new();
    drop(calls(&store));
    models::spec().unwrap();
}
