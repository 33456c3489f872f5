// A value of the wrong type: reported at the value.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = categories, model = "parent_refs", max_depth = "5", parent = 1)]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
