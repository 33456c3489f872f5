// A reference field must hold a copy (`#[derive(Reference)]`, or an `Option` of one), and a
// source's `referenced_by` must name fields holding copies of it.
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "directors", referenced_by(Film = director, Film = title))]
pub struct Director {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "studios", referenced_by(Film = director))]
pub struct Studio {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(Reference, Serialize, Deserialize)]
#[reference(source = Director)]
pub struct DirectorRef {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "films")]
pub struct Film {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(reference)]
    pub director: DirectorRef,
    #[document(reference)]
    pub title: String,
}

fn main() {}
