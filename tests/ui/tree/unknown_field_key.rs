// A field takes #[tree(id)] only.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs")]
pub struct Category {
    #[tree(id, parent)]
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
