//! `#[derive(Tree)]`'s checks: the required keys, the model's field names (renamed only where
//! the model keeps them, distinct, none a field of the struct's), and the node's id.

use crate::ast::{Container, Field};
use crate::attr::serde::unraw;
use crate::attr::tree::{Model, Tree, FIELDS};
use crate::ctxt::Ctxt;
use crate::names::{check_distinct, Name};

const MISSING_MODEL: &str = "#[tree(model = \"...\")]: one of \"parent_refs\", \"child_refs\", \
                             \"ancestors\", \"materialized_path\", \"nested_set\"";

pub(crate) fn tree(cx: &Ctxt, cont: &Container<Tree>) {
    let a = &cont.attrs;
    a.collection
        .required(cx, cont.ident, "#[tree(collection = \"...\")]");
    let model = a.model.required(cx, cont.ident, MISSING_MODEL).copied();
    if let Some(model) = model {
        for (i, r) in a.fields.iter().enumerate() {
            if let Some(r) = r.value().filter(|_| !model.uses().contains(&i)) {
                cx.error_spanned_by(&r.key, unused_rename(model, FIELDS[i]));
            }
        }
    }
    let names = a.names();
    id_field(cx, cont);
    if let Some(model) = model {
        let kept: Vec<(&str, &Name)> = model
            .uses()
            .iter()
            .map(|&i| (FIELDS[i], &names[i]))
            .collect();
        check_distinct(cx, &kept, cont.ident.span());
        check_clashes(cx, cont, model, &kept);
    }
}

/// `children = "..."` on a parent-references tree: which models keep that field.
fn unused_rename(model: Model, field: &str) -> String {
    let users: Vec<&str> = Model::ALL
        .into_iter()
        .filter(|m| m.uses().iter().any(|&i| FIELDS[i] == field))
        .map(Model::name)
        .collect();
    let users = match users.as_slice() {
        [one] => format!("only {one} does"),
        [init @ .., last] => format!("only {} and {last} do", init.join(", ")),
        [] => unreachable!("every field is some model's"),
    };
    format!(
        "the {} model keeps no `{field}` field ({users}); remove `{field} = ...`",
        model.name()
    )
}

/// The field stored as `_id` is the node's id: exactly one, and the field marked `#[tree(id)]`
/// if one is.
fn id_field(cx: &Ctxt, cont: &Container<Tree>) {
    let Some(fields) = cont.fields() else {
        return;
    };
    let mut marked: Option<&Field<[bool; 1]>> = None;
    for f in fields.iter().filter(|f| f.attrs[0]) {
        if let Some(first) = marked {
            let msg = format!(
                "only one field may be #[tree(id)]; `{}` already is",
                unraw(first.ident)
            );
            cx.error_spanned_by(f.ident, msg);
            continue;
        }
        marked = Some(f);
        if f.bson.value != "_id" {
            cx.error_spanned_by(
                f.ident,
                "the #[tree(id)] field must be stored as `_id`: add #[serde(rename = \"_id\")]",
            );
        }
    }
    let mut stored = fields.iter().filter(|f| f.bson.value == "_id");
    let first = stored.next();
    for f in stored {
        let msg = format!(
            "`{}` and `{}` are both stored as `_id`; a node has one id",
            unraw(first.expect("a first").ident),
            unraw(f.ident)
        );
        cx.error_at(f.bson.span.unwrap_or(f.ident.span()), msg);
    }
    if first.is_none() && marked.is_none() {
        cx.error_spanned_by(
            cont.ident,
            "a tree node needs its id stored as `_id`: add #[serde(rename = \"_id\")] to the id field",
        );
    }
}

/// The model's fields are written into every node beside the struct's: no field of the
/// struct may be stored under one of their names.
fn check_clashes(cx: &Ctxt, cont: &Container<Tree>, model: Model, kept: &[(&str, &Name)]) {
    for f in cont.fields().into_iter().flatten() {
        // `_id` as a model field's name is reported by `check_distinct`.
        let Some((key, name)) = kept
            .iter()
            .find(|(_, n)| n.value == f.bson.value && n.value != "_id")
        else {
            continue;
        };
        let msg = format!(
            "field `{}` is stored as {:?}, where the {} model keeps {} in every node; rename the field \
             (#[serde(rename = \"...\")]) or the model's (#[tree({key} = \"...\")])",
            unraw(f.ident),
            name.value,
            model.name(),
            meaning(key),
        );
        cx.error_at(f.bson.span.unwrap_or(f.ident.span()), msg);
    }
}

/// What a model field holds.
fn meaning(key: &str) -> &'static str {
    match key {
        "parent" => "the parent's id",
        "children" => "the children's ids",
        "ancestors" => "the ancestors' ids",
        "path" => "the ancestors' path",
        "left" => "the left number of the nested set",
        "right" => "the right number of the nested set",
        _ => unreachable!("a model field"),
    }
}
