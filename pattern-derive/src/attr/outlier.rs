//! `#[outlier(...)]`: the struct's keys and the fields' flags (`id`, `items`).

use syn::meta::ParseNestedMeta;
use syn::Ident;

use super::serde::{snake_case, unraw};
use super::Slot;
use crate::ast::{self, Field};
use crate::ctxt::Ctxt;
use crate::names::Name;

pub(crate) const ATTR: &str = "outlier";
/// The fields' flags, in the order of [`ID`] and [`ITEMS`].
pub(crate) const FLAGS: [&str; 2] = ["id", "items"];
pub(crate) const ID: usize = 0;
pub(crate) const ITEMS: usize = 1;
const KEYS: &[&str] = &[
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
];

/// The struct's `#[outlier(...)]` keys.
#[derive(Default)]
pub(crate) struct Outlier {
    pub collection: Slot<Name>,
    pub overflow: Slot<Name>,
    pub threshold: Slot<u32>,
    /// Absent: `pattern_core::outlier::DEFAULT_CHUNK`.
    pub chunk: Slot<u32>,
    pub flag: Slot<Name>,
    pub owner: Slot<Name>,
    pub extra: Slot<Name>,
    pub count: Slot<Name>,
    pub seq: Slot<Name>,
    pub validate: Slot<()>,
}

impl ast::Attrs for Outlier {
    const DERIVE: &'static str = "Outlier";
    const ATTR: &'static str = ATTR;
    /// Which of [`FLAGS`] the field has.
    type Field = [bool; 2];

    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        match super::key_name(meta).as_str() {
            // #[outlier(collection = "sales")]
            "collection" => self.collection.parse(cx, meta, super::collection),
            // #[outlier(overflow = "extra_sales")]
            "overflow" => self.overflow.parse(cx, meta, super::collection),
            // #[outlier(threshold = 50)]
            "threshold" => self.threshold.parse(cx, meta, super::positive_int),
            // #[outlier(chunk = 500)]
            "chunk" => self.chunk.parse(cx, meta, super::positive_int),
            // #[outlier(flag = "has_extras")]
            "flag" => self.flag.parse(cx, meta, super::field_name),
            // #[outlier(owner = "book_id")]
            "owner" => self.owner.parse(cx, meta, super::field_name),
            // The key's name before 0.1: `reference` is an extended reference on Document.
            "reference" => super::refuse(
                cx,
                meta,
                "`reference` is now `owner`: #[outlier(owner = \"book_id\")] names the overflow \
                 chunk's field holding its main document's `_id` (`reference` is \
                 #[derive(Document)]'s extended reference)",
            ),
            // #[outlier(extra = "customers_purchased_extra")]
            "extra" => self.extra.parse(cx, meta, super::field_name),
            // #[outlier(count = "count")]
            "count" => self.count.parse(cx, meta, super::field_name),
            // #[outlier(seq = "seq")]
            "seq" => self.seq.parse(cx, meta, super::field_name),
            // #[outlier(validate)]
            "validate" => self.validate.parse(cx, meta, super::flag),
            _ => super::unknown(cx, meta, ATTR, KEYS),
        }
    }

    fn field(cx: &Ctxt, field: &syn::Field) -> [bool; 2] {
        super::flags(cx, &field.attrs, ATTR, FLAGS)
    }
}

impl Outlier {
    /// The overflow chunk's field holding its main document's `_id`: `owner = "..."`, else
    /// the struct's name in snake_case with `_id` (`book_id`).
    pub(crate) fn owner(&self, ident: &Ident) -> Name {
        self.owner.name_or(snake_case(&unraw(ident)) + "_id")
    }

    /// The overflow chunk's items field: `extra = "..."`, else the items field's name with
    /// `_extra`; `None` without either.
    pub(crate) fn extra<F>(&self, items: Option<&Field<'_, F>>) -> Option<Name> {
        (self.extra.value().cloned())
            .or_else(|| items.map(|f| Name::default(format!("{}_extra", f.bson.value))))
    }
}
