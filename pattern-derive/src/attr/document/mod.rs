//! `#[document(...)]`: a struct's keys ([`Document`]) and its fields' ([`Field`]); an enum's
//! keys ([`Polymorphic`]).

mod field;
mod polymorphic;
mod references;
mod related;
mod versions;

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::Ident;

pub(crate) use field::{is_option, Field, Money, Within};
#[cfg(test)]
pub(crate) use field::{money_form, Normalize};
pub(crate) use polymorphic::Polymorphic;
pub(crate) use references::ReferencedBy;
pub(crate) use related::{ArchiveAttr, ComputedAttr, SubsetAttr};
pub(crate) use versions::Versioning;

use super::serde::unraw;
use super::Slot;
use crate::ast;
use crate::ctxt::Ctxt;
use crate::names::Name;

const ATTR: &str = "document";

/// The struct's `#[document(...)]` keys.
#[derive(Default)]
pub(crate) struct Document {
    pub collection: Slot<Name>,
    pub version: Slot<(u32, Span)>,
    pub version_field: Slot<Name>,
    pub unversioned: Slot<(u32, Span)>,
    pub previous: Slot<Vec<(syn::Path, u32, Span)>>,
    pub write_back: Slot<Span>,
    /// `history = "..."`: the history collection.
    pub history: Slot<Name>,
    /// `computed(parent = ..., key = ..., ...)`, at its key.
    pub computed: Slot<(ComputedAttr, Span)>,
    /// `subset(parent = ..., key = ..., into = ..., keep = N, order = ...)`, at its key.
    pub subset: Slot<(SubsetAttr, Span)>,
    /// `referenced_by(Film = director, ...)`: each referencing type and its field.
    pub referenced_by: Slot<ReferencedBy>,
    pub fan_out: Slot<(u32, Span)>,
    pub deferred: Slot<Span>,
    /// `variant_of = Product`: this struct is a variant of a polymorphic enum.
    pub variant_of: Slot<syn::Path>,
    /// `archive(age = created, pin = pinned)`: the Rust names of the age field and the flag.
    pub archive: Slot<ArchiveAttr>,
}

impl ast::Attrs for Document {
    const DERIVE: &'static str = "Document";
    const ATTR: &'static str = ATTR;
    const KEYS_BEFORE_NAME: bool = true;
    type Field = Field;

    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        if meta.path.is_ident("collection") {
            // #[document(collection = "books")]
            self.collection.parse(cx, meta, super::collection)
        } else if meta.path.is_ident("version") {
            // #[document(version = 3)]
            self.version.parse(cx, meta, versions::version_number)
        } else if meta.path.is_ident("version_field") {
            self.version_field.parse(cx, meta, super::field_name)
        } else if meta.path.is_ident("unversioned") {
            self.unversioned.parse(cx, meta, versions::version_number)
        } else if meta.path.is_ident("previous") {
            // #[document(previous(PersonV1 = 1, PersonV2 = 2))]
            self.previous.parse(cx, meta, versions::previous)
        } else if meta.path.is_ident("write_back") {
            self.write_back.parse(cx, meta, super::flag_at)
        } else if meta.path.is_ident("history") {
            // #[document(history = "books_history")]
            self.history.parse(cx, meta, super::collection)
        } else if meta.path.is_ident("computed") {
            // #[document(computed(parent = Film, key = film_id, count = reviews, sum(rating = rating_sum)))]
            self.computed.parse(cx, meta, related::computed_attr)
        } else if meta.path.is_ident("subset") {
            // #[document(subset(parent = Film, key = film_id, into = recent, keep = 10, order = date))]
            self.subset.parse(cx, meta, related::subset_attr)
        } else if meta.path.is_ident("referenced_by") {
            // #[document(referenced_by(Film = director))]
            self.referenced_by
                .parse(cx, meta, references::referenced_by)
        } else if meta.path.is_ident("fan_out") {
            let span = meta.path.span();
            self.fan_out.parse(cx, meta, |cx, m| {
                Ok(super::positive_int(cx, m)?.map(|n| (n, span)))
            })
        } else if meta.path.is_ident("deferred") {
            self.deferred.parse(cx, meta, super::flag_at)
        } else if meta.path.is_ident("archive") {
            // #[document(archive(age = created, pin = pinned))]
            self.archive.parse(cx, meta, related::archive_attr)
        } else if meta.path.is_ident("variant_of") {
            // #[document(variant_of = Product)]
            self.variant_of.parse(cx, meta, super::type_path)
        } else if meta.path.is_ident("reference") {
            super::refuse(
                cx,
                meta,
                "`reference` goes on a field: #[document(reference)] above a field holding a \
                 #[derive(Reference)] type",
            )
        } else if meta.path.is_ident("keywords") {
            super::refuse(
                cx,
                meta,
                "`keywords` goes on a field: #[document(keywords)] above a `Vec<String>` field",
            )
        } else {
            super::unknown(
                cx,
                meta,
                ATTR,
                &[
                    "collection",
                    "version",
                    "previous",
                    "version_field",
                    "unversioned",
                    "write_back",
                    "history",
                    "computed",
                    "subset",
                    "referenced_by",
                    "fan_out",
                    "deferred",
                    "variant_of",
                    "archive",
                ],
            )
        }
    }

    /// serde's keys no typed path follows (each an error), the money adapter it names, then
    /// its `#[document(...)]` keys.
    fn field(cx: &Ctxt, field: &syn::Field) -> Field {
        field::read(cx, field)
    }
}

/// The typed path's constant of a field: `AVAILABLE` for `available` (`TYPE` for `r#type`), at
/// the field name's span.
pub(crate) fn const_name(ident: &Ident) -> Ident {
    Ident::new(&unraw(ident).to_uppercase(), ident.span())
}
