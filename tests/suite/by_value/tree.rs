//! Trees by value: a node's links (its parent, its children) written by another program in
//! another number type than the nodes' `_id`s still name those nodes, as the server's match
//! and `_id`'s unique index have it: reads walk them, `verify` finds nothing, `repair` removes
//! nothing.

use pattern_core::spec::{TreeModel, TreeSpec};
use pattern_core::tree::{self, Tree};

use super::*;

macro_rules! numbered_node {
    ($name:ident, $model:expr) => {
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        struct $name {
            #[serde(rename = "_id")]
            id: i64,
        }
        impl Tree for $name {
            const SPEC: TreeSpec = TreeSpec::new("nodes", $model);
            type Id = i64;
            fn id(&self) -> &i64 {
                &self.id
            }
        }
    };
}

numbered_node!(ByParent, TreeModel::ParentRefs);
numbered_node!(ByChildren, TreeModel::ChildRefs);

/// Root 1, its children 2 to 5, node 6 under 2: built through the library (Int64 links), then
/// the links to 1 rewritten in the four number types.
async fn parent_links_in_any_number_type(store: AnyStore) {
    tree::insert_root::<ByParent, _>(&store, &ByParent { id: 1 })
        .await
        .unwrap();
    for id in 2..=5 {
        tree::insert_child::<ByParent, _, _>(&store, &1, &ByParent { id })
            .await
            .unwrap();
    }
    tree::insert_child::<ByParent, _, _>(&store, &2, &ByParent { id: 6 })
        .await
        .unwrap();
    for (n, form) in forms(1).into_iter().enumerate() {
        raw_set(
            &store,
            "nodes",
            Filter::eq("_id", n as i64 + 2),
            "parent",
            form,
        )
        .await;
    }
    let mut below: Vec<i64> = (tree::descendants::<ByParent, _, _>(&store, &1, None).await)
        .unwrap()
        .into_iter()
        .map(|n| n.id)
        .collect();
    below.sort_unstable();
    assert_eq!(below, [2, 3, 4, 5, 6]);
    let walked = tree::walk::<ByParent, _>(&store).await.unwrap();
    assert_eq!(walked.len(), 6, "{walked:?}");
    let v = tree::verify::<ByParent, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// The same tree by child lists, the root's list rewritten with its children in the four
/// number types: `verify` finds each child, and `repair` pulls none of them.
async fn child_links_in_any_number_type(store: AnyStore) {
    tree::insert_root::<ByChildren, _>(&store, &ByChildren { id: 1 })
        .await
        .unwrap();
    for id in 2..=5 {
        tree::insert_child::<ByChildren, _, _>(&store, &1, &ByChildren { id })
            .await
            .unwrap();
    }
    let children: Vec<Bson> = (0..4).map(|n| forms(n as i64 + 2)[n].clone()).collect();
    raw_set(
        &store,
        "nodes",
        Filter::eq("_id", 1_i64),
        "children",
        Bson::Array(children),
    )
    .await;
    let v = tree::verify::<ByChildren, _>(&store).await.unwrap();
    assert!(v.is_clean(), "{v:?}");
    let r = tree::repair::<ByChildren, _>(&store).await.unwrap();
    assert!(r.fixed.is_empty() && r.unrepaired.is_empty(), "{r:?}");
    let mut below: Vec<i64> = (tree::children::<ByChildren, _, _>(&store, &1).await)
        .unwrap()
        .into_iter()
        .map(|n| n.id)
        .collect();
    below.sort_unstable();
    assert_eq!(below, [2, 3, 4, 5]);
}

on_both_stores!(
    parent_links_in_any_number_type,
    child_links_in_any_number_type,
);
