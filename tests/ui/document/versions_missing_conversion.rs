// Each previous version converts to the next: a missing `From` (or `TryFrom`) is an error at
// the version it starts from.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
pub struct P1 {
    pub name: String,
}

#[derive(Deserialize)]
pub struct P2 {
    pub full_name: String,
}

impl From<P1> for P2 {
    fn from(p: P1) -> Self {
        P2 { full_name: p.name }
    }
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people", version = 3, previous(P1 = 1, P2 = 2))]
pub struct Person {
    #[serde(rename = "_id")]
    pub id: i64,
    pub first: String,
}

fn main() {}
