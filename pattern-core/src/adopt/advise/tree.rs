//! The tree rule: fields that reference other documents of the same collection as a tree's
//! five models keep them (parent, children, ancestors, a materialized path, nested set
//! numbers), checked by looking up the `_id`s they name.

use std::collections::BTreeSet;

use bson::Bson;
use serde::Serialize;

use super::profile::Field;
use super::rust::{key_type, singular, string_literal, type_ident, Code, Item};
use super::{percent, Confidence, Evidence, Finding, Read, Sample, ADVISE_READ};
use crate::adopt::histogram::{Distribution, Histogram};
use crate::codec::order::value_key;
use crate::codec::BsonType;
use crate::spec::{TreeFields, TreeModel};
use crate::store::query::{Filter, FindOptions, Path};
use crate::store::Store;
use crate::Result;

/// Referenced `_id`s looked up at most (one `find`).
pub const LOOKED_UP: usize = 100;
/// At least this percentage of them name a document of the collection.
pub const TREE_MIN_RESOLVED: u64 = 90;
/// The model's fields are in at least this percentage of the sampled documents.
pub const TREE_MIN_SHARE: u64 = 90;

/// Each field a model keeps and the names it is found under, the derive's default first.
const ROLES: [(&str, &[&str]); 6] = [
    ("parent", &["parent", "parentId", "parent_id", "parentID"]),
    (
        "children",
        &[
            "children",
            "childIds",
            "child_ids",
            "childrenIds",
            "children_ids",
        ],
    ),
    ("ancestors", &["ancestors", "ancestorIds", "ancestor_ids"]),
    ("path", &["path", "materializedPath", "materialized_path"]),
    ("left", &["left", "lft"]),
    ("right", &["right", "rgt"]),
];

/// A field the model keeps: its role (an index into [`ROLES`]), its stored name, its profile.
type ModelField<'a> = (usize, (&'a str, &'a Field));

/// The figures of a tree finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TreeEvidence {
    /// The model in use (`#[tree(model = ...)]`).
    pub model: String,
    /// The model's fields as stored.
    pub fields: Vec<TreeField>,
    /// Sampled documents that are roots (no parent, an empty path...; unknown for child
    /// references, where a root is in no array).
    pub roots: Option<u64>,
    /// Distinct referenced `_id`s looked up.
    pub looked_up: u64,
    /// How many of them name a document of the collection.
    pub resolved: u64,
    /// Ancestors per node (ancestors and materialized paths).
    pub depth: Option<Distribution>,
}

/// One field of the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TreeField {
    /// Its role: `parent`, `children`, `ancestors`, `path`, `left`, `right`.
    pub role: String,
    /// Its stored name.
    pub name: String,
    /// Sampled documents holding it.
    pub documents: u64,
}

/// The tree that fits, if any (reads: one `find` of the referenced `_id`s).
pub(super) async fn find<S: Store>(
    store: &S,
    s: &Sample<'_>,
    reads: &mut Vec<Read>,
) -> Result<Option<Finding>> {
    let shape = &s.profile.shape;
    let n = s.profile.documents;
    let Some(id_field) = shape.fields.get("_id") else {
        return Ok(None);
    };
    let Some(id_rust) = key_type(id_field) else {
        return Ok(None);
    };
    let id_types: &[BsonType] = match id_rust {
        // Integers compare by value: a reference stored as `long` names an `int` `_id`.
        "i32" | "i64" => &[BsonType::Int, BsonType::Long],
        "String" => &[BsonType::String],
        _ => &[BsonType::ObjectId],
    };
    let enough = |f: &Field| f.present * 100 >= n * TREE_MIN_SHARE;
    let ids = |f: &Field| f.non_null() == 0 || f.only(id_types);
    let array_of_ids = |f: &Field| {
        f.only(&[BsonType::Array])
            && f.elements
                .as_ref()
                .is_none_or(|e| e.present == 0 || e.only(id_types))
    };
    let role = |r: usize, fits: &dyn Fn(&Field) -> bool| -> Option<(&'static str, &Field)> {
        let (_, names) = ROLES[r];
        names.iter().find_map(|name| {
            let f = shape.fields.get(*name)?;
            (enough(f) && fits(f)).then_some((*name, f))
        })
    };
    let parent = role(0, &|f| ids(f) && f.non_null() > 0);
    let children = role(1, &array_of_ids);
    let ancestors = role(2, &array_of_ids);
    let path = role(3, &|f| {
        id_rust == "String" && f.only(&[BsonType::String]) && f.paths == f.non_null()
    });
    let left = role(4, &|f| f.only(&[BsonType::Int, BsonType::Long]));
    let right = role(5, &|f| f.only(&[BsonType::Int, BsonType::Long]));
    use TreeModel::*;
    let (model, fields): (TreeModel, Vec<ModelField<'_>>) =
        match (parent, children, ancestors, path, left, right) {
            (Some(p), _, _, _, Some(l), Some(r)) => (NestedSet, vec![(0, p), (4, l), (5, r)]),
            (_, _, _, Some(pa), _, _) => (MaterializedPath, vec![(3, pa)]),
            (Some(p), _, Some(a), _, _, _) => (Ancestors, vec![(2, a), (0, p)]),
            (_, Some(c), _, _, _, _) => (ChildRefs, vec![(1, c)]),
            (Some(p), _, _, _, _, _) => (ParentRefs, vec![(0, p)]),
            _ => return Ok(None),
        };
    // The `_id`s the model's fields name, and the documents that are roots.
    let mut refs: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut values: Vec<Bson> = Vec::new();
    let mut add = |b: &Bson| {
        if refs.len() < LOOKED_UP && refs.insert(value_key(b)) {
            values.push(b.clone());
        }
    };
    let mut depth = Histogram::new();
    let (_, main) = fields[0].1;
    let roots = match model {
        ChildRefs => {
            for (v, _) in main
                .elements
                .as_ref()
                .map(|e| e.values.values())
                .into_iter()
                .flatten()
            {
                add(v);
            }
            None
        }
        MaterializedPath => {
            let mut roots = main.count(BsonType::Null) + (n - main.present);
            for (v, count) in main.values.values() {
                let parts: Vec<&str> = v
                    .as_str()
                    .unwrap_or("")
                    .split(',')
                    .filter(|x| !x.is_empty())
                    .collect();
                for part in &parts {
                    add(&Bson::String((*part).to_owned()));
                }
                for _ in 0..*count {
                    depth.record(parts.len() as u64);
                }
                if parts.is_empty() {
                    roots += count;
                }
            }
            Some(roots)
        }
        _ => {
            let (_, p) = parent.expect("these models keep a parent");
            for (v, _) in p.values.values() {
                add(v);
            }
            if let (Ancestors, Some((_, a))) = (model, ancestors) {
                depth = a.lengths.clone();
            }
            Some(p.count(BsonType::Null) + (n - p.present))
        }
    };
    let looked_up = values.len() as u64;
    if looked_up == 0 {
        return Ok(None);
    }
    let found = store
        .find(
            s.coll.name,
            &Filter::In("_id".into(), values),
            &FindOptions {
                projection: vec![Path::from("_id")],
                comment: Some(ADVISE_READ),
                ..FindOptions::default()
            },
        )
        .await?;
    let resolved = found.len() as u64;
    reads.push(Read::new(
        "find",
        &format!("the {looked_up} `_id`s the tree's fields name"),
        resolved,
    ));
    if resolved * 100 < looked_up * TREE_MIN_RESOLVED {
        return Ok(None);
    }
    let confidence = if resolved == looked_up && looked_up >= 10 {
        Confidence::High
    } else {
        Confidence::Medium
    };
    let tree_fields: Vec<TreeField> = (fields.iter())
        .map(|(r, (name, f))| TreeField {
            role: ROLES[*r].0.to_owned(),
            name: (*name).to_owned(),
            documents: f.present,
        })
        .collect();
    let roots_said = match roots {
        Some(r) => format!("; {r} sampled document(s) are roots"),
        None => String::new(),
    };
    let referencing = match model {
        ChildRefs | MaterializedPath => fields[0].1 .0,
        _ => parent.map_or("", |(name, _)| name),
    };
    let reason = format!(
        "`{referencing}` holds `_id`s of other documents of `{}`: {resolved} of the {looked_up} looked up exist \
         ({}){roots_said}: a tree kept as {} (model `{}`)",
        s.coll.name,
        percent(resolved, looked_up),
        model_words(model),
        model.name(),
    );
    let model_fields: Vec<&str> = fields.iter().map(|(_, (name, _))| *name).collect();
    let evidence = TreeEvidence {
        model: model.name().to_owned(),
        fields: tree_fields,
        roots,
        looked_up,
        resolved,
        depth: (depth.count() > 0).then(|| depth.distribution()),
    };
    let mut f = Finding::new(Evidence::Tree(evidence), confidence, reason);
    f.code = Some(code(s, model, id_rust, &fields, &model_fields));
    f.notes.push(format!(
        "Nothing to move: the data is in the {} model already. `{}::verify(&store)` lists what does not hold \
         (a parent that does not exist, a cycle, numbers that do not nest), and `repair` rebuilds the model's \
         fields from the parent links.",
        model.name(),
        type_ident(&singular(s.coll.name))
    ));
    Ok(Some(f))
}

fn model_words(m: TreeModel) -> &'static str {
    match m {
        TreeModel::ParentRefs => "parent references",
        TreeModel::ChildRefs => "child references",
        TreeModel::Ancestors => "an array of ancestors",
        TreeModel::MaterializedPath => "materialized paths",
        TreeModel::NestedSet => "nested sets",
    }
}

/// The struct: the node's own fields (every sampled field but the model's), the model and
/// the model's field names where they are not the derive's defaults.
fn code(
    s: &Sample<'_>,
    model: TreeModel,
    id_rust: &str,
    fields: &[ModelField<'_>],
    model_fields: &[&str],
) -> String {
    let mut code = Code::default();
    let name = code.type_name(&type_ident(&singular(s.coll.name)));
    code.uses("pattern_core::Tree");
    code.uses("serde::{Deserialize, Serialize}");
    let own = (code.fields(&s.profile.shape, model_fields).into_iter())
        .map(|(stored, mut f)| {
            if stored == "_id" {
                f.ty = id_rust.to_owned();
            }
            f
        })
        .collect();
    let defaults = TreeFields::SEED;
    let default_of = |role: &str| match role {
        "parent" => defaults.parent,
        "children" => defaults.children,
        "ancestors" => defaults.ancestors,
        "path" => defaults.path,
        "left" => defaults.left,
        _ => defaults.right,
    };
    let mut attrs = format!(
        "#[tree(collection = {}, model = {}",
        string_literal(s.coll.name),
        string_literal(model.name())
    );
    for (r, (stored, _)) in fields {
        let role = ROLES[*r].0;
        if *stored != default_of(role) {
            attrs.push_str(&format!(", {role} = {}", string_literal(stored)));
        }
    }
    attrs.push_str(")]");
    code.push_struct(&Item {
        doc: vec![format!(
            "`{}`: a node's own fields; the model's are kept beside them.",
            s.coll.name
        )],
        derives: vec!["Tree", "Serialize", "Deserialize"],
        attrs: vec![attrs],
        name,
        fields: own,
    });
    code.render()
}
