// Fields serde stores otherwise than their type (flatten, with): no typed path can name them.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Extra {
    pub note: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "books")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(flatten)]
    pub extra: Extra,
    #[serde(serialize_with = "shout")]
    pub title: String,
}

fn shout<S: serde::Serializer>(v: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_uppercase())
}

fn main() {}
