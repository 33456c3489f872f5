// A copy of an approximate counter: the counter's increments reach no copy, so it is a compile
// error at the source's derive.
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "films", referenced_by(Poster = film))]
pub struct Film {
    #[serde(rename = "_id")]
    pub id: i64,
    pub title: String,
    #[document(approximate(every = 10))]
    pub views: i64,
}

#[derive(Reference, Serialize, Deserialize)]
#[reference(source = Film)]
pub struct FilmRef {
    #[serde(rename = "_id")]
    pub id: i64,
    pub title: String,
    pub views: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "posters")]
pub struct Poster {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(reference)]
    pub film: FilmRef,
}

fn main() {}
