// No model: reported at the struct's name, listing the five.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories")]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
