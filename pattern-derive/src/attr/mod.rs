//! The attributes, read key by key into each derive's attribute structs (serde_derive's
//! `internals/attr.rs`): here the pieces every derive's keys share; in the children, each
//! derive's keys (`bucket`, `outlier`, `tree`, `document`, `reference`) and serde's (`serde`).
//!
//! A parser reads one key: its syntax and its own values. What a combination of keys means is
//! the check pass's (`crate::check`).
//!
//! No function here gives up on a bad key or value: the mistake goes to the [`Ctxt`] and the
//! tokens up to the next comma are skipped, so that the keys after it are still read. Only a
//! mistake that leaves the token stream unreadable ends the attribute, and it is reported too.

pub(crate) mod bucket;
pub(crate) mod document;
pub(crate) mod outlier;
pub(crate) mod reference;
pub(crate) mod serde;
pub(crate) mod tree;

use std::fmt::Display;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{token, Attribute, Ident, Lit, LitStr, Token};

use crate::ctxt::Ctxt;
use crate::names::{self, Name};

/// One key of an attribute: whether it was seen, and its value when it was valid.
pub(crate) struct Slot<T> {
    seen: bool,
    value: Option<T>,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot {
            seen: false,
            value: None,
        }
    }
}

impl<T> Slot<T> {
    /// Reads this key's value with `parse`. A second occurrence of the key is an error at that
    /// key; its value is still checked, so its own mistakes are reported too.
    pub(crate) fn parse(
        &mut self,
        cx: &Ctxt,
        meta: &ParseNestedMeta,
        parse: impl FnOnce(&Ctxt, &ParseNestedMeta) -> syn::Result<Option<T>>,
    ) -> syn::Result<()> {
        let duplicate = std::mem::replace(&mut self.seen, true);
        if duplicate {
            cx.error_spanned_by(&meta.path, format!("duplicate key `{}`", key_name(meta)));
        }
        let value = parse(cx, meta)?;
        if !duplicate {
            self.value = value;
        }
        Ok(())
    }

    /// Whether the key was given, with a valid value or not.
    pub(crate) fn seen(&self) -> bool {
        self.seen
    }

    pub(crate) fn get(self) -> Option<T> {
        self.value
    }

    /// The value, when the key was given with a valid one (the first time it was given).
    pub(crate) fn value(&self) -> Option<&T> {
        self.value.as_ref()
    }

    /// The value of a key that must be given: its absence is an error at `at` (the struct's
    /// name) that shows the syntax (`#[bucket(size = ...)]`).
    pub(crate) fn required(&self, cx: &Ctxt, at: &Ident, syntax: &str) -> Option<&T> {
        if !self.seen {
            cx.error_spanned_by(at, format!("missing {syntax}"));
        }
        self.value.as_ref()
    }
}

impl Slot<Name> {
    /// The name given, else the default `name`.
    pub(crate) fn name_or(&self, name: impl Into<String>) -> Name {
        self.value().cloned().unwrap_or_else(|| Name::default(name))
    }
}

/// Calls `f` on every key of every `#[<name>(...)]` among `attrs`; the errors `f` or the
/// attribute's syntax raise go to `cx`.
pub(crate) fn each_key(
    cx: &Ctxt,
    attrs: &[Attribute],
    name: &str,
    mut f: impl FnMut(&ParseNestedMeta) -> syn::Result<()>,
) {
    for attr in attrs.iter().filter(|a| a.path().is_ident(name)) {
        if let Err(e) = attr.parse_nested_meta(|meta| f(&meta)) {
            cx.syn_error(e);
        }
    }
}

/// The key as written (`size`, `a::b`).
pub(crate) fn key_name(meta: &ParseNestedMeta) -> String {
    meta.path.to_token_stream().to_string().replace(' ', "")
}

/// A key refused: the error `msg` at the key; its value is skipped.
pub(crate) fn refuse(cx: &Ctxt, meta: &ParseNestedMeta, msg: impl Display) -> syn::Result<()> {
    cx.syn_error(meta.error(msg));
    skip_value(meta.input)
}

/// An unknown key: an error at the key, listing the `expected` ones; its value is skipped.
pub(crate) fn unknown(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    attr: &str,
    expected: &[&str],
) -> syn::Result<()> {
    let list = expected
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let msg = format!(
        "unknown key `{}` in #[{attr}(...)]; expected one of: {list}",
        key_name(meta)
    );
    refuse(cx, meta, msg)
}

/// `key(option)`, a key whose one option is `name`: the option read with `parse`; any other
/// is an error at it.
pub(crate) fn sole_option<T>(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    name: &str,
    parse: fn(&Ctxt, &ParseNestedMeta) -> syn::Result<Option<T>>,
) -> syn::Result<Slot<T>> {
    let mut slot = Slot::default();
    meta.parse_nested_meta(|option| {
        if option.path.is_ident(name) {
            slot.parse(cx, &option, parse)
        } else {
            let msg = format!(
                "unknown {} option `{}`; expected `{name}`",
                key_name(meta),
                key_name(&option)
            );
            refuse(cx, &option, msg)
        }
    })?;
    Ok(slot)
}

/// Whether the key is followed by a list, `key(...)`; else the error `msg` at the key, and
/// its value is skipped.
pub(crate) fn has_list(cx: &Ctxt, meta: &ParseNestedMeta, msg: impl Display) -> syn::Result<bool> {
    if meta.input.peek(token::Paren) {
        return Ok(true);
    }
    refuse(cx, meta, msg)?;
    Ok(false)
}

/// Consumes what follows a key up to the next comma at its level (`= value`, `(...)`).
pub(crate) fn skip_value(input: ParseStream) -> syn::Result<()> {
    value_until_comma(input).map(drop)
}

fn value_until_comma(input: ParseStream) -> syn::Result<TokenStream> {
    let mut tokens = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        tokens.extend([input.parse::<TokenTree>()?]);
    }
    Ok(tokens)
}

/// The tokens of the value of `key = value`; `None` (after an error at the key) when there is
/// no `=` or nothing after it.
fn value_tokens(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<TokenStream>> {
    let key = key_name(meta);
    if !meta.input.peek(Token![=]) {
        cx.error_spanned_by(&meta.path, format!("expected a value: `{key} = ...`"));
        skip_value(meta.input)?;
        return Ok(None);
    }
    meta.input.parse::<Token![=]>()?;
    let tokens = value_until_comma(meta.input)?;
    if tokens.is_empty() {
        cx.error_spanned_by(&meta.path, format!("expected a value after `{key} =`"));
        return Ok(None);
    }
    Ok(Some(tokens))
}

/// A key that takes no value: `#[bucket(key)]`.
pub(crate) fn flag(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<()>> {
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        return Ok(Some(()));
    }
    refuse(cx, meta, format!("`{}` takes no value", key_name(meta)))?;
    Ok(None)
}

/// A key that takes no value, at its span: `#[document(deferred)]`.
pub(crate) fn flag_at(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Span>> {
    Ok(flag(cx, meta)?.map(|()| meta.path.span()))
}

/// `key = Type`: a type's path.
pub(crate) fn type_path(_: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<syn::Path>> {
    Ok(Some(meta.value()?.parse::<syn::Path>()?))
}

/// `key = "string"`.
pub(crate) fn string(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<LitStr>> {
    let Some(tokens) = value_tokens(cx, meta)? else {
        return Ok(None);
    };
    match syn::parse2::<LitStr>(tokens.clone()) {
        Ok(lit) => Ok(Some(lit)),
        Err(_) => {
            let key = key_name(meta);
            cx.error_spanned_by(
                tokens,
                format!("{key} must be a string, like `{key} = \"...\"`"),
            );
            Ok(None)
        }
    }
}

/// `key = "name"`: a BSON field name.
pub(crate) fn field_name(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Name>> {
    let Some(lit) = string(cx, meta)? else {
        return Ok(None);
    };
    let name = Name::given(lit.value(), lit.span());
    names::check_field_name(cx, &name);
    Ok(Some(name))
}

/// `key = "name"`: a collection name.
pub(crate) fn collection(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Name>> {
    let Some(lit) = string(cx, meta)? else {
        return Ok(None);
    };
    let value = lit.value();
    if let Some(problem) = names::collection_name_problem(&value) {
        cx.error_at(
            lit.span(),
            format!("invalid MongoDB collection name {value:?}: {problem}"),
        );
        return Ok(None);
    }
    Ok(Some(Name::given(value, lit.span())))
}

/// `key = 10`: an integer literal in `1..=i32::MAX` (what MongoDB's counters can hold).
pub(crate) fn positive_int(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<u32>> {
    let Some(tokens) = value_tokens(cx, meta)? else {
        return Ok(None);
    };
    let key = key_name(meta);
    let problem = match syn::parse2::<Lit>(tokens.clone()) {
        Ok(Lit::Int(lit)) => match lit.base10_parse::<i64>() {
            Ok(n) if n < 1 => format!("{key} must be at least 1"),
            Ok(n) if n <= i64::from(i32::MAX) => return Ok(Some(n as u32)),
            _ if lit.base10_digits().starts_with('-') => format!("{key} must be at least 1"),
            _ => format!("{key} must be at most {}", i32::MAX),
        },
        _ => format!("{key} must be an integer, like `{key} = 10`"),
    };
    cx.error_spanned_by(tokens, problem);
    Ok(None)
}

/// The flags among `keys` set on one field (`#[bucket(key)]`), in the order of `keys`; any
/// other key is an error.
pub(crate) fn flags<const N: usize>(
    cx: &Ctxt,
    attrs: &[Attribute],
    attr: &str,
    keys: [&str; N],
) -> [bool; N] {
    let mut slots: [Slot<()>; N] = std::array::from_fn(|_| Slot::default());
    each_key(cx, attrs, attr, |meta| {
        match keys.iter().position(|k| meta.path.is_ident(k)) {
            // #[bucket(key)], #[bucket(items)], #[outlier(id)], #[outlier(items)]
            Some(i) => slots[i].parse(cx, meta, flag),
            None => unknown(cx, meta, attr, &keys),
        }
    });
    slots.map(|s| s.get().is_some())
}
