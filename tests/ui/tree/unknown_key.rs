// An unknown key: reported at the key, listing the known ones.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs", order = "name")]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
