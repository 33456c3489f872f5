//! `#[derive(Outlier)]`'s checks: the required keys, the fields' roles, and the names the main
//! document and the overflow chunks store, distinct.

use super::roles::{roles, vec_item, Roles};
use crate::ast::Container;
use crate::attr::outlier::{Outlier, ATTR, FLAGS};
use crate::attr::serde::unraw;
use crate::ctxt::Ctxt;
use crate::names::{check_distinct, check_field_name, Name};

pub(crate) fn outlier(cx: &Ctxt, cont: &Container<Outlier>) {
    let a = &cont.attrs;
    let collection = a
        .collection
        .required(cx, cont.ident, "#[outlier(collection = \"...\")]");
    let overflow = a
        .overflow
        .required(cx, cont.ident, "#[outlier(overflow = \"...\")]");
    a.threshold
        .required(cx, cont.ident, "#[outlier(threshold = ...)]");
    if let (Some(main), Some(over)) = (collection, overflow) {
        if main.value == over.value {
            cx.error_at(
                over.span.expect("given"),
                "overflow must differ from the main collection",
            );
        }
    }
    let Some(Roles {
        marked: [id, items],
        ..
    }) = roles(cx, cont, ATTR, FLAGS)
    else {
        return;
    };
    if let Some(id) = id.filter(|id| id.bson.value != "_id") {
        cx.error_spanned_by(
            id.ident,
            "the id field must be stored as `_id`: add #[serde(rename = \"_id\")]",
        );
    }
    if let Some(items) = items {
        vec_item(cx, items, "#[outlier(items)]");
        check_field_name(cx, &items.bson);
        if items.bson.value == "_id" {
            cx.error_spanned_by(items.ident, "the items field cannot be stored as `_id`");
        }
    }
    let flag = a.flag.name_or("has_extras");
    check_flag(cx, cont, &flag);
    let owner = a.owner(cont.ident);
    let extra = a.extra(items);
    let count = a.count.name_or("count");
    let seq = a.seq.name_or("seq");
    let overflow_names: Vec<(&str, &Name)> = [
        ("owner", Some(&owner)),
        ("extra", extra.as_ref()),
        ("count", Some(&count)),
        ("seq", Some(&seq)),
    ]
    .into_iter()
    .filter_map(|(role, name)| Some((role, name?)))
    .collect();
    check_distinct(cx, &overflow_names, cont.ident.span());
}

/// The flag is set on the main document: no field of the struct may have its name.
fn check_flag(cx: &Ctxt, cont: &Container<Outlier>, flag: &Name) {
    let fields = cont.fields().into_iter().flatten();
    for f in fields.filter(|f| f.bson.value == flag.value) {
        let msg = format!(
            "the flag field {:?} is also the name of field `{}`; choose another with #[outlier(flag = \"...\")]",
            flag.value,
            unraw(f.ident)
        );
        cx.error_at(flag.span.or(f.bson.span).unwrap_or(f.ident.span()), msg);
    }
}
