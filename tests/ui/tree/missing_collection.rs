// No collection: reported at the struct's name.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(model = "parent_refs")]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
