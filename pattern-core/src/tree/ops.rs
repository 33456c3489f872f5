//! Each tree operation once: its span, what it runs first, its steps over the spec. The typed
//! functions ([`super`]) and the raw ones ([`super::raw`]) are both these, called with their
//! own first step and their own reading of the result:
//!
//! - `first`: the indexes before a read (both); before a write, the validator of a type with
//!   `#[tree(validate)]` (typed) or nothing (raw: a spec knows no type).
//! - the inputs as `Result`s: a typed id that does not serialize fails inside the span.
//! - `out`: the documents decoded into the type (typed), or given as they are (raw). A document
//!   that does not decode fails inside the span too, which records it.

use std::future::Future;

use bson::{Bson, Document};

use super::{model, read, verify as check, write, Repair, Verified};
use crate::codec::BsonType;
use crate::observe::{op_span, operation};
use crate::spec::TreeSpec;
use crate::store::Store;
use crate::validator;
use crate::Result;

/// What a read runs first: the model's indexes (once per store and process).
fn indexes<'a, S: Store>(
    store: &'a S,
    spec: &'a TreeSpec,
) -> impl Future<Output = Result<()>> + 'a {
    model::ensure_indexes(store, spec)
}

pub(super) async fn ensure_indexes<S: Store>(
    store: &S,
    spec: &TreeSpec,
    first: impl Future<Output = Result<()>>,
) -> Result<()> {
    let span = op_span!(tree.ensure_indexes, store, spec.collection);
    operation(span, first, model::ensure_indexes(store, spec), Ok).await
}

pub(super) async fn ensure_validator<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id_types: &[BsonType],
) -> Result<()> {
    let span = op_span!(tree.ensure_validator, store, spec.collection);
    let schema = model::schema(spec, id_types);
    let install = validator::install(store, spec.collection, &schema);
    operation(span, crate::observe::nothing(), install, Ok).await
}

pub(super) async fn insert_root<S: Store>(
    store: &S,
    spec: &TreeSpec,
    first: impl Future<Output = Result<()>>,
    node: Result<Document>,
) -> Result<()> {
    let span = op_span!(tree.insert_root, store, spec.collection);
    let op = async {
        let node = node?;
        model::check_node(spec, &node)?;
        write::insert(store, spec, node, None).await
    };
    operation(span, first, op, Ok).await
}

pub(super) async fn insert_child<S: Store>(
    store: &S,
    spec: &TreeSpec,
    first: impl Future<Output = Result<()>>,
    node: Result<Document>,
    parent: Result<Bson>,
) -> Result<()> {
    let span = op_span!(tree.insert_child, store, spec.collection);
    let op = async {
        let (node, parent) = (node?, parent?);
        model::check_node(spec, &node)?;
        write::insert(store, spec, node, Some(parent)).await
    };
    operation(span, first, op, Ok).await
}

pub(super) async fn save<S: Store>(
    store: &S,
    spec: &TreeSpec,
    first: impl Future<Output = Result<()>>,
    node: Result<Document>,
) -> Result<()> {
    let span = op_span!(tree.save, store, spec.collection);
    let op = async {
        let node = node?;
        model::check_node(spec, &node)?;
        write::save(store, spec, node).await
    };
    operation(span, first, op, Ok).await
}

/// The operation of each `node_reads` row: its span, the indexes first, the read.
macro_rules! ops_of_reads {
    ($($name:ident($found:ident, $decode:ident) = $read:path, $raw_doc:literal;)*) => {$(
        pub(super) async fn $name<S: Store, U>(
            store: &S,
            spec: &TreeSpec,
            id: Result<Bson>,
            out: impl FnOnce($found<Document>) -> Result<U>,
        ) -> Result<U> {
            let span = op_span!(tree.$name, store, spec.collection);
            let op = async { $read(store, spec, &id?).await };
            operation(span, indexes(store, spec), op, out).await
        }
    )*};
}
node_reads!(ops_of_reads);

pub(super) async fn descendants<S: Store, U>(
    store: &S,
    spec: &TreeSpec,
    id: Result<Bson>,
    max_depth: Option<u32>,
    out: impl FnOnce(Vec<(Document, u32)>) -> Result<U>,
) -> Result<U> {
    let span = op_span!(tree.descendants, store, spec.collection);
    let op = async { read::descendants(store, spec, &id?, max_depth).await };
    operation(span, indexes(store, spec), op, out).await
}

pub(super) async fn depth<S: Store>(store: &S, spec: &TreeSpec, id: Result<Bson>) -> Result<u32> {
    let span = op_span!(tree.depth, store, spec.collection);
    let op = async { read::depth(store, spec, &id?).await };
    operation(span, indexes(store, spec), op, Ok).await
}

pub(super) async fn is_descendant<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: Result<Bson>,
    of: Result<Bson>,
) -> Result<bool> {
    let span = op_span!(tree.is_descendant, store, spec.collection);
    let op = async { read::is_descendant(store, spec, &id?, &of?).await };
    operation(span, indexes(store, spec), op, Ok).await
}

pub(super) async fn move_to<S: Store>(
    store: &S,
    spec: &TreeSpec,
    first: impl Future<Output = Result<()>>,
    id: Result<Bson>,
    new_parent: Result<Option<Bson>>,
) -> Result<()> {
    let span = op_span!(tree.move_to, store, spec.collection);
    let op = async { write::move_to(store, spec, &id?, new_parent?.as_ref()).await };
    operation(span, first, op, Ok).await
}

pub(super) async fn delete_subtree<S: Store>(
    store: &S,
    spec: &TreeSpec,
    first: impl Future<Output = Result<()>>,
    id: Result<Bson>,
) -> Result<u64> {
    let span = op_span!(tree.delete_subtree, store, spec.collection);
    let op = async { write::delete_subtree(store, spec, &id?).await };
    operation(span, first, op, Ok).await
}

pub(super) async fn delete_node<S: Store>(
    store: &S,
    spec: &TreeSpec,
    first: impl Future<Output = Result<()>>,
    id: Result<Bson>,
) -> Result<()> {
    let span = op_span!(tree.delete_node, store, spec.collection);
    let op = async { write::delete_node(store, spec, &id?).await };
    operation(span, first, op, Ok).await
}

pub(super) async fn roots<S: Store, U>(
    store: &S,
    spec: &TreeSpec,
    out: impl FnOnce(Vec<Document>) -> Result<U>,
) -> Result<U> {
    let span = op_span!(tree.roots, store, spec.collection);
    operation(span, indexes(store, spec), read::roots(store, spec), out).await
}

pub(super) async fn walk<S: Store, U>(
    store: &S,
    spec: &TreeSpec,
    out: impl FnOnce(Vec<(Document, u32)>) -> Result<U>,
) -> Result<U> {
    let span = op_span!(tree.walk, store, spec.collection);
    operation(span, indexes(store, spec), read::walk(store, spec), out).await
}

pub(super) async fn verify<S: Store>(store: &S, spec: &TreeSpec) -> Result<Verified> {
    let span = op_span!(tree.verify, store, spec.collection);
    operation(span, indexes(store, spec), check::verify(store, spec), Ok).await
}

pub(super) async fn repair<S: Store>(
    store: &S,
    spec: &TreeSpec,
    first: impl Future<Output = Result<()>>,
) -> Result<Repair> {
    let span = op_span!(tree.repair, store, spec.collection);
    let first = async {
        model::ensure_indexes(store, spec).await?;
        first.await
    };
    operation(span, first, check::repair(store, spec), Ok).await
}

/// Depth-paired documents as the raw functions give them: the depth first.
pub(super) fn depth_first(found: Vec<(Document, u32)>) -> Result<Vec<(u32, Document)>> {
    Ok(found.into_iter().map(|(d, depth)| (depth, d)).collect())
}
