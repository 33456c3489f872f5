//! The keys of schema versioning (`version`, `previous(...)`, `unversioned`...) and the names
//! the library keeps beside a struct's fields (the version, the revision).

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::{DeriveInput, Token};

use super::Read;
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::document::Versioning;
use crate::names::Name;
use crate::serde_names::unraw;

/// `key = N`: a version number (at least 1), with the literal's span.
pub(super) fn version_number(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
) -> syn::Result<Option<(u32, Span)>> {
    let key = attr::key_name(meta);
    let value = meta.value()?;
    let lit: syn::Lit = match value.parse() {
        Ok(l) => l,
        Err(e) => {
            cx.syn_error(syn::Error::new(
                e.span(),
                format!("{key} must be a version number, like `{key} = 2`"),
            ));
            attr::skip_value(value)?;
            return Ok(None);
        }
    };
    Ok(number(cx, &lit, &key))
}

/// A version number literal: an integer in `1..=i32::MAX`.
fn number(cx: &Ctxt, lit: &syn::Lit, what: &str) -> Option<(u32, Span)> {
    let problem = match lit {
        syn::Lit::Int(i) => match i.base10_parse::<u32>() {
            Ok(0) => format!("{what}: version numbers start at 1"),
            Ok(n) if n <= i32::MAX as u32 => return Some((n, i.span())),
            _ => format!("{what}: a version number is at most {}", i32::MAX),
        },
        _ => format!("{what} must be a version number, like `2`"),
    };
    cx.error_at(lit.span(), problem);
    None
}

/// `previous(PersonV1 = 1, PersonV2 = 2)`: each previous version's type and number.
pub(super) fn previous(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
) -> syn::Result<Option<Vec<(syn::Path, u32, Span)>>> {
    let mut out = Vec::new();
    if !meta.input.peek(syn::token::Paren) {
        cx.syn_error(meta.error(
            "`previous` lists the previous versions' types with their numbers: previous(PersonV1 = 1, PersonV2 = 2)",
        ));
        attr::skip_value(meta.input)?;
        return Ok(None);
    }
    meta.parse_nested_meta(|entry| {
        let ty = entry.path.clone();
        if !entry.input.peek(Token![=]) {
            cx.syn_error(entry.error(format!(
                "give `{}` its version number: previous({} = 1, ...)",
                quote::quote!(#ty).to_string().replace(' ', ""),
                quote::quote!(#ty).to_string().replace(' ', ""),
            )));
            return attr::skip_value(entry.input);
        }
        let value = entry.value()?;
        match value.parse::<syn::Lit>() {
            Ok(lit) => {
                let what = format!(
                    "the version of `{}`",
                    quote::quote!(#ty).to_string().replace(' ', "")
                );
                if let Some((n, span)) = number(cx, &lit, &what) {
                    out.push((ty, n, span));
                }
            }
            Err(e) => {
                cx.syn_error(syn::Error::new(
                    e.span(),
                    "a version number, like `PersonV1 = 1`",
                ));
                attr::skip_value(value)?;
            }
        }
        Ok(())
    })?;
    Ok(Some(out))
}

/// The versioning the keys declare, checked: numbers distinct, below the current one,
/// contiguous; `unversioned` among them; the other keys only with `version`.
pub(super) fn versioning(
    cx: &Ctxt,
    input: &DeriveInput,
    version: Slot<(u32, Span)>,
    field: Slot<Name>,
    unversioned: Slot<(u32, Span)>,
    previous: Slot<Vec<(syn::Path, u32, Span)>>,
    write_back: Slot<Span>,
) -> Option<Versioning> {
    let (field, unversioned, previous, write_back) = (
        field.get(),
        unversioned.get(),
        previous.get(),
        write_back.get(),
    );
    let Some((current, current_span)) = version.get() else {
        let needs = |span: Option<Span>, key: &str| {
            if let Some(span) = span {
                cx.error_at(span, format!("`{key}` declares schema versioning: add `version = N` (the current version)"));
            }
        };
        needs(
            field
                .as_ref()
                .map(|f| f.span.unwrap_or_else(|| input.ident.span())),
            "version_field",
        );
        needs(unversioned.map(|u| u.1), "unversioned");
        needs(
            previous.as_ref().and_then(|p| p.first()).map(|p| p.2),
            "previous",
        );
        needs(write_back, "write_back");
        return None;
    };
    let mut previous = previous.unwrap_or_default();
    let mut ok = true;
    for (i, (ty, n, span)) in previous.iter().enumerate() {
        let name = quote::quote!(#ty).to_string().replace(' ', "");
        if *n >= current {
            ok = false;
            cx.error_at(
                *span,
                format!("`{name}` = {n}: a previous version is below the current one (`version = {current}`)"),
            );
        } else if let Some((other, _, _)) = previous[..i].iter().find(|p| p.1 == *n) {
            ok = false;
            cx.error_at(
                *span,
                format!(
                    "two versions numbered {n}: `{}` and `{name}`",
                    quote::quote!(#other).to_string().replace(' ', "")
                ),
            );
        }
    }
    previous.sort_by_key(|p| p.1);
    let oldest = previous.first().map_or(current, |p| p.1);
    if ok {
        let missing: Vec<String> = (oldest..current)
            .filter(|k| !previous.iter().any(|p| p.1 == *k))
            .map(|k| k.to_string())
            .collect();
        if !missing.is_empty() {
            ok = false;
            cx.error_at(
                current_span,
                format!(
                    "version {} missing: every version from {oldest} to {current} needs its type in previous(...), \
                     so that each converts to the next",
                    missing.join(", ")
                ),
            );
        }
    }
    let unversioned = match unversioned {
        Some((u, span)) if u < oldest || u > current => {
            cx.error_at(
                span,
                format!("unversioned = {u}: not a declared version ({oldest} to {current})"),
            );
            ok = false;
            u
        }
        Some((u, _)) => u,
        None => oldest,
    };
    let field = field.map_or_else(|| "schema_version".to_owned(), |f| f.value);
    ok.then(|| Versioning {
        current,
        field,
        unversioned,
        write_back: write_back.is_some(),
        previous: previous.into_iter().map(|(ty, n, _)| (n, ty)).collect(),
    })
}

/// A field of the struct stored under a name the library keeps beside it.
pub(super) fn kept_field_clashes(
    cx: &Ctxt,
    fields: &[Read],
    versioning: Option<&Versioning>,
    history: bool,
) {
    let mut kept: Vec<(&str, &str)> = Vec::new();
    if let Some(v) = versioning {
        kept.push((
            &v.field,
            "the schema version (choose another with version_field = \"...\")",
        ));
    }
    if history {
        kept.push(("revision", "the revision of a document with history"));
        kept.push((
            "revised_at",
            "the time of the revision of a document with history",
        ));
    }
    for r in fields.iter().filter(|r| r.stored) {
        if let Some((name, what)) = kept.iter().find(|(n, _)| *n == r.typed.bson) {
            cx.error_spanned_by(
                r.typed.ident,
                format!(
                    "field `{}` is stored as `{name}`, where the library keeps {what}",
                    unraw(r.typed.ident)
                ),
            );
        }
    }
}
