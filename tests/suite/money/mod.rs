//! Money on both stores: `Decimal` fields stored exactly as Decimal128 and read back, and the
//! article's conversions of the seed's `clothes` (scaled longs, display strings) run, killed
//! and resumed, run dry, run beside a writer, and verified, with the values `f64` would round
//! and the values that must be refused.

use std::sync::atomic::{AtomicBool, Ordering};

use bson::{doc, Bson, Decimal128, Document};
use pattern_core::adopt::{
    self,
    money::{convert_money, verify_money, Finish, MoneyConversion, MoneyDefect},
    Options,
};
use pattern_core::money::{self, Decimal, Form, Scaled};
use pattern_core::store::query::{Filter, Update};
use pattern_core::store::AnyStore;
use pattern_core::store::Store;
use pattern_tests::{documents, on_both_stores, read_back};
use serde::{Deserialize, Serialize};

mod exactness;
mod resumable;
mod seed;
mod typed;

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse::<Decimal128>().unwrap())
}

/// The seed's `clothes`, with `price` as given (a `NumberLong` or a string per garment).
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

fn scaled_clothes() -> Vec<Document> {
    clothes([1999, 3999, 2999, 2495, 8000].map(|n: i64| Bson::Int64(n)))
}

fn string_clothes() -> Vec<Document> {
    clothes(["19.99", "39.99", "29.99", "24.95", "80.00"].map(|s| Bson::String(s.into())))
}

/// The seed's decimals: 19.99, 39.99, 29.99, 24.95, 80.00.
fn seed_decimals() -> [Bson; 5] {
    ["19.99", "39.99", "29.99", "24.95", "80.00"].map(dec)
}

/// `docs` with `field` set to each of `values`, in order.
fn with_field(mut docs: Vec<Document>, field: &str, values: [Bson; 5]) -> Vec<Document> {
    for (d, v) in docs.iter_mut().zip(values) {
        d.insert(field, v);
    }
    docs
}

async fn seed(store: &AnyStore, docs: &[Document]) {
    store
        .insert_many("clothes", docs.to_vec())
        .await
        .expect("seed the clothes");
}

const SCALED: MoneyConversion<'static> = MoneyConversion {
    collection: "clothes",
    from: "price",
    form: Form::Scaled(2),
    to: "priceDec",
    finish: Finish::KeepBoth,
};

/// The scaled conversion that moves the decimal into `price`.
const INTO_OLD: MoneyConversion<'static> = MoneyConversion {
    finish: Finish::IntoOld,
    ..SCALED
};

const TEXT: MoneyConversion<'static> = MoneyConversion {
    form: Form::Text,
    ..SCALED
};

fn quiet() -> Options<'static> {
    Options::default()
}
