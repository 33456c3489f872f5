// An unknown model: reported at its literal, listing the five.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "adjacency_list")]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
