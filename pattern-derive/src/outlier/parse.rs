//! Reading `#[derive(Outlier)]`'s input into the model; every mistake is reported.

use syn::DeriveInput;

use super::{Outlier, Stubs};
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::names::{check_distinct, check_field_name, Name};
use crate::serde_names::{snake_case, unraw};
use crate::shape::{vec_arg, vec_item, Kind, Roles, Struct};

const KIND: Kind<2> = Kind {
    derive: "Outlier",
    attr: "outlier",
    flags: ["id", "items"],
    keys: &[
        "collection",
        "overflow",
        "threshold",
        "chunk",
        "flag",
        "owner",
        "extra",
        "count",
        "seq",
        "validate",
    ],
};

#[derive(Default)]
struct Attrs {
    collection: Slot<Name>,
    overflow: Slot<Name>,
    threshold: Slot<u32>,
    chunk: Slot<u32>,
    flag: Slot<Name>,
    owner: Slot<Name>,
    extra: Slot<Name>,
    count: Slot<Name>,
    seq: Slot<Name>,
    validate: Slot<()>,
}

pub(crate) fn parse(input: &DeriveInput) -> syn::Result<Outlier<'_>> {
    KIND.parse(input, container, check)
}

/// What the stubs beside `parse`'s errors can use: the items field's name and item type,
/// read again with their errors dropped (`parse` reported them).
pub(crate) fn stubs(input: &DeriveInput) -> Stubs<'_> {
    let [_, items] = KIND.marked_quietly(input);
    Stubs {
        input,
        item_ty: items.and_then(|(_, ty)| vec_arg(ty)),
    }
}

fn container(cx: &Ctxt, input: &DeriveInput) -> Attrs {
    let mut a = Attrs::default();
    attr::each_key(cx, &input.attrs, "outlier", |meta| {
        match attr::key_name(meta).as_str() {
            // #[outlier(collection = "sales")]
            "collection" => a.collection.parse(cx, meta, attr::collection),
            // #[outlier(overflow = "extra_sales")]
            "overflow" => a.overflow.parse(cx, meta, attr::collection),
            // #[outlier(threshold = 50)]
            "threshold" => a.threshold.parse(cx, meta, attr::positive_int),
            // #[outlier(chunk = 500)]
            "chunk" => a.chunk.parse(cx, meta, attr::positive_int),
            // #[outlier(flag = "has_extras")]
            "flag" => a.flag.parse(cx, meta, attr::field_name),
            // #[outlier(owner = "book_id")]
            "owner" => a.owner.parse(cx, meta, attr::field_name),
            // The key's name before 0.1: `reference` is an extended reference on Document.
            "reference" => {
                cx.syn_error(meta.error(
                    "`reference` is now `owner`: #[outlier(owner = \"book_id\")] names the overflow \
                     chunk's field holding its main document's `_id` (`reference` is \
                     #[derive(Document)]'s extended reference)",
                ));
                attr::skip_value(meta.input)
            }
            // #[outlier(extra = "customers_purchased_extra")]
            "extra" => a.extra.parse(cx, meta, attr::field_name),
            // #[outlier(count = "count")]
            "count" => a.count.parse(cx, meta, attr::field_name),
            // #[outlier(seq = "seq")]
            "seq" => a.seq.parse(cx, meta, attr::field_name),
            // #[outlier(validate)]
            "validate" => a.validate.parse(cx, meta, attr::flag),
            _ => KIND.unknown_key(cx, meta),
        }
    });
    a
}

/// The checks that span several attributes, then the model.
fn check<'a>(cx: &Ctxt, st: &Struct<'a, 2>, a: Attrs) -> Option<Outlier<'a>> {
    let collection = a
        .collection
        .required(cx, st.ident, "#[outlier(collection = \"...\")]");
    let overflow = a
        .overflow
        .required(cx, st.ident, "#[outlier(overflow = \"...\")]");
    let threshold = a
        .threshold
        .required(cx, st.ident, "#[outlier(threshold = ...)]");
    if let (Some(main), Some(over)) = (&collection, &overflow) {
        if main.value == over.value {
            cx.error_at(
                over.span.expect("given"),
                "overflow must differ from the main collection",
            );
        }
    }
    let Roles {
        marked: [id, items],
        ..
    } = st.roles(cx, &KIND)?;
    if let Some(id) = id.filter(|id| id.bson.value != "_id") {
        cx.error_spanned_by(
            id.ident,
            "the id field must be stored as `_id`: add #[serde(rename = \"_id\")]",
        );
    }
    let item_ty = items.and_then(|f| vec_item(cx, f, "#[outlier(items)]"));
    if let Some(items) = items {
        check_field_name(cx, &items.bson);
        if items.bson.value == "_id" {
            cx.error_spanned_by(items.ident, "the items field cannot be stored as `_id`");
        }
    }
    let flag = a.flag.get().unwrap_or_else(|| Name::default("has_extras"));
    check_flag(cx, st, &flag);
    let owner = a
        .owner
        .get()
        .unwrap_or_else(|| Name::default(snake_case(&unraw(st.ident)) + "_id"));
    let extra = a
        .extra
        .get()
        .or_else(|| items.map(|f| Name::default(format!("{}_extra", f.bson.value))));
    let count = a.count.get().unwrap_or_else(|| Name::default("count"));
    let seq = a.seq.get().unwrap_or_else(|| Name::default("seq"));
    let overflow_names: Vec<(&str, &Name)> = [
        ("owner", Some(&owner)),
        ("extra", extra.as_ref()),
        ("count", Some(&count)),
        ("seq", Some(&seq)),
    ]
    .into_iter()
    .filter_map(|(role, name)| Some((role, name?)))
    .collect();
    check_distinct(cx, &overflow_names, st.ident.span());
    let items = items?;
    Some(Outlier {
        ident: st.ident,
        collection: collection?.value,
        overflow: overflow?.value,
        threshold: threshold?,
        chunk: a.chunk.get(),
        flag: flag.value,
        owner: owner.value,
        extra: extra?.value,
        count: count.value,
        seq: seq.value,
        id_ty: id?.ty,
        item_ty: item_ty?,
        items_field: items.bson.value.clone(),
        validate: a.validate.get().is_some(),
    })
}

/// The flag is set on the main document: no field of the struct may have its name.
fn check_flag<const N: usize>(cx: &Ctxt, st: &Struct<'_, N>, flag: &Name) {
    let fields = st.fields.iter().flatten();
    for f in fields.filter(|f| f.bson.value == flag.value) {
        let msg = format!(
            "the flag field {:?} is also the name of field `{}`; choose another with #[outlier(flag = \"...\")]",
            flag.value,
            unraw(f.ident)
        );
        cx.error_at(flag.span.or(f.bson.span).unwrap_or(f.ident.span()), msg);
    }
}
