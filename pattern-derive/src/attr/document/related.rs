//! The keys of the patterns that relate a child type to its parent (`computed(...)`,
//! `subset(...)`), of archiving (`archive(...)`) and of approximate counters
//! (`approximate(every = N)`).

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::Ident;

use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;

/// What `#[document(subset(parent = Film, key = film_id, into = recent, keep = 10, order =
/// date))]` declares (Rust field names: the child's `key` and `order`, the parent's `into`).
pub(crate) struct SubsetAttr {
    pub parent: syn::Path,
    pub key: Ident,
    pub into: Ident,
    pub keep: u32,
    pub order: Ident,
}

/// What `#[document(computed(parent = Film, key = film_id, count = reviews, sum(rating =
/// rating_sum), ...))]` declares: the parent type, the child's key field, the parent's count
/// field, and each aggregate (`Sum`, `Min`, `Max`, `Avg`) of a child field into a parent field.
pub(crate) struct ComputedAttr {
    pub parent: syn::Path,
    pub key: Ident,
    pub count: Option<Ident>,
    pub aggregates: Vec<(&'static str, Ident, Ident)>,
}

/// `approximate(every = N)`.
pub(super) fn approximate_options(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
) -> syn::Result<Option<(u32, Span)>> {
    let span = meta.path.span();
    if !attr::has_list(
        cx,
        meta,
        "`approximate` says how many increments make one write: #[document(approximate(every = 100))]",
    )? {
        return Ok(None);
    }
    let every = attr::sole_option(cx, meta, "every", attr::positive_int)?;
    let given = every.seen();
    match every.get() {
        Some(n) => Ok(Some((n, span))),
        None if given => Ok(None),
        None => {
            cx.error_at(
                span,
                "`approximate` needs `every = N`: #[document(approximate(every = 100))]",
            );
            Ok(None)
        }
    }
}

/// `computed(parent = Film, key = film_id, count = reviews, sum(rating = rating_sum), min(...),
/// max(...), avg(...))`: the child's fields and the parent's, as Rust field names.
pub(super) fn computed_attr(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
) -> syn::Result<Option<(ComputedAttr, Span)>> {
    let span = meta.path.span();
    if !attr::has_list(
        cx,
        meta,
        "`computed` names the parent and what it keeps: computed(parent = Film, key = film_id, \
         count = reviews, sum(rating = rating_sum))",
    )? {
        return Ok(None);
    }
    let (mut parent, mut key, mut count) = (None, None, None);
    let mut aggregates = Vec::new();
    meta.parse_nested_meta(|option| {
        let name = attr::key_name(&option);
        match name.as_str() {
            "parent" => {
                parent = Some(option.value()?.parse::<syn::Path>()?);
                Ok(())
            }
            "key" => {
                key = Some(option.value()?.parse::<Ident>()?);
                Ok(())
            }
            "count" => {
                count = Some(option.value()?.parse::<Ident>()?);
                Ok(())
            }
            "sum" | "min" | "max" | "avg" => {
                let op = match name.as_str() {
                    "sum" => "Sum",
                    "min" => "Min",
                    "max" => "Max",
                    _ => "Avg",
                };
                option.parse_nested_meta(|pair| {
                    let Some(child) = pair.path.get_ident().cloned() else {
                        cx.error_spanned_by(
                            &pair.path,
                            "a field of this type: sum(rating = rating_sum)",
                        );
                        return attr::skip_value(pair.input);
                    };
                    let into = pair.value()?.parse::<Ident>()?;
                    aggregates.push((op, child, into));
                    Ok(())
                })
            }
            _ => attr::refuse(
                cx,
                &option,
                format!(
                    "unknown computed option `{name}`; expected one of: `parent`, `key`, `count`, \
                     `sum`, `min`, `max`, `avg`"
                ),
            ),
        }
    })?;
    let (Some(parent), Some(key)) = (parent, key) else {
        cx.error_at(span, "`computed` needs `parent = Type` and `key = field` (the child's field holding the parent's `_id`)");
        return Ok(None);
    };
    for (_, child, into) in aggregates.iter().filter(|a| a.0 == "Avg") {
        let summed = aggregates.iter().any(|a| a.0 == "Sum" && a.1 == *child);
        if count.is_none() || !summed {
            cx.error_spanned_by(
                into,
                format!(
                    "an average is kept from the sum and the count: declare `count = ...` and \
                     `sum({child} = ...)` beside `avg({child} = {into})`"
                ),
            );
        }
    }
    if count.is_none() && aggregates.is_empty() {
        cx.error_at(span, "`computed` keeps nothing: add `count = field` or `sum(...)`, `min(...)`, `max(...)`, `avg(...)`");
        return Ok(None);
    }
    Ok(Some((
        ComputedAttr {
            parent,
            key,
            count,
            aggregates,
        },
        span,
    )))
}

/// `subset(parent = Film, key = film_id, into = recent, keep = 10, order = date)`.
pub(super) fn subset_attr(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
) -> syn::Result<Option<(SubsetAttr, Span)>> {
    let span = meta.path.span();
    let syntax = "subset(parent = Film, key = film_id, into = recent, keep = 10, order = date)";
    let msg = format!("`subset` names the parent and what it keeps: {syntax}");
    if !attr::has_list(cx, meta, msg)? {
        return Ok(None);
    }
    let (mut parent, mut key, mut into, mut order) = (None, None, None, None);
    let mut keep = Slot::default();
    meta.parse_nested_meta(|option| {
        let name = attr::key_name(&option);
        match name.as_str() {
            "parent" => parent = Some(option.value()?.parse::<syn::Path>()?),
            "key" => key = Some(option.value()?.parse::<Ident>()?),
            "into" => into = Some(option.value()?.parse::<Ident>()?),
            "order" => order = Some(option.value()?.parse::<Ident>()?),
            "keep" => return keep.parse(cx, &option, attr::positive_int),
            _ => {
                let msg = format!(
                    "unknown subset option `{name}`; expected one of: `parent`, `key`, `into`, `keep`, `order`"
                );
                return attr::refuse(cx, &option, msg);
            }
        }
        Ok(())
    })?;
    match (parent, key, into, keep.get(), order) {
        (Some(parent), Some(key), Some(into), Some(keep), Some(order)) => Ok(Some((
            SubsetAttr {
                parent,
                key,
                into,
                keep,
                order,
            },
            span,
        ))),
        _ => {
            cx.error_at(
                span,
                format!("`subset` needs `parent`, `key`, `into`, `keep` and `order`: {syntax}"),
            );
            Ok(None)
        }
    }
}

/// What `archive(...)` names: the age field and the pin flag (Rust names), and the key's span.
pub(crate) type ArchiveAttr = ((Ident, Option<Ident>), Span);

/// `archive(age = created, pin = pinned)`: the age field and the optional flag that pins a
/// document live, by their Rust names.
pub(super) fn archive_attr(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<ArchiveAttr>> {
    let span = meta.path.span();
    let syntax = "archive(age = created, pin = pinned)";
    let msg = format!(
        "`archive` names the date field that ages a document (and optionally a flag that pins it live): {syntax}"
    );
    if !attr::has_list(cx, meta, msg)? {
        return Ok(None);
    }
    let (mut age, mut pin) = (None, None);
    meta.parse_nested_meta(|option| {
        let name = attr::key_name(&option);
        match name.as_str() {
            "age" => age = Some(option.value()?.parse::<Ident>()?),
            "pin" => pin = Some(option.value()?.parse::<Ident>()?),
            // The option's name before 0.1: `keep` is a subset's count.
            "keep" => {
                return attr::refuse(
                    cx,
                    &option,
                    "`keep` is now `pin`: archive(age = created, pin = pinned) names the flag that \
                     keeps a document live (`keep` is how many children a `subset` embeds)",
                );
            }
            _ => {
                let msg = format!("unknown archive option `{name}`; expected one of: `age`, `pin`");
                return attr::refuse(cx, &option, msg);
            }
        }
        Ok(())
    })?;
    match age {
        Some(age) => Ok(Some(((age, pin), span))),
        None => {
            cx.error_at(span, format!("`archive` needs `age`: {syntax}"));
            Ok(None)
        }
    }
}
