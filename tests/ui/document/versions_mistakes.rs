// Version numbers: 0, two with one number, one not below the current, and a gap.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people", version = 0)]
pub struct Zero {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people", version = 3, previous(P1 = 1, P2 = 1, P3 = 3))]
pub struct Twice {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people", version = 4, previous(P1 = 1, P3 = 3))]
pub struct Gap {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people", previous(P1 = 1), history = "people")]
pub struct NoVersion {
    #[serde(rename = "_id")]
    pub id: i64,
    pub revision: u64,
}

fn main() {}
