// A polymorphic collection's variant supports keywords, attributes and indexes; every other
// document feature on a variant's type is a compile error at its key (its writes through the
// enum would have to carry the feature too). `history` on a variant: polymorphic_variant_mistakes.
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Old {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parents")]
pub struct Parent {
    #[serde(rename = "_id")]
    pub id: i64,
    pub count: i64,
    pub recent: Vec<Listed>,
}

#[derive(Document, Serialize, Deserialize)]
#[document(variant_of = Item, version = 2, previous(Old = 1))]
pub struct Versioned {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(variant_of = Item, computed(parent = Parent, key = parent, count = count))]
pub struct Counted {
    #[serde(rename = "_id")]
    pub id: i64,
    pub parent: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(
    variant_of = Item,
    subset(parent = Parent, key = parent, into = recent, keep = 2, order = at)
)]
pub struct Listed {
    #[serde(rename = "_id")]
    pub id: i64,
    pub parent: i64,
    pub at: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(variant_of = Item, referenced_by(Holder = source))]
pub struct Source {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(Reference, Serialize, Deserialize)]
#[reference(source = Source)]
pub struct SourceRef {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "holders")]
pub struct Holder {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(reference)]
    pub source: SourceRef,
}

#[derive(Document, Serialize, Deserialize)]
#[document(variant_of = Item, archive(age = at))]
pub struct Archived {
    #[serde(rename = "_id")]
    pub id: i64,
    pub at: bson::DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[document(variant_of = Item)]
pub struct WithFields {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(approximate(every = 10))]
    pub views: i64,
    #[document(reference)]
    pub source: SourceRef,
}

#[derive(Serialize, Deserialize, Document)]
#[serde(tag = "kind")]
#[document(collection = "items")]
pub enum Item {
    Versioned(Versioned),
    Counted(Counted),
    Listed(Listed),
    Source(Source),
    Archived(Archived),
    WithFields(WithFields),
}

fn main() {}
