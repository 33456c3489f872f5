//! The tree models (`pattern_core::tree`), on both stores: the seed's documents and queries in
//! every model, each operation and its errors, hostile ids, write skew, verify and repair with
//! injected defects, and the oracle that runs one random sequence of operations through all
//! five models and compares every answer.

use bson::{doc, Bson, Document};
use pattern_core::store::AnyStore;
use pattern_core::tree::{self, Tree};
use pattern_core::{
    spec::{TreeModel, TreeSpec},
    store::Store,
    Error,
};
use pattern_tests::{documents, on_both_stores};
use serde::{Deserialize, Serialize};

const COLL: &str = "categories";

/// A node type per model, all over the seed's collection and layout (the node holds its id
/// and nothing else, as in the seed).
trait Named: Tree<Id = String> + Clone + std::fmt::Debug + 'static {
    fn named(name: &str) -> Self;
    fn name(&self) -> &str {
        self.id()
    }
}

macro_rules! node_type {
    ($name:ident, $model:expr) => {
        #[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
        struct $name {
            #[serde(rename = "_id")]
            name: String,
        }
        impl Tree for $name {
            const SPEC: TreeSpec = TreeSpec::new(COLL, $model);
            type Id = String;
            fn id(&self) -> &String {
                &self.name
            }
        }
        impl Named for $name {
            fn named(name: &str) -> Self {
                $name {
                    name: name.to_owned(),
                }
            }
        }
    };
}

node_type!(ParentRefs, TreeModel::ParentRefs);
node_type!(ChildRefs, TreeModel::ChildRefs);
node_type!(Ancestors, TreeModel::Ancestors);
node_type!(Paths, TreeModel::MaterializedPath);
node_type!(NestedSet, TreeModel::NestedSet);

/// Runs `$f::<Model>(&store)` for each of the five models, on a fresh collection each.
macro_rules! each_model {
    ($store:expr, $f:ident) => {{
        let store: &AnyStore = &$store;
        $f::<ParentRefs>(store).await;
        clear(store).await;
        $f::<ChildRefs>(store).await;
        clear(store).await;
        $f::<Ancestors>(store).await;
        clear(store).await;
        $f::<Paths>(store).await;
        clear(store).await;
        $f::<NestedSet>(store).await;
        clear(store).await;
    }};
}

async fn clear(store: &AnyStore) {
    store.drop_collection(COLL).await.expect("drop");
    store
        .drop_collection(tree::VERSIONS)
        .await
        .expect("drop versions");
}

fn s(x: &str) -> String {
    x.to_owned()
}

fn names<T: Named>(nodes: &[T]) -> Vec<String> {
    nodes.iter().map(|n| n.name().to_owned()).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Builds the seed's tree `Books > Programming > {Databases > {MongoDB, dbm}, Languages}`.
/// The seed orders Programming's children differently in two models (child references list
/// Databases first; nested sets number Languages first): each is built in its seed's order.
async fn build_seed<T: Named>(store: &AnyStore) {
    tree::insert_root(store, &T::named("Books")).await.unwrap();
    tree::insert_child(store, &s("Books"), &T::named("Programming"))
        .await
        .unwrap();
    let programming = if T::SPEC.model == TreeModel::NestedSet {
        ["Languages", "Databases"]
    } else {
        ["Databases", "Languages"]
    };
    for c in programming {
        tree::insert_child(store, &s("Programming"), &T::named(c))
            .await
            .unwrap();
    }
    for c in ["MongoDB", "dbm"] {
        tree::insert_child(store, &s("Databases"), &T::named(c))
            .await
            .unwrap();
    }
}

mod derived;
mod operations;
mod seed;
