// A subset is typed: the parent's field must be a `Vec` of the child type, the key of the
// parent's id type; an option missing is an error at `subset`.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "films")]
pub struct Film {
    #[serde(rename = "_id")]
    pub id: i64,
    pub recent: Vec<String>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "reviews", subset(parent = Film, key = film_id, into = recent, keep = 3, order = date))]
pub struct Review {
    #[serde(rename = "_id")]
    pub id: i64,
    pub film_id: i64,
    pub date: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "reviews", subset(parent = Film, key = film_id, keep = 0))]
pub struct Incomplete {
    #[serde(rename = "_id")]
    pub id: i64,
    pub film_id: i64,
}

fn main() {}
