// Copies that are not a field of their own, mistakes the derive sees: an unknown key in
// `reference(...)`, and a source naming a place that holds no copy of it (`meta.nobody`).
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people", referenced_by(Film = meta.nobody))]
pub struct Person {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(Reference, Serialize, Deserialize)]
#[reference(source = Person)]
pub struct PersonRef {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(Serialize, Deserialize)]
pub struct Meta {
    pub lead: PersonRef,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "films")]
pub struct Film {
    #[serde(rename = "_id")]
    pub id: i64,
    pub meta: Meta,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "plays")]
pub struct Play {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(reference(at = lead))]
    pub meta: Meta,
}

fn main() {}
