// A node needs named fields.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs")]
pub struct Category(String, u32);

fn main() {}
