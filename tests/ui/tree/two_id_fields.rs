// One id: a second #[tree(id)] field is reported at it. (A second field stored as `_id` is
// too, beside serde's own warning.)
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs")]
pub struct Category {
    #[tree(id)]
    #[serde(rename = "_id")]
    pub name: String,
    #[tree(id)]
    pub code: u32,
}

fn main() {}
