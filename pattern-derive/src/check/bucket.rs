//! `#[derive(Bucket)]`'s checks: the required keys, the fields' roles, `span` and `rollup`
//! with what they need, and the names a bucket stores, distinct.

use syn::spanned::Spanned;
use syn::Member;

use super::roles::{roles, vec_item, Roles};
use crate::ast::Container;
use crate::attr::bucket::{Aggregate, Bucket, Op, ATTR, FLAGS};
use crate::attr::serde::{unraw, unraw_member};
use crate::ctxt::Ctxt;
use crate::names::{check_distinct, check_field_name, Name, BOUNDED_FIELD, SUMMARIZED_FIELD};

pub(crate) fn bucket(cx: &Ctxt, cont: &Container<Bucket>) {
    let a = &cont.attrs;
    a.collection
        .required(cx, cont.ident, "#[bucket(collection = \"...\")]");
    a.size.required(cx, cont.ident, "#[bucket(size = ...)]");
    let (count, page) = (a.count.name_or("count"), a.page.name_or("page"));
    let Some(Roles {
        marked: [key, items],
        others,
    }) = roles(cx, cont, ATTR, FLAGS)
    else {
        return;
    };
    for f in others {
        let msg = format!(
            "field `{}` is not stored by the bucket pattern; mark it #[bucket(key)] or #[bucket(items)], or remove it",
            unraw(f.ident)
        );
        cx.error_spanned_by(f.ident, msg);
    }
    if let Some(items) = items {
        vec_item(cx, items, "#[bucket(items)]");
    }
    let time = a.time.value();
    match (a.span.value(), a.granularity.value()) {
        (Some(_), Some((_, at))) => cx.error_at(
            *at,
            "give either `span` or `granularity`, not both (granularity is a preset span)",
        ),
        (Some((_, at)), None) | (None, Some((_, at))) if time.is_none() => cx.error_at(
            *at,
            "a bucket's span bounds the time of its items: it needs `time = \"...\"`, the \
             item field holding their time",
        ),
        _ => {}
    }
    if let (Some(at), None) = (a.rollup.value(), a.summary.value()) {
        cx.error_at(
            *at,
            "rollup keeps the whole history's summary of each key: it needs \
             `summary(...)`, the aggregates to keep",
        );
    }
    let kept = kept_names(cx, time, a.summary(), &unraw(cont.ident));
    let (Some(key), Some(items)) = (key, items) else {
        return;
    };
    check_field_name(cx, &key.bson);
    check_field_name(cx, &items.bson);
    let mut names = vec![
        ("key", &key.bson),
        ("items", &items.bson),
        ("count", &count),
        ("page", &page),
    ];
    names.extend(kept.iter().map(|(role, name)| (role.as_str(), name)));
    check_distinct(cx, &names, cont.ident.span());
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
