//! The tree models of the data-modeling article (`#[derive(Tree)]`): one document per node,
//! stored five ways ([`TreeModel`]), behind one typed API.
//!
//! Every operation that writes more than one document runs in a [`transaction`] (retried on
//! conflicts), and every write of a tree's structure also writes the tree's version document
//! (collection [`VERSIONS`], `_id` = the tree's collection), so that two concurrent writes of
//! one tree always conflict: snapshot isolation alone would let two moves (A under B, B under
//! A) both commit and leave a cycle. Reads are one query where the model allows it
//! (`$graphLookup` for the reference models), never a number of queries that grows with the
//! tree; reads made of two queries run in a snapshot transaction.
//!
//! The functions here are generic over the node type; `#[derive(Tree)]` generates the same as
//! typed methods on the struct.

use bson::{Bson, Document};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::spec::TreeSpec;
use crate::store::Store;
use crate::{Error, Result};

mod engine;
mod verify;

pub use verify::{Defect, Repair};

/// The collection holding each tree's version document, `{_id: "<tree collection>", version:
/// n}`, which every structural write increments inside its transaction.
pub const VERSIONS: &str = "pattern_tree_versions";

/// A node of a tree: the user's struct, stored as one document with `_id` = [`Tree::id`].
/// Implemented by `#[derive(Tree)]`.
pub trait Tree: Serialize + DeserializeOwned + Send + Sync + Sized {
    /// Where and how the tree is stored.
    const SPEC: TreeSpec;
    /// The type of the node ids (the field stored as `_id`).
    type Id: Serialize + DeserializeOwned + Clone + std::fmt::Debug + Send + Sync;
    /// This node's id.
    fn id(&self) -> &Self::Id;
}

/// The id as BSON (what `_id` holds).
pub(crate) fn id_bson<T: Tree>(id: &T::Id) -> Result<Bson> {
    bson::to_bson(id).map_err(|e| Error::invalid(format!("a node id does not serialize: {e}")))
}

/// The node's own fields as a document, checked: `_id` present, no field the model keeps.
fn node_document<T: Tree>(node: &T) -> Result<Document> {
    let doc = bson::to_document(node)
        .map_err(|e| Error::invalid(format!("a node does not serialize to a document: {e}")))?;
    engine::check_node(&T::SPEC, &doc)?;
    Ok(doc)
}

fn decode<T: Tree>(doc: Document) -> Result<T> {
    let id = doc.get("_id").cloned();
    bson::from_document(doc).map_err(|e| Error::decode(T::SPEC.collection, id.as_ref(), e))
}

fn decode_all<T: Tree>(docs: Vec<Document>) -> Result<Vec<T>> {
    docs.into_iter().map(decode::<T>).collect()
}

/// Creates the model's indexes (once per store and process; the other functions call it).
pub async fn ensure_indexes<T: Tree, S: Store + ?Sized>(store: &S) -> Result<()> {
    engine::ensure_indexes(store, &T::SPEC).await
}

/// Inserts `node` as a new root. [`Error::DuplicateKey`] when its id exists.
pub async fn insert_root<T: Tree, S: Store + ?Sized>(store: &S, node: &T) -> Result<()> {
    engine::insert(store, &T::SPEC, node_document(node)?, None).await
}

/// Inserts `node` as the last child of `parent`. [`Error::UnknownNode`] when `parent` does not
/// exist, [`Error::DuplicateKey`] when the node's id does, [`Error::TooDeep`] past `max_depth`.
pub async fn insert_child<T: Tree, S: Store + ?Sized>(
    store: &S,
    parent: &T::Id,
    node: &T,
) -> Result<()> {
    let parent = id_bson::<T>(parent)?;
    engine::insert(store, &T::SPEC, node_document(node)?, Some(parent)).await
}

/// Replaces the node's own data (the fields of the struct), keeping its place in the tree.
/// [`Error::UnknownNode`] when it does not exist.
pub async fn save<T: Tree, S: Store + ?Sized>(store: &S, node: &T) -> Result<()> {
    engine::save(store, &T::SPEC, node_document(node)?).await
}

/// The node, or `None`.
pub async fn get<T: Tree, S: Store + ?Sized>(store: &S, id: &T::Id) -> Result<Option<T>> {
    let id = id_bson::<T>(id)?;
    engine::get(store, &T::SPEC, &id)
        .await?
        .map(decode)
        .transpose()
}

/// The node's parent; `None` for a root. [`Error::UnknownNode`] when the node does not exist.
pub async fn parent<T: Tree, S: Store + ?Sized>(store: &S, id: &T::Id) -> Result<Option<T>> {
    let id = id_bson::<T>(id)?;
    engine::parent(store, &T::SPEC, &id)
        .await?
        .map(decode)
        .transpose()
}

/// The node's children, in the model's order: the array's order (child references), `left`
/// (nested sets), the id (the others).
pub async fn children<T: Tree, S: Store + ?Sized>(store: &S, id: &T::Id) -> Result<Vec<T>> {
    let id = id_bson::<T>(id)?;
    decode_all(engine::children(store, &T::SPEC, &id).await?)
}

/// The other children of the node's parent (the other roots, for a root), in the order of
/// [`children`].
pub async fn siblings<T: Tree, S: Store + ?Sized>(store: &S, id: &T::Id) -> Result<Vec<T>> {
    let id = id_bson::<T>(id)?;
    decode_all(engine::siblings(store, &T::SPEC, &id).await?)
}

/// The node's ancestors from the root down to its parent.
pub async fn ancestors<T: Tree, S: Store + ?Sized>(store: &S, id: &T::Id) -> Result<Vec<T>> {
    let id = id_bson::<T>(id)?;
    decode_all(engine::ancestors(store, &T::SPEC, &id).await?)
}

/// The node's descendants in pre-order (each node before its children, children in the
/// order of [`children`]), down to `max_depth` levels below the node (`Some(1)`: the
/// children) or all of them.
pub async fn descendants<T: Tree, S: Store + ?Sized>(
    store: &S,
    id: &T::Id,
    max_depth: Option<u32>,
) -> Result<Vec<T>> {
    let id = id_bson::<T>(id)?;
    let found = engine::descendants(store, &T::SPEC, &id, max_depth).await?;
    decode_all(found.into_iter().map(|(d, _)| d).collect())
}

/// The node's depth: 0 for a root.
pub async fn depth<T: Tree, S: Store + ?Sized>(store: &S, id: &T::Id) -> Result<u32> {
    let id = id_bson::<T>(id)?;
    engine::depth(store, &T::SPEC, &id).await
}

/// Whether `id` is a descendant of `of` (a node is not its own descendant).
pub async fn is_descendant<T: Tree, S: Store + ?Sized>(
    store: &S,
    id: &T::Id,
    of: &T::Id,
) -> Result<bool> {
    let (id, of) = (id_bson::<T>(id)?, id_bson::<T>(of)?);
    engine::is_descendant(store, &T::SPEC, &id, &of).await
}

/// Moves the node and its subtree under `new_parent` (as its last child), or makes it a root
/// (`None`). Atomic: one transaction. [`Error::Cycle`] when `new_parent` is the node or one of
/// its descendants; [`Error::TooDeep`] when the subtree would go past `max_depth`.
pub async fn move_to<T: Tree, S: Store + ?Sized>(
    store: &S,
    id: &T::Id,
    new_parent: Option<&T::Id>,
) -> Result<()> {
    let id = id_bson::<T>(id)?;
    let new_parent = new_parent.map(id_bson::<T>).transpose()?;
    engine::move_to(store, &T::SPEC, &id, new_parent.as_ref()).await
}

/// Deletes the node and all its descendants; returns how many nodes. Atomic.
pub async fn delete_subtree<T: Tree, S: Store + ?Sized>(store: &S, id: &T::Id) -> Result<u64> {
    let id = id_bson::<T>(id)?;
    engine::delete_subtree(store, &T::SPEC, &id).await
}

/// Deletes the node alone; its children move up to its parent (or become roots). Atomic.
pub async fn delete_node<T: Tree, S: Store + ?Sized>(store: &S, id: &T::Id) -> Result<()> {
    let id = id_bson::<T>(id)?;
    engine::delete_node(store, &T::SPEC, &id).await
}

/// Every root, in the order of [`children`].
pub async fn roots<T: Tree, S: Store + ?Sized>(store: &S) -> Result<Vec<T>> {
    decode_all(engine::roots(store, &T::SPEC).await?)
}

/// The whole tree in pre-order, each node with its depth (for the materialized-paths model,
/// the order of the full paths).
pub async fn walk<T: Tree, S: Store + ?Sized>(store: &S) -> Result<Vec<(u32, T)>> {
    let all = engine::walk(store, &T::SPEC).await?;
    all.into_iter()
        .map(|(d, depth)| Ok((depth, decode::<T>(d)?)))
        .collect()
}

/// Every defect of the stored tree ([`Defect`]), as data; empty when the tree is sound.
pub async fn verify<T: Tree, S: Store + ?Sized>(store: &S) -> Result<Vec<Defect>> {
    verify::verify(store, &T::SPEC).await
}

/// Rebuilds the model's fields from the parent links it holds; reports what it changed and
/// what it could not repair.
pub async fn repair<T: Tree, S: Store + ?Sized>(store: &S) -> Result<Repair> {
    verify::repair(store, &T::SPEC).await
}
