// Enum shapes #[derive(Document)] does not store: each reported at the token that makes it
// so, with what is supported.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[document(variant_of = Externally)]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: u32,
}

// No `tag`: externally tagged, at the enum's name.
#[derive(Serialize, Deserialize, Document)]
#[document(collection = "products")]
pub enum Externally {
    Book(Book),
}

// Adjacently tagged, at `content`.
#[derive(Serialize, Deserialize, Document)]
#[serde(tag = "kind", content = "data")]
#[document(collection = "products")]
pub enum Adjacently {
    Shirt { #[serde(rename = "_id")] id: u32 },
}

// Untagged, at `untagged`.
#[derive(Serialize, Deserialize, Document)]
#[serde(untagged)]
#[document(collection = "products")]
pub enum Untagged {
    Shirt { #[serde(rename = "_id")] id: u32 },
}

// A tuple variant, a unit variant, two variants of one discriminator, `_id` as the tag.
#[derive(Serialize, Deserialize, Document)]
#[serde(tag = "kind")]
#[document(collection = "products")]
pub enum Variants {
    Pair(u32, String),
    Nothing,
    Shirt { #[serde(rename = "_id")] id: u32 },
    #[serde(rename = "Shirt")]
    Other { #[serde(rename = "_id")] id: u32 },
}

#[derive(Serialize, Deserialize, Document)]
#[serde(tag = "_id")]
#[document(collection = "products", history = "h")]
pub enum TagIsId {
    Shirt { size: u32 },
}

fn main() {}
