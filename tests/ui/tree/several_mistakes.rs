// Every mistake arrives at once.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "", model = "parent_refs", max_depth = 0, depth = 3, collection = "c", children = "kids")]
#[tree(model = "adjacency", parent = 1)]
pub struct Category {
    #[tree(id)]
    pub id: String,
    pub parent: Option<String>,
}

fn main() {}
