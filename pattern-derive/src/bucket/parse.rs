//! Reading `#[derive(Bucket)]`'s input into the model; every mistake is reported.

use proc_macro2::Group;
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{token, DeriveInput, Member, Visibility};

use super::{Aggregate, Bucket, Op, Stubs};
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::names::{
    check_distinct, check_field_name, field_name_problem, Name, BOUNDED_FIELD, SUMMARIZED_FIELD,
};
use crate::serde_names::{unraw, unraw_member};
use crate::shape::{vec_arg, vec_item, Kind, Roles, Struct};

const KIND: Kind<2> = Kind {
    derive: "Bucket",
    attr: "bucket",
    flags: ["key", "items"],
    keys: &[
        "collection",
        "size",
        "time",
        "count",
        "page",
        "summary",
        "validate",
        "span",
        "granularity",
        "rollup",
    ],
};

#[derive(Default)]
struct Attrs {
    collection: Slot<Name>,
    size: Slot<u32>,
    time: Slot<Member>,
    count: Slot<Name>,
    page: Slot<Name>,
    summary: Slot<Vec<Aggregate>>,
    validate: Slot<()>,
    span: Slot<(i64, proc_macro2::Span)>,
    granularity: Slot<(i64, proc_macro2::Span)>,
    rollup: Slot<proc_macro2::Span>,
}

pub(crate) fn parse(input: &DeriveInput) -> syn::Result<Bucket<'_>> {
    KIND.parse(input, container, |cx, st, a| check(cx, st, a, &input.vis))
}

/// What the stubs beside `parse`'s errors can use: the key and item types and the summary's
/// aggregates, read again with their errors dropped (`parse` reported them).
pub(crate) fn stubs(input: &DeriveInput) -> Stubs<'_> {
    let [key, items] = KIND.marked_quietly(input);
    let quiet = Ctxt::new();
    let summary = container(&quiet, input).summary.get();
    drop(quiet.check());
    let summary = summary.map(|mut aggs| {
        let mut seen = Vec::new();
        aggs.retain(|a| {
            let new = !seen.contains(&a.rust_field);
            seen.push(a.rust_field.clone());
            new
        });
        aggs
    });
    Stubs {
        input,
        key_ty: key.map(|(_, ty)| ty),
        item_ty: items.and_then(|(_, ty)| vec_arg(ty)),
        summary,
    }
}

fn container(cx: &Ctxt, input: &DeriveInput) -> Attrs {
    let mut a = Attrs::default();
    attr::each_key(cx, &input.attrs, "bucket", |meta| {
        match attr::key_name(meta).as_str() {
            // #[bucket(collection = "trades")]
            "collection" => a.collection.parse(cx, meta, attr::collection),
            // #[bucket(size = 10)]
            "size" => a.size.parse(cx, meta, attr::positive_int),
            // #[bucket(time = "date")]
            "time" => a.time.parse(cx, meta, time_field),
            // #[bucket(count = "count")]
            "count" => a.count.parse(cx, meta, attr::field_name),
            // #[bucket(page = "page")]
            "page" => a.page.parse(cx, meta, attr::field_name),
            // #[bucket(summary(sum = "qty", min = "price", max = "price"))]
            "summary" => a.summary.parse(cx, meta, summary),
            // #[bucket(validate)]
            "validate" => a.validate.parse(cx, meta, attr::flag),
            // #[bucket(span = "1d")]
            "span" => a.span.parse(cx, meta, span),
            // #[bucket(granularity = "hours")]
            "granularity" => a.granularity.parse(cx, meta, granularity),
            // #[bucket(rollup)]
            "rollup" => a.rollup.parse(cx, meta, |cx, meta| {
                Ok(attr::flag(cx, meta)?.map(|()| meta.path.span()))
            }),
            _ => KIND.unknown_key(cx, meta),
        }
    });
    a
}

/// `time = "date"`: a field of the item type, spanned at the literal.
fn time_field(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Member>> {
    let Some(lit) = attr::string(cx, meta)? else {
        return Ok(None);
    };
    let member = lit.parse::<Member>();
    if member.is_err() {
        cx.error_at(
            lit.span(),
            "time must name a field of the item type, like `time = \"date\"`",
        );
    }
    Ok(member.ok())
}

/// The longest span a bucket may have, in milliseconds.
const MAX_SPAN_MS: i64 = 366 * 86_400_000;

/// `span = "1d"`: a number and a unit (`s`, `m`, `h`, `d`), from one second to 366 days, in
/// milliseconds, with the literal's span.
fn span(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<(i64, proc_macro2::Span)>> {
    let Some(lit) = attr::string(cx, meta)? else {
        return Ok(None);
    };
    let text = lit.value();
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = match &text[digits.len()..] {
        "s" => Some(1_000),
        "m" => Some(60_000),
        "h" => Some(3_600_000),
        "d" => Some(86_400_000),
        _ => None,
    };
    let ms = match (digits.parse::<i64>(), unit) {
        (Ok(n), Some(unit)) if n >= 1 => n.checked_mul(unit).filter(|ms| *ms <= MAX_SPAN_MS),
        _ => None,
    };
    match ms {
        Some(ms) => Ok(Some((ms, lit.span()))),
        None => {
            cx.error_at(
                lit.span(),
                "span must be a whole number of seconds, minutes, hours or days from 1s to 366d, \
                 like `span = \"1d\"` (units: s, m, h, d)",
            );
            Ok(None)
        }
    }
}

/// `granularity = "hours"`: the span of a time-series collection of that granularity.
fn granularity(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<(i64, proc_macro2::Span)>> {
    let Some(lit) = attr::string(cx, meta)? else {
        return Ok(None);
    };
    const SPANS: [(&str, i64); 3] = [
        ("seconds", 3_600_000),
        ("minutes", 86_400_000),
        ("hours", 30 * 86_400_000),
    ];
    match SPANS.iter().find(|(name, _)| *name == lit.value()) {
        Some((_, ms)) => Ok(Some((*ms, lit.span()))),
        None => {
            cx.error_at(
                lit.span(),
                "granularity must be one of \"seconds\" (buckets span one hour), \"minutes\" (one \
                 day) or \"hours\" (30 days), as a time-series collection's; or give `span = \"...\"`",
            );
            Ok(None)
        }
    }
}

/// `summary(sum = "qty", min = "price", ...)`: the aggregates in order, each a valid field
/// name, no (op, field) twice.
fn summary(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Vec<Aggregate>>> {
    const SYNTAX: &str = "summary(sum = \"qty\", min = \"price\", max = \"price\")";
    if !meta.input.peek(token::Paren) {
        cx.error_spanned_by(
            &meta.path,
            format!("summary takes a list of aggregates: `{SYNTAX}`"),
        );
        attr::skip_value(meta.input)?;
        return Ok(None);
    }
    let group: Group = meta.input.fork().parse()?;
    if group.stream().is_empty() {
        let path = &meta.path;
        cx.error_spanned_by(
            quote!(#path #group),
            format!("summary(...) is empty; name at least one aggregate: `{SYNTAX}`"),
        );
        attr::skip_value(meta.input)?;
        return Ok(Some(Vec::new()));
    }
    let mut aggs = Vec::<Aggregate>::new();
    meta.parse_nested_meta(|m| {
        let Some(op) = Op::ALL.into_iter().find(|op| m.path.is_ident(op.name())) else {
            cx.syn_error(m.error(format!(
                "unknown key `{}` in summary(...); expected one of: `sum`, `min`, `max`",
                attr::key_name(&m)
            )));
            return attr::skip_value(m.input);
        };
        let Some(lit) = attr::string(cx, &m)? else {
            return Ok(());
        };
        let name = Name::given(lit.value(), lit.span());
        if field_name_problem(&name.value).is_some() {
            check_field_name(cx, &name);
        } else if aggs
            .iter()
            .any(|a| a.op == op && a.item_field.value == name.value)
        {
            cx.error_at(
                lit.span(),
                format!(
                    "duplicate aggregate `{} = {:?}` in summary(...)",
                    op.name(),
                    name.value
                ),
            );
        } else {
            aggs.push(Aggregate::new(op, name));
        }
        Ok(())
    })?;
    Ok(Some(aggs))
}

/// The fields a bucket stores beside its key, items, count and page, with their roles: the
/// time bounds and their mark, the summary's mark and aggregates. An aggregate kept by the
/// bounds already (`min` or `max` of the time field) is an error at its literal instead.
fn kept_names(
    cx: &Ctxt,
    time: Option<&Member>,
    summary: &[Aggregate],
    bucket: &str,
) -> Vec<(String, Name)> {
    let mut names = Vec::new();
    let mut bounds = None;
    if let Some(member) = time {
        let (time, span) = (unraw_member(member), member.span());
        let (min, max) = (format!("{time}_min"), format!("{time}_max"));
        names.push((
            "time bounds' min".to_owned(),
            Name::given(min.clone(), span),
        ));
        names.push((
            "time bounds' max".to_owned(),
            Name::given(max.clone(), span),
        ));
        names.push(("time bounds' mark".to_owned(), Name::default(BOUNDED_FIELD)));
        bounds = Some((time, min, max));
    }
    if !summary.is_empty() {
        names.push(("summary's mark".to_owned(), Name::default(SUMMARIZED_FIELD)));
    }
    let mut rust_fields: Vec<&Aggregate> = Vec::new();
    for a in summary {
        let (op, item) = (a.op.name(), &a.item_field.value);
        let span = a.item_field.span.expect("an aggregate's name is given");
        if let Some((time, min, max)) = &bounds {
            let kept = match a.op {
                Op::Min => Some(min),
                Op::Max => Some(max),
                Op::Sum => None,
            };
            if kept == Some(&a.field) {
                cx.error_at(
                    span,
                    format!(
                        "`{op} = {item:?}` would be stored as {:?}, where the time bounds \
                         (`time = {time:?}`) already keep the time's {op}; remove it",
                        a.field
                    ),
                );
                continue;
            }
        }
        if let Some(other) = rust_fields.iter().find(|o| o.rust_field == a.rust_field) {
            cx.error_at(
                span,
                format!(
                    "`{op} = {item:?}` and `{} = {:?}` would both be the field `{}` of `{bucket}Summary`",
                    other.op.name(),
                    other.item_field.value,
                    a.rust_field
                ),
            );
            continue;
        }
        rust_fields.push(a);
        let stored = Name {
            value: a.field.clone(),
            span: Some(span),
        };
        names.push((format!("`{op} = {item:?}`"), stored));
    }
    names
}

/// The checks that span several attributes, then the model.
fn check<'a>(cx: &Ctxt, st: &Struct<'a, 2>, a: Attrs, vis: &'a Visibility) -> Option<Bucket<'a>> {
    let collection = a
        .collection
        .required(cx, st.ident, "#[bucket(collection = \"...\")]");
    let size = a.size.required(cx, st.ident, "#[bucket(size = ...)]");
    let count = a.count.get().unwrap_or_else(|| Name::default("count"));
    let page = a.page.get().unwrap_or_else(|| Name::default("page"));
    let Roles {
        marked: [key, items],
        others,
    } = st.roles(cx, &KIND)?;
    for f in others {
        let msg = format!(
            "field `{}` is not stored by the bucket pattern; mark it #[bucket(key)] or #[bucket(items)], or remove it",
            unraw(f.ident)
        );
        cx.error_spanned_by(f.ident, msg);
    }
    let item_ty = items.and_then(|f| vec_item(cx, f, "#[bucket(items)]"));
    let time = a.time.get();
    let span = match (a.span.get(), a.granularity.get()) {
        (Some(_), Some((_, at))) => {
            cx.error_at(
                at,
                "give either `span` or `granularity`, not both (granularity is a preset span)",
            );
            None
        }
        (Some((ms, at)), None) | (None, Some((ms, at))) => {
            if time.is_none() {
                cx.error_at(
                    at,
                    "a bucket's span bounds the time of its items: it needs `time = \"...\"`, the \
                     item field holding their time",
                );
            }
            Some(ms)
        }
        (None, None) => None,
    };
    let summary = a.summary.get();
    let rollup = match (a.rollup.get(), &summary) {
        (Some(at), None) => {
            cx.error_at(
                at,
                "rollup keeps the whole history's summary of each key: it needs \
                 `summary(...)`, the aggregates to keep",
            );
            false
        }
        (at, _) => at.is_some(),
    };
    let summary = summary.unwrap_or_default();
    let validate = a.validate.get().is_some();
    let kept = kept_names(cx, time.as_ref(), &summary, &unraw(st.ident));
    let (key, items) = (key?, items?);
    check_field_name(cx, &key.bson);
    check_field_name(cx, &items.bson);
    let mut names = vec![
        ("key", &key.bson),
        ("items", &items.bson),
        ("count", &count),
        ("page", &page),
    ];
    names.extend(kept.iter().map(|(role, name)| (role.as_str(), name)));
    check_distinct(cx, &names, st.ident.span());
    Some(Bucket {
        ident: st.ident,
        vis,
        collection: collection?.value,
        size: size?,
        time,
        span,
        key_field: key.bson.value.clone(),
        items_field: items.bson.value.clone(),
        count_field: count.value,
        page_field: page.value,
        key_ty: key.ty,
        item_ty: item_ty?,
        summary,
        rollup,
        validate,
    })
}
