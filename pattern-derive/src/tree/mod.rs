//! `#[derive(Tree)]`: [`parse`] reads the struct and its attributes into a [`Tree`] model
//! (reporting every mistake at once), [`expand`] writes the code from the model alone.

mod expand;
mod parse;
#[cfg(test)]
mod tests;

use proc_macro2::{Ident, TokenStream};
use syn::{DeriveInput, Type};

/// What `#[derive(Tree)]` generates code from.
pub(crate) struct Tree<'a> {
    pub ident: &'a Ident,
    pub collection: String,
    pub model: Model,
    /// The names of `pattern_core::spec::TreeFields`, in the order of [`FIELDS`]: the user's
    /// renames, else the seed's names.
    pub fields: [String; 6],
    pub max_depth: Option<u32>,
    /// The field stored as `_id`, and its type (the trait's `Id`).
    pub id_field: &'a Ident,
    pub id_ty: &'a Type,
    /// The `pattern_core::spec::BsonType` variants the ids are stored as (see
    /// [`crate::bson_type::bson_types`]); empty when the id type does not say.
    pub id_types: &'static [&'static str],
    /// `validate`: the writes install the model's validator.
    pub validate: bool,
}

/// What the fallback emitted beside errors is generated from: what could still be read of
/// the struct.
pub(crate) struct Stubs<'a> {
    pub input: &'a DeriveInput,
    /// The id field's type, when a field is marked `#[tree(id)]` or stored as `_id`: the
    /// stubs take ids of that type (else of any type).
    pub id_ty: Option<&'a Type>,
}

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

/// The derive's output: the impls, or the errors and a fallback (an impl and stubs of the
/// methods).
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    crate::codegen::or_fallback(
        parse::parse(input).map(|model| expand::expand(&model)),
        || expand::fallback(&parse::stubs(input)),
    )
}
