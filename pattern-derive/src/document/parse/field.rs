//! One field's `#[document(...)]` keys, and what its type and serde adapters say: the money
//! form an adapter stores, a keyword array's type, whether serde may leave it out.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{PathArguments, Token, Type};

use super::{Read, ATTR};
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::document::{Money, Normalize, Within};
use crate::shape::vec_arg;

use super::related::approximate_options;

/// The money form a serde adapter path stores a `Decimal` in: `with` = a module
/// (`money::decimal128`, `money::text`, their `::option`), else a `serialize_with` function
/// (`money::decimal128::serialize`, `money::scaled::serialize::<2, _>`...). Matched on the
/// path's last segments, whatever leads to them (`pattern_core::money::`, `money::`, an import).
pub(crate) fn money_form(path: &str, with: bool) -> Option<Money> {
    let compact: String = path.chars().filter(|c| !c.is_whitespace()).collect();
    let mut segs: Vec<&str> = compact.split("::").collect();
    if !with {
        // A function: `serialize`, or `serialize::<N, _>` (the turbofish after the name).
        let generic = match segs.as_slice() {
            [.., "serialize", g] if g.starts_with('<') => Some(segs.pop()?),
            _ => None,
        };
        if segs.pop()? != "serialize" {
            return None;
        }
        if let Some(g) = generic {
            let scale = g.strip_prefix('<')?.strip_suffix('>')?.split(',').next()?;
            return match segs.as_slice() {
                [.., "scaled"] => scale
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n <= 28)
                    .map(Money::Scaled),
                _ => None,
            };
        }
    }
    match segs.as_slice() {
        [.., "decimal128"] => Some(Money::Decimal128 { option: false }),
        [.., "decimal128", "option"] => Some(Money::Decimal128 { option: true }),
        [.., "text"] => Some(Money::Text { option: false }),
        [.., "text", "option"] => Some(Money::Text { option: true }),
        _ => None,
    }
}

/// The field's `#[document(keywords)]` or `#[document(keywords(lowercase))]`, and its
/// `#[document(approximate(every = N))]`.
/// A field's keys.
pub(super) struct FieldAttrs {
    pub keywords: Option<Normalize>,
    pub approximate: Option<(u32, Span)>,
    pub reference: Option<(Span, Option<Within>)>,
    pub attributes: Option<Span>,
    pub index: Option<Span>,
}

pub(super) fn field_attrs(cx: &Ctxt, attrs: &[syn::Attribute]) -> FieldAttrs {
    let mut slot = Slot::default();
    let mut approximate = Slot::default();
    let mut reference = Slot::default();
    let mut attributes = Slot::default();
    let mut index = Slot::default();
    attr::each_key(cx, attrs, ATTR, |meta| {
        let span = meta.path.span();
        if meta.path.is_ident("keywords") {
            slot.parse(cx, meta, keywords_options)
        } else if meta.path.is_ident("approximate") {
            approximate.parse(cx, meta, approximate_options)
        } else if meta.path.is_ident("reference") {
            reference.parse(cx, meta, |cx, m| reference_options(cx, m, span))
        } else if meta.path.is_ident("attributes") {
            attributes.parse(cx, meta, |cx, m| Ok(attr::flag(cx, m)?.map(|()| span)))
        } else if meta.path.is_ident("index") {
            index.parse(cx, meta, |cx, m| Ok(attr::flag(cx, m)?.map(|()| span)))
        } else {
            attr::unknown(
                cx,
                meta,
                ATTR,
                &[
                    "keywords",
                    "approximate",
                    "reference",
                    "attributes",
                    "index",
                ],
            )
        }
    });
    FieldAttrs {
        keywords: slot.get(),
        approximate: approximate.get(),
        reference: reference.get(),
        attributes: attributes.get(),
        index: index.get(),
    }
}

/// Whether `ty` is written `Option<...>` (a field serde may store as null).
pub(super) fn is_option(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Option")
}

/// `keywords` or `keywords(lowercase)`.
fn keywords_options(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Normalize>> {
    // #[document(keywords)]
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        return Ok(Some(Normalize::AsIs));
    }
    if meta.input.peek(Token![=]) {
        cx.syn_error(meta.error(
            "`keywords` takes no value: #[document(keywords)] or #[document(keywords(lowercase))]",
        ));
        attr::skip_value(meta.input)?;
        return Ok(None);
    }
    // #[document(keywords(lowercase))]
    let mut lowercase = Slot::default();
    meta.parse_nested_meta(|option| {
        if option.path.is_ident("lowercase") {
            lowercase.parse(cx, &option, attr::flag)
        } else {
            cx.syn_error(option.error(format!(
                "unknown keywords option `{}`; expected `lowercase`",
                attr::key_name(&option)
            )));
            attr::skip_value(option.input)
        }
    })?;
    Ok(Some(match lowercase.get() {
        Some(()) => Normalize::Lowercase,
        None => Normalize::AsIs,
    }))
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

/// A keyword array is a stored `Vec<String>` other than `_id`.
pub(super) fn keyword_checks(cx: &Ctxt, r: &Read) {
    let f = &r.typed;
    if !is_vec_of_string(f.ty) {
        cx.error_spanned_by(
            f.ty,
            "a #[document(keywords)] field must be a `Vec<String>` (an array of keyword strings)",
        );
    }
    if f.bson == "_id" {
        cx.error_at(f.ident.span(), "the `_id` cannot be a keyword array");
    } else if !r.stored {
        cx.error_at(
            f.ident.span(),
            "a #[document(keywords)] field must be stored: remove #[serde(skip)]",
        );
    }
}

/// `reference`, `reference(in = director)` or `reference(each = person)`.
fn reference_options(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    span: Span,
) -> syn::Result<Option<(Span, Option<Within>)>> {
    // #[document(reference)]
    if !meta.input.peek(syn::token::Paren) {
        return Ok(attr::flag(cx, meta)?.map(|()| (span, None)));
    }
    let syntax = "reference(in = director) for a copy in the embedded document's field \
                  `director`, reference(each = person) for one in each element's `person`";
    let mut within: Option<Within> = None;
    let mut reported = false;
    meta.parse_nested_meta(|m| {
        let each = m.path.is_ident("each");
        if !each && !m.path.is_ident("in") {
            reported = true;
            cx.syn_error(m.error(format!("unknown key: {syntax}")));
            return attr::skip_value(m.input);
        }
        let field: syn::Ident = m.value()?.call(syn::Ident::parse_any)?;
        if within.is_some() {
            cx.syn_error(m.error(format!("one place per reference: {syntax}")));
        }
        within = Some(Within { each, field });
        Ok(())
    })?;
    match within {
        Some(w) => Ok(Some((span, Some(w)))),
        None => {
            if !reported {
                cx.error_at(
                    span,
                    format!("`reference(...)` says where the copy is: {syntax}"),
                );
            }
            Ok(None)
        }
    }
}
