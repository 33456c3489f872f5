// A reference field whose source does not list it in `referenced_by`: the source's writes
// would never reach the copy, so it is a compile error at the field's `reference`.
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "directors")]
pub struct Director {
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
}

fn main() {}
