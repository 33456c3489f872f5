// An approximate counter writes without a revision: a variant of a polymorphic collection whose
// enum keeps a history cannot have one (the variant's derive cannot see the enum's `history`,
// so the check is a constant of the variant's type).
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(variant_of = Page)]
pub struct Article {
    #[serde(rename = "_id")]
    pub id: i64,
    #[document(approximate(every = 10))]
    pub views: i64,
}

#[derive(Serialize, Deserialize, Document)]
#[serde(tag = "kind")]
#[document(collection = "pages", history = "pages_history")]
pub enum Page {
    Article(Article),
}

fn main() {}
