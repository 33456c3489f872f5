//! `#[derive(Bucket)]`: [`parse`] reads the struct and its attributes into a [`Bucket`]
//! model (reporting every mistake at once), [`expand`] writes the code from the model alone.

mod expand;
mod parse;
#[cfg(test)]
mod tests;

use proc_macro2::{Ident, TokenStream};
use syn::{DeriveInput, Member, Type, Visibility};

use crate::names::Name;

/// What `#[derive(Bucket)]` generates code from.
pub(crate) struct Bucket<'a> {
    pub ident: &'a Ident,
    /// The struct's visibility, which `<Name>Summary` shares.
    pub vis: &'a Visibility,
    pub collection: String,
    pub size: u32,
    /// The item's field named by `time = "..."`, spanned at that literal (so that rustc's
    /// "no field" error points there).
    pub time: Option<Member>,
    /// `span = "1d"` or `granularity = "..."`, in milliseconds (only with `time`).
    pub span: Option<i64>,
    pub key_field: String,
    pub items_field: String,
    pub count_field: String,
    pub page_field: String,
    pub key_ty: &'a Type,
    pub item_ty: &'a Type,
    /// `summary(...)`'s aggregates in the attribute's order; empty without it.
    pub summary: Vec<Aggregate>,
    /// `rollup`: one document per key keeps the summary of its whole history (needs `summary`).
    pub rollup: bool,
    /// `validate`: the writes install the layout's validator.
    pub validate: bool,
}

/// What an aggregate of `summary(...)` computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Sum,
    Min,
    Max,
}

impl Op {
    pub(crate) const ALL: [Op; 3] = [Op::Sum, Op::Min, Op::Max];

    /// The key in `summary(...)`, and the suffix of the bucket field (`qty_sum`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Min => "min",
            Op::Max => "max",
        }
    }
}

/// One aggregate of `summary(...)`: `sum = "qty"`.
#[derive(Clone, Debug)]
pub(crate) struct Aggregate {
    pub op: Op,
    /// The item field's BSON name, spanned at its literal.
    pub item_field: Name,
    /// The bucket field keeping it: `<item_field>_<op>` (`qty_sum`).
    pub field: String,
    /// Its field in `<Name>Summary`: `field` when that is a Rust identifier, else `field`
    /// with every character but ASCII letters, digits and `_` replaced by `_` (and a `_`
    /// before a leading digit).
    pub rust_field: String,
}

impl Aggregate {
    pub(crate) fn new(op: Op, item_field: Name) -> Self {
        let field = format!("{}_{}", item_field.value, op.name());
        let rust_field = rust_ident(&field);
        Aggregate {
            op,
            item_field,
            field,
            rust_field,
        }
    }
}

/// `name` if it is an identifier Rust accepts as a field name, else made one.
fn rust_ident(name: &str) -> String {
    if !name.starts_with("r#") && syn::parse_str::<Ident>(name).is_ok() {
        return name.to_owned();
    }
    let mut ident: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, '_');
    }
    ident
}

/// What the fallback emitted beside errors is generated from: what could still be read of
/// the struct.
pub(crate) struct Stubs<'a> {
    pub input: &'a DeriveInput,
    /// The key field's type, when that field could be read.
    pub key_ty: Option<&'a Type>,
    /// `T` of the items field's `Vec<T>`, when that field and its type could be read.
    pub item_ty: Option<&'a Type>,
    /// The valid aggregates of `summary(...)` (their fields distinct), when it was given.
    pub summary: Option<Vec<Aggregate>>,
}

/// The derive's output: the impls, or the errors and a fallback (an impl and stubs of the
/// methods).
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    crate::codegen::or_fallback(
        parse::parse(input).map(|model| expand::expand(&model)),
        || expand::fallback(&parse::stubs(input)),
    )
}
