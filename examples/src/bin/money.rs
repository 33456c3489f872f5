//! Replays the money section of the data-modeling article on its `clothes`: the prices stored
//! as scaled longs (`NumberLong(1999)` for 19.99) and as display strings (`"24.95"`) converted
//! to Decimal128 the article's way (a new `priceDec` field, verified, then optionally moved
//! into `price`) with `adopt::money::convert_money`, then read into `rust_decimal::Decimal` fields
//! and summed exactly. A value that would need rounding is refused, never rounded.
//!
//! In memory by default; on MongoDB (database `pattern_money`) when `MONGODB_URI` is set:
//!
//!     cargo run -p examples --bin money

use bson::{doc, Bson, Document};
use pattern_core::adopt::{
    self,
    money::{convert_money, Finish, MoneyConversion},
    Options,
};
use pattern_core::money::{self, Decimal, Form};
use pattern_core::store::AnyStore;
use pattern_core::store::Store;
use pattern_core::testing::Fixtures;
use serde::{Deserialize, Serialize};

/// The seed's `clothes` with the prices given.
fn clothes(prices: [Bson; 5]) -> Vec<Document> {
    let rows = [
        (1, "T-Shirt", "M"),
        (2, "Jeans", "36"),
        (3, "Shorts", "32"),
        (4, "Cool T-Shirt", "L"),
        (5, "Designer Jeans", "30"),
    ];
    rows.iter()
        .zip(prices)
        .map(|((id, description, size), price)| {
            doc! {"_id": id, "description": description, "size": size, "price": price}
        })
        .collect()
}

/// A garment as the application reads it once converted: the amount is a `Decimal`.
#[derive(Debug, Serialize, Deserialize)]
struct Garment {
    #[serde(rename = "_id")]
    id: i32,
    description: String,
    #[serde(with = "money::decimal128")]
    price: Decimal,
}

async fn show(store: &AnyStore, coll: &str) -> Result<(), Box<dyn std::error::Error>> {
    for d in store.documents(coll).await? {
        println!("  {}", Bson::Document(d).into_relaxed_extjson());
    }
    Ok(())
}

async fn fresh(store: &AnyStore, coll: &str, docs: Vec<Document>) -> pattern_core::Result<()> {
    store.drop_collection(coll).await?;
    Ok(store.insert_many(coll, docs).await?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_money").await?;
    println!("store: {}", store.kind());
    store.drop_collection(adopt::CHECKPOINTS).await?;

    // Scale factor: NumberLong(1999) is 19.99.
    let scaled = clothes([1999, 3999, 2999, 2495, 8000].map(|n: i64| Bson::Int64(n)));
    fresh(&store, "clothes", scaled).await?;
    let conv = MoneyConversion {
        collection: "clothes",
        from: "price",
        form: Form::Scaled(2),
        to: "priceDec",
        finish: Finish::KeepBoth,
    };
    let dry = Options {
        dry_run: true,
        ..Options::default()
    };
    let plan = convert_money(&store, &conv, &dry).await?;
    println!(
        "dry run: {} documents would gain priceDec, {} refused",
        plan.converted,
        plan.refused.len()
    );
    let report = convert_money(&store, &conv, &Options::default()).await?;
    let verified = report.verified.as_ref().expect("verified");
    println!(
        "scaled longs: {} converted in {} transaction(s), verified {} of {} documents, {} defect(s)",
        report.converted,
        report.batches,
        verified.converted,
        verified.documents,
        verified.defects.len()
    );
    show(&store, "clothes").await?;

    // The article's in-place variant: the decimal replaces the long.
    let into_old = MoneyConversion {
        finish: Finish::IntoOld,
        ..conv
    };
    let report = convert_money(&store, &into_old, &Options::default()).await?;
    println!(
        "moved into price: {} document(s) rewritten, clean: {}",
        report.replaced,
        report.verified.as_ref().is_some_and(|v| v.is_clean())
    );
    show(&store, "clothes").await?;
    let garments: Vec<Garment> = store
        .documents("clothes")
        .await?
        .into_iter()
        .map(bson::from_document)
        .collect::<Result<_, _>>()?;
    let total: Decimal = garments.iter().map(|g| g.price).sum();
    println!("total of the five prices, in Decimal: {total}");

    // Display strings: "24.95" is 24.95; one written with a stray space is refused.
    let mut strings = clothes(["19.99", "39.99", "29.99", "24.95", "80.00"].map(Bson::from));
    strings.push(doc! {"_id": 6, "description": "Socks", "size": "S", "price": " 4.99"});
    fresh(&store, "clothes_text", strings).await?;
    let text = MoneyConversion {
        collection: "clothes_text",
        form: Form::Text,
        finish: Finish::DropOld,
        ..conv
    };
    let report = convert_money(&store, &text, &Options::default()).await?;
    println!(
        "display strings: {} converted, {} refused",
        report.converted,
        report.refused.len()
    );
    for r in &report.refused {
        println!("  refused: {}", serde_json::to_string(r)?);
    }
    println!(
        "drop of the old field skipped: {}",
        report.finish_skipped.as_deref().unwrap_or("no")
    );
    let mut fix = pattern_core::store::query::Update {
        set: vec![("price".into(), Bson::from("4.99"))],
        ..Default::default()
    };
    store
        .update_one(
            "clothes_text",
            &pattern_core::store::query::Filter::eq("_id", 6),
            &mut fix,
            false,
        )
        .await?;
    let report = convert_money(&store, &text, &Options::default()).await?;
    println!(
        "after fixing it: {} converted, old field dropped from {} document(s), clean: {}",
        report.converted,
        report.replaced,
        report.verified.as_ref().is_some_and(|v| v.is_clean())
    );
    show(&store, "clothes_text").await?;

    // Exact where f64 is not.
    let big = money::from_scaled(9_007_199_254_740_993, 2)?;
    println!(
        "NumberLong(9007199254740993) at scale 2: {big} (through f64: {})",
        9_007_199_254_740_993_f64 / 100.0
    );
    Ok(())
}
