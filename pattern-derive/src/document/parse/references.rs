//! The keys of extended references: a field's `reference`, a source's `referenced_by(Film =
//! director)`, `fan_out = N` and `deferred`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::Ident;

use super::Read;
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;

/// The fan-out used when `fan_out` is not given (`pattern_core::document::DEFAULT_FAN_OUT`).
const DEFAULT_FAN_OUT: u32 = 1_000;

/// The referencing types, their fields (with the embedded field holding the copy, for
/// `Film = meta.director`), and the key's span.
pub(super) type ReferencedBy = (Vec<(syn::Path, Ident, Option<Ident>)>, Span);

/// `referenced_by(Film = director, Screening = director)`: each referencing type and the Rust
/// name of its field holding the copy.
pub(super) fn referenced_by(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
) -> syn::Result<Option<ReferencedBy>> {
    use syn::spanned::Spanned;
    let span = meta.path.span();
    let syntax = "referenced_by(Film = director): each type holding copies and its field";
    if !meta.input.peek(syn::token::Paren) {
        cx.syn_error(meta.error(format!("`referenced_by` lists the copies: {syntax}")));
        attr::skip_value(meta.input)?;
        return Ok(None);
    }
    let mut out: Vec<(syn::Path, Ident, Option<Ident>)> = Vec::new();
    let mut reported = false;
    meta.parse_nested_meta(|pair| {
        if !pair.input.peek(syn::Token![=]) {
            reported = true;
            cx.syn_error(pair.error(format!("name the field holding the copy: {syntax}")));
            return attr::skip_value(pair.input);
        }
        let input = pair.value()?;
        let field = input.parse::<Ident>()?;
        // `Film = meta.director`: the copy in the embedded document's field.
        let within = if input.peek(syn::Token![.]) {
            input.parse::<syn::Token![.]>()?;
            Some(input.call(syn::ext::IdentExt::parse_any)?)
        } else {
            None
        };
        let same = |(p, f, w): &(syn::Path, Ident, Option<Ident>)| {
            *p == pair.path && *f == field && *w == within
        };
        if out.iter().any(same) {
            cx.error_spanned_by(&field, "this field is listed twice");
        }
        out.push((pair.path.clone(), field, within));
        Ok(())
    })?;
    if out.is_empty() {
        if !reported {
            cx.error_at(span, format!("`referenced_by` lists nothing: {syntax}"));
        }
        return Ok(None);
    }
    Ok(Some((out, span)))
}

/// `fan_out` and `deferred`, which only a type with `referenced_by` takes.
pub(super) fn propagation(
    cx: &Ctxt,
    referenced_by: Option<&ReferencedBy>,
    fan_out: Slot<(u32, Span)>,
    deferred: Slot<Span>,
) -> Option<(u32, bool)> {
    let (fan_out, deferred) = (fan_out.get(), deferred.get());
    if referenced_by.is_none() {
        for (key, span) in [
            fan_out.map(|f| ("fan_out", f.1)),
            deferred.map(|d| ("deferred", d)),
        ]
        .into_iter()
        .flatten()
        {
            cx.error_at(
                span,
                format!(
                    "`{key}` says how this type's writes reach the copies of its fields: it \
                     needs `referenced_by(...)`"
                ),
            );
        }
        return None;
    }
    Some((fan_out.map_or(DEFAULT_FAN_OUT, |f| f.0), deferred.is_some()))
}

/// A reference field is stored and is not the `_id`.
pub(super) fn field_checks(cx: &Ctxt, fields: &[Read]) {
    for r in fields {
        let Some((span, _)) = r.reference else {
            continue;
        };
        if r.typed.bson == "_id" {
            cx.error_at(
                span,
                "the `_id` cannot be a reference: store the copy in its own field",
            );
        } else if !r.stored {
            cx.error_at(
                span,
                "a reference field must be stored: remove #[serde(skip)]",
            );
        } else if r.typed.bson.contains('.') {
            cx.error_at(span, "a reference field's stored name cannot contain a `.`");
        }
    }
}
