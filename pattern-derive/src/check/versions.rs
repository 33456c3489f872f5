//! Schema versioning's checks: the versions numbered below the current one, distinct and
//! contiguous, `unversioned` among them, the other keys only with `version`; and no field
//! stored under a name the library keeps beside the struct's (the version, the revision).

use proc_macro2::Span;

use crate::ast::Container;
use crate::attr::document::{Document, Versioning};
use crate::attr::serde::unraw;
use crate::ctxt::Ctxt;

/// A field of a struct deriving `Document`.
type Field<'a> = crate::ast::Field<'a, crate::attr::document::Field>;

/// The versioning the keys declare, when it holds (each mistake reported).
pub(super) fn versioning(cx: &Ctxt, cont: &Container<Document>) -> Option<Versioning> {
    let a = &cont.attrs;
    let Some(&(current, current_span)) = a.version.value() else {
        let needs = |span: Option<Span>, key: &str| {
            if let Some(span) = span {
                cx.error_at(span, format!("`{key}` declares schema versioning: add `version = N` (the current version)"));
            }
        };
        needs(
            (a.version_field.value()).map(|f| f.span.unwrap_or_else(|| cont.ident.span())),
            "version_field",
        );
        needs(a.unversioned.value().map(|u| u.1), "unversioned");
        needs(
            a.previous.value().and_then(|p| p.first()).map(|p| p.2),
            "previous",
        );
        needs(a.write_back.value().copied(), "write_back");
        return None;
    };
    let declared = a.previous.value().map_or(&[][..], Vec::as_slice);
    let mut ok = true;
    for (i, (ty, n, span)) in declared.iter().enumerate() {
        let name = quote::quote!(#ty).to_string().replace(' ', "");
        if *n >= current {
            ok = false;
            cx.error_at(
                *span,
                format!("`{name}` = {n}: a previous version is below the current one (`version = {current}`)"),
            );
        } else if let Some((other, _, _)) = declared[..i].iter().find(|p| p.1 == *n) {
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
    let versioning = a.versioning().expect("`version` is given");
    let oldest = versioning.previous.first().map_or(current, |p| p.0);
    if ok {
        let missing: Vec<String> = (oldest..current)
            .filter(|k| !versioning.previous.iter().any(|p| p.0 == *k))
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
    if let Some(&(u, span)) = a.unversioned.value() {
        if u < oldest || u > current {
            cx.error_at(
                span,
                format!("unversioned = {u}: not a declared version ({oldest} to {current})"),
            );
            ok = false;
        }
    }
    ok.then_some(versioning)
}

/// A field of the struct stored under a name the library keeps beside it.
pub(super) fn kept_field_clashes(
    cx: &Ctxt,
    fields: &[Field],
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
    for f in fields.iter().filter(|f| f.serde.stored) {
        if let Some((name, what)) = kept.iter().find(|(n, _)| *n == f.bson.value) {
            cx.error_spanned_by(
                f.ident,
                format!(
                    "field `{}` is stored as `{name}`, where the library keeps {what}",
                    unraw(f.ident)
                ),
            );
        }
    }
}
