// A polymorphic collection's variant takes every document feature but one: `referenced_by` on a
// variant's type is a compile error at the type (not yet built: the source's reads and its
// propagations would need its discriminator). `history` on a variant:
// polymorphic_variant_mistakes.
use pattern_core::{Document, Reference};
use serde::{Deserialize, Serialize};

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

#[derive(Serialize, Deserialize, Document)]
#[serde(tag = "kind")]
#[document(collection = "items")]
pub enum Item {
    Source(Source),
}

fn main() {}
