//! Plain documents (`#[derive(Document)]`, `pattern_core::document`), on both stores: the
//! article's atomic checkout on the seed's book, 16 concurrent checkouts of 3 copies, keyword
//! search on the seed's Moby-Dick (one keyword, all of several, any of several, the seed's
//! projection), normalised keywords, typed paths that follow serde's renames, and `explain`
//! showing the multikey index at work on both stores.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bson::{doc, Bson, DateTime};
use pattern_core::document::{Filter, Update};
use pattern_core::money::{self, Decimal};
use pattern_core::store::AnyStore;
use pattern_core::{store::Store, Document, Error};
use pattern_tests::{documents, on_both_stores, recording_mongo_store};
use serde::{Deserialize, Serialize};

mod approximate;
mod archive;
mod archive_pairs;
mod attributes;
mod checkout;
mod computed;
mod decimals;
mod fixtures;
mod history;
mod keywords;
mod pairs;
mod polymorphic;
mod reference;
mod related_oracle;
mod seams;
mod subset;
mod variant_pairs;
mod versions;

/// The article's product with a price: `Decimal` fields in each money form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: i32,
    #[serde(with = "pattern_core::money::decimal128")]
    price: Decimal,
    #[serde(
        serialize_with = "money::scaled::serialize::<2, _>",
        deserialize_with = "money::scaled::deserialize::<2, _>"
    )]
    cost: Decimal,
    #[serde(default, with = "money::decimal128::option")]
    discount: Option<Decimal>,
    #[serde(with = "money::text")]
    label: Decimal,
    /// A collection part-way through a conversion: read in any form, written as Decimal128.
    #[serde(
        serialize_with = "money::decimal128::serialize",
        deserialize_with = "money::any_form::deserialize::<2, _>"
    )]
    list: Decimal,
}

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn product(id: i32, price: &str) -> Product {
    Product {
        id,
        price: dec(price),
        cost: dec("1.50"),
        discount: None,
        label: dec(price),
        list: dec(price),
    }
}
