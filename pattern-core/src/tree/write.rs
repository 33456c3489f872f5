//! The writes: each in one transaction that also bumps the tree's version document (any two
//! structural writes of one tree conflict, so no interleaving of them can leave a cycle or a
//! stale path), with a bounded number of commands whatever the size of the tree.

use bson::{Bson, Document};

use super::model::{
    array_of, bounds, bump_version, by_id, check_id, ensure_indexes, full_path, id_of, must_get,
    set, stored_ancestors, stored_path, unknown,
};
use super::read;
use crate::error::display_bson;
use crate::spec::{TreeModel, TreeSpec};
use crate::store::query::{Filter, FindOptions, Rewrite, Shift, Update};
use crate::store::{transaction, transaction_with, BoxFuture, Store};
use crate::{Error, Result};

/// Inserts a node (a root when `parent` is `None`).
pub(crate) async fn insert<S: Store>(
    store: &S,
    spec: &TreeSpec,
    doc: Document,
    parent: Option<Bson>,
) -> Result<()> {
    ensure_indexes(store, spec).await?;
    if let Some(p) = &parent {
        check_id(spec, p).map_err(|_| unknown(spec, p))?;
    }
    let spec = *spec;
    if parent.is_none() && spec.model != TreeModel::NestedSet {
        // One new document that nothing refers to yet: no transaction needed.
        let mut doc = doc;
        root_fields(&spec, &mut doc);
        return Ok(store.insert_one(spec.collection, doc).await?);
    }
    transaction(store, |tx| {
        let (doc, parent) = (doc.clone(), parent.clone());
        Box::pin(async move { insert_in(tx, &spec, doc, parent).await })
    })
    .await
}

/// The model's fields of a root.
fn root_fields(spec: &TreeSpec, doc: &mut Document) {
    let f = &spec.fields;
    match spec.model {
        TreeModel::ParentRefs => {
            doc.insert(f.parent, Bson::Null);
        }
        TreeModel::ChildRefs => {
            doc.insert(f.children, Bson::Array(vec![]));
        }
        TreeModel::Ancestors => {
            doc.insert(f.ancestors, Bson::Array(vec![]));
            doc.insert(f.parent, Bson::Null);
        }
        TreeModel::MaterializedPath => {
            doc.insert(f.path, Bson::Null);
        }
        TreeModel::NestedSet => {
            doc.insert(f.parent, Bson::Null);
        }
    }
}

async fn insert_in<S: Store>(
    tx: &S,
    spec: &TreeSpec,
    mut doc: Document,
    parent: Option<Bson>,
) -> Result<()> {
    bump_version(tx, spec).await?;
    let f = &spec.fields;
    let coll = spec.collection;
    let Some(p) = parent else {
        // A nested-set root: numbered after every other node.
        let (_, max) = extreme_right(tx, spec).await?;
        root_fields(spec, &mut doc);
        doc.insert(f.left, Bson::Int64(max + 1));
        doc.insert(f.right, Bson::Int64(max + 2));
        return Ok(tx.insert_one(coll, doc).await?);
    };
    let pdoc = must_get(tx, spec, &p).await?;
    if let Some(max) = spec.max_depth {
        let depth = u64::from(depth_of(tx, spec, &pdoc).await?) + 1;
        if depth > u64::from(max) {
            return Err(too_deep(spec, depth));
        }
    }
    let id = id_of(&doc);
    match spec.model {
        TreeModel::ParentRefs => {
            doc.insert(f.parent, p);
        }
        TreeModel::ChildRefs => {
            doc.insert(f.children, Bson::Array(vec![]));
            tx.insert_one(coll, doc).await?;
            let mut push = Update {
                push: vec![(f.children.into(), vec![id])],
                ..Update::default()
            };
            tx.update_one(coll, &by_id(&p), &mut push, false).await?;
            return Ok(());
        }
        TreeModel::Ancestors => {
            let mut anc = array_of(spec, &pdoc, f.ancestors)?.to_vec();
            anc.push(p.clone());
            doc.insert(f.ancestors, anc);
            doc.insert(f.parent, p);
        }
        TreeModel::MaterializedPath => {
            doc.insert(f.path, full_path(spec, &pdoc)?);
        }
        TreeModel::NestedSet => {
            let (_, r) = bounds(spec, &pdoc)?;
            // Insert before an existing id is refused by the insert below, after the shift;
            // the transaction then undoes the shift.
            shift(tx, spec, vec![piece(r, i64::MAX, 2)]).await?;
            doc.insert(f.parent, p);
            doc.insert(f.left, Bson::Int64(r));
            doc.insert(f.right, Bson::Int64(r + 1));
        }
    }
    Ok(tx.insert_one(coll, doc).await?)
}

/// The depth of a node whose document is `doc`.
async fn depth_of<S: Store>(tx: &S, spec: &TreeSpec, doc: &Document) -> Result<u32> {
    match stored_ancestors(spec, doc) {
        Some(ids) => Ok(u32::try_from(ids?.len()).unwrap_or(u32::MAX)),
        None => read::depth(tx, spec, &id_of(doc)).await,
    }
}

fn too_deep(spec: &TreeSpec, depth: u64) -> Error {
    Error::TooDeep {
        collection: spec.collection.to_owned(),
        depth,
        max_depth: spec.max_depth.unwrap_or(0),
    }
}

fn piece(from: i64, to: i64, by: i64) -> Shift {
    Shift { from, to, by }
}

/// Renumbers the nested sets' `left` and `right` by `pieces`, in the documents holding a
/// value in one of their ranges: one command.
async fn shift<S: Store>(tx: &S, spec: &TreeSpec, pieces: Vec<Shift>) -> Result<u64> {
    let f = &spec.fields;
    let ranges = |field: &'static str| {
        pieces.iter().map(move |p| {
            Filter::and([
                Filter::Gte(field.into(), Bson::Int64(p.from)),
                Filter::Lte(field.into(), Bson::Int64(p.to)),
            ])
        })
    };
    let filter = Filter::Or(ranges(f.left).chain(ranges(f.right)).collect());
    let update = Update {
        rewrite: vec![
            Rewrite::Shift {
                field: f.left.into(),
                pieces: pieces.clone(),
            },
            Rewrite::Shift {
                field: f.right.into(),
                pieces,
            },
        ],
        ..Update::default()
    };
    Ok(tx.update_many(spec.collection, &filter, &update).await?)
}

/// The largest `right` (0 in an empty tree), with its document's id.
async fn extreme_right<S: Store>(tx: &S, spec: &TreeSpec) -> Result<(Bson, i64)> {
    let opts = FindOptions {
        sort: vec![(spec.fields.right.into(), -1)],
        limit: Some(1),
        ..FindOptions::default()
    };
    let last = tx
        .find(spec.collection, &Filter::And(vec![]), &opts)
        .await?
        .pop();
    match last {
        None => Ok((Bson::Null, 0)),
        Some(d) => Ok((id_of(&d), bounds(spec, &d)?.1)),
    }
}

/// Replaces the node's own fields (`$set` of each: the model's fields are left as they are).
pub(crate) async fn save<S: Store>(store: &S, spec: &TreeSpec, doc: Document) -> Result<()> {
    let id = id_of(&doc);
    let fields: Vec<(crate::store::query::Path, Bson)> = doc
        .into_iter()
        .filter(|(k, _)| k != "_id")
        .map(|(k, v)| (k.into(), v))
        .collect();
    if fields.is_empty() {
        must_get(store, spec, &id).await?;
        return Ok(());
    }
    let mut update = Update {
        set: fields,
        ..Update::default()
    };
    let done = store
        .update_one(spec.collection, &by_id(&id), &mut update, false)
        .await?;
    if !done.matched {
        return Err(unknown(spec, &id));
    }
    Ok(())
}

/// Moves a subtree under `new_parent` (a root with `None`).
pub(crate) async fn move_to<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    new_parent: Option<&Bson>,
) -> Result<()> {
    reshape(store, spec, id, |tx, spec, id| {
        let np = new_parent.cloned();
        Box::pin(async move { move_in(tx, spec, id, np.as_ref()).await })
    })
    .await
}

/// A change of node `id` that reshapes the tree: the indexes ensured, then `change` in a
/// transaction.
async fn reshape<S, T, F>(store: &S, spec: &TreeSpec, id: &Bson, change: F) -> Result<T>
where
    S: Store,
    T: Send,
    F: for<'t> Fn(&'t S::Txn, &'t TreeSpec, &'t Bson) -> BoxFuture<'t, Result<T>> + Send + Sync,
{
    ensure_indexes(store, spec).await?;
    let mut node = (*spec, id.clone());
    transaction_with(store, &mut node, |tx, (spec, id)| change(tx, spec, id)).await
}

fn cycle(spec: &TreeSpec, id: &Bson, under: &Bson) -> Error {
    Error::Cycle {
        collection: spec.collection.to_owned(),
        node: display_bson(id),
        under: display_bson(under),
    }
}

async fn move_in<S: Store>(
    tx: &S,
    spec: &TreeSpec,
    id: &Bson,
    new_parent: Option<&Bson>,
) -> Result<()> {
    bump_version(tx, spec).await?;
    let (f, coll) = (&spec.fields, spec.collection);
    let node = must_get(tx, spec, id).await?;
    let target = match new_parent {
        Some(np) => {
            let ndoc = must_get(tx, spec, np).await?;
            // Where the new parent's document names its ancestors, no second read.
            let anc = match stored_ancestors(spec, &ndoc) {
                Some(ids) => ids?,
                None => read::ancestor_ids(tx, spec, np).await?,
            };
            let same = |a: &Bson, b: &Bson| crate::codec::order::compare_values(a, b).is_eq();
            if same(np, id) || anc.iter().any(|a| same(a, id)) {
                return Err(cycle(spec, id, np));
            }
            Some((np.clone(), ndoc, anc.len() as u64))
        }
        None => None,
    };
    if let Some(max) = spec.max_depth {
        let new_depth = target.as_ref().map_or(0, |t| t.2 + 1);
        let below = read::descendants(tx, spec, id, None)
            .await?
            .iter()
            .map(|(_, d)| u64::from(*d))
            .max()
            .unwrap_or(0);
        if new_depth + below > u64::from(max) {
            return Err(too_deep(spec, new_depth + below));
        }
    }
    let parent_value = target.as_ref().map_or(Bson::Null, |t| t.0.clone());
    match spec.model {
        TreeModel::ParentRefs => {
            set_parent(tx, spec, id, parent_value).await?;
        }
        TreeModel::ChildRefs => {
            pull_everywhere(tx, spec, f.children, id).await?;
            if let Some((np, _, _)) = &target {
                let mut push = Update {
                    push: vec![(f.children.into(), vec![id.clone()])],
                    ..Update::default()
                };
                tx.update_one(coll, &by_id(np), &mut push, false).await?;
            }
        }
        TreeModel::Ancestors => {
            let old_len = array_of(spec, &node, f.ancestors)?.len();
            let new_anc: Vec<Bson> = match &target {
                Some((np, ndoc, _)) => {
                    let mut a = array_of(spec, ndoc, f.ancestors)?.to_vec();
                    a.push(np.clone());
                    a
                }
                None => Vec::new(),
            };
            let rewrite = Update {
                rewrite: vec![Rewrite::ArrayPrefix {
                    field: f.ancestors.into(),
                    drop: old_len,
                    prefix: new_anc.clone(),
                }],
                ..Update::default()
            };
            tx.update_many(coll, &Filter::eq(f.ancestors, id.clone()), &rewrite)
                .await?;
            let mut me = set(vec![
                (f.ancestors, Bson::Array(new_anc)),
                (f.parent, parent_value),
            ]);
            tx.update_one(coll, &by_id(id), &mut me, false).await?;
        }
        TreeModel::MaterializedPath => {
            let old_base = stored_path(spec, &node)?.unwrap_or(",").to_owned();
            let (new_path, new_base) = match &target {
                Some((_, ndoc, _)) => {
                    let p = full_path(spec, ndoc)?;
                    (Bson::String(p.clone()), p)
                }
                None => (Bson::Null, ",".to_owned()),
            };
            let rewrite = Update {
                rewrite: vec![Rewrite::StringPrefix {
                    field: f.path.into(),
                    drop: old_base.chars().count(),
                    prefix: new_base,
                }],
                ..Update::default()
            };
            let below = Filter::StartsWith(f.path.into(), full_path(spec, &node)?);
            tx.update_many(coll, &below, &rewrite).await?;
            tx.update_one(coll, &by_id(id), &mut set(vec![(f.path, new_path)]), false)
                .await?;
        }
        TreeModel::NestedSet => {
            let (a, b) = bounds(spec, &node)?;
            let w = b - a + 1;
            let t = match &target {
                Some((_, ndoc, _)) => bounds(spec, ndoc)?.1,
                None => extreme_right(tx, spec).await?.1 + 1,
            };
            let pieces = if t > b {
                vec![piece(a, b, t - 1 - b), piece(b + 1, t - 1, -w)]
            } else {
                vec![piece(a, b, t - a), piece(t, a - 1, w)]
            };
            shift(tx, spec, pieces).await?;
            set_parent(tx, spec, id, parent_value).await?;
        }
    }
    Ok(())
}

/// The node's `parent` field set to `parent`: one command.
async fn set_parent<S: Store>(tx: &S, spec: &TreeSpec, id: &Bson, parent: Bson) -> Result<()> {
    let mut update = set(vec![(spec.fields.parent, parent)]);
    tx.update_one(spec.collection, &by_id(id), &mut update, false)
        .await?;
    Ok(())
}

/// Removes `id` from the array `field` of every node that lists it: one command.
async fn pull_everywhere<S: Store>(
    tx: &S,
    spec: &TreeSpec,
    field: &'static str,
    id: &Bson,
) -> Result<u64> {
    let pull = Update {
        pull: vec![(field.into(), id.clone())],
        ..Update::default()
    };
    let holders = Filter::eq(field, id.clone());
    Ok(tx.update_many(spec.collection, &holders, &pull).await?)
}

/// Deletes a node and its subtree; returns how many nodes.
pub(crate) async fn delete_subtree<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<u64> {
    reshape(store, spec, id, |tx, spec, id| {
        Box::pin(delete_subtree_in(tx, spec, id))
    })
    .await
}

async fn delete_subtree_in<S: Store>(tx: &S, spec: &TreeSpec, id: &Bson) -> Result<u64> {
    bump_version(tx, spec).await?;
    let (f, coll) = (&spec.fields, spec.collection);
    let node = must_get(tx, spec, id).await?;
    let deleted = match spec.model {
        TreeModel::ParentRefs | TreeModel::ChildRefs => {
            let below = read::descendants(tx, spec, id, None).await?;
            let mut ids: Vec<Bson> = below.iter().map(|(d, _)| id_of(d)).collect();
            ids.push(id.clone());
            let n = tx.delete_many(coll, &read::in_ids(ids)).await?;
            if spec.model == TreeModel::ChildRefs {
                pull_everywhere(tx, spec, f.children, id).await?;
            }
            n
        }
        TreeModel::Ancestors => {
            let filter = Filter::Or(vec![by_id(id), Filter::eq(f.ancestors, id.clone())]);
            tx.delete_many(coll, &filter).await?
        }
        TreeModel::MaterializedPath => {
            let below = Filter::StartsWith(f.path.into(), full_path(spec, &node)?);
            tx.delete_many(coll, &Filter::Or(vec![by_id(id), below]))
                .await?
        }
        TreeModel::NestedSet => {
            let (a, b) = bounds(spec, &node)?;
            let inside = Filter::and([
                Filter::Gte(f.left.into(), Bson::Int64(a)),
                Filter::Lte(f.right.into(), Bson::Int64(b)),
            ]);
            let n = tx.delete_many(coll, &inside).await?;
            shift(tx, spec, vec![piece(b + 1, i64::MAX, -(b - a + 1))]).await?;
            n
        }
    };
    Ok(deleted)
}

/// Deletes one node; its children move up to its parent.
pub(crate) async fn delete_node<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<()> {
    reshape(store, spec, id, |tx, spec, id| {
        Box::pin(delete_node_in(tx, spec, id))
    })
    .await
}

async fn delete_node_in<S: Store>(tx: &S, spec: &TreeSpec, id: &Bson) -> Result<()> {
    bump_version(tx, spec).await?;
    let (f, coll) = (&spec.fields, spec.collection);
    let node = must_get(tx, spec, id).await?;
    let up = super::model::stored_parent(spec, &node).unwrap_or(Bson::Null);
    let children_of = Filter::eq(f.parent, id.clone());
    match spec.model {
        TreeModel::ParentRefs => {
            tx.update_many(coll, &children_of, &set(vec![(f.parent, up)]))
                .await?;
        }
        TreeModel::ChildRefs => {
            let own = array_of(spec, &node, f.children)?.to_vec();
            let holders = tx
                .find(
                    coll,
                    &Filter::eq(f.children, id.clone()),
                    &FindOptions::default(),
                )
                .await?;
            for holder in holders {
                // The node's place in its parent's array goes to its children, in order.
                let mut list = Vec::new();
                for c in array_of(spec, &holder, f.children)? {
                    if crate::codec::order::compare_values(c, id).is_eq() {
                        list.extend(own.iter().cloned());
                    } else {
                        list.push(c.clone());
                    }
                }
                let mut update = set(vec![(f.children, Bson::Array(list))]);
                tx.update_one(coll, &by_id(&id_of(&holder)), &mut update, false)
                    .await?;
            }
        }
        TreeModel::Ancestors => {
            tx.update_many(coll, &children_of, &set(vec![(f.parent, up)]))
                .await?;
            pull_everywhere(tx, spec, f.ancestors, id).await?;
        }
        TreeModel::MaterializedPath => {
            let full = full_path(spec, &node)?;
            let base = stored_path(spec, &node)?.unwrap_or(",").to_owned();
            let rewrite = Update {
                rewrite: vec![Rewrite::StringPrefix {
                    field: f.path.into(),
                    drop: full.chars().count(),
                    prefix: base.clone(),
                }],
                ..Update::default()
            };
            tx.update_many(coll, &Filter::StartsWith(f.path.into(), full), &rewrite)
                .await?;
            if base == "," {
                // The children of a root become roots: `null`, not ",".
                tx.update_many(
                    coll,
                    &Filter::eq(f.path, ","),
                    &set(vec![(f.path, Bson::Null)]),
                )
                .await?;
            }
        }
        TreeModel::NestedSet => {
            let (a, b) = bounds(spec, &node)?;
            tx.update_many(coll, &children_of, &set(vec![(f.parent, up)]))
                .await?;
            tx.delete_many(coll, &by_id(id)).await?;
            shift(
                tx,
                spec,
                vec![piece(a + 1, b - 1, -1), piece(b + 1, i64::MAX, -2)],
            )
            .await?;
            return Ok(());
        }
    }
    tx.delete_many(coll, &by_id(id)).await?;
    Ok(())
}
