// An approximate counter: an integer field other than `_id`, with `every = N`, on a type
// without history.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "films")]
pub struct Film {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(approximate(every = 0))]
    pub views: i64,
    #[document(approximate(every = 10))]
    pub title: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "films", history = "films_history")]
pub struct Revised {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(approximate(every = 10))]
    pub views: i64,
}

fn main() {}
