//! The models' operations over raw documents (ids as BSON).
#![allow(unused)]
use crate::spec::TreeSpec;
use crate::store::Store;
use crate::Result;
use bson::{Bson, Document};

pub(super) fn check_node(spec: &TreeSpec, doc: &Document) -> Result<()> {
    unimplemented!()
}
pub(super) async fn ensure_indexes<S: Store + ?Sized>(store: &S, spec: &TreeSpec) -> Result<()> {
    unimplemented!()
}
pub(super) async fn insert<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    doc: Document,
    parent: Option<Bson>,
) -> Result<()> {
    unimplemented!()
}
pub(super) async fn save<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    doc: Document,
) -> Result<()> {
    unimplemented!()
}
pub(super) async fn get<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Option<Document>> {
    unimplemented!()
}
pub(super) async fn parent<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Option<Document>> {
    unimplemented!()
}
pub(super) async fn children<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Vec<Document>> {
    unimplemented!()
}
pub(super) async fn siblings<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Vec<Document>> {
    unimplemented!()
}
pub(super) async fn ancestors<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Vec<Document>> {
    unimplemented!()
}
pub(super) async fn descendants<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    max_depth: Option<u32>,
) -> Result<Vec<(Document, u32)>> {
    unimplemented!()
}
pub(super) async fn depth<S: Store + ?Sized>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<u32> {
    unimplemented!()
}
pub(super) async fn is_descendant<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    of: &Bson,
) -> Result<bool> {
    unimplemented!()
}
pub(super) async fn move_to<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    new_parent: Option<&Bson>,
) -> Result<()> {
    unimplemented!()
}
pub(super) async fn delete_subtree<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<u64> {
    unimplemented!()
}
pub(super) async fn delete_node<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<()> {
    unimplemented!()
}
pub(super) async fn roots<S: Store + ?Sized>(store: &S, spec: &TreeSpec) -> Result<Vec<Document>> {
    unimplemented!()
}
pub(super) async fn walk<S: Store + ?Sized>(
    store: &S,
    spec: &TreeSpec,
) -> Result<Vec<(Document, u32)>> {
    unimplemented!()
}
