//! What each model keeps in a node's document: its fields, how a node names its parent, the
//! order of siblings, which ids it can store, and the documents' raw reads every operation
//! shares.

use std::cmp::Ordering;

use bson::{Bson, Document};

use crate::codec::order::compare_values;
use crate::codec::{as_int, BsonType};
use crate::error::display_bson;
use crate::spec::{TreeModel, TreeSpec};
use crate::store::query::{Filter, IndexSpec, Schema, Update};
use crate::store::{find_one, Extension, ExtensionKey, Store};
use crate::{Error, Result};

/// The separator of materialized paths (the seed's).
pub(crate) const SEP: char = ',';

/// The fields the model keeps, in the order they follow the node's own fields.
pub(crate) fn model_fields(spec: &TreeSpec) -> Vec<&'static str> {
    let f = &spec.fields;
    match spec.model {
        TreeModel::ParentRefs => vec![f.parent],
        TreeModel::ChildRefs => vec![f.children],
        TreeModel::Ancestors => vec![f.ancestors, f.parent],
        TreeModel::MaterializedPath => vec![f.path],
        TreeModel::NestedSet => vec![f.parent, f.left, f.right],
    }
}

/// The model's indexes: the seed's (`{parent: 1}`, `{children: 1}`, `{ancestors: 1}`,
/// `{path: 1}`), and for nested sets `{left: 1}` and `{parent: 1}`.
pub(crate) fn indexes(spec: &TreeSpec) -> Vec<IndexSpec> {
    let f = &spec.fields;
    let fields: Vec<&str> = match spec.model {
        TreeModel::ParentRefs => vec![f.parent],
        TreeModel::ChildRefs => vec![f.children],
        TreeModel::Ancestors => vec![f.ancestors, f.parent],
        TreeModel::MaterializedPath => vec![f.path],
        TreeModel::NestedSet => vec![f.left, f.parent],
    };
    fields
        .into_iter()
        .map(|field| IndexSpec {
            name: format!("{field}_1"),
            keys: vec![(field.to_owned(), 1)],
            unique: false,
            partial: None,
        })
        .collect()
}

/// The `$jsonSchema` every node of the model passes (see [`raw::schema`](super::raw::schema)).
pub(crate) fn schema(spec: &TreeSpec, id_types: &[BsonType]) -> Schema {
    let ids = match spec.model {
        TreeModel::MaterializedPath => &[BsonType::String][..],
        _ => id_types,
    };
    let f = &spec.fields;
    // An id or null, or what else `extra` allows; nothing said when the ids' type is unknown.
    let parent = |extra: &[BsonType]| match ids {
        [] => Schema::default(),
        _ => Schema::of(&[ids, &[BsonType::Null], extra].concat()),
    };
    let mut id_array = Schema::of(&[BsonType::Array]);
    if !ids.is_empty() {
        id_array = id_array.items(Schema::of(ids));
    }
    let integer = || Schema::of(BsonType::INTEGERS);
    let mut s = Schema::object();
    let fields = match spec.model {
        TreeModel::ParentRefs => vec![(f.parent, parent(&[]))],
        TreeModel::ChildRefs => vec![(f.children, id_array)],
        TreeModel::Ancestors => vec![(f.ancestors, id_array), (f.parent, parent(&[]))],
        TreeModel::MaterializedPath => {
            vec![(f.path, Schema::of(&[BsonType::String, BsonType::Null]))]
        }
        TreeModel::NestedSet => {
            s = s.require(f.left).require(f.right);
            let numbers = [BsonType::Int, BsonType::Long, BsonType::Double];
            let numbers: Vec<BsonType> = numbers.into_iter().filter(|t| !ids.contains(t)).collect();
            vec![
                (f.parent, parent(&numbers)),
                (f.left, integer()),
                (f.right, integer()),
            ]
        }
    };
    let id = ("_id", Schema::of(ids));
    for (field, schema) in std::iter::once(id).chain(fields) {
        if schema != Schema::default() {
            s = s.property(field, schema);
        }
    }
    s
}

/// Creates the model's indexes once per store and process.
pub(crate) async fn ensure_indexes<S: Store>(store: &S, spec: &TreeSpec) -> Result<()> {
    let ensured = &store.extensions().get(&ENSURED).0;
    if lock(ensured).contains(spec) {
        return Ok(());
    }
    for index in indexes(spec) {
        store.create_index(spec.collection, &index).await?;
    }
    let mut trees = lock(ensured);
    if !trees.contains(spec) {
        trees.push(*spec);
    }
    let mut served = lock(&store.extensions().get(&ENSURED).1);
    if !served.contains(&spec.collection) {
        served.push(spec.collection);
    }
    Ok(())
}

/// The trees whose indexes this process ensured, per store; and the collections of every tree
/// it served, kept when the store forgets (what the tests' targeting check reads).
#[derive(Debug, Default)]
struct Ensured(
    std::sync::Mutex<Vec<TreeSpec>>,
    std::sync::Mutex<Vec<&'static str>>,
);

impl Extension for Ensured {
    fn forget(&self) {
        lock(&self.0).clear();
    }
}

static ENSURED: ExtensionKey<Ensured> = ExtensionKey::new();

/// The collections of the trees whose indexes this process ensured on `store`, also before
/// the store last forgot.
pub(crate) fn served<S: Store>(store: &S) -> Vec<&'static str> {
    lock(&store.extensions().get(&ENSURED).1).clone()
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Refuses a node document the model cannot store: no `_id`, an `_id` the model cannot hold
/// (a path id with the separator, nested sets' `0`), a field the model keeps.
pub(crate) fn check_node(spec: &TreeSpec, doc: &Document) -> Result<()> {
    let Some(id) = doc.get("_id") else {
        return Err(Error::invalid("a tree node needs an id stored as `_id`"));
    };
    check_id(spec, id)?;
    for field in model_fields(spec) {
        if doc.contains_key(field) {
            return Err(Error::invalid(format!(
                "a node of `{}` has its own field `{field}`, which the {} model keeps",
                spec.collection,
                spec.model.name()
            )));
        }
    }
    Ok(())
}

/// Refuses an id the model cannot store.
pub(crate) fn check_id(spec: &TreeSpec, id: &Bson) -> Result<()> {
    if matches!(
        id,
        Bson::Null | Bson::Array(_) | Bson::Undefined | Bson::RegularExpression(_)
    ) {
        return Err(Error::invalid(format!(
            "a node id cannot be {}",
            display_bson(id)
        )));
    }
    match spec.model {
        TreeModel::MaterializedPath => match id {
            Bson::String(s) if !s.is_empty() && !s.contains(SEP) => Ok(()),
            Bson::String(s) if s.is_empty() => Err(Error::invalid(
                "the materialized_path model cannot store an empty id",
            )),
            Bson::String(s) => Err(Error::invalid(format!(
                "the materialized_path model cannot store the id {s:?}: it contains the path separator `{SEP}`"
            ))),
            other => Err(Error::invalid(format!(
                "the materialized_path model stores string ids only, got {}",
                display_bson(other)
            ))),
        },
        TreeModel::NestedSet if as_int(id) == Some(0) => Err(Error::invalid(
            "the nested_set model cannot store the id 0: the seed's `parent: 0` means \"no parent\"",
        )),
        _ => Ok(()),
    }
}

/// Whether a stored parent value means "no parent": null, missing, and (nested sets, the
/// seed's root) `0`.
pub(crate) fn no_parent(spec: &TreeSpec, v: Option<&Bson>) -> bool {
    match v {
        None | Some(Bson::Null) => true,
        Some(v) => spec.model == TreeModel::NestedSet && as_int(v) == Some(0),
    }
}

/// The node's parent id as its document holds it (`None` for a root). Child references hold
/// no parent: `None` there.
pub(crate) fn stored_parent(spec: &TreeSpec, doc: &Document) -> Option<Bson> {
    match spec.model {
        TreeModel::ParentRefs | TreeModel::Ancestors | TreeModel::NestedSet => {
            let v = doc.get(spec.fields.parent);
            (!no_parent(spec, v)).then(|| v.cloned()).flatten()
        }
        TreeModel::MaterializedPath => path_segments(spec, doc)
            .ok()
            .and_then(|s| s.last().map(|l| Bson::String(l.clone()))),
        TreeModel::ChildRefs => None,
    }
}

/// The `_id` of a document.
pub(crate) fn id_of(doc: &Document) -> Bson {
    doc.get("_id").cloned().unwrap_or(Bson::Null)
}

/// An array field (`children`, `ancestors`); missing or null is empty.
pub(crate) fn array_of<'a>(spec: &TreeSpec, doc: &'a Document, field: &str) -> Result<&'a [Bson]> {
    match doc.get(field) {
        None | Some(Bson::Null) => Ok(&[]),
        Some(Bson::Array(a)) => Ok(a),
        Some(other) => Err(Error::decode(
            spec.collection,
            doc.get("_id"),
            format!(
                "`{field}` should be an array, found {}",
                display_bson(other)
            ),
        )),
    }
}

/// The stored path (`None` for a root).
pub(crate) fn stored_path<'a>(spec: &TreeSpec, doc: &'a Document) -> Result<Option<&'a str>> {
    let field = spec.fields.path;
    match doc.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::String(s)) if s.len() >= 2 && s.starts_with(SEP) && s.ends_with(SEP) => {
            Ok(Some(s))
        }
        Some(other) => Err(Error::decode(
            spec.collection,
            doc.get("_id"),
            format!(
                "`{field}` should be null or a path like \",a,b,\", found {}",
                display_bson(other)
            ),
        )),
    }
}

/// The ancestors named by a stored path, root first.
pub(crate) fn path_segments(spec: &TreeSpec, doc: &Document) -> Result<Vec<String>> {
    Ok(match stored_path(spec, doc)? {
        None => Vec::new(),
        Some(p) => p[1..p.len() - 1].split(SEP).map(str::to_owned).collect(),
    })
}

/// The path the node's children hold: `,<ancestors>,<id>,`.
pub(crate) fn full_path(spec: &TreeSpec, doc: &Document) -> Result<String> {
    let base = stored_path(spec, doc)?.unwrap_or(",");
    Ok(format!("{base}{},", id_str(spec, doc)?))
}

/// A path model's id as a string.
pub(crate) fn id_str<'a>(spec: &TreeSpec, doc: &'a Document) -> Result<&'a str> {
    match doc.get("_id") {
        Some(Bson::String(s)) => Ok(s),
        other => Err(Error::decode(
            spec.collection,
            other,
            "the materialized_path model needs string ids",
        )),
    }
}

/// The ids of the node's ancestors, root first, when its document names them (the ancestors
/// and paths models); `None` in the models that hold only links.
pub(crate) fn stored_ancestors(spec: &TreeSpec, doc: &Document) -> Option<Result<Vec<Bson>>> {
    match spec.model {
        TreeModel::Ancestors => {
            Some(array_of(spec, doc, spec.fields.ancestors).map(<[Bson]>::to_vec))
        }
        TreeModel::MaterializedPath => {
            Some(path_segments(spec, doc).map(|s| s.into_iter().map(Bson::String).collect()))
        }
        _ => None,
    }
}

/// A nested set's `(left, right)`.
pub(crate) fn bounds(spec: &TreeSpec, doc: &Document) -> Result<(i64, i64)> {
    let get = |field: &str| {
        doc.get(field).and_then(as_int).ok_or_else(|| {
            Error::decode(
                spec.collection,
                doc.get("_id"),
                format!("`{field}` should be an integer"),
            )
        })
    };
    Ok((get(spec.fields.left)?, get(spec.fields.right)?))
}

/// Sorts siblings in the model's order: `left` for nested sets, the id otherwise (child
/// references order by their parent's array, which the caller has).
pub(crate) fn sort_siblings(spec: &TreeSpec, docs: &mut [Document]) {
    if spec.model == TreeModel::NestedSet {
        let left = |d: &Document| d.get(spec.fields.left).and_then(as_int);
        docs.sort_by(|a, b| left(a).cmp(&left(b)).then_with(|| cmp_ids(a, b)));
    } else {
        docs.sort_by(cmp_ids);
    }
}

pub(crate) fn cmp_ids(a: &Document, b: &Document) -> Ordering {
    compare_values(&id_of(a), &id_of(b))
}

/// `{_id: id}`.
pub(crate) fn by_id(id: &Bson) -> Filter {
    Filter::eq("_id", id.clone())
}

/// The node, or `None`.
pub(crate) async fn get<S: Store>(
    store: &S,
    spec: &TreeSpec,
    id: &Bson,
) -> Result<Option<Document>> {
    Ok(find_one(store, spec.collection, &by_id(id)).await?)
}

/// The node, or [`Error::UnknownNode`].
pub(crate) async fn must_get<S: Store>(store: &S, spec: &TreeSpec, id: &Bson) -> Result<Document> {
    get(store, spec, id).await?.ok_or_else(|| unknown(spec, id))
}

pub(crate) fn unknown(spec: &TreeSpec, id: &Bson) -> Error {
    Error::UnknownNode {
        collection: spec.collection.to_owned(),
        id: display_bson(id),
    }
}

/// `$set` of the given fields.
pub(crate) fn set(fields: Vec<(&'static str, Bson)>) -> Update {
    Update {
        set: fields.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        ..Update::default()
    }
}

/// Increments the tree's version document: every structural write does, inside its
/// transaction, so that any two of them conflict (no write skew).
pub(crate) async fn bump_version<S: Store>(store: &S, spec: &TreeSpec) -> Result<()> {
    let mut inc = Update {
        inc: vec![("version".into(), 1)],
        ..Update::default()
    };
    let filter = Filter::eq("_id", spec.collection);
    store
        .update_one(super::VERSIONS, &filter, &mut inc, true)
        .await?;
    Ok(())
}
