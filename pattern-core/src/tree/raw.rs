//! The same operations over raw documents, for a spec chosen at run time (tools, tests):
//! ids are BSON values and nodes are documents holding `_id` and the node's own fields.

use bson::{Bson, Document};

use super::{model, read, verify as check, write, Repair, Verified};
use crate::codec::BsonType;
use crate::observe::{nothing, op_span, operation};
use crate::spec::TreeSpec;
use crate::store::query::Schema;
use crate::store::Store;
use crate::validator;
use crate::Result;

/// Creates the model's indexes (once per store and process; every other function does).
pub async fn ensure_indexes<S: Store>(store: &S, spec: &TreeSpec) -> Result<()> {
    let span = op_span!(
        "tree.ensure_indexes",
        "ensure_indexes",
        store,
        spec.collection
    );
    operation(span, nothing(), model::ensure_indexes(store, spec), Ok).await
}
/// The `$jsonSchema` every node of `spec` passes, ids of `id_types` (strings in the
/// materialized-paths model whatever it says; unconstrained when empty): `_id` of
/// `id_types`; a parent an id or null (nested sets: or a number, the seed's root has `0`);
/// `children` and `ancestors` arrays of ids; `path` a string or null; `left` and `right`
/// integers, required (every nested-set node is numbered). The other model fields are
/// optional: a node without them is a root, or has no children.
pub fn schemas(spec: &TreeSpec, id_types: &[BsonType]) -> [(&'static str, Schema); 1] {
    [(spec.collection, model::schema(spec, id_types))]
}
/// Installs [`schemas`] as the collection's validator ([`Store::set_validator`]).
pub async fn ensure_validator<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id_types: &[BsonType],
) -> Result<()> {
    let span = op_span!(
        "tree.ensure_validator",
        "ensure_validator",
        store,
        spec.collection
    );
    let schema = model::schema(spec, id_types);
    operation(
        span,
        nothing(),
        validator::install(store, spec.collection, &schema),
        Ok,
    )
    .await
}
/// Inserts a root.
pub async fn insert_root<S: Store>(store: &S, spec: &TreeSpec, node: Document) -> Result<()> {
    let span = op_span!("tree.insert_root", "insert_root", store, spec.collection);
    let op = async {
        model::check_node(spec, &node)?;
        write::insert(store, spec, node, None).await
    };
    operation(span, nothing(), op, Ok).await
}
/// Inserts a child of `parent`.
pub async fn insert_child<S: Store>(
    store: &S,
    spec: &TreeSpec,
    node: Document,
    parent: &Bson,
) -> Result<()> {
    let span = op_span!("tree.insert_child", "insert_child", store, spec.collection);
    let op = async {
        model::check_node(spec, &node)?;
        write::insert(store, spec, node, Some(parent.clone())).await
    };
    operation(span, nothing(), op, Ok).await
}
/// The node's document.
pub async fn get<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<Option<Document>> {
    let span = op_span!("tree.get", "get", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        model::get(store, spec, id),
        Ok,
    )
    .await
}
/// The parent's document.
pub async fn parent<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<Option<Document>> {
    let span = op_span!("tree.parent", "parent", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        read::parent(store, spec, id),
        Ok,
    )
    .await
}
/// The children's documents, in the model's order.
pub async fn children<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<Vec<Document>> {
    let span = op_span!("tree.children", "children", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        read::children(store, spec, id),
        Ok,
    )
    .await
}
/// The ancestors' documents, root first.
pub async fn ancestors<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<Vec<Document>> {
    let span = op_span!("tree.ancestors", "ancestors", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        read::ancestors(store, spec, id),
        Ok,
    )
    .await
}
/// The descendants in pre-order, with their depth below the node.
pub async fn descendants<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    max_depth: Option<u32>,
) -> Result<Vec<(u32, Document)>> {
    let span = op_span!("tree.descendants", "descendants", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        read::descendants(store, spec, id, max_depth),
        |below| Ok(below.into_iter().map(|(d, depth)| (depth, d)).collect()),
    )
    .await
}
/// The node's depth.
pub async fn depth<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<u32> {
    let span = op_span!("tree.depth", "depth", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        read::depth(store, spec, id),
        Ok,
    )
    .await
}
/// Moves a subtree.
pub async fn move_to<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    new_parent: Option<&Bson>,
) -> Result<()> {
    let span = op_span!("tree.move_to", "move_to", store, spec.collection);
    operation(
        span,
        nothing(),
        write::move_to(store, spec, id, new_parent),
        Ok,
    )
    .await
}
/// Deletes a subtree.
pub async fn delete_subtree<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<u64> {
    let span = op_span!(
        "tree.delete_subtree",
        "delete_subtree",
        store,
        spec.collection
    );
    operation(span, nothing(), write::delete_subtree(store, spec, id), Ok).await
}
/// Deletes one node.
pub async fn delete_node<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<()> {
    let span = op_span!("tree.delete_node", "delete_node", store, spec.collection);
    operation(span, nothing(), write::delete_node(store, spec, id), Ok).await
}
/// The roots' documents.
pub async fn roots<S: Store>(store: &S, spec: &TreeSpec) -> Result<Vec<Document>> {
    let span = op_span!("tree.roots", "roots", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        read::roots(store, spec),
        Ok,
    )
    .await
}
/// Every node in pre-order with its depth.
pub async fn walk<S: Store>(store: &S, spec: &TreeSpec) -> Result<Vec<(u32, Document)>> {
    let span = op_span!("tree.walk", "walk", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        read::walk(store, spec),
        |all| Ok(all.into_iter().map(|(d, depth)| (depth, d)).collect()),
    )
    .await
}
/// Every defect, with the nodes read.
pub async fn verify<S: Store>(store: &S, spec: &TreeSpec) -> Result<Verified> {
    let span = op_span!("tree.verify", "verify", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        check::verify(store, spec),
        Ok,
    )
    .await
}
/// Rebuilds what the parent links determine.
pub async fn repair<S: Store>(store: &S, spec: &TreeSpec) -> Result<Repair> {
    let span = op_span!("tree.repair", "repair", store, spec.collection);
    operation(
        span,
        model::ensure_indexes(store, spec),
        check::repair(store, spec),
        Ok,
    )
    .await
}
