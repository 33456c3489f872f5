//! `#[derive(Document)]`'s cross-attribute checks, in one pass after parsing: every rule that
//! spans two keys of the container, the container and the fields, or several fields. The
//! parsers read one key at a time (its syntax, its own values); what a combination of keys
//! means is decided here, and reported in the order a reader meets the keys.

use proc_macro2::Span;
use syn::DeriveInput;

use super::field::keyword_checks;
use super::related::{approximate_checks, ArchiveAttr};
use super::versions::kept_field_clashes;
use super::{references, Read};
use crate::ctxt::Ctxt;
use crate::document::{ComputedAttr, SubsetAttr, Versioning};
use crate::names::Name;
use crate::serde_names::unraw;

/// What the parsers read, before any combination is checked.
pub(super) struct Parsed<'p, 'a> {
    pub input: &'a DeriveInput,
    /// The documents' collection (an empty name for a variant's).
    pub collection: Option<&'p Name>,
    /// `collection` given on a variant (reported: a variant has its enum's).
    pub variant_collection: Option<&'p Name>,
    pub variant_of: bool,
    pub versioning: Option<&'p Versioning>,
    pub history: Option<&'p Name>,
    pub computed: Option<&'p (ComputedAttr, Span)>,
    pub subset: Option<&'p (SubsetAttr, Span)>,
    pub archive: Option<&'p ArchiveAttr>,
    /// The fields, when the input has named fields.
    pub fields: Option<&'p [Read<'a>]>,
}

/// Reports every combination of keys that does not hold.
pub(super) fn check(cx: &Ctxt, p: &Parsed) {
    container(cx, p);
    if let Some(fields) = p.fields {
        container_and_fields(cx, p, fields);
        across_fields(cx, p.input, fields);
    }
}

/// The container's keys with each other.
fn container(cx: &Ctxt, p: &Parsed) {
    if let Some(name) = p.variant_collection {
        cx.error_at(
            name.span.unwrap_or_else(Span::call_site),
            "a variant's documents live in its enum's collection: remove `collection`",
        );
    }
    if let (Some(h), true) = (p.history, p.variant_of) {
        cx.error_at(
            h.span.unwrap_or_else(Span::call_site),
            "a polymorphic collection keeps one history, its enum's: declare \
             `history = \"...\"` on the enum (every variant's writes record in it)",
        );
    }
    if let (Some(h), Some(coll)) = (p.history, p.collection) {
        if h.value == coll.value {
            cx.error_at(
                h.span.unwrap_or_else(Span::call_site),
                "the history collection must be another collection than the documents'",
            );
        }
    }
}

/// The container's keys against the fields: the fields they name, the field keys they rule out.
fn container_and_fields(cx: &Ctxt, p: &Parsed, fields: &[Read]) {
    kept_field_clashes(cx, fields, p.versioning, p.history.is_some());
    let stored = |ident: &syn::Ident| fields.iter().any(|r| r.stored && *r.typed.ident == *ident);
    let subset_named = p.subset.iter().flat_map(|(s, _)| [&s.key, &s.order]);
    if let Some((c, _)) = p.computed {
        let named = std::iter::once(&c.key).chain(c.aggregates.iter().map(|a| &a.1));
        for ident in named.chain(subset_named.clone()) {
            if !stored(ident) {
                cx.error_spanned_by(
                    ident,
                    format!("no stored field `{ident}` in this struct (computed names the child's fields by their Rust names)"),
                );
            }
        }
    } else {
        for ident in subset_named {
            if !stored(ident) {
                cx.error_spanned_by(
                    ident,
                    format!("no stored field `{ident}` in this struct (subset names the child's fields by their Rust names)"),
                );
            }
        }
    }
    if let Some(((age, keep), _)) = p.archive {
        for ident in std::iter::once(age).chain(keep) {
            if !stored(ident) {
                cx.error_spanned_by(
                    ident,
                    format!("no stored field `{ident}` in this struct (archive names fields by their Rust names)"),
                );
            }
        }
    }
    references::field_checks(cx, fields);
    if p.history.is_some() {
        for (_, span) in fields.iter().filter_map(|r| r.approximate) {
            cx.error_at(
                span,
                "an approximate counter writes without a revision: a type with history \
                 cannot have one (keep the counter in another type)",
            );
        }
    }
}

/// The fields with each other and each field's keys together: names, the `_id`, keywords,
/// counters, attributes and indexes.
fn across_fields(cx: &Ctxt, input: &DeriveInput, fields: &[Read]) {
    let mut id = false;
    for (i, r) in fields.iter().enumerate() {
        let f = &r.typed;
        if let Some(first) = fields[..i].iter().find(|o| o.typed.konst == f.konst) {
            cx.error_spanned_by(
                f.ident,
                format!(
                    "fields `{}` and `{}` would both be named `{}`",
                    unraw(first.typed.ident),
                    unraw(f.ident),
                    f.konst
                ),
            );
        }
        let stored = |o: &&Read| o.stored && o.typed.bson == f.bson;
        if let Some(first) = fields[..i].iter().find(stored).filter(|_| r.stored) {
            cx.error_spanned_by(
                f.ident,
                format!(
                    "fields `{}` and `{}` are both stored as {:?}",
                    unraw(first.typed.ident),
                    unraw(f.ident),
                    f.bson
                ),
            );
        }
        id |= r.stored && f.bson == "_id";
        if r.keywords.is_some() {
            keyword_checks(cx, r);
        }
        if let Some((_, span)) = r.approximate {
            approximate_checks(cx, r, span);
        }
    }
    if !id {
        cx.error_spanned_by(
            &input.ident,
            "a document needs its id stored as `_id`: add #[serde(rename = \"_id\")] to the id field",
        );
    }
    for r in fields {
        let Some(span) = r.attributes else { continue };
        let clash = [
            (r.typed.bson == "_id", "the `_id` cannot hold attributes"),
            (
                !r.stored,
                "an attributes field must be stored: remove #[serde(skip)]",
            ),
            (
                r.keywords.is_some(),
                "a field holds keywords or attributes, not both",
            ),
            (
                r.reference.is_some(),
                "a field holds a reference or attributes, not both",
            ),
        ];
        for (_, message) in clash.iter().filter(|(bad, _)| *bad) {
            cx.error_at(span, *message);
        }
    }
    for r in fields.iter().filter(|r| r.index.is_some()) {
        let span = r.index.unwrap_or_else(Span::call_site);
        if r.typed.bson == "_id" {
            cx.error_at(span, "the `_id` has its index already");
        } else if !r.stored {
            cx.error_at(
                span,
                "an indexed field must be stored: remove #[serde(skip)]",
            );
        } else if r.keywords.is_some() || r.attributes.is_some() {
            cx.error_at(span, "a keywords or attributes field has its index already");
        }
    }
}
