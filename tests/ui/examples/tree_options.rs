// #[derive(Tree)] with every option: renamed model fields in each model that keeps them,
// max_depth, rename_all, an id named by #[tree(id)], a field named like a model field the
// model does not keep; and without even the prelude.
#![deny(warnings)]

use pattern_core::spec::{TreeFields, TreeModel};
use pattern_core::tree::Tree;

#[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
#[tree(
    collection = "categories",
    model = "parent_refs",
    parent = "up",
    max_depth = 5
)]
#[serde(rename_all = "camelCase")]
pub struct Category {
    #[serde(rename = "_id")]
    pub category_name: String,
    pub display_name: String,
    // Not a field of parent references.
    pub children: Vec<String>,
}

#[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
#[tree(
    collection = "menus",
    model = "child_refs",
    children = "items",
    max_depth = 1
)]
pub struct Menu {
    #[tree(id)]
    #[serde(rename = "_id")]
    pub id: i32,
    // The seed's name is free: the model keeps `items`.
    pub children: u8,
}

#[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
#[tree(
    collection = "orgs",
    model = "ancestors",
    ancestors = "chain",
    parent = "boss"
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct Employee {
    #[serde(rename = "_id")]
    pub badge: u64,
    pub full_name: String,
}

#[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
#[tree(collection = "files", model = "materialized_path", path = "dir")]
pub struct File {
    #[serde(rename(serialize = "_id", deserialize = "_id"))]
    pub name: String,
    pub path: String,
}

#[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
#[tree(
    collection = "regions",
    model = "nested_set",
    parent = "p",
    left = "lft",
    right = "rgt",
    max_depth = 2147483647
)]
pub struct Region {
    #[serde(rename = "_id")]
    pub code: String,
    pub left: bool,
    pub right: bool,
}

/// Without even the prelude.
pub mod no_prelude {
    #![no_implicit_prelude]

    #[derive(::pattern_core::Tree, ::serde::Serialize, ::serde::Deserialize)]
    #[tree(collection = "plain", model = "nested_set", max_depth = 3)]
    pub struct Plain {
        #[serde(rename = "_id")]
        pub id: ::std::string::String,
    }

    pub async fn exercise(store: &::pattern_core::MemoryStore) -> ::pattern_core::Result<()> {
        let id = ::std::string::String::new();
        Plain {
            id: ::std::clone::Clone::clone(&id),
        }
        .insert_root(store)
        .await?;
        Plain::move_to(store, &id, ::core::option::Option::None).await?;
        let _ = Plain::walk(store).await?;
        ::core::result::Result::Ok(())
    }
}

fn main() {
    let fields = |parent, children, ancestors, path, left, right| TreeFields {
        parent,
        children,
        ancestors,
        path,
        left,
        right,
    };
    assert_eq!(
        Category::SPEC.fields,
        fields("up", "children", "ancestors", "path", "left", "right")
    );
    assert_eq!(Category::SPEC.max_depth, Some(5));
    assert_eq!(Menu::SPEC.fields.children, "items");
    assert_eq!(
        (Menu::SPEC.model, Menu::SPEC.max_depth),
        (TreeModel::ChildRefs, Some(1))
    );
    assert_eq!(
        Employee::SPEC.fields,
        fields("boss", "children", "chain", "path", "left", "right")
    );
    assert_eq!(File::SPEC.fields.path, "dir");
    assert_eq!(
        Region::SPEC.fields,
        fields("p", "children", "ancestors", "path", "lft", "rgt")
    );
    assert_eq!(Region::SPEC.max_depth, Some(2147483647));
    let menu = Menu { id: 4, children: 0 };
    assert_eq!(*menu.id(), 4);
    let store = pattern_core::MemoryStore::new();
    drop(no_prelude::exercise(&store));
}
