//! The keys of extended references on a source type: `referenced_by(Film = director)`,
//! `fan_out = N` and `deferred` (a field's `reference` is read with the field's keys).

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::Ident;

use super::Document;
use crate::attr;
use crate::ctxt::Ctxt;

/// The fan-out used when `fan_out` is not given (`pattern_core::document::DEFAULT_FAN_OUT`).
const DEFAULT_FAN_OUT: u32 = 1_000;

impl Document {
    /// How this type's writes reach the copies of its fields: `fan_out` (by default
    /// `DEFAULT_FAN_OUT`) and `deferred`; `None` without `referenced_by`.
    pub(crate) fn propagation(&self) -> Option<(u32, bool)> {
        self.referenced_by.value()?;
        let fan_out = self.fan_out.value().map_or(DEFAULT_FAN_OUT, |f| f.0);
        Some((fan_out, self.deferred.value().is_some()))
    }
}

/// The referencing types, their fields (with the embedded field holding the copy, for
/// `Film = meta.director`), and the key's span.
pub(crate) type ReferencedBy = (Vec<(syn::Path, Ident, Option<Ident>)>, Span);

/// `referenced_by(Film = director, Screening = director)`: each referencing type and the Rust
/// name of its field holding the copy.
pub(super) fn referenced_by(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
) -> syn::Result<Option<ReferencedBy>> {
    use syn::spanned::Spanned;
    let span = meta.path.span();
    let syntax = "referenced_by(Film = director): each type holding copies and its field";
    if !attr::has_list(
        cx,
        meta,
        format!("`referenced_by` lists the copies: {syntax}"),
    )? {
        return Ok(None);
    }
    let mut out: Vec<(syn::Path, Ident, Option<Ident>)> = Vec::new();
    let mut reported = false;
    meta.parse_nested_meta(|pair| {
        if !pair.input.peek(syn::Token![=]) {
            reported = true;
            return attr::refuse(
                cx,
                &pair,
                format!("name the field holding the copy: {syntax}"),
            );
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
