// The attributes of extended references: a copy without its source or its `_id`, a copied
// field serde leaves out; `fan_out` or `deferred` without `referenced_by`, a reference on the
// `_id` (in a versioned type), `referenced_by` without the field.
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Reference, Serialize, Deserialize)]
pub struct NoSource {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(Reference, Serialize, Deserialize)]
#[reference(source = Director)]
pub struct NoId {
    pub name: String,
}

#[derive(Reference, Serialize, Deserialize)]
#[reference(source = Director)]
pub struct Skipped {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(skip)]
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "directors", fan_out = 10, deferred)]
pub struct Director {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "studios", referenced_by(Film))]
pub struct Studio {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Serialize, Deserialize)]
pub struct FilmV1 {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "films", version = 2, previous(FilmV1 = 1))]
pub struct Film {
    #[serde(rename = "_id")]
    #[document(reference)]
    pub id: i64,
    #[document(reference)]
    pub director: String,
}

impl From<FilmV1> for Film {
    fn from(v: FilmV1) -> Self {
        Film { id: v.id, director: String::new() }
    }
}

fn main() {}
