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

use bson::{Bson, Document};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::codec::BsonType;
use crate::key::IdRef;
use crate::spec::TreeSpec;
use crate::store::query::Schema;
use crate::store::Store;
use crate::validator;
use crate::{Error, Result};

/// The reads of one node's relatives, one row each: `ops.rs` makes each row's operation (its
/// span, the indexes first, the read), this file its typed function (the id serialized, the
/// documents decoded) and `raw.rs` its raw one (a BSON id, the documents as they are). A row:
/// the name; what it finds (`Option` of one document or `Vec` of many) and how the typed
/// function decodes it; the read; the raw function's doc (the typed one's is `docs.rs`'s).
macro_rules! node_reads {
    ($make:ident) => {
        $make! {
            get(Option, decode_one) = model::get, "The node's document";
            parent(Option, decode_one) = read::parent, "The parent's document";
            children(Vec, decode_all) = read::children,
                "The children's documents, in the model's order";
            siblings(Vec, decode_all) = read::siblings, "The other children of the node's parent";
            ancestors(Vec, decode_all) = read::ancestors, "The ancestors' documents, root first";
        }
    };
}

pub(crate) mod model;
pub(crate) use model::indexes as model_indexes;
mod docs;
mod ops;
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
    Ok(crate::codec::raw::id_bson(id, "a node id")?)
}

/// The node's own fields as a document (the operation checks them: `_id` present, no field
/// the model keeps).
fn to_node<T: Tree>(node: &T) -> Result<Document> {
    bson::to_document(node)
        .map_err(|e| Error::invalid(format!("a node does not serialize to a document: {e}")))
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

#[doc = crate::__tree_doc!(ensure_indexes)]
pub async fn ensure_indexes<T: Tree, S: Store>(store: &S) -> Result<()> {
    ops::ensure_indexes(store, &T::SPEC, validated::<T, S>(store)).await
}

/// The `$jsonSchema` every node of the tree passes, with its collection ([`raw::schemas`] with
/// [`Tree::ID_TYPES`]).
pub fn schemas<T: Tree>() -> [(&'static str, Schema); 1] {
    [(T::SPEC.collection, model::schema(&T::SPEC, T::ID_TYPES))]
}

#[doc = crate::__tree_doc!(ensure_validator)]
pub async fn ensure_validator<T: Tree, S: Store>(store: &S) -> Result<()> {
    ops::ensure_validator(store, &T::SPEC, T::ID_TYPES).await
}

/// [`ensure_validator`] once per store and process, when the type asks for it
/// ([`Tree::VALIDATE`]): what every write runs first.
async fn validated<T: Tree, S: Store>(store: &S) -> Result<()> {
    if T::VALIDATE && !validator::installed(store, T::SPEC.collection) {
        ensure_validator::<T, S>(store).await?;
    }
    Ok(())
}

#[doc = crate::__tree_doc!(insert_root)]
pub async fn insert_root<T: Tree, S: Store>(store: &S, node: &T) -> Result<()> {
    ops::insert_root(store, &T::SPEC, validated::<T, S>(store), to_node(node)).await
}

#[doc = crate::__tree_doc!(insert_child)]
pub async fn insert_child<T: Tree, S: Store, Q: IdRef<T::Id> + ?Sized>(
    store: &S,
    parent: &Q,
    node: &T,
) -> Result<()> {
    let (node, parent) = (to_node(node), id_bson(parent));
    ops::insert_child(store, &T::SPEC, validated::<T, S>(store), node, parent).await
}

#[doc = crate::__tree_doc!(save)]
pub async fn save<T: Tree, S: Store>(store: &S, node: &T) -> Result<()> {
    ops::save(store, &T::SPEC, validated::<T, S>(store), to_node(node)).await
}

/// The typed function of each `node_reads` row.
macro_rules! typed_reads {
    ($($name:ident($found:ident, $decode:ident) = $read:path, $raw_doc:literal;)*) => {$(
        #[doc = crate::__tree_doc!($name)]
        pub async fn $name<T: Tree, S: Store, Q: IdRef<T::Id> + ?Sized>(
            store: &S,
            id: &Q,
        ) -> Result<$found<T>> {
            ops::$name(store, &T::SPEC, id_bson(id), $decode).await
        }
    )*};
}
node_reads!(typed_reads);

#[doc = crate::__tree_doc!(descendants)]
pub async fn descendants<T: Tree, S: Store, Q: IdRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
    max_depth: Option<u32>,
) -> Result<Vec<T>> {
    ops::descendants(store, &T::SPEC, id_bson(id), max_depth, |found| {
        decode_all(found.into_iter().map(|(d, _)| d).collect())
    })
    .await
}

#[doc = crate::__tree_doc!(depth)]
pub async fn depth<T: Tree, S: Store, Q: IdRef<T::Id> + ?Sized>(store: &S, id: &Q) -> Result<u32> {
    ops::depth(store, &T::SPEC, id_bson(id)).await
}

#[doc = crate::__tree_doc!(is_descendant)]
pub async fn is_descendant<T: Tree, S: Store, Q: IdRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
    of: &Q,
) -> Result<bool> {
    ops::is_descendant(store, &T::SPEC, id_bson(id), id_bson(of)).await
}

#[doc = crate::__tree_doc!(move_to)]
pub async fn move_to<T: Tree, S: Store, Q: IdRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
    new_parent: Option<&Q>,
) -> Result<()> {
    let new_parent = new_parent.map(id_bson).transpose();
    ops::move_to(
        store,
        &T::SPEC,
        validated::<T, S>(store),
        id_bson(id),
        new_parent,
    )
    .await
}

#[doc = crate::__tree_doc!(delete_subtree)]
pub async fn delete_subtree<T: Tree, S: Store, Q: IdRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<u64> {
    ops::delete_subtree(store, &T::SPEC, validated::<T, S>(store), id_bson(id)).await
}

#[doc = crate::__tree_doc!(delete_node)]
pub async fn delete_node<T: Tree, S: Store, Q: IdRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<()> {
    ops::delete_node(store, &T::SPEC, validated::<T, S>(store), id_bson(id)).await
}

#[doc = crate::__tree_doc!(roots)]
pub async fn roots<T: Tree, S: Store>(store: &S) -> Result<Vec<T>> {
    ops::roots(store, &T::SPEC, decode_all).await
}

#[doc = crate::__tree_doc!(walk)]
pub async fn walk<T: Tree, S: Store>(store: &S) -> Result<Vec<(u32, T)>> {
    ops::walk(store, &T::SPEC, |all| {
        all.into_iter()
            .map(|(d, depth)| Ok((depth, decode::<T>(d)?)))
            .collect()
    })
    .await
}

#[doc = crate::__tree_doc!(verify)]
pub async fn verify<T: Tree, S: Store>(store: &S) -> Result<Verified> {
    ops::verify(store, &T::SPEC).await
}

#[doc = crate::__tree_doc!(index_report)]
///
/// The report: [`adopt::index_report_tree`](crate::adopt::index_report_tree).
pub async fn index_report<T: Tree, S: Store>(store: &S) -> Result<Vec<crate::layout::IndexReport>> {
    crate::layout::index_report_tree(store, &T::SPEC).await
}

#[doc = crate::__tree_doc!(repair)]
pub async fn repair<T: Tree, S: Store>(store: &S) -> Result<Repair> {
    ops::repair(store, &T::SPEC, validated::<T, S>(store)).await
}
