// As serde does, rename_all = "camelCase" stores a field `_id` as "id": no field is stored as
// `_id` then.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "child_refs")]
#[serde(rename_all = "camelCase")]
pub struct Category {
    pub _id: String,
    pub display_name: String,
}

fn main() {}
