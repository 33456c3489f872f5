//! Documents of many shapes in one collection (MongoDB's polymorphic pattern): a serde
//! internally tagged enum (`#[serde(tag = "kind")]`) deriving `Document`, and one type per
//! variant (a newtype variant's struct, or the struct the derive generates for a struct-like
//! variant) deriving it with `variant_of`.
//!
//! What the library does with the discriminator, on both stores:
//! - a variant type's every filter (`get`, `find`, `update_one`, `delete`, `save`) holds
//!   `{kind: <value>}`, so another variant never comes back and a variant-only field is never
//!   written into another variant's document; its writes stamp the value;
//! - a save never changes a stored document's variant ([`Error::OtherVariant`]); the enum's
//!   [`change_variant`](super::change_variant) does, explicitly;
//! - a stored document whose discriminator is missing or unknown is [`Error::UnknownVariant`]
//!   (never decoded as a wrong variant), skipped by a find that asks
//!   ([`Find::skip_unknown_variants`](super::Find::skip_unknown_variants)), listed by
//!   [`verify_variants`];
//! - an index declared on a variant type is partial on its variant; the enum's `$jsonSchema`
//!   checks each variant's fields by discriminator (`oneOf`).

use crate::store::Error as StoreError;
use bson::{Bson, Document as BsonDocument};

use super::related::computed::Computed;
use super::related::subset::Subset;
use super::scope::Scope;
use super::{at_current, decode_stored, Approximate, Document, ReferenceField};
use super::{Propagation, Referrer, SourceUpgrade, Versioning};
use crate::codec::BsonType;
use crate::error::{StoredVariant, VariantChange};
use crate::spec::Keywords;
use crate::store::query::{self, FindOptions, IndexSpec, Schema};
use crate::store::Store;
use crate::{Error, Result};

/// How a document type takes part in a polymorphic collection ([`Document::POLYMORPHIC`]).
#[derive(Clone, Copy, Debug)]
pub enum Polymorphic {
    /// The enum over the variants: `field` tells them apart.
    Enum {
        /// The discriminator field (serde's `tag`).
        field: &'static str,
        /// Each variant: its discriminator value and its stored fields.
        variants: &'static [VariantShape],
    },
    /// One variant's type: the documents whose `field` is `value`.
    Variant {
        /// The discriminator field.
        field: &'static str,
        /// This variant's value.
        value: &'static str,
    },
}

/// One variant of a polymorphic enum: its discriminator value and what its documents hold
/// (what the enum's validator requires of them).
#[derive(Clone, Copy, Debug)]
pub struct VariantShape {
    /// The discriminator value (the variant's serde name).
    pub value: &'static str,
    /// The variant's stored fields ([`Document::STORED`] of its type).
    pub fields: &'static [StoredField],
    /// The variant's keyword arrays ([`Document::KEYWORDS`] of its type): the enum's writes
    /// normalise them as the variant's own writes do.
    pub keywords: &'static [Keywords],
    /// What the variant's documents take part in: the enum's writes run the variant's stages.
    pub part: Part,
}

impl VariantShape {
    /// The variant of type `V` with discriminator `value` (what the enum's derive lists).
    pub const fn of<V: Document>(value: &'static str) -> VariantShape {
        VariantShape {
            value,
            fields: V::STORED,
            keywords: V::KEYWORDS,
            part: Part::of::<V>(),
        }
    }
}

/// What one kind of document takes part in with other documents: a type's related patterns,
/// or, on an enum, one variant's, which the enum's writes run for the documents of that
/// variant (a document takes part while it is that variant).
#[derive(Clone, Copy, Debug)]
pub struct Part {
    /// The parent it keeps aggregates in ([`Document::COMPUTED`]).
    pub computed: Option<Computed>,
    /// The parent it keeps a subset in ([`Document::SUBSET`]).
    pub subset: Option<Subset>,
    /// Its approximate counters ([`Document::APPROXIMATE`]).
    pub approximate: &'static [Approximate],
    /// Its fields holding copies of other documents' ([`Document::REFERENCES`]).
    pub references: &'static [ReferenceField],
    /// The copies of its fields others hold ([`Document::REFERENCED_BY`]), and how its writes
    /// reach them ([`Document::PROPAGATION`]).
    pub referenced_by: &'static [Referrer],
    /// How its writes reach its copies.
    pub propagation: Propagation,
    /// Its schema versions ([`Document::VERSIONING`]): a variant's own.
    pub versioning: Option<Versioning>,
    /// A stored document of it, at an older version, upgraded to the current one by its type
    /// (with its discriminator): how the enum reads an older variant.
    pub upgrade: Option<SourceUpgrade>,
}

impl Part {
    /// `D`'s own.
    pub const fn of<D: Document>() -> Part {
        Part {
            computed: D::COMPUTED,
            subset: D::SUBSET,
            approximate: D::APPROXIMATE,
            references: D::REFERENCES,
            referenced_by: D::REFERENCED_BY,
            propagation: D::PROPAGATION,
            versioning: D::VERSIONING,
            upgrade: match D::VERSIONING {
                Some(_) => Some(SourceUpgrade(at_current::<D>)),
                None => None,
            },
        }
    }
}

/// The part the stored or written document `doc` of `D` takes: `D`'s own, or on an enum its
/// variant's (by its discriminator; `None`: no variant of the enum).
pub(crate) fn part_of<D: Document>(doc: &BsonDocument) -> Option<Part> {
    match D::POLYMORPHIC {
        Some(Polymorphic::Enum { field, variants }) => {
            let value = doc.get_str(field).ok()?;
            variants.iter().find(|v| v.value == value).map(|v| v.part)
        }
        _ => Some(Part::of::<D>()),
    }
}

/// Every part `D`'s documents may take: `D`'s own, and on an enum each variant's.
pub(crate) fn parts<D: Document>() -> Vec<Part> {
    let mut out = vec![Part::of::<D>()];
    if let Some(Polymorphic::Enum { variants, .. }) = D::POLYMORPHIC {
        out.extend(variants.iter().map(|v| v.part));
    }
    out
}

/// Whether the documents `a` and `b` of `D` take one part (always, on a type that is no enum).
pub(crate) fn one_part<D: Document>(a: &BsonDocument, b: &BsonDocument) -> bool {
    match D::POLYMORPHIC {
        Some(Polymorphic::Enum { field, .. }) => a.get_str(field).ok() == b.get_str(field).ok(),
        _ => true,
    }
}

/// The sides of a write from `before` to `after` (either `None`: none) each part sees: one
/// pair when both are of one part (a type that is not an enum, a write that keeps the
/// variant); a change of variant leaves the one part (a delete there) and joins the other (an
/// insert there).
pub(crate) fn sides<'a, D: Document>(
    before: Option<&'a BsonDocument>,
    after: Option<&'a BsonDocument>,
) -> Vec<(Part, Option<&'a BsonDocument>, Option<&'a BsonDocument>)> {
    let Some(Polymorphic::Enum { .. }) = D::POLYMORPHIC else {
        return vec![(Part::of::<D>(), before, after)];
    };
    match (before, after) {
        (Some(b), Some(a)) if one_part::<D>(b, a) => part_of::<D>(b)
            .map(|p| (p, before, Some(a)))
            .into_iter()
            .collect(),
        _ => {
            let left = before.and_then(|b| Some((part_of::<D>(b)?, before, None)));
            let joined = after.and_then(|a| Some((part_of::<D>(a)?, None, after)));
            left.into_iter().chain(joined).collect()
        }
    }
}

/// A field of a variant's documents, as its validator checks it.
#[derive(Clone, Copy, Debug)]
pub struct StoredField {
    /// The BSON name.
    pub name: &'static str,
    /// Every document of the variant has it (not an `Option`, not `#[serde(default)]`, not
    /// skipped when empty).
    pub required: bool,
    /// The BSON types it holds, where its Rust type says so unambiguously; empty: any.
    pub types: &'static [BsonType],
}

/// One variant's type of a polymorphic enum (implemented by the enum's derive for each
/// variant's type): what the variant's derive reads its collection and discriminator from.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a variant of a polymorphic enum",
    label = "`variant_of` names an enum whose variants do not include `{Self}`",
    note = "list it in the enum deriving `Document`: `Name({Self})`"
)]
pub trait Variant: Sized {
    /// The enum.
    type Of;
    /// The enum's discriminator field.
    const FIELD: &'static str;
    /// This variant's discriminator value.
    const VALUE: &'static str;
    /// The enum holding this variant.
    fn into_enum(self) -> Self::Of;
    /// This variant, or the enum back when it holds another.
    fn from_enum(e: Self::Of) -> std::result::Result<Self, Self::Of>;
}

/// A compile-time check the enum's derive makes of each newtype variant's struct: it derives
/// `Document` with `variant_of` (else its own writes and finds would not know the
/// discriminator).
pub const fn variant_check(p: Option<Polymorphic>) {
    if !matches!(p, Some(Polymorphic::Variant { .. })) {
        panic!(
            "a newtype variant's struct must derive Document with #[document(variant_of = \
             <the enum>)] and no collection of its own"
        );
    }
}

/// `filter`, narrowed to `D`'s variant when `D` is a variant's type.
pub(crate) fn scope<D: Document>(filter: query::Filter) -> query::Filter {
    Scope::narrow_to::<D>(filter)
}

/// The discriminator of a document `D` writes (a variant's: its value; the enum's: what
/// serde wrote), with its field; `None` for a type that is not polymorphic.
pub(crate) fn written<D: Document>(doc: &BsonDocument) -> Option<(&'static str, String)> {
    match D::POLYMORPHIC? {
        Polymorphic::Variant { field, value } => Some((field, value.to_owned())),
        Polymorphic::Enum { field, .. } => {
            Some((field, doc.get_str(field).unwrap_or_default().to_owned()))
        }
    }
}

/// The document `D` writes, stamped with its variant's discriminator (the enum's serde wrote
/// it already).
pub(crate) fn stamp<D: Document>(doc: &mut BsonDocument) {
    if let Some(Polymorphic::Variant { field, value }) = D::POLYMORPHIC {
        doc.insert(field, value);
    }
}

/// The keyword arrays of a document `D` writes: its type's, and on an enum its variant's (by
/// the discriminator serde wrote).
pub(crate) fn keywords<D: Document>(doc: &BsonDocument) -> &'static [Keywords] {
    match D::POLYMORPHIC {
        Some(Polymorphic::Enum { field, variants }) => {
            let value = doc.get_str(field).ok();
            (variants.iter().find(|v| Some(v.value) == value)).map_or(&[], |v| v.keywords)
        }
        _ => D::KEYWORDS,
    }
}

/// The filter of a save: its `_id`, and on a polymorphic type the discriminator it writes
/// ([`written`]), so that an upsert over another variant's document fails rather than change
/// it.
pub(crate) fn save_filter(id: &Bson, variant: Option<&(&'static str, String)>) -> query::Filter {
    let by_id = query::Filter::Eq("_id".into(), id.clone());
    match variant {
        Some((field, value)) => query::Filter::And(vec![
            by_id,
            query::Filter::Eq((*field).into(), value.clone().into()),
        ]),
        None => by_id,
    }
}

/// Whether `e` is a duplicate `_id` (the store names the index `_id_`), not a duplicate on
/// another unique index.
pub(crate) fn on_id(e: &StoreError) -> bool {
    matches!(e, StoreError::DuplicateKey { message, .. }
        if message.split("index: ").nth(1).is_some_and(|rest| rest.starts_with("_id_")
            && rest[4..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '_')))
}

/// The write pipeline's variant guard: a save of `doc` (of `D`) over `stored` must keep its
/// variant; else [`Error::OtherVariant`], nothing written (the enum's [`change_variant`](super::change_variant)
/// changes it, explicitly).
pub(crate) fn same_variant<D: Document>(
    id: &Bson,
    stored: &BsonDocument,
    doc: &BsonDocument,
) -> Result<()> {
    let Some((field, value)) = written::<D>(doc) else {
        return Ok(());
    };
    let found = stored.get_str(field).ok();
    if found == Some(value.as_str()) {
        return Ok(());
    }
    Err(Error::OtherVariant {
        collection: D::COLLECTION.to_owned(),
        id: crate::error::display_bson(id),
        variant: Box::new(VariantChange {
            stored: found.map(str::to_owned),
            written: value,
        }),
    })
}

fn display(v: &Bson) -> String {
    match v {
        Bson::String(s) => s.clone(),
        other => crate::error::display_bson(other),
    }
}

/// Checks a stored document of the enum `D` before it is decoded: [`Error::UnknownVariant`]
/// when its discriminator is missing or names no variant. A variant's type removes its
/// discriminator (its struct does not hold it).
pub(crate) fn check_stored<D: Document>(doc: &mut BsonDocument) -> Result<()> {
    match D::POLYMORPHIC {
        None => Ok(()),
        Some(Polymorphic::Variant { field, .. }) => {
            doc.remove(field);
            Ok(())
        }
        Some(Polymorphic::Enum { field, variants }) => match doc.get(field) {
            Some(Bson::String(v)) if variants.iter().any(|s| s.value == v) => Ok(()),
            found => Err(unknown::<D>(doc, field, found)),
        },
    }
}

fn unknown<D: Document>(doc: &BsonDocument, field: &str, found: Option<&Bson>) -> Error {
    Error::UnknownVariant {
        collection: D::COLLECTION.to_owned(),
        id: doc
            .get("_id")
            .map_or_else(|| "(no _id)".to_owned(), crate::error::display_bson),
        variant: Box::new(StoredVariant {
            field: field.to_owned(),
            value: found.map(display),
        }),
    }
}

/// A stored document of a polymorphic collection that decodes as no variant of `D`
/// ([`verify_variants`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Undecodable {
    /// Its `_id`.
    pub id: Bson,
    /// Its discriminator value (`None`: it has none).
    pub variant: Option<Bson>,
    /// Why it does not decode (an unknown or missing discriminator, a variant's field of the
    /// wrong type...).
    pub reason: String,
}

/// The `comment` of [`verify_variants`]' scan.
pub const VARIANTS_VERIFY: &str = "pattern scatter: variants verify";

/// Every document of `D`'s collection that does not decode as `D` (an unknown or missing
/// discriminator, a variant's document missing a field...): one scan, in batches. Nothing is
/// written.
pub async fn verify_variants<D: Document, S: Store>(store: &S) -> Result<Vec<Undecodable>> {
    crate::observe::traced_op!(document.verify_variants, store, D::COLLECTION, async {
        use futures::StreamExt;
        let field = match D::POLYMORPHIC {
            Some(Polymorphic::Enum { field, .. } | Polymorphic::Variant { field, .. }) => {
                Some(field)
            }
            None => None,
        };
        let opts = FindOptions {
            comment: Some(VARIANTS_VERIFY),
            ..FindOptions::default()
        };
        let all = scope::<D>(query::Filter::And(Vec::new()));
        let mut out = Vec::new();
        let mut docs = store.scan(D::COLLECTION, &all, &opts, 1_000);
        while let Some(raw) = docs.next().await {
            let doc = raw?
                .to_document()
                .map_err(|e| Error::decode(D::COLLECTION, None, format!("not BSON: {e}")))?;
            let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
            let variant = field.and_then(|f| doc.get(f).cloned());
            if let Err(e) = decode_stored::<D>(doc) {
                out.push(Undecodable {
                    id,
                    variant,
                    reason: e.to_string(),
                });
            }
        }
        Ok(out)
    })
}

/// An index of a variant's type made partial on its variant (`{kind: <value>}`), and named
/// for it (two variants may index fields of one name).
pub(crate) fn partial<D: Document>(mut index: IndexSpec) -> IndexSpec {
    if let Some(Polymorphic::Variant { field, value }) = D::POLYMORPHIC {
        index.name = format!("{}_{field}_{value}", index.name);
        index.partial = Some(query::Filter::Eq(field.into(), value.into()));
    }
    index
}

/// The enum's `$jsonSchema`: the discriminator required and one of the variants' values, and
/// `oneOf` the variants' schemas: each its value, its required fields and their types.
pub(crate) fn schema(field: &str, variants: &[VariantShape], main: Schema) -> Schema {
    let values: Vec<&str> = variants.iter().map(|v| v.value).collect();
    let each = variants.iter().map(|v| {
        let mut s = Schema::default()
            .require(field)
            .property(field, Schema::default().values(&[v.value]));
        for f in v.fields {
            if f.required {
                s = s.require(f.name);
            }
            if !f.types.is_empty() {
                s = s.property(f.name, Schema::of(f.types));
            }
        }
        s
    });
    main.require(field)
        .property(field, Schema::of(&[BsonType::String]).values(&values))
        .one_of(each.collect())
}

/// Whether `doc` is a document of the enum `D` with an unknown or missing discriminator (what
/// a find that skips them leaves out).
pub(crate) fn is_unknown<D: Document>(doc: &BsonDocument) -> bool {
    match D::POLYMORPHIC {
        Some(Polymorphic::Enum { field, variants }) => !matches!(
            doc.get(field),
            Some(Bson::String(v)) if variants.iter().any(|s| s.value == v)
        ),
        _ => false,
    }
}

#[cfg(test)]
#[test]
fn an_unknown_discriminator_is_named() {
    let mut doc = bson::doc! {"_id": 7, "kind": "hat"};
    let e = unknown::<crate::document::tests::Book>(&doc, "kind", doc.get("kind"));
    assert!(e.to_string().contains("`kind: hat`"), "{e}");
    doc.remove("kind");
    let e = unknown::<crate::document::tests::Book>(&doc, "kind", None);
    assert!(e.to_string().contains("no `kind`"), "{e}");
}
