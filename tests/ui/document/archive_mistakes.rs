// Archive mistakes, each at its token: an age field that is not a date, a pin flag that is
// not a bool, a field that does not exist, no age, and the flag's old name `keep`.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "a", archive(age = placed))]
pub struct NotADate {
    #[serde(rename = "_id")]
    pub id: i64,
    pub placed: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "b", archive(age = placed, pin = pinned))]
pub struct NotAFlag {
    #[serde(rename = "_id")]
    pub id: i64,
    pub placed: bson::DateTime,
    pub pinned: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "c", archive(age = created))]
pub struct NoSuchField {
    #[serde(rename = "_id")]
    pub id: i64,
    pub placed: bson::DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "d", archive(pin = pinned))]
pub struct NoAge {
    #[serde(rename = "_id")]
    pub id: i64,
    pub pinned: bool,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "e", archive(age = placed, keep = pinned))]
pub struct OldName {
    #[serde(rename = "_id")]
    pub id: i64,
    pub placed: bson::DateTime,
    pub pinned: bool,
}

fn main() {}
