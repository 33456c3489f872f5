// Copies that are not a field of their own, mistakes the types show: `each` on a field that
// is not an array, `in` naming a field the embedded document does not have.
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "people", referenced_by(Film = meta.lead, Film = other.nobody))]
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
    #[document(reference(each = lead))]
    pub meta: Meta,
    #[document(reference(in = nobody))]
    pub other: Meta,
}

fn main() {}
