//! The same operations over raw documents, for a spec chosen at run time (tools, tests):
//! ids are BSON values and nodes are documents holding `_id` and the node's own fields. Each is
//! the typed function of the same name ([`super`]) run on the spec: the same span, the same
//! commands. A spec knows no type: nothing installs a validator first (see
//! [`ensure_validator`]), and the documents are given as they are.

use bson::{Bson, Document};

use super::{model, ops, Repair, Verified};
use crate::codec::BsonType;
use crate::observe::nothing;
use crate::spec::TreeSpec;
use crate::store::query::Schema;
use crate::store::Store;
use crate::Result;

/// Creates the model's indexes (once per store and process; every other function does).
pub async fn ensure_indexes<S: Store>(store: &S, spec: &TreeSpec) -> Result<()> {
    ops::ensure_indexes(store, spec, nothing()).await
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
    ops::ensure_validator(store, spec, id_types).await
}
/// Inserts a root ([`super::insert_root`]).
pub async fn insert_root<S: Store>(store: &S, spec: &TreeSpec, node: Document) -> Result<()> {
    ops::insert_root(store, spec, nothing(), Ok(node)).await
}
/// Inserts a child of `parent` ([`super::insert_child`]).
pub async fn insert_child<S: Store>(
    store: &S,
    spec: &TreeSpec,
    node: Document,
    parent: &Bson,
) -> Result<()> {
    ops::insert_child(store, spec, nothing(), Ok(node), Ok(parent.clone())).await
}
/// Writes a node's own fields, keeping its place ([`super::save`]).
pub async fn save<S: Store>(store: &S, spec: &TreeSpec, node: Document) -> Result<()> {
    ops::save(store, spec, nothing(), Ok(node)).await
}
/// The raw function of each `node_reads` row.
macro_rules! raw_reads {
    ($($name:ident($found:ident, $decode:ident) = $read:path, $raw_doc:literal;)*) => {$(
        #[doc = concat!($raw_doc, " ([`super::", stringify!($name), "`]).")]
        pub async fn $name<S: Store>(
            store: &S,
            spec: &TreeSpec,
            id: &Bson,
        ) -> Result<$found<Document>> {
            ops::$name(store, spec, Ok(id.clone()), Ok).await
        }
    )*};
}
node_reads!(raw_reads);
/// The descendants in pre-order, with their depth below the node ([`super::descendants`]).
pub async fn descendants<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    max_depth: Option<u32>,
) -> Result<Vec<(u32, Document)>> {
    ops::descendants(store, spec, Ok(id.clone()), max_depth, ops::depth_first).await
}
/// The node's depth ([`super::depth`]).
pub async fn depth<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<u32> {
    ops::depth(store, spec, Ok(id.clone())).await
}
/// Whether `id` is a descendant of `of` ([`super::is_descendant`]).
pub async fn is_descendant<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    of: &Bson,
) -> Result<bool> {
    ops::is_descendant(store, spec, Ok(id.clone()), Ok(of.clone())).await
}
/// Moves a subtree ([`super::move_to`]).
pub async fn move_to<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    new_parent: Option<&Bson>,
) -> Result<()> {
    ops::move_to(
        store,
        spec,
        nothing(),
        Ok(id.clone()),
        Ok(new_parent.cloned()),
    )
    .await
}
/// Deletes a subtree ([`super::delete_subtree`]).
pub async fn delete_subtree<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<u64> {
    ops::delete_subtree(store, spec, nothing(), Ok(id.clone())).await
}
/// Deletes one node ([`super::delete_node`]).
pub async fn delete_node<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<()> {
    ops::delete_node(store, spec, nothing(), Ok(id.clone())).await
}
/// The roots' documents ([`super::roots`]).
pub async fn roots<S: Store>(store: &S, spec: &TreeSpec) -> Result<Vec<Document>> {
    ops::roots(store, spec, Ok).await
}
/// Every node in pre-order with its depth ([`super::walk`]).
pub async fn walk<S: Store>(store: &S, spec: &TreeSpec) -> Result<Vec<(u32, Document)>> {
    ops::walk(store, spec, ops::depth_first).await
}
/// Every defect, with the nodes read ([`super::verify`]).
pub async fn verify<S: Store>(store: &S, spec: &TreeSpec) -> Result<Verified> {
    ops::verify(store, spec).await
}
/// Rebuilds what the parent links determine ([`super::repair`]).
pub async fn repair<S: Store>(store: &S, spec: &TreeSpec) -> Result<Repair> {
    ops::repair(store, spec, nothing()).await
}
