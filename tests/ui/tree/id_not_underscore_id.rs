// The field marked #[tree(id)] must be stored as `_id`: reported at the field.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs")]
pub struct Category {
    #[tree(id)]
    pub id: String,
    pub description: String,
}

fn main() {}
