// No field is stored as `_id`: reported at the struct's name.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs")]
pub struct Category {
    pub name: String,
    pub description: String,
}

fn main() {}
