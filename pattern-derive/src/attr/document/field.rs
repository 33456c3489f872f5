//! A field's `#[document(...)]` keys, and what its serde adapters say: the money form one
//! stores, or that no typed path can name what it writes.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Ident, Token, Type};

use super::related::approximate_options;
use super::ATTR;
use crate::attr::serde::{serde_key_values, serde_keys, unraw};
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;

/// serde keys that store a field otherwise than its type says: no typed path can name what
/// they write (`with` and `serialize_with` only when they name one of the money adapters).
const UNTYPED: [&str; 1] = ["flatten"];
/// serde keys that choose how a field is written.
const WRITERS: [&str; 2] = ["with", "serialize_with"];

/// A field's keys, and what its serde adapters say.
pub(crate) struct Field {
    /// `keywords` or `keywords(lowercase)`.
    pub keywords: Option<Normalize>,
    /// `approximate(every = N)`: `N`, and the key's span.
    pub approximate: Option<(u32, Span)>,
    /// `reference`: the key's span, and where the copy is when not the field itself.
    pub reference: Option<(Span, Option<Within>)>,
    /// `attributes`: the key's span.
    pub attributes: Option<Span>,
    /// `index`: the key's span.
    pub index: Option<Span>,
    /// The money form its serde adapter stores it in (`None`: as its type).
    pub money: Option<Money>,
    /// A writer the typed path cannot follow (reported): no typed path, even as a stub.
    pub untyped: bool,
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

/// Reads a field: serde's keys no typed path follows (each an error), the money adapter it
/// names, then its `#[document(...)]` keys.
pub(super) fn read(cx: &Ctxt, f: &syn::Field) -> Field {
    let ident = f.ident.as_ref().expect("named field");
    let flattened = !serde_keys(&f.attrs, &UNTYPED).is_empty();
    for key in serde_keys(&f.attrs, &UNTYPED) {
        let key_name = key.get_ident().map(Ident::to_string).unwrap_or_default();
        cx.error_spanned_by(
            &key,
            format!(
                "#[derive(Document)] cannot type field `{}`: with #[serde({key_name})] serde \
                 stores something else than its type; store it as its type or keep it out of \
                 this struct",
                unraw(ident)
            ),
        );
    }
    let mut money = None;
    let mut untyped = flattened;
    for (key, value) in serde_key_values(&f.attrs, &WRITERS) {
        let with = key.is_ident("with");
        if let Some(form) = value.as_ref().and_then(|v| money_form(&v.value(), with)) {
            money = Some(form);
            continue;
        }
        untyped = true;
        cx.error_spanned_by(
            &key,
            format!(
                "#[derive(Document)] cannot type field `{}`: with #[serde({})] serde stores \
                 something else than its type; store it as its type or keep it out of this \
                 struct (the money adapters are understood: with = \"money::decimal128\", \
                 \"money::text\", their `::option`, serialize_with = \
                 \"money::scaled::serialize::<N, _>\")",
                unraw(ident),
                if with { "with" } else { "serialize_with" },
            ),
        );
    }
    let mut keywords = Slot::default();
    let mut approximate = Slot::default();
    let mut reference = Slot::default();
    let mut attributes = Slot::default();
    let mut index = Slot::default();
    attr::each_key(cx, &f.attrs, ATTR, |meta| {
        let span = meta.path.span();
        if meta.path.is_ident("keywords") {
            keywords.parse(cx, meta, keywords_options)
        } else if meta.path.is_ident("approximate") {
            approximate.parse(cx, meta, approximate_options)
        } else if meta.path.is_ident("reference") {
            reference.parse(cx, meta, |cx, m| reference_options(cx, m, span))
        } else if meta.path.is_ident("attributes") {
            attributes.parse(cx, meta, attr::flag_at)
        } else if meta.path.is_ident("index") {
            index.parse(cx, meta, attr::flag_at)
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
    Field {
        keywords: keywords.get(),
        approximate: approximate.get(),
        reference: reference.get(),
        attributes: attributes.get(),
        index: index.get(),
        money,
        untyped,
    }
}

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

/// Whether `ty` is written `Option<...>` (a field serde may store as null).
pub(crate) fn is_option(ty: &Type) -> bool {
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
        attr::refuse(
            cx,
            meta,
            "`keywords` takes no value: #[document(keywords)] or #[document(keywords(lowercase))]",
        )?;
        return Ok(None);
    }
    // #[document(keywords(lowercase))]
    let lowercase = attr::sole_option(cx, meta, "lowercase", attr::flag)?;
    Ok(Some(match lowercase.get() {
        Some(()) => Normalize::Lowercase,
        None => Normalize::AsIs,
    }))
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
            return attr::refuse(cx, &m, format!("unknown key: {syntax}"));
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
