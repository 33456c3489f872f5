//! The tree models of the data-modeling article (`#[derive(Tree)]`): one document per node,
//! stored five ways ([`TreeModel`](crate::spec::TreeModel)), behind one typed API.
//!
//! Every operation that writes more than one document runs in a
//! [`transaction`](crate::store::transaction) (retried on
//! conflicts), and every write of a tree's structure also writes the tree's version document
//! (collection [`VERSIONS`], `_id` = the tree's collection), so that two concurrent writes of
//! one tree always conflict: snapshot isolation alone would let two moves (A under B, B under
//! A) both commit and leave a cycle. Reads are one query where the model allows it
//! (`$graphLookup` for the reference models), never a number of queries that grows with the
//! tree. A read made of two queries (the node, then what its path or bounds select) sees
//! committed data only, never half of a write, but the two may see two successive states.
//!
//! The functions here are generic over the node type; `#[derive(Tree)]` generates the same as
//! typed methods on the struct.

use std::future::Future;

use crate::observe::{nothing, op_span, operation};
use bson::{Bson, Document};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Borrow;

use crate::codec::BsonType;
use crate::spec::TreeSpec;
use crate::store::query::Schema;
use crate::store::Store;
use crate::validator;
use crate::{Error, Result};

pub(crate) mod model;
pub(crate) use model::indexes as model_indexes;
pub mod raw;
mod read;
mod verify;
mod write;

pub use verify::{Defect, Repair, Verified};

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
    /// The BSON types the ids are stored as, for the validator ([`schemas`]): what
    /// `#[derive(Tree)]` reads off the id field's type (`String` and `&str`: `string`; the
    /// integers: `int` and `long`; `ObjectId`: `objectId`); empty for any other type, whose
    /// ids and references the validator then leaves unconstrained.
    const ID_TYPES: &'static [BsonType] = &[];
    /// Whether the writes install the model's validator ([`ensure_validator`]) with the
    /// indexes, once per store and process (`#[tree(validate)]`).
    const VALIDATE: bool = false;
}

/// The id as BSON (what `_id` holds).
pub(crate) fn id_bson<Q: Serialize + ?Sized>(id: &Q) -> Result<Bson> {
    crate::codec::raw::id_bson(id, "a node id")
}

/// The node's own fields as a document, checked: `_id` present, no field the model keeps.
fn node_document<T: Tree>(node: &T) -> Result<Document> {
    let doc = bson::to_document(node)
        .map_err(|e| Error::invalid(format!("a node does not serialize to a document: {e}")))?;
    model::check_node(&T::SPEC, &doc)?;
    Ok(doc)
}

fn decode<T: Tree>(doc: Document) -> Result<T> {
    let id = doc.get("_id").cloned();
    bson::from_document(doc).map_err(|e| Error::decode(T::SPEC.collection, id.as_ref(), e))
}

fn decode_all<T: Tree>(docs: Vec<Document>) -> Result<Vec<T>> {
    docs.into_iter().map(decode::<T>).collect()
}

fn decode_one<T: Tree>(doc: Option<Document>) -> Result<Option<T>> {
    doc.map(decode).transpose()
}

/// The model's indexes, what every read needs first.
fn indexes<'a, T: Tree, S: Store>(store: &'a S) -> impl Future<Output = Result<()>> + 'a {
    model::ensure_indexes(store, &T::SPEC)
}

/// Creates the model's indexes (once per store and process; the other functions call it),
/// and installs the validator with `#[tree(validate)]`.
pub async fn ensure_indexes<T: Tree, S: Store>(store: &S) -> Result<()> {
    let span = op_span!(
        "tree.ensure_indexes",
        "ensure_indexes",
        store,
        T::SPEC.collection
    );
    let indexes = model::ensure_indexes(store, &T::SPEC);
    operation(span, validated::<T, S>(store), indexes, Ok).await
}

/// The `$jsonSchema` every node of the tree passes, with its collection ([`raw::schemas`] with
/// [`Tree::ID_TYPES`]).
pub fn schemas<T: Tree>() -> [(&'static str, Schema); 1] {
    [(T::SPEC.collection, model::schema(&T::SPEC, T::ID_TYPES))]
}

/// Installs the model's validator ([`schemas`]) on the tree's collection, creating it if need
/// be ([`Store::set_validator`]: level "moderate", so nodes that fail it already can still be
/// repaired). From then on a write of a node whose model fields have the wrong types (a parent
/// that is not an id, `children` that is no array of ids, a nested set without its numbers...)
/// fails with [`Error::SchemaViolation`], whoever sends it.
pub async fn ensure_validator<T: Tree, S: Store>(store: &S) -> Result<()> {
    let span = op_span!(
        "tree.ensure_validator",
        "ensure_validator",
        store,
        T::SPEC.collection
    );
    let [(coll, schema)] = schemas::<T>();
    operation(
        span,
        nothing(),
        validator::install(store, coll, &schema),
        Ok,
    )
    .await
}

/// [`ensure_validator`] once per store and process, when the type asks for it
/// ([`Tree::VALIDATE`]): what every write runs first.
async fn validated<T: Tree, S: Store>(store: &S) -> Result<()> {
    if T::VALIDATE && !validator::installed(store, T::SPEC.collection) {
        ensure_validator::<T, S>(store).await?;
    }
    Ok(())
}

/// Inserts `node` as a new root. [`Error::DuplicateKey`] when its id exists. In nested sets
/// a transaction that numbers it after every node (finding the largest `right` reads the
/// collection: no index serves it, and roots are rare).
pub async fn insert_root<T: Tree, S: Store>(store: &S, node: &T) -> Result<()> {
    let span = op_span!("tree.insert_root", "insert_root", store, T::SPEC.collection);
    let op = async {
        let node = node_document(node)?;
        write::insert(store, &T::SPEC, node, None).await
    };
    operation(span, validated::<T, S>(store), op, Ok).await
}

/// Inserts `node` as the last child of `parent`. [`Error::UnknownNode`] when `parent` does not
/// exist, [`Error::DuplicateKey`] when the node's id does, [`Error::TooDeep`] past `max_depth`.
pub async fn insert_child<T, S, Q>(store: &S, parent: &Q, node: &T) -> Result<()>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!(
        "tree.insert_child",
        "insert_child",
        store,
        T::SPEC.collection
    );
    let op = async {
        let (node, parent) = (node_document(node)?, id_bson(parent)?);
        write::insert(store, &T::SPEC, node, Some(parent)).await
    };
    operation(span, validated::<T, S>(store), op, Ok).await
}

/// Writes the node's own data (`$set` of each field the struct serializes), keeping its place
/// in the tree: the model's fields are not touched. A field the struct no longer writes keeps
/// its stored value. [`Error::UnknownNode`] when the node does not exist.
pub async fn save<T: Tree, S: Store>(store: &S, node: &T) -> Result<()> {
    let span = op_span!("tree.save", "save", store, T::SPEC.collection);
    let op = async { write::save(store, &T::SPEC, node_document(node)?).await };
    operation(span, validated::<T, S>(store), op, Ok).await
}

/// The node, or `None`.
pub async fn get<T, S, Q>(store: &S, id: &Q) -> Result<Option<T>>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!("tree.get", "get", store, T::SPEC.collection);
    let op = async {
        let id = id_bson(id)?;
        model::get(store, &T::SPEC, &id).await
    };
    operation(span, indexes::<T, S>(store), op, decode_one).await
}

/// The node's parent; `None` for a root. [`Error::UnknownNode`] when the node does not exist.
pub async fn parent<T, S, Q>(store: &S, id: &Q) -> Result<Option<T>>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!("tree.parent", "parent", store, T::SPEC.collection);
    let op = async {
        let id = id_bson(id)?;
        read::parent(store, &T::SPEC, &id).await
    };
    operation(span, indexes::<T, S>(store), op, decode_one).await
}

/// The node's children, in the model's order: the array's order (child references), `left`
/// (nested sets), the id (the others).
pub async fn children<T, S, Q>(store: &S, id: &Q) -> Result<Vec<T>>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!("tree.children", "children", store, T::SPEC.collection);
    let op = async {
        let id = id_bson(id)?;
        read::children(store, &T::SPEC, &id).await
    };
    operation(span, indexes::<T, S>(store), op, decode_all).await
}

/// The other children of the node's parent (the other roots, for a root), in the order of
/// [`children`].
pub async fn siblings<T, S, Q>(store: &S, id: &Q) -> Result<Vec<T>>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!("tree.siblings", "siblings", store, T::SPEC.collection);
    let op = async {
        let id = id_bson(id)?;
        read::siblings(store, &T::SPEC, &id).await
    };
    operation(span, indexes::<T, S>(store), op, decode_all).await
}

/// The node's ancestors from the root down to its parent.
pub async fn ancestors<T, S, Q>(store: &S, id: &Q) -> Result<Vec<T>>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!("tree.ancestors", "ancestors", store, T::SPEC.collection);
    let op = async {
        let id = id_bson(id)?;
        read::ancestors(store, &T::SPEC, &id).await
    };
    operation(span, indexes::<T, S>(store), op, decode_all).await
}

/// The node's descendants in pre-order (each node before its children, children in the
/// order of [`children`]), down to `max_depth` levels below the node (`Some(1)`: the
/// children) or all of them.
pub async fn descendants<T, S, Q>(store: &S, id: &Q, max_depth: Option<u32>) -> Result<Vec<T>>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!("tree.descendants", "descendants", store, T::SPEC.collection);
    let op = async {
        let id = id_bson(id)?;
        read::descendants(store, &T::SPEC, &id, max_depth).await
    };
    operation(span, indexes::<T, S>(store), op, |found| {
        decode_all(found.into_iter().map(|(d, _)| d).collect())
    })
    .await
}

/// The node's depth: 0 for a root.
pub async fn depth<T, S, Q>(store: &S, id: &Q) -> Result<u32>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!("tree.depth", "depth", store, T::SPEC.collection);
    let op = async {
        let id = id_bson(id)?;
        read::depth(store, &T::SPEC, &id).await
    };
    operation(span, indexes::<T, S>(store), op, Ok).await
}

/// Whether `id` is a descendant of `of` (a node is not its own descendant; `false` when `of`
/// does not exist). [`Error::UnknownNode`] when `id` does not exist.
pub async fn is_descendant<T, S, Q>(store: &S, id: &Q, of: &Q) -> Result<bool>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!(
        "tree.is_descendant",
        "is_descendant",
        store,
        T::SPEC.collection
    );
    let op = async {
        let (id, of) = (id_bson(id)?, id_bson(of)?);
        read::is_descendant(store, &T::SPEC, &id, &of).await
    };
    operation(span, indexes::<T, S>(store), op, Ok).await
}

/// Moves the node and its subtree under `new_parent` (as its last child), or makes it a root
/// (`None`). Atomic: one transaction. [`Error::Cycle`] when `new_parent` is the node or one of
/// its descendants; [`Error::TooDeep`] when the subtree would go past `max_depth`.
pub async fn move_to<T, S, Q>(store: &S, id: &Q, new_parent: Option<&Q>) -> Result<()>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!("tree.move_to", "move_to", store, T::SPEC.collection);
    let op = async {
        let (id, new_parent) = (id_bson(id)?, new_parent.map(id_bson).transpose()?);
        write::move_to(store, &T::SPEC, &id, new_parent.as_ref()).await
    };
    operation(span, validated::<T, S>(store), op, Ok).await
}

/// Deletes the node and all its descendants; returns how many nodes. Atomic.
pub async fn delete_subtree<T, S, Q>(store: &S, id: &Q) -> Result<u64>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!(
        "tree.delete_subtree",
        "delete_subtree",
        store,
        T::SPEC.collection
    );
    let op = async {
        let id = id_bson(id)?;
        write::delete_subtree(store, &T::SPEC, &id).await
    };
    operation(span, validated::<T, S>(store), op, Ok).await
}

/// Deletes the node alone; its children move up to its parent (or become roots). Atomic.
pub async fn delete_node<T, S, Q>(store: &S, id: &Q) -> Result<()>
where
    T: Tree,
    S: Store,
    Q: Serialize + ?Sized,
    T::Id: Borrow<Q>,
{
    let span = op_span!("tree.delete_node", "delete_node", store, T::SPEC.collection);
    let op = async {
        let id = id_bson(id)?;
        write::delete_node(store, &T::SPEC, &id).await
    };
    operation(span, validated::<T, S>(store), op, Ok).await
}

/// Every root, in the order of [`children`].
pub async fn roots<T: Tree, S: Store>(store: &S) -> Result<Vec<T>> {
    let span = op_span!("tree.roots", "roots", store, T::SPEC.collection);
    let op = read::roots(store, &T::SPEC);
    operation(span, indexes::<T, S>(store), op, decode_all).await
}

/// The whole tree in pre-order, each node with its depth (for the materialized-paths model,
/// the order of the full paths).
pub async fn walk<T: Tree, S: Store>(store: &S) -> Result<Vec<(u32, T)>> {
    let span = op_span!("tree.walk", "walk", store, T::SPEC.collection);
    let op = read::walk(store, &T::SPEC);
    operation(span, indexes::<T, S>(store), op, |all| {
        all.into_iter()
            .map(|(d, depth)| Ok((depth, decode::<T>(d)?)))
            .collect()
    })
    .await
}

/// Every defect of the stored tree ([`Defect`]), as data, with the nodes read
/// ([`Verified::is_clean`] when the tree is sound).
pub async fn verify<T: Tree, S: Store>(store: &S) -> Result<Verified> {
    let span = op_span!("tree.verify", "verify", store, T::SPEC.collection);
    let op = verify::verify(store, &T::SPEC);
    operation(span, indexes::<T, S>(store), op, Ok).await
}

/// The collection's indexes against those the model needs: present, missing, the user's
/// ([`adopt::index_report_tree`](crate::adopt::index_report_tree)).
pub async fn index_report<T: Tree, S: Store>(store: &S) -> Result<Vec<crate::layout::IndexReport>> {
    crate::layout::index_report_tree(store, &T::SPEC).await
}

/// Rebuilds the model's fields from the parent links it holds; reports what it changed and
/// what it could not repair.
pub async fn repair<T: Tree, S: Store>(store: &S) -> Result<Repair> {
    let span = op_span!("tree.repair", "repair", store, T::SPEC.collection);
    let first = async {
        model::ensure_indexes(store, &T::SPEC).await?;
        validated::<T, S>(store).await
    };
    operation(span, first, verify::repair(store, &T::SPEC), Ok).await
}
