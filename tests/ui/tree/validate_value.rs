// `validate` is a flag: `validate("yes")` is reported at the key; a call of the generated
// `ensure_validator` still type-checks beside the error.
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs", validate("yes"))]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

async fn install(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    Category::ensure_validator(store).await
}

fn main() {
    drop(install(&pattern_core::MemoryStore::new()));
}
