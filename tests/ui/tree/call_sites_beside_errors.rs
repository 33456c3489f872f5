// Beside an attribute mistake, the generated methods still exist (as stubs), so that their call
// sites add no "no function or associated item named ..." errors: the mistakes are reported
// alone. `Category`'s id field is read (its methods take `&String`); `Folder` has none, so its
// methods take ids of any type.
#![deny(warnings)]
use pattern_core::Tree;
use serde::{Deserialize, Serialize};

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "categories", model = "parent_refs", max_depth = 0)]
pub struct Category {
    #[serde(rename = "_id")]
    pub name: String,
}

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "folders", model = "materialized_path")]
pub struct Folder {
    pub name: String,
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

async fn calls(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    let id = "Books".to_owned();
    let node = Category { name: id.clone() };
    assert_send(node.insert_root(store)).await?;
    node.insert_child(store, &id).await?;
    node.save(store).await?;
    let _: Option<Category> = assert_send(Category::get(store, &id)).await?;
    let _: Option<Category> = Category::parent(store, &id).await?;
    let _: Vec<Category> = Category::children(store, &id).await?;
    let _: Vec<Category> = Category::siblings(store, &id).await?;
    let _: Vec<Category> = Category::ancestors(store, &id).await?;
    let _: Vec<Category> = Category::descendants(store, &id, Some(2)).await?;
    let _: u32 = Category::depth(store, &id).await?;
    let _: bool = Category::is_descendant(store, &id, &id).await?;
    Category::move_to(store, &id, None).await?;
    Category::move_to(store, &id, Some(&id)).await?;
    let _: u64 = Category::delete_subtree(store, &id).await?;
    Category::delete_node(store, &id).await?;
    let _: Vec<Category> = Category::roots(store).await?;
    let _: Vec<(u32, Category)> = Category::walk(store).await?;
    let _: pattern_core::tree::Verified = Category::verify(store).await?;
    let _: pattern_core::tree::Repair = Category::repair(store).await?;
    Category::ensure_indexes(store).await?;

    let folder = Folder { name: "docs".into() };
    folder.insert_child(store, "root").await?;
    let _: Vec<Folder> = Folder::children(store, "root").await?;
    Folder::move_to(store, "docs", None).await?;
    Folder::is_descendant(store, "docs", "root").await?;
    Folder::ensure_indexes(store).await
}

fn main() {
    let store = pattern_core::MemoryStore::new();
    drop(calls(&store));
}
