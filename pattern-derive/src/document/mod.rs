//! `#[derive(Document)]`: [`parse`] reads the struct and its attributes into a [`Doc`] model
//! (reporting every mistake at once), [`expand`] writes the code from the model alone.

mod expand;
mod parse;
mod polymorphic;
#[cfg(test)]
mod tests;

use proc_macro2::{Ident, TokenStream};
use syn::{DeriveInput, Type};

/// What `#[derive(Document)]` generates code from.
pub(crate) struct Doc<'a> {
    pub ident: &'a Ident,
    pub collection: String,
    /// The field stored as `_id`, and its type (the trait's `Id`).
    pub id_field: &'a Ident,
    pub id_ty: &'a Type,
    /// Every field serde stores, as a typed path.
    pub fields: Vec<Typed<'a>>,
    /// The keyword arrays: their BSON names and how their keywords are normalised.
    pub keywords: Vec<(String, Normalize)>,
    /// `version = N`, `previous(...)`...: schema versioning.
    pub versioning: Option<Versioning>,
    /// `history = "..."`: the history collection.
    pub history: Option<String>,
    /// `#[document(approximate(every = N))]` fields: the field's ident, BSON name and `N`.
    pub approximate: Vec<(&'a Ident, String, u32)>,
    /// `computed(parent = ..., key = ..., ...)`.
    pub computed: Option<ComputedAttr>,
    /// `subset(parent = ..., key = ..., into = ..., keep = N, order = ...)`.
    pub subset: Option<SubsetAttr>,
    /// `#[document(reference)]` fields: the typed path's constant, the field's type, the
    /// key's span.
    pub references: Vec<(Ident, &'a Type, proc_macro2::Span, Option<Within>)>,
    /// `referenced_by(Film = director, ...)`: each referencing type and its field.
    pub referenced_by: Vec<(syn::Path, Ident, Option<Ident>)>,
    /// `fan_out = N` and `deferred` (a type with `referenced_by`).
    pub propagation: Option<(u32, bool)>,
    /// `#[document(attributes)]` fields: the typed path's constant and the key's span.
    pub attributes: Vec<(Ident, proc_macro2::Span)>,
    /// `#[document(index)]` fields: their BSON names.
    pub indexed: Vec<String>,
    /// Every stored field: its BSON name, whether every document has it, its BSON types
    /// (`pattern_core::spec::BsonType` variants; empty: any). A variant's `STORED`.
    pub shape: Vec<(String, bool, &'static [&'static str])>,
    /// `variant_of = Product`: this struct is a variant of a polymorphic enum.
    pub variant_of: Option<syn::Path>,
    /// `archive(age = created, pin = pinned)`: the Rust names of the age field and the flag.
    pub archive: Option<(Ident, Option<Ident>)>,
}

/// What `#[document(subset(parent = Film, key = film_id, into = recent, keep = 10, order =
/// date))]` declares (Rust field names: the child's `key` and `order`, the parent's `into`).
pub(crate) struct SubsetAttr {
    pub parent: syn::Path,
    pub key: Ident,
    pub into: Ident,
    pub keep: u32,
    pub order: Ident,
}

/// What `#[document(computed(parent = Film, key = film_id, count = reviews, sum(rating =
/// rating_sum), ...))]` declares: the parent type, the child's key field, the parent's count
/// field, and each aggregate (`Sum`, `Min`, `Max`, `Avg`) of a child field into a parent field.
pub(crate) struct ComputedAttr {
    pub parent: syn::Path,
    pub key: Ident,
    pub count: Option<Ident>,
    pub aggregates: Vec<(&'static str, Ident, Ident)>,
}

/// What `#[document(version = N, previous(T1 = 1, ...), ...)]` declares.
pub(crate) struct Versioning {
    pub current: u32,
    pub field: String,
    pub unversioned: u32,
    pub write_back: bool,
    /// The previous versions' types, by number, ascending and contiguous up to `current - 1`.
    pub previous: Vec<(u32, syn::Path)>,
}

/// A field's typed path: the constant's name (`AVAILABLE`), the field's type, its BSON name,
/// and the money form its serde adapter stores it in (`None`: as its type).
pub(crate) struct Typed<'a> {
    pub konst: Ident,
    pub ident: &'a Ident,
    pub ty: &'a Type,
    pub bson: String,
    pub money: Option<Money>,
}

/// How one of the library's money adapters stores a `Decimal` (or `Option<Decimal>`) field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Money {
    Decimal128 { option: bool },
    Text { option: bool },
    Scaled(u32),
}

/// `pattern_core::spec::Normalize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Normalize {
    AsIs,
    Lowercase,
}

impl Normalize {
    /// The variant of `pattern_core::spec::Normalize`.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Normalize::AsIs => "AsIs",
            Normalize::Lowercase => "Lowercase",
        }
    }
}

/// The derive's output: the impls, or the errors and a fallback (an impl, the typed paths that
/// could be read and stubs of the methods).
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    if let syn::Data::Enum(_) = input.data {
        return polymorphic::derive(input);
    }
    crate::codegen::or_fallback(
        parse::parse(input).map(|model| expand::expand(&model)),
        || {
            let (fields, counters) = parse::stubs(input);
            expand::fallback(input, &fields, &counters)
        },
    )
}

/// Where a `reference` field's copy is when not the field itself: `in = director` (a field of
/// the embedded document the field holds) or `each = person` (that field of each element of
/// the array the field holds).
#[derive(Clone)]
pub(crate) struct Within {
    /// `each` rather than `in`.
    pub each: bool,
    /// The embedded document's field (its Rust name, which is its stored name).
    pub field: Ident,
}
