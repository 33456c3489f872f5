// Every combination of document features on one type that is refused, each a compile error at
// its key: what a write of one feature would leave the other's documents (a parent, copies, a
// history, an archive, a variant's discriminator) to miss. The seams matrix
// (tests/suite/documents/seams) proves the combinations that are accepted.
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parents")]
pub struct Parent {
    #[serde(rename = "_id")]
    pub id: i64,
    pub count: i64,
    pub recent: Vec<ArchivedSubset>,
}

// An archived child would leave its parent's aggregates behind.
#[derive(Document, Serialize, Deserialize)]
#[document(
    collection = "a1",
    computed(parent = Parent, key = parent, count = count),
    archive(age = at)
)]
pub struct ArchivedComputed {
    #[serde(rename = "_id")]
    pub id: i64,
    pub parent: i64,
    pub at: bson::DateTime,
}

// ... or its parent's subset.
#[derive(Document, Serialize, Deserialize)]
#[document(
    collection = "a2",
    subset(parent = Parent, key = parent, into = recent, keep = 2, order = at),
    archive(age = at)
)]
pub struct ArchivedSubset {
    #[serde(rename = "_id")]
    pub id: i64,
    pub parent: i64,
    pub at: bson::DateTime,
}

// An archived source would leave its copies behind.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "a3", referenced_by(Holder = source), archive(age = at))]
pub struct ArchivedSource {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    pub at: bson::DateTime,
}

#[derive(Reference, Serialize, Deserialize)]
#[reference(source = ArchivedSource)]
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

// An archived document with history would leave its history behind.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "a4", history = "a4_history", archive(age = at))]
pub struct ArchivedHistory {
    #[serde(rename = "_id")]
    pub id: i64,
    pub at: bson::DateTime,
}

fn main() {}
