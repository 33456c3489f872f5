// A variant's struct and the enum disagreeing: each at the offending token.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

// Listed by the enum but not declared a variant: its writes would not know the discriminator.
#[derive(Serialize, Deserialize, Document)]
#[document(collection = "books")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: u32,
    pub name: String,
}

// Declares a variant of an enum that does not list it.
#[derive(Serialize, Deserialize, Document)]
#[document(variant_of = Product)]
pub struct Hat {
    #[serde(rename = "_id")]
    pub id: u32,
}

// A variant with a collection of its own, and history.
#[derive(Serialize, Deserialize, Document)]
#[document(variant_of = Product, collection = "cables", history = "cables_history")]
pub struct Cable {
    #[serde(rename = "_id")]
    pub id: u32,
    pub name: String,
}

// `shared` names a field a struct-like variant lacks, and one of another type.
#[derive(Serialize, Deserialize, Document)]
#[serde(tag = "kind")]
#[document(collection = "products", shared(name: String, price: i64))]
pub enum Product {
    Book(Book),
    Cable(Cable),
    Shirt {
        #[serde(rename = "_id")]
        id: u32,
        name: u32,
    },
}

fn main() {}
