// A money adapter on a field that is not a `Decimal`: the typed path says so at the field's
// type; an adapter the derive does not know stays refused.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(with = "pattern_core::money::decimal128")]
    pub price: f64,
    #[serde(with = "pattern_core::money::scaled")]
    pub cost: pattern_core::money::Decimal,
}

fn main() {}
