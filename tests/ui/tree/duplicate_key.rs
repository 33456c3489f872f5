// A key given twice: reported at the second, also across two attributes.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs")]
#[tree(model = "child_refs")]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
