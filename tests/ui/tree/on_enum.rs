// An enum is not a node.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs")]
pub enum Category {
    Books,
    Programming,
}

fn main() {}
