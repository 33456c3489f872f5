//! Reading `#[derive(Tree)]`'s input into the model; every mistake is reported.

use syn::meta::ParseNestedMeta;
use syn::{Data, DeriveInput, Fields, Path};

use super::{Model, Stubs, Tree, FIELDS};
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::names::{check_distinct, Name};
use crate::serde_names::{self, unraw};
use crate::shape::{Field, Kind, Struct};

const KIND: Kind<1> = Kind {
    derive: "Tree",
    attr: "tree",
    flags: ["id"],
    keys: &[
        "collection",
        "model",
        "max_depth",
        "parent",
        "children",
        "ancestors",
        "path",
        "left",
        "right",
        "validate",
    ],
};

const MISSING_MODEL: &str = "#[tree(model = \"...\")]: one of \"parent_refs\", \"child_refs\", \
                             \"ancestors\", \"materialized_path\", \"nested_set\"";

/// A model field renamed by `parent = "..."`...: the key (where a rename the model does not
/// use is reported) and the name.
struct Renamed {
    key: Path,
    name: Name,
}

#[derive(Default)]
struct Attrs {
    collection: Slot<Name>,
    model: Slot<Model>,
    max_depth: Slot<u32>,
    validate: Slot<()>,
    /// In the order of [`FIELDS`].
    fields: [Slot<Renamed>; 6],
}

pub(crate) fn parse(input: &DeriveInput) -> syn::Result<Tree<'_>> {
    KIND.parse(input, container, check)
}

/// What the stubs beside `parse`'s errors can use: the id field's type (the field marked
/// `#[tree(id)]`, else the one stored as `_id`), read again with the errors dropped (`parse`
/// reported them).
pub(crate) fn stubs(input: &DeriveInput) -> Stubs<'_> {
    let Data::Struct(data) = &input.data else {
        return Stubs { input, id_ty: None };
    };
    let Fields::Named(named) = &data.fields else {
        return Stubs { input, id_ty: None };
    };
    let quiet = Ctxt::new();
    let rule = serde_names::rename_all(&quiet, &input.attrs);
    let marked = named
        .named
        .iter()
        .find(|f| attr::flags(&quiet, &f.attrs, "tree", ["id"])[0]);
    let stored = named.named.iter().find(|f| {
        let ident = f.ident.as_ref().expect("named field");
        serde_names::field_name(&quiet, ident, &f.attrs, rule).value == "_id"
    });
    drop(quiet.check());
    Stubs {
        input,
        id_ty: marked.or(stored).map(|f| &f.ty),
    }
}

fn container(cx: &Ctxt, input: &DeriveInput) -> Attrs {
    let mut a = Attrs::default();
    attr::each_key(cx, &input.attrs, "tree", |meta| {
        let key = attr::key_name(meta);
        match key.as_str() {
            // #[tree(collection = "categories")]
            "collection" => a.collection.parse(cx, meta, attr::collection),
            // #[tree(model = "parent_refs")]
            "model" => a.model.parse(cx, meta, model),
            // #[tree(max_depth = 5)]
            "max_depth" => a.max_depth.parse(cx, meta, attr::positive_int),
            // #[tree(validate)]
            "validate" => a.validate.parse(cx, meta, attr::flag),
            // #[tree(parent = "up")], #[tree(left = "lft")]...
            _ => match FIELDS.iter().position(|f| *f == key) {
                Some(i) => a.fields[i].parse(cx, meta, renamed),
                None => KIND.unknown_key(cx, meta),
            },
        }
    });
    a
}

/// `model = "parent_refs"`: one of the five.
fn model(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Model>> {
    let Some(lit) = attr::string(cx, meta)? else {
        return Ok(None);
    };
    let found = Model::ALL.into_iter().find(|m| m.name() == lit.value());
    if found.is_none() {
        cx.error_at(
            lit.span(),
            format!(
                "unknown model {:?}; expected one of: {}",
                lit.value(),
                model_list()
            ),
        );
    }
    Ok(found)
}

/// `"parent_refs", "child_refs", ...`
fn model_list() -> String {
    Model::ALL.map(|m| format!("{:?}", m.name())).join(", ")
}

/// `parent = "up"`: a BSON field name, with its key.
fn renamed(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Renamed>> {
    let key = meta.path.clone();
    Ok(attr::field_name(cx, meta)?.map(|name| Renamed { key, name }))
}

/// The checks that span several attributes, then the model.
fn check<'a>(cx: &Ctxt, st: &Struct<'a, 1>, a: Attrs) -> Option<Tree<'a>> {
    let collection = a
        .collection
        .required(cx, st.ident, "#[tree(collection = \"...\")]");
    let model = a.model.required(cx, st.ident, MISSING_MODEL);
    let max_depth = a.max_depth.get();
    let renamed = a.fields.map(Slot::get);
    if let Some(model) = model {
        for (i, r) in renamed.iter().enumerate() {
            if let Some(r) = r.as_ref().filter(|_| !model.uses().contains(&i)) {
                cx.error_spanned_by(&r.key, unused_rename(model, FIELDS[i]));
            }
        }
    }
    let names: [Name; 6] = std::array::from_fn(|i| match &renamed[i] {
        Some(r) => r.name.clone(),
        None => Name::default(FIELDS[i]),
    });
    let id = id_field(cx, st);
    if let Some(model) = model {
        let kept: Vec<(&str, &Name)> = model
            .uses()
            .iter()
            .map(|&i| (FIELDS[i], &names[i]))
            .collect();
        check_distinct(cx, &kept, st.ident.span());
        check_clashes(cx, st, model, &kept);
    }
    let id = id?;
    Some(Tree {
        ident: st.ident,
        collection: collection?.value,
        model: model?,
        fields: names.map(|n| n.value),
        max_depth,
        id_field: id.ident,
        id_ty: id.ty,
        id_types: crate::bson_type::bson_types(id.ty, id.as_is),
        validate: a.validate.get().is_some(),
    })
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

/// The field stored as `_id`, which is the node's id: exactly one, and the field marked
/// `#[tree(id)]` if one is.
fn id_field<'s, 'a>(cx: &Ctxt, st: &'s Struct<'a, 1>) -> Option<&'s Field<'a, 1>> {
    let fields = st.fields.as_ref()?;
    let mut marked: Option<&Field<'a, 1>> = None;
    for f in fields.iter().filter(|f| f.flags[0]) {
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
            st.ident,
            "a tree node needs its id stored as `_id`: add #[serde(rename = \"_id\")] to the id field",
        );
    }
    first
}

/// The model's fields are written into every node beside the struct's: no field of the
/// struct may be stored under one of their names.
fn check_clashes(cx: &Ctxt, st: &Struct<'_, 1>, model: Model, kept: &[(&str, &Name)]) {
    for f in st.fields.iter().flatten() {
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
