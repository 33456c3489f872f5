//! `#[derive(Bucket)]`: [`parse`] reads the struct and its attributes into a [`Bucket`]
//! model (reporting every mistake at once), [`expand`] writes the code from the model alone.

mod expand;
mod parse;
#[cfg(test)]
mod tests;

use proc_macro2::{Ident, TokenStream};
use syn::{DeriveInput, Member, Type};

/// What `#[derive(Bucket)]` generates code from.
pub(crate) struct Bucket<'a> {
    pub ident: &'a Ident,
    pub collection: String,
    pub size: u32,
    /// The item's field named by `time = "..."`, spanned at that literal (so that rustc's
    /// "no field" error points there).
    pub time: Option<Member>,
    pub key_field: String,
    pub items_field: String,
    pub count_field: String,
    pub page_field: String,
    pub key_ty: &'a Type,
    pub item_ty: &'a Type,
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
