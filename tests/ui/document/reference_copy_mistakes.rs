// A copy is typed against its source: a field the source lacks, a field of another type than
// the source's, an `_id` of another type than the source's id are errors at the field.
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "directors", referenced_by(Film = director))]
pub struct Director {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    pub born: i32,
}

#[derive(Reference, Serialize, Deserialize)]
#[reference(source = Director)]
pub struct DirectorRef {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: Option<String>,
    pub photo: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "films")]
pub struct Film {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(reference)]
    pub director: DirectorRef,
}

fn main() {}
