// The model's fields must have distinct names, none of them `_id`, each a valid field name.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "sets", model = "nested_set", left = "n", right = "n", parent = "_id")]
pub struct Set {
    #[serde(rename = "_id")]
    pub name: String,
}

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "folders", model = "materialized_path", path = "a.b")]
pub struct Folder {
    #[serde(rename = "_id")]
    pub name: String,
}

fn main() {}
