//! `#[tree(...)]`: the struct's keys (the model, its fields' names) and the fields' flag (`id`).

use syn::meta::ParseNestedMeta;
use syn::Path;

use super::Slot;
use crate::ast;
use crate::ctxt::Ctxt;
use crate::names::Name;

pub(crate) const ATTR: &str = "tree";
const KEYS: &[&str] = &[
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
];

/// The five models of `pattern_core::spec::TreeModel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Model {
    ParentRefs,
    ChildRefs,
    Ancestors,
    MaterializedPath,
    NestedSet,
}

/// The keys renaming a model's fields, in the order of `pattern_core::spec::TreeFields` (whose
/// seed names they also are).
pub(crate) const FIELDS: [&str; 6] = ["parent", "children", "ancestors", "path", "left", "right"];

impl Model {
    pub(crate) const ALL: [Model; 5] = [
        Model::ParentRefs,
        Model::ChildRefs,
        Model::Ancestors,
        Model::MaterializedPath,
        Model::NestedSet,
    ];

    /// The attribute's spelling, `TreeModel::name`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Model::ParentRefs => "parent_refs",
            Model::ChildRefs => "child_refs",
            Model::Ancestors => "ancestors",
            Model::MaterializedPath => "materialized_path",
            Model::NestedSet => "nested_set",
        }
    }

    /// The `TreeModel` variant.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Model::ParentRefs => "ParentRefs",
            Model::ChildRefs => "ChildRefs",
            Model::Ancestors => "Ancestors",
            Model::MaterializedPath => "MaterializedPath",
            Model::NestedSet => "NestedSet",
        }
    }

    /// The fields it keeps in every node, as indexes into [`FIELDS`] (`TreeFields`' doc).
    pub(crate) fn uses(self) -> &'static [usize] {
        match self {
            Model::ParentRefs => &[0],
            Model::ChildRefs => &[1],
            Model::Ancestors => &[2, 0],
            Model::MaterializedPath => &[3],
            Model::NestedSet => &[0, 4, 5],
        }
    }
}

/// A model field renamed by `parent = "up"`...: the key (where a rename the model does not
/// use is reported) and the name.
pub(crate) struct Renamed {
    pub key: Path,
    pub name: Name,
}

/// The struct's `#[tree(...)]` keys.
#[derive(Default)]
pub(crate) struct Tree {
    pub collection: Slot<Name>,
    pub model: Slot<Model>,
    pub max_depth: Slot<u32>,
    pub validate: Slot<()>,
    /// The model fields' renames, in the order of [`FIELDS`].
    pub fields: [Slot<Renamed>; 6],
}

impl ast::Attrs for Tree {
    const DERIVE: &'static str = "Tree";
    const ATTR: &'static str = ATTR;
    /// `#[tree(id)]`.
    type Field = [bool; 1];

    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        let key = super::key_name(meta);
        match key.as_str() {
            // #[tree(collection = "categories")]
            "collection" => self.collection.parse(cx, meta, super::collection),
            // #[tree(model = "parent_refs")]
            "model" => self.model.parse(cx, meta, model),
            // #[tree(max_depth = 5)]
            "max_depth" => self.max_depth.parse(cx, meta, super::positive_int),
            // #[tree(validate)]
            "validate" => self.validate.parse(cx, meta, super::flag),
            // #[tree(parent = "up")], #[tree(left = "lft")]...
            _ => match FIELDS.iter().position(|f| *f == key) {
                Some(i) => self.fields[i].parse(cx, meta, renamed),
                None => super::unknown(cx, meta, ATTR, KEYS),
            },
        }
    }

    fn field(cx: &Ctxt, field: &syn::Field) -> [bool; 1] {
        super::flags(cx, &field.attrs, ATTR, ["id"])
    }
}

impl Tree {
    /// The names of `pattern_core::spec::TreeFields`, in the order of [`FIELDS`]: the user's
    /// renames, else the seed's names.
    pub(crate) fn names(&self) -> [Name; 6] {
        std::array::from_fn(|i| match self.fields[i].value() {
            Some(r) => r.name.clone(),
            None => Name::default(FIELDS[i]),
        })
    }
}

/// `model = "parent_refs"`: one of the five.
fn model(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Model>> {
    let Some(lit) = super::string(cx, meta)? else {
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
    Ok(super::field_name(cx, meta)?.map(|name| Renamed { key, name }))
}
