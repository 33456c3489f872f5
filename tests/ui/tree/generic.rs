// Generic structs are rejected at the generics.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs")]
pub struct Category<T> {
    #[serde(rename = "_id")]
    pub name: String,
    pub data: T,
}

fn main() {}
