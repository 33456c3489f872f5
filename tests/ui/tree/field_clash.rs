// A field of the struct stored under a name the model keeps in every node: reported at the
// field (or at the rename that gives it that name).
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs")]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
    pub parent: Option<String>,
}

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "sets", model = "nested_set", left = "lft")]
pub struct Set {
    #[serde(rename = "_id")]
    pub name: String,
    #[serde(rename = "lft")]
    pub low: i64,
    // `left` is free: the model's field is renamed.
    pub left: bool,
}

fn main() {}
