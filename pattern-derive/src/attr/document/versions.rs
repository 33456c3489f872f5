//! The keys of schema versioning: `version`, `previous(...)`, `unversioned`, `version_field`,
//! `write_back`; and the versioning they declare, once checked.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::Token;

use super::Document;
use crate::attr;
use crate::ctxt::Ctxt;

/// What `#[document(version = N, previous(T1 = 1, ...), ...)]` declares.
pub(crate) struct Versioning {
    pub current: u32,
    pub field: String,
    pub unversioned: u32,
    pub write_back: bool,
    /// The previous versions' types, by number, ascending (contiguous up to `current - 1`
    /// once checked).
    pub previous: Vec<(u32, syn::Path)>,
}

impl Document {
    /// The versioning the keys declare (`None` without `version`), as the check pass found
    /// it: the previous versions sorted by number, `unversioned` by default the oldest,
    /// `version_field` by default `schema_version`.
    pub(crate) fn versioning(&self) -> Option<Versioning> {
        let (current, _) = *self.version.value()?;
        let mut previous = self.previous.value().cloned().unwrap_or_default();
        previous.sort_by_key(|p| p.1);
        let oldest = previous.first().map_or(current, |p| p.1);
        Some(Versioning {
            current,
            field: self.version_field.name_or("schema_version").value,
            unversioned: self.unversioned.value().map_or(oldest, |u| u.0),
            write_back: self.write_back.value().is_some(),
            previous: previous.into_iter().map(|(ty, n, _)| (n, ty)).collect(),
        })
    }
}

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
    if !attr::has_list(
        cx,
        meta,
        "`previous` lists the previous versions' types with their numbers: previous(PersonV1 = 1, PersonV2 = 2)",
    )? {
        return Ok(None);
    }
    meta.parse_nested_meta(|entry| {
        let ty = entry.path.clone();
        if !entry.input.peek(Token![=]) {
            let msg = format!(
                "give `{}` its version number: previous({} = 1, ...)",
                quote::quote!(#ty).to_string().replace(' ', ""),
                quote::quote!(#ty).to_string().replace(' ', ""),
            );
            return attr::refuse(cx, &entry, msg);
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
