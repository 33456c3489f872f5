// An empty collection name: reported at the literal.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "", model = "parent_refs")]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
