// Renaming a field the model does not keep: reported at the key, naming the models that do.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs", children = "kids", left = "lft")]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "folders", model = "materialized_path", parent = "up")]
pub struct Folder {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
