//! `#[derive(Document)]`'s checks on a struct: every rule that spans two keys of the container,
//! the container and the fields, or several fields, reported in the order a reader meets the
//! keys.

use proc_macro2::Span;
use syn::{Ident, PathArguments, Type};

use super::versions::{kept_field_clashes, versioning};
use crate::ast::{vec_arg, Container};
use crate::attr::document::{const_name, Document, Versioning};
use crate::attr::serde::unraw;
use crate::ctxt::Ctxt;
use crate::names::Name;

/// A field of a struct deriving `Document`.
type Field<'a> = crate::ast::Field<'a, crate::attr::document::Field>;

pub(crate) fn document(cx: &Ctxt, cont: &Container<Document>) {
    let a = &cont.attrs;
    let (collection, variant_collection) = match a.variant_of.value() {
        None => (
            a.collection
                .required(cx, cont.ident, "#[document(collection = \"...\")]")
                .cloned(),
            None,
        ),
        // A variant's documents live in its enum's collection.
        Some(_) => (Some(Name::default("")), a.collection.value()),
    };
    let versioning = versioning(cx, cont);
    propagation(cx, a);
    container(cx, a, collection.as_ref(), variant_collection);
    if let Some(fields) = cont.fields() {
        container_and_fields(cx, a, fields, versioning.as_ref());
        across_fields(cx, cont.ident, fields);
    }
}

/// `fan_out` and `deferred`, which only a type with `referenced_by` takes.
fn propagation(cx: &Ctxt, a: &Document) {
    if a.referenced_by.value().is_some() {
        return;
    }
    let fan_out = a.fan_out.value().map(|f| ("fan_out", f.1));
    let deferred = a.deferred.value().map(|d| ("deferred", *d));
    for (key, span) in [fan_out, deferred].into_iter().flatten() {
        cx.error_at(
            span,
            format!(
                "`{key}` says how this type's writes reach the copies of its fields: it \
                 needs `referenced_by(...)`"
            ),
        );
    }
}

/// The container's keys with each other.
fn container(
    cx: &Ctxt,
    a: &Document,
    collection: Option<&Name>,
    variant_collection: Option<&Name>,
) {
    if let Some(name) = variant_collection {
        cx.error_at(
            name.span.unwrap_or_else(Span::call_site),
            "a variant's documents live in its enum's collection: remove `collection`",
        );
    }
    let history = a.history.value();
    if let (Some(h), true) = (history, a.variant_of.value().is_some()) {
        cx.error_at(
            h.span.unwrap_or_else(Span::call_site),
            "a polymorphic collection keeps one history, its enum's: declare \
             `history = \"...\"` on the enum (every variant's writes record in it)",
        );
    }
    if let (Some(h), Some(coll)) = (history, collection) {
        if h.value == coll.value {
            cx.error_at(
                h.span.unwrap_or_else(Span::call_site),
                "the history collection must be another collection than the documents'",
            );
        }
    }
}

/// The container's keys against the fields: the fields they name, the field keys they rule out.
fn container_and_fields(
    cx: &Ctxt,
    a: &Document,
    fields: &[Field],
    versioning: Option<&Versioning>,
) {
    kept_field_clashes(cx, fields, versioning, a.history.value().is_some());
    let stored = |ident: &Ident| fields.iter().any(|f| f.serde.stored && *f.ident == *ident);
    let subset_named = a
        .subset
        .value()
        .into_iter()
        .flat_map(|(s, _)| [&s.key, &s.order]);
    if let Some((c, _)) = a.computed.value() {
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
    if let Some(((age, keep), _)) = a.archive.value() {
        for ident in std::iter::once(age).chain(keep) {
            if !stored(ident) {
                cx.error_spanned_by(
                    ident,
                    format!("no stored field `{ident}` in this struct (archive names fields by their Rust names)"),
                );
            }
        }
    }
    reference_fields(cx, fields);
    if a.history.value().is_some() {
        for (_, span) in fields.iter().filter_map(|f| f.attrs.approximate) {
            cx.error_at(
                span,
                "an approximate counter writes without a revision: a type with history \
                 cannot have one (keep the counter in another type)",
            );
        }
    }
}

/// A reference field is stored and is not the `_id`.
fn reference_fields(cx: &Ctxt, fields: &[Field]) {
    for f in fields {
        let Some((span, _)) = f.attrs.reference else {
            continue;
        };
        let stored = stored_not_id(
            cx,
            f,
            span,
            "the `_id` cannot be a reference: store the copy in its own field",
            "a reference field must be stored: remove #[serde(skip)]",
        );
        if stored && f.bson.value.contains('.') {
            cx.error_at(span, "a reference field's stored name cannot contain a `.`");
        }
    }
}

/// The fields with each other and each field's keys together: names, the `_id`, keywords,
/// counters, attributes and indexes.
fn across_fields(cx: &Ctxt, ident: &Ident, fields: &[Field]) {
    let mut id = false;
    for (i, f) in fields.iter().enumerate() {
        let konst = const_name(f.ident);
        if let Some(first) = fields[..i].iter().find(|o| const_name(o.ident) == konst) {
            cx.error_spanned_by(
                f.ident,
                format!(
                    "fields `{}` and `{}` would both be named `{konst}`",
                    unraw(first.ident),
                    unraw(f.ident),
                ),
            );
        }
        let stored = |o: &&Field| o.serde.stored && o.bson.value == f.bson.value;
        if let Some(first) = fields[..i].iter().find(stored).filter(|_| f.serde.stored) {
            cx.error_spanned_by(
                f.ident,
                format!(
                    "fields `{}` and `{}` are both stored as {:?}",
                    unraw(first.ident),
                    unraw(f.ident),
                    f.bson.value
                ),
            );
        }
        id |= f.serde.stored && f.bson.value == "_id";
        if f.attrs.keywords.is_some() {
            keywords(cx, f);
        }
        if let Some((_, span)) = f.attrs.approximate {
            approximate(cx, f, span);
        }
    }
    if !id {
        cx.error_spanned_by(
            ident,
            "a document needs its id stored as `_id`: add #[serde(rename = \"_id\")] to the id field",
        );
    }
    for f in fields {
        let Some(span) = f.attrs.attributes else {
            continue;
        };
        let clash = [
            (f.bson.value == "_id", "the `_id` cannot hold attributes"),
            (
                !f.serde.stored,
                "an attributes field must be stored: remove #[serde(skip)]",
            ),
            (
                f.attrs.keywords.is_some(),
                "a field holds keywords or attributes, not both",
            ),
            (
                f.attrs.reference.is_some(),
                "a field holds a reference or attributes, not both",
            ),
        ];
        for (_, message) in clash.iter().filter(|(bad, _)| *bad) {
            cx.error_at(span, *message);
        }
    }
    for f in fields {
        let Some(span) = f.attrs.index else {
            continue;
        };
        let stored = stored_not_id(
            cx,
            f,
            span,
            "the `_id` has its index already",
            "an indexed field must be stored: remove #[serde(skip)]",
        );
        if stored && (f.attrs.keywords.is_some() || f.attrs.attributes.is_some()) {
            cx.error_at(span, "a keywords or attributes field has its index already");
        }
    }
}

/// A keyword array is a stored `Vec<String>` other than `_id`.
fn keywords(cx: &Ctxt, f: &Field) {
    if !is_vec_of_string(f.ty) {
        cx.error_spanned_by(
            f.ty,
            "a #[document(keywords)] field must be a `Vec<String>` (an array of keyword strings)",
        );
    }
    stored_not_id(
        cx,
        f,
        f.ident.span(),
        "the `_id` cannot be a keyword array",
        "a #[document(keywords)] field must be stored: remove #[serde(skip)]",
    );
}

/// Whether `ty` is `Vec<String>` (as written: `Vec<String>`, `std::vec::Vec<std::string::String>`).
fn is_vec_of_string(ty: &Type) -> bool {
    let Some(Type::Path(item)) = vec_arg(ty) else {
        return false;
    };
    let last = item.path.segments.last();
    item.qself.is_none()
        && last.is_some_and(|s| s.ident == "String" && s.arguments == PathArguments::None)
}

/// An approximate counter is a stored integer field other than `_id`.
fn approximate(cx: &Ctxt, f: &Field, span: Span) {
    let integer = matches!(f.ty, Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "i64" || s.ident == "i32"));
    if !integer {
        cx.error_spanned_by(
            f.ty,
            "an approximate counter must be an `i64` or `i32` field (it is written with `$inc`)",
        );
    }
    stored_not_id(
        cx,
        f,
        span,
        "the `_id` cannot be an approximate counter",
        "an approximate counter must be stored: remove #[serde(skip)]",
    );
}

/// A field key that needs a stored field other than the `_id`: an error at `span` (the key)
/// when the field is the `_id` (`on_id`) or not stored (`not_stored`); whether it is neither.
fn stored_not_id(cx: &Ctxt, f: &Field, span: Span, on_id: &str, not_stored: &str) -> bool {
    if f.bson.value == "_id" {
        cx.error_at(span, on_id);
    } else if !f.serde.stored {
        cx.error_at(span, not_stored);
    }
    f.bson.value != "_id" && f.serde.stored
}
