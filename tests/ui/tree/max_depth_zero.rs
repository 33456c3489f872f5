// max_depth is at least 1: reported at the literal.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs", max_depth = 0)]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
