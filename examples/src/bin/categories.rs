//! Replays the tree section of the data-modeling article: the category tree
//! `Books > Programming > {Databases > {MongoDB, dbm}, Languages}` built in each of the five
//! models, one `#[derive(Tree)]` struct per model (they differ only in `model = "..."`). For
//! each model it prints the collection, checks that the documents are the seed's, and runs the
//! seed's queries through the typed methods: the parent of MongoDB, the children of
//! Databases, the ancestors of MongoDB, the descendants of Programming, the whole tree.
//!
//! In memory by default; on MongoDB (database `pattern_examples`) when `MONGODB_URI` is set:
//!
//!     cargo run -p examples --bin categories

use bson::{doc, Bson, Document};
use pattern_core::store::AnyStore;
use pattern_core::{spec::TreeModel, store::Store, Tree};
use serde::{Deserialize, Serialize};

/// The five node types: the same struct, one attribute apart.
macro_rules! category {
    ($name:ident, $model:literal) => {
        #[derive(Tree, Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[tree(collection = "categories", model = $model)]
        struct $name {
            #[serde(rename = "_id")]
            name: String,
        }
        impl Category for $name {
            fn new(name: &str) -> Self {
                $name { name: name.into() }
            }
        }
    };
}

trait Category: pattern_core::tree::Tree<Id = String> {
    fn new(name: &str) -> Self;
}

category!(ByParent, "parent_refs");
category!(ByChildren, "child_refs");
category!(ByAncestors, "ancestors");
category!(ByPath, "materialized_path");
category!(ByNestedSet, "nested_set");

/// The seed's documents, in the order its shell commands insert them.
fn seed(model: TreeModel) -> Vec<Document> {
    match model {
        TreeModel::ParentRefs => vec![
            doc! {"_id": "MongoDB", "parent": "Databases"},
            doc! {"_id": "dbm", "parent": "Databases"},
            doc! {"_id": "Databases", "parent": "Programming"},
            doc! {"_id": "Languages", "parent": "Programming"},
            doc! {"_id": "Programming", "parent": "Books"},
            doc! {"_id": "Books", "parent": null},
        ],
        TreeModel::ChildRefs => vec![
            doc! {"_id": "MongoDB", "children": []},
            doc! {"_id": "dbm", "children": []},
            doc! {"_id": "Databases", "children": ["MongoDB", "dbm"]},
            doc! {"_id": "Languages", "children": []},
            doc! {"_id": "Programming", "children": ["Databases", "Languages"]},
            doc! {"_id": "Books", "children": ["Programming"]},
        ],
        TreeModel::Ancestors => vec![
            doc! {"_id": "MongoDB", "ancestors": ["Books", "Programming", "Databases"], "parent": "Databases"},
            doc! {"_id": "dbm", "ancestors": ["Books", "Programming", "Databases"], "parent": "Databases"},
            doc! {"_id": "Databases", "ancestors": ["Books", "Programming"], "parent": "Programming"},
            doc! {"_id": "Languages", "ancestors": ["Books", "Programming"], "parent": "Programming"},
            doc! {"_id": "Programming", "ancestors": ["Books"], "parent": "Books"},
            doc! {"_id": "Books", "ancestors": [], "parent": null},
        ],
        TreeModel::MaterializedPath => vec![
            doc! {"_id": "Books", "path": null},
            doc! {"_id": "Programming", "path": ",Books,"},
            doc! {"_id": "Databases", "path": ",Books,Programming,"},
            doc! {"_id": "Languages", "path": ",Books,Programming,"},
            doc! {"_id": "MongoDB", "path": ",Books,Programming,Databases,"},
            doc! {"_id": "dbm", "path": ",Books,Programming,Databases,"},
        ],
        TreeModel::NestedSet => vec![
            // The seed writes the root's parent as 0; the library writes null (and reads both).
            doc! {"_id": "Books", "parent": null, "left": 1, "right": 12},
            doc! {"_id": "Programming", "parent": "Books", "left": 2, "right": 11},
            doc! {"_id": "Languages", "parent": "Programming", "left": 3, "right": 4},
            doc! {"_id": "Databases", "parent": "Programming", "left": 5, "right": 10},
            doc! {"_id": "MongoDB", "parent": "Databases", "left": 6, "right": 7},
            doc! {"_id": "dbm", "parent": "Databases", "left": 8, "right": 9},
        ],
    }
}

/// A document's fields in order, integers of any width as Int64.
fn fields(d: &Document) -> Vec<(String, Bson)> {
    d.iter()
        .map(|(k, v)| match v {
            Bson::Int32(x) => (k.clone(), Bson::Int64(i64::from(*x))),
            other => (k.clone(), other.clone()),
        })
        .collect()
}

fn names<T: Category>(nodes: &[T]) -> String {
    let ids: Vec<&str> = nodes.iter().map(|n| n.id().as_str()).collect();
    ids.join(", ")
}

async fn replay<T: Category>(store: &AnyStore) -> Result<(), Box<dyn std::error::Error>> {
    let model = T::SPEC.model;
    store.drop_collection("categories").await?;
    store.drop_collection(pattern_core::tree::VERSIONS).await?;
    let s = |x: &str| x.to_owned();

    // The seed's tree. It orders Programming's children differently in two models (child
    // references list Databases first, nested sets number Languages first): each model gets
    // its seed's order.
    pattern_core::tree::insert_root(store, &T::new("Books")).await?;
    pattern_core::tree::insert_child(store, &s("Books"), &T::new("Programming")).await?;
    let under_programming = if model == TreeModel::NestedSet {
        ["Languages", "Databases"]
    } else {
        ["Databases", "Languages"]
    };
    for c in under_programming {
        pattern_core::tree::insert_child(store, &s("Programming"), &T::new(c)).await?;
    }
    for c in ["MongoDB", "dbm"] {
        pattern_core::tree::insert_child(store, &s("Databases"), &T::new(c)).await?;
    }

    println!("== model {} ==", model.name());
    let stored = pattern_core::store::query::FindOptions::default();
    let docs = store
        .find(
            "categories",
            &pattern_core::store::query::Filter::And(vec![]),
            &stored,
        )
        .await?;
    let expected = seed(model);
    for want in &expected {
        let have = docs
            .iter()
            .find(|d| d.get("_id") == want.get("_id"))
            .ok_or("a seed document is missing")?;
        println!("{}", Bson::Document(have.clone()).into_relaxed_extjson());
        if fields(have) != fields(want) {
            return Err(format!("{} differs from the seed's {want}", have).into());
        }
    }
    if docs.len() != expected.len() {
        return Err("more documents than the seed's".into());
    }
    println!("the documents are the seed's");

    let parent = pattern_core::tree::parent::<T, _, _>(store, &s("MongoDB")).await?;
    println!(
        "parent of MongoDB: {}",
        parent.map(|p| p.id().clone()).unwrap_or_default()
    );
    let children = pattern_core::tree::children::<T, _, _>(store, &s("Databases")).await?;
    println!("children of Databases: {}", names(&children));
    let ancestors = pattern_core::tree::ancestors::<T, _, _>(store, &s("MongoDB")).await?;
    println!("ancestors of MongoDB: {}", names(&ancestors));
    let below = pattern_core::tree::descendants::<T, _, _>(store, &s("Programming"), None).await?;
    println!("descendants of Programming: {}", names(&below));
    println!("whole tree:");
    for (depth, node) in pattern_core::tree::walk::<T, _>(store).await? {
        println!("{}{}", "  ".repeat(depth as usize), node.id());
    }
    let defects = pattern_core::tree::verify::<T, _>(store).await?.defects;
    println!("verify: {} defects", defects.len());
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_examples").await?;
    println!("store: {}", store.kind());
    replay::<ByParent>(&store).await?;
    replay::<ByChildren>(&store).await?;
    replay::<ByAncestors>(&store).await?;
    replay::<ByPath>(&store).await?;
    replay::<ByNestedSet>(&store).await?;
    Ok(())
}
