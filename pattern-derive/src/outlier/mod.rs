//! `#[derive(Outlier)]`: [`parse`] reads the struct and its attributes into an [`Outlier`]
//! model (reporting every mistake at once), [`expand`] writes the code from the model alone.

mod expand;
mod parse;
#[cfg(test)]
mod tests;

use proc_macro2::{Ident, TokenStream};
use syn::{DeriveInput, Type};

/// What `#[derive(Outlier)]` generates code from.
pub(crate) struct Outlier<'a> {
    pub ident: &'a Ident,
    pub collection: String,
    pub overflow: String,
    pub threshold: u32,
    /// `None`: `pattern_core::outlier::DEFAULT_CHUNK`.
    pub chunk: Option<u32>,
    pub flag: String,
    pub owner: String,
    pub extra: String,
    pub count: String,
    pub seq: String,
    pub id_ty: &'a Type,
    pub item_ty: &'a Type,
    /// The items field's BSON name.
    pub items_field: String,
    /// `validate`: the writes install the layout's validators.
    pub validate: bool,
}

/// What the fallback emitted beside errors is generated from: what could still be read of
/// the struct.
pub(crate) struct Stubs<'a> {
    pub input: &'a DeriveInput,
    /// `T` of the items field's `Vec<T>`, when that field and its type could be read.
    pub item_ty: Option<&'a Type>,
}

/// The derive's output: the impls, or the errors and a fallback (an impl and stubs of the
/// methods).
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    crate::codegen::or_fallback(
        parse::parse(input).map(|model| expand::expand(&model)),
        || expand::fallback(&parse::stubs(input)),
    )
}
