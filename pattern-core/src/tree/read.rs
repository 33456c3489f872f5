//! The reads: one query per read in the reference models (`$graphLookup`), the seed's
//! queries elsewhere (a read of the node first where the model needs its path or bounds).

use std::collections::HashMap;

use bson::{Bson, Document};

use super::model::{
    array_of, bounds, by_id, cmp_ids, full_path, id_of, must_get, path_segments, sort_siblings,
    stored_ancestors, stored_parent, unknown,
};
use crate::codec::as_int;
use crate::codec::order::compare_values;
use crate::spec::{TreeModel, TreeSpec};
use crate::store::query::{Filter, FindOptions, Graph, GraphLookup};
use crate::store::Store;
use crate::Result;

/// A search from node `id` along one link of the model.
fn graph(id: &Bson, start_with: &str, from: &str, to: &str, depth: Option<u32>) -> GraphLookup {
    GraphLookup {
        start: id.clone(),
        start_with: start_with.to_owned().into(),
        connect_from: from.to_owned().into(),
        connect_to: to.to_owned().into(),
        max_depth: depth,
    }
}

async fn lookup<S: Store>(store: &S, spec: &TreeSpec, q: GraphLookup) -> Result<Graph> {
    store
        .graph_lookup(spec.collection, &q)
        .await?
        .ok_or_else(|| unknown(spec, &q.start))
}

/// The search from a node up its ancestors, parent first (depth 0), in the models that link
/// upwards by a field (`parent`) or downwards by an array (`children`).
fn up(spec: &TreeSpec, id: &Bson, depth: Option<u32>) -> GraphLookup {
    let f = &spec.fields;
    match spec.model {
        TreeModel::ChildRefs => graph(id, "_id", "_id", f.children, depth),
        _ => graph(id, f.parent, f.parent, "_id", depth),
    }
}

/// The search from a node down its descendants, children first (depth 0).
fn down(spec: &TreeSpec, id: &Bson, depth: Option<u32>) -> GraphLookup {
    let f = &spec.fields;
    match spec.model {
        TreeModel::ChildRefs => graph(id, f.children, f.children, "_id", depth),
        _ => graph(id, "_id", "_id", f.parent, depth),
    }
}

/// The node's parent, `None` for a root (or a parent that does not exist: an orphan).
pub(crate) async fn parent<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Option<Document>> {
    match spec.model {
        TreeModel::MaterializedPath => {
            let node = must_get(store, spec, id).await?;
            match path_segments(spec, &node)?.pop() {
                None => Ok(None),
                Some(p) => super::model::get(store, spec, &Bson::String(p)).await,
            }
        }
        _ => {
            let mut found = lookup(store, spec, up(spec, id, Some(0))).await?.found;
            found.sort_by(|a, b| cmp_ids(&a.0, &b.0));
            Ok(found.into_iter().next().map(|(d, _)| d))
        }
    }
}

/// The node's children in the model's order.
pub(crate) async fn children<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Vec<Document>> {
    match spec.model {
        TreeModel::MaterializedPath => {
            let node = must_get(store, spec, id).await?;
            let filter = Filter::eq(spec.fields.path, full_path(spec, &node)?);
            let mut docs = store
                .find(spec.collection, &filter, &FindOptions::default())
                .await?;
            sort_siblings(spec, &mut docs);
            Ok(docs)
        }
        TreeModel::ChildRefs => {
            let g = lookup(store, spec, down(spec, id, Some(0))).await?;
            let order = array_of(spec, &g.start, spec.fields.children)?.to_vec();
            Ok(in_array_order(&order, g.found.into_iter().map(|(d, _)| d)))
        }
        _ => {
            // The node and its children in one indexed query (`_id` or `parent`): the node
            // tells an unknown id from a leaf. (A one-hop `$graphLookup` would do the same, but
            // is a scan on the test server: T9.)
            let filter = Filter::Or(vec![by_id(id), Filter::eq(spec.fields.parent, id.clone())]);
            let found = store
                .find(spec.collection, &filter, &FindOptions::default())
                .await?;
            let mut node = false;
            let mut docs: Vec<Document> = Vec::with_capacity(found.len());
            for d in found {
                if compare_values(&id_of(&d), id).is_eq() {
                    node = true;
                } else {
                    docs.push(d);
                }
            }
            if !node {
                return Err(unknown(spec, id));
            }
            sort_siblings(spec, &mut docs);
            Ok(docs)
        }
    }
}

/// `docs` in the order their ids have in `order` (ids not in it last, by id).
fn in_array_order(order: &[Bson], docs: impl IntoIterator<Item = Document>) -> Vec<Document> {
    let position = |d: &Document| {
        let id = id_of(d);
        order.iter().position(|o| compare_values(o, &id).is_eq())
    };
    let mut docs: Vec<(Option<usize>, Document)> =
        docs.into_iter().map(|d| (position(&d), d)).collect();
    docs.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => cmp_ids(&a.1, &b.1),
    });
    docs.into_iter().map(|(_, d)| d).collect()
}

/// The other children of the node's parent (the other roots for a root).
pub(crate) async fn siblings<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Vec<Document>> {
    let all = match parent(store, spec, id).await? {
        Some(p) => children(store, spec, &id_of(&p)).await?,
        None => roots(store, spec).await?,
    };
    Ok(all
        .into_iter()
        .filter(|d| compare_values(&id_of(d), id).is_ne())
        .collect())
}

/// The node's ancestors, root first.
pub(crate) async fn ancestors<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Vec<Document>> {
    match spec.model {
        TreeModel::Ancestors => {
            let f = spec.fields.ancestors;
            let g = lookup(store, spec, graph(id, f, "_id", "_id", Some(0))).await?;
            let order = array_of(spec, &g.start, f)?.to_vec();
            Ok(in_array_order(&order, g.found.into_iter().map(|(d, _)| d)))
        }
        TreeModel::MaterializedPath => {
            let node = must_get(store, spec, id).await?;
            let order = stored_ancestors(spec, &node).expect("a path names the ancestors")?;
            if order.is_empty() {
                return Ok(Vec::new());
            }
            let docs = store
                .find(
                    spec.collection,
                    &in_ids(order.clone()),
                    &FindOptions::default(),
                )
                .await?;
            Ok(in_array_order(&order, docs))
        }
        _ => {
            let mut found = lookup(store, spec, up(spec, id, None)).await?.found;
            // Parent at depth 0: the root is the deepest.
            found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| cmp_ids(&a.0, &b.0)));
            Ok(found.into_iter().map(|(d, _)| d).collect())
        }
    }
}

/// The node's depth (a root: 0).
pub(crate) async fn depth<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<u32> {
    let n = ancestor_ids(store, spec, id).await?.len();
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// Whether `id` is a descendant of `of`.
pub(crate) async fn is_descendant<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    of: &Bson,
) -> Result<bool> {
    let ids = ancestor_ids(store, spec, id).await?;
    Ok(ids.iter().any(|a| compare_values(a, of).is_eq()))
}

/// The ids of the node's ancestors (any order), one query: the node itself where it names
/// them, else a `$graphLookup` up its links.
pub(crate) async fn ancestor_ids<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Vec<Bson>> {
    if matches!(
        spec.model,
        TreeModel::Ancestors | TreeModel::MaterializedPath
    ) {
        let node = must_get(store, spec, id).await?;
        if let Some(ids) = stored_ancestors(spec, &node) {
            return ids;
        }
    }
    Ok(lookup(store, spec, up(spec, id, None))
        .await?
        .found
        .into_iter()
        .map(|(d, _)| id_of(&d))
        .collect())
}

/// The node's descendants in pre-order, with their depth below the node (children: 1), to
/// `max_depth` levels (`None`: all).
pub(crate) async fn descendants<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
    max_depth: Option<u32>,
) -> Result<Vec<(Document, u32)>> {
    if max_depth == Some(0) {
        must_get(store, spec, id).await?;
        return Ok(Vec::new());
    }
    let found: Vec<Document> = match spec.model {
        TreeModel::ParentRefs | TreeModel::ChildRefs => {
            let q = down(spec, id, max_depth.map(|d| d - 1));
            let g = lookup(store, spec, q).await?;
            let mut all: Vec<Document> = vec![g.start];
            all.extend(g.found.into_iter().map(|(d, _)| d));
            return Ok(pre_order(spec, id, all, max_depth));
        }
        TreeModel::Ancestors => {
            let filter = Filter::eq(spec.fields.ancestors, id.clone());
            let docs = store
                .find(spec.collection, &filter, &FindOptions::default())
                .await?;
            if docs.is_empty() {
                must_get(store, spec, id).await?;
            }
            docs
        }
        TreeModel::MaterializedPath => {
            let node = must_get(store, spec, id).await?;
            let filter = Filter::StartsWith(spec.fields.path.into(), full_path(spec, &node)?);
            store
                .find(spec.collection, &filter, &FindOptions::default())
                .await?
        }
        TreeModel::NestedSet => {
            let node = must_get(store, spec, id).await?;
            let (l, r) = bounds(spec, &node)?;
            let f = &spec.fields;
            let filter = Filter::and([
                Filter::Gt(f.left.into(), Bson::Int64(l)),
                Filter::Lt(f.right.into(), Bson::Int64(r)),
            ]);
            let opts = FindOptions {
                sort: vec![(f.left.into(), 1)],
                ..FindOptions::default()
            };
            store.find(spec.collection, &filter, &opts).await?
        }
    };
    Ok(pre_order(spec, id, found, max_depth))
}

/// Orders the subtree of `root` in pre-order from the parent links each document holds
/// (for child references, the `children` arrays), each with its depth below `root`; documents
/// not reached from `root` (a corrupt tree) are left out. `docs` may or may not hold `root`.
pub(crate) fn pre_order(
    spec: &TreeSpec,
    root: &Bson,
    docs: Vec<Document>,
    max_depth: Option<u32>,
) -> Vec<(Document, u32)> {
    let kids = children_map(spec, &docs);
    let mut by_id: HashMap<Vec<u8>, Document> =
        docs.into_iter().map(|d| (key(&id_of(&d)), d)).collect();
    let mut out = Vec::new();
    depth_first(&kids, &mut by_id, root, max_depth, &mut out);
    out
}

/// Appends the subtree below `root` in pre-order (children in `kids`' order), taking each
/// document out of `by_id` (a node reached twice, on a cycle, is left out), to `max_depth`
/// levels below it.
fn depth_first(
    kids: &HashMap<Vec<u8>, Vec<Bson>>,
    by_id: &mut HashMap<Vec<u8>, Document>,
    root: &Bson,
    max_depth: Option<u32>,
    out: &mut Vec<(Document, u32)>,
) {
    let mut stack: Vec<(Bson, u32)> = Vec::new();
    push_children(kids, root, 1, &mut stack);
    while let Some((id, depth)) = stack.pop() {
        let Some(doc) = by_id.remove(&key(&id)) else {
            continue; // a link to a node that does not exist, or seen already (a cycle)
        };
        out.push((doc, depth));
        if max_depth.is_none_or(|m| depth < m) {
            push_children(kids, &id, depth + 1, &mut stack);
        }
    }
}

fn push_children(
    kids: &HashMap<Vec<u8>, Vec<Bson>>,
    id: &Bson,
    depth: u32,
    stack: &mut Vec<(Bson, u32)>,
) {
    if let Some(ids) = kids.get(&key(id)) {
        stack.extend(ids.iter().rev().map(|c| (c.clone(), depth)));
    }
}

/// A map key for an id, by value: `1`, `1.0` and an Int32 1 are one node, as in `_id`'s unique
/// index and in the server's match of a parent or child link.
pub(crate) fn key(id: &Bson) -> Vec<u8> {
    crate::codec::order::value_key(id)
}

/// Each node's children ids in the model's order, from the links the documents hold.
pub(crate) fn children_map(spec: &TreeSpec, docs: &[Document]) -> HashMap<Vec<u8>, Vec<Bson>> {
    let mut kids: HashMap<Vec<u8>, Vec<Bson>> = HashMap::new();
    if spec.model == TreeModel::ChildRefs {
        for d in docs {
            let list = array_of(spec, d, spec.fields.children).unwrap_or(&[]);
            kids.insert(key(&id_of(d)), list.to_vec());
        }
        return kids;
    }
    let mut sorted: Vec<&Document> = docs.iter().collect();
    if spec.model == TreeModel::NestedSet {
        let left = |d: &Document| d.get(spec.fields.left).and_then(as_int);
        sorted.sort_by(|a, b| left(a).cmp(&left(b)).then_with(|| cmp_ids(a, b)));
    } else {
        sorted.sort_by(|a, b| cmp_ids(a, b));
    }
    for d in sorted {
        if let Some(p) = stored_parent(spec, d) {
            kids.entry(key(&p)).or_default().push(id_of(d));
        }
    }
    kids
}

/// The roots, in the model's order.
pub(crate) async fn roots<S: Store>(store: &S, spec: &TreeSpec) -> Result<Vec<Document>> {
    let f = &spec.fields;
    let filter = match spec.model {
        TreeModel::ParentRefs | TreeModel::Ancestors => Filter::eq(f.parent, Bson::Null),
        TreeModel::NestedSet => Filter::In(f.parent.into(), vec![Bson::Null, Bson::Int32(0)]),
        TreeModel::MaterializedPath => Filter::eq(f.path, Bson::Null),
        TreeModel::ChildRefs => {
            // The model stores no parent: a root is a node no `children` array lists, which
            // takes every document's array.
            let all = all(store, spec).await?;
            let kids = children_map(spec, &all);
            return Ok(root_docs(spec, &all, &kids));
        }
    };
    let mut docs = store
        .find(spec.collection, &filter, &FindOptions::default())
        .await?;
    sort_siblings(spec, &mut docs);
    Ok(docs)
}

/// The roots among `all`: the nodes no array lists (child references), or without a parent.
fn root_docs(
    spec: &TreeSpec,
    all: &[Document],
    kids: &HashMap<Vec<u8>, Vec<Bson>>,
) -> Vec<Document> {
    let listed: std::collections::HashSet<Vec<u8>> = kids.values().flatten().map(key).collect();
    let mut roots: Vec<Document> = all
        .iter()
        .filter(|d| match spec.model {
            TreeModel::ChildRefs => !listed.contains(&key(&id_of(d))),
            _ => stored_parent(spec, d).is_none(),
        })
        .cloned()
        .collect();
    sort_siblings(spec, &mut roots);
    roots
}

/// Every node in pre-order from the roots, with its depth (one read of the collection).
pub(crate) async fn walk<S: Store>(store: &S, spec: &TreeSpec) -> Result<Vec<(Document, u32)>> {
    let all = all(store, spec).await?;
    let kids = children_map(spec, &all);
    let roots = root_docs(spec, &all, &kids);
    let mut by_id: HashMap<Vec<u8>, Document> =
        all.into_iter().map(|d| (key(&id_of(&d)), d)).collect();
    let mut out = Vec::with_capacity(by_id.len());
    for root in roots {
        let rid = id_of(&root);
        if let Some(doc) = by_id.remove(&key(&rid)) {
            out.push((doc, 0));
        }
        depth_first(&kids, &mut by_id, &rid, None, &mut out);
    }
    Ok(out)
}

/// Every document of the tree's collection (the whole tree's reads, `verify`, `repair`).
pub(crate) async fn all<S: Store>(store: &S, spec: &TreeSpec) -> Result<Vec<Document>> {
    let every = FindOptions {
        comment: Some("pattern scatter: tree, every node"),
        ..FindOptions::default()
    };
    Ok(store
        .find(spec.collection, &Filter::And(vec![]), &every)
        .await?)
}

/// `{_id: {$in: ids}}`.
pub(crate) fn in_ids(ids: Vec<Bson>) -> Filter {
    Filter::In("_id".into(), ids)
}
