//! Reading `#[derive(Bucket)]`'s input into the model; every mistake is reported.

use syn::meta::ParseNestedMeta;
use syn::{DeriveInput, Member};

use super::{Bucket, Stubs};
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::names::{check_distinct, check_field_name, Name};
use crate::serde_names::unraw;
use crate::shape::{vec_arg, vec_item, Kind, Roles, Struct};

const KIND: Kind<2> = Kind {
    derive: "Bucket",
    attr: "bucket",
    flags: ["key", "items"],
    keys: &["collection", "size", "time", "count", "page"],
};

#[derive(Default)]
struct Attrs {
    collection: Slot<Name>,
    size: Slot<u32>,
    time: Slot<Member>,
    count: Slot<Name>,
    page: Slot<Name>,
}

pub(crate) fn parse(input: &DeriveInput) -> syn::Result<Bucket<'_>> {
    KIND.parse(input, container, check)
}

/// What the stubs beside `parse`'s errors can use: the items field's item type, read again
/// with its errors dropped (`parse` reported them).
pub(crate) fn stubs(input: &DeriveInput) -> Stubs<'_> {
    let [_, items] = KIND.marked_quietly(input);
    Stubs {
        input,
        item_ty: items.and_then(|(_, ty)| vec_arg(ty)),
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

/// The checks that span several attributes, then the model.
fn check<'a>(cx: &Ctxt, st: &Struct<'a, 2>, a: Attrs) -> Option<Bucket<'a>> {
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
    let (key, items) = (key?, items?);
    check_field_name(cx, &key.bson);
    check_field_name(cx, &items.bson);
    check_distinct(
        cx,
        &[
            ("key", &key.bson),
            ("items", &items.bson),
            ("count", &count),
            ("page", &page),
        ],
        st.ident.span(),
    );
    Some(Bucket {
        ident: st.ident,
        collection: collection?.value,
        size: size?,
        time: a.time.get(),
        key_field: key.bson.value.clone(),
        items_field: items.bson.value.clone(),
        count_field: count.value,
        page_field: page.value,
        key_ty: key.ty,
        item_ty: item_ty?,
    })
}
