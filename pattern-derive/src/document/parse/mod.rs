//! Reading `#[derive(Document)]`'s input into the model; every mistake is reported.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{DeriveInput, Ident};

use super::{ComputedAttr, Doc, Normalize, SubsetAttr, Typed};
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::names::Name;
use crate::serde_names::{self, unraw};
use crate::shape::named_fields;

mod check;
mod field;
mod references;
mod related;
mod versions;

pub(super) use field::money_form;
use field::{field_attrs, is_option, FieldAttrs};
use related::{archive_attr, computed_attr, subset_attr};
use versions::{previous, version_number, versioning};

const DERIVE: &str = "Document";
const ATTR: &str = "document";

/// serde keys that store a field otherwise than its type says: no typed path can name what
/// they write (`with` and `serialize_with` only when they name one of the money adapters).
const UNTYPED: [&str; 1] = ["flatten"];
/// serde keys that choose how a field is written.
const WRITERS: [&str; 2] = ["with", "serialize_with"];
/// serde keys that leave a field out of the stored document.
const NOT_STORED: [&str; 2] = ["skip", "skip_serializing"];

/// One field as read: its typed path, whether serde stores it, its keyword option.
struct Read<'a> {
    typed: Typed<'a>,
    stored: bool,
    keywords: Option<Normalize>,
    /// `approximate(every = N)`: `N`, and the key's span.
    approximate: Option<(u32, Span)>,
    /// A writer the typed path cannot follow (reported): no typed path, even as a stub.
    untyped: bool,
    /// `#[document(reference)]`: the key's span, and where the copy is when not the field.
    reference: Option<(Span, Option<crate::document::Within>)>,
    /// `#[document(attributes)]`: the key's span.
    attributes: Option<Span>,
    /// `#[document(index)]`: the key's span.
    index: Option<Span>,
    /// Every document has it (not an `Option`, no `#[serde(default)]`, not skipped when
    /// empty): what a polymorphic enum's validator requires of a variant.
    required: bool,
    /// The BSON types its Rust type says it holds (empty: it does not say).
    types: &'static [&'static str],
}

pub(crate) fn parse(input: &DeriveInput) -> syn::Result<Doc<'_>> {
    let cx = Ctxt::new();
    let c = container(&cx, input);
    let fields = fields(&cx, input);
    let variant_of = c.variant_of.get();
    let (collection, variant_collection) = match &variant_of {
        None => (
            c.collection
                .required(&cx, &input.ident, "#[document(collection = \"...\")]"),
            None,
        ),
        // A variant's documents live in its enum's collection.
        Some(_) => (Some(crate::names::Name::default("")), c.collection.get()),
    };
    let versioning = versioning(
        &cx,
        input,
        c.version,
        c.field,
        c.unversioned,
        c.previous,
        c.write_back,
    );
    let history = c.history.get();
    let referenced_by = c.referenced_by.get();
    let propagation = references::propagation(&cx, referenced_by.as_ref(), c.fan_out, c.deferred);
    let (computed, subset, archive) = (c.computed.get(), c.subset.get(), c.archive.get());
    check::check(
        &cx,
        &check::Parsed {
            input,
            collection: collection.as_ref(),
            variant_collection: variant_collection.as_ref(),
            variant_of: variant_of.is_some(),
            versioning: versioning.as_ref(),
            history: history.as_ref(),
            computed: computed.as_ref(),
            subset: subset.as_ref(),
            archive: archive.as_ref(),
            fields: fields.as_deref(),
        },
    );
    let model = fields.and_then(|fields| model(input, fields, collection));
    cx.check()?;
    let mut model = model.expect("a model when there is no error");
    model.computed = computed.map(|(c, _)| c);
    model.subset = subset.map(|(s, _)| s);
    model.versioning = versioning;
    model.history = history.map(|h| h.value);
    model.referenced_by = referenced_by.map(|(r, _)| r).unwrap_or_default();
    model.propagation = propagation;
    model.variant_of = variant_of;
    model.archive = archive.map(|(a, _)| a);
    Ok(model)
}

/// The container's keys.
#[derive(Default)]
struct Container {
    collection: Slot<Name>,
    version: Slot<(u32, Span)>,
    field: Slot<Name>,
    unversioned: Slot<(u32, Span)>,
    previous: Slot<Vec<(syn::Path, u32, Span)>>,
    write_back: Slot<Span>,
    history: Slot<Name>,
    computed: Slot<(ComputedAttr, Span)>,
    subset: Slot<(SubsetAttr, Span)>,
    referenced_by: Slot<references::ReferencedBy>,
    fan_out: Slot<(u32, Span)>,
    deferred: Slot<Span>,
    variant_of: Slot<syn::Path>,
    archive: Slot<related::ArchiveAttr>,
}

/// The typed paths the fallback emits beside `parse`'s errors (the fields read again, their
/// errors dropped), and the approximate counters whose methods it stubs.
pub(crate) fn stubs(input: &DeriveInput) -> (Vec<Typed<'_>>, Vec<&Ident>) {
    let quiet = Ctxt::new();
    let read = fields(&quiet, input).unwrap_or_default();
    drop(quiet.check());
    let counters = (read.iter())
        .filter(|r| r.approximate.is_some())
        .map(|r| r.typed.ident)
        .collect();
    let typed = (read.into_iter())
        .filter(|r| r.stored && !r.untyped)
        .map(|r| r.typed)
        .collect();
    (typed, counters)
}

fn container(cx: &Ctxt, input: &DeriveInput) -> Container {
    let mut c = Container::default();
    attr::each_key(cx, &input.attrs, ATTR, |meta| {
        if meta.path.is_ident("collection") {
            // #[document(collection = "books")]
            c.collection.parse(cx, meta, attr::collection)
        } else if meta.path.is_ident("version") {
            // #[document(version = 3)]
            c.version.parse(cx, meta, version_number)
        } else if meta.path.is_ident("version_field") {
            c.field.parse(cx, meta, attr::field_name)
        } else if meta.path.is_ident("unversioned") {
            c.unversioned.parse(cx, meta, version_number)
        } else if meta.path.is_ident("previous") {
            // #[document(previous(PersonV1 = 1, PersonV2 = 2))]
            c.previous.parse(cx, meta, previous)
        } else if meta.path.is_ident("write_back") {
            let span = meta.path.span();
            c.write_back
                .parse(cx, meta, |cx, m| Ok(attr::flag(cx, m)?.map(|()| span)))
        } else if meta.path.is_ident("history") {
            // #[document(history = "books_history")]
            c.history.parse(cx, meta, attr::collection)
        } else if meta.path.is_ident("computed") {
            // #[document(computed(parent = Film, key = film_id, count = reviews, sum(rating = rating_sum)))]
            c.computed.parse(cx, meta, computed_attr)
        } else if meta.path.is_ident("subset") {
            // #[document(subset(parent = Film, key = film_id, into = recent, keep = 10, order = date))]
            c.subset.parse(cx, meta, subset_attr)
        } else if meta.path.is_ident("referenced_by") {
            // #[document(referenced_by(Film = director))]
            c.referenced_by.parse(cx, meta, references::referenced_by)
        } else if meta.path.is_ident("fan_out") {
            let span = meta.path.span();
            c.fan_out.parse(cx, meta, |cx, m| {
                Ok(attr::positive_int(cx, m)?.map(|n| (n, span)))
            })
        } else if meta.path.is_ident("deferred") {
            let span = meta.path.span();
            c.deferred
                .parse(cx, meta, |cx, m| Ok(attr::flag(cx, m)?.map(|()| span)))
        } else if meta.path.is_ident("archive") {
            // #[document(archive(age = created, pin = pinned))]
            c.archive.parse(cx, meta, archive_attr)
        } else if meta.path.is_ident("variant_of") {
            // #[document(variant_of = Product)]
            c.variant_of
                .parse(cx, meta, |_, m| Ok(Some(m.value()?.parse::<syn::Path>()?)))
        } else if meta.path.is_ident("reference") {
            cx.syn_error(meta.error(
                "`reference` goes on a field: #[document(reference)] above a field holding a \
                 #[derive(Reference)] type",
            ));
            attr::skip_value(meta.input)
        } else if meta.path.is_ident("keywords") {
            cx.syn_error(meta.error(
                "`keywords` goes on a field: #[document(keywords)] above a `Vec<String>` field",
            ));
            attr::skip_value(meta.input)
        } else {
            attr::unknown(
                cx,
                meta,
                ATTR,
                &[
                    "collection",
                    "version",
                    "previous",
                    "version_field",
                    "unversioned",
                    "write_back",
                    "history",
                    "computed",
                    "subset",
                    "referenced_by",
                    "fan_out",
                    "deferred",
                    "variant_of",
                    "archive",
                ],
            )
        }
    });
    c
}

/// Every field with its BSON name and options; `None` when the input is not a struct with
/// named fields (reported).
fn fields<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<Vec<Read<'a>>> {
    let named = named_fields(cx, input, DERIVE)?;
    let rule = serde_names::rename_all(cx, &input.attrs);
    let read = named.named.iter().map(|f| {
        let ident = f.ident.as_ref().expect("named field");
        let flattened = !serde_names::serde_keys(&f.attrs, &UNTYPED).is_empty();
        for key in serde_names::serde_keys(&f.attrs, &UNTYPED) {
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
        for (key, value) in serde_names::serde_key_values(&f.attrs, &WRITERS) {
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
        let FieldAttrs {
            keywords,
            approximate,
            reference,
            attributes,
            index,
        } = field_attrs(cx, &f.attrs);
        let optional = !serde_names::serde_keys(&f.attrs, &["default", "skip_serializing_if"])
            .is_empty()
            || is_option(&f.ty);
        Read {
            typed: Typed {
                konst: const_name(ident),
                ident,
                ty: &f.ty,
                bson: serde_names::field_name(cx, ident, &f.attrs, rule).value,
                money,
            },
            stored: serde_names::serde_keys(&f.attrs, &NOT_STORED).is_empty(),
            keywords,
            approximate,
            untyped,
            reference,
            attributes,
            index,
            required: !optional,
            types: crate::bson_type::bson_types(&f.ty, serde_names::serialized_as_is(&f.attrs)),
        }
    });
    Some(read.collect())
}

/// `AVAILABLE` for a field `available` (`TYPE` for `r#type`).
fn const_name(ident: &Ident) -> Ident {
    Ident::new(&unraw(ident).to_uppercase(), ident.span())
}

/// The model of the checked fields ([`check::check`] reported what is wrong with them);
/// `None` without an id field or a collection.
fn model<'a>(
    input: &'a DeriveInput,
    fields: Vec<Read<'a>>,
    collection: Option<Name>,
) -> Option<Doc<'a>> {
    let id = fields.iter().find(|r| r.stored && r.typed.bson == "_id");
    let keywords = (fields.iter())
        .filter_map(|r| Some((r.typed.bson.clone(), r.keywords?)))
        .collect();
    let approximate = (fields.iter())
        .filter(|r| r.stored)
        .filter_map(|r| Some((r.typed.ident, r.typed.bson.clone(), r.approximate?.0)))
        .collect();
    let references = (fields.iter())
        .filter(|r| r.stored)
        .filter_map(|r| {
            let (span, within) = r.reference.clone()?;
            Some((r.typed.konst.clone(), r.typed.ty, span, within))
        })
        .collect();
    let attributes = (fields.iter())
        .filter(|r| r.stored && r.typed.bson != "_id")
        .filter_map(|r| Some((r.typed.konst.clone(), r.attributes?)))
        .collect();
    let indexed = (fields.iter())
        .filter(|r| r.stored && r.typed.bson != "_id" && r.keywords.is_none())
        .filter(|r| r.attributes.is_none())
        .filter_map(|r| r.index.map(|_| r.typed.bson.clone()))
        .collect();
    let shape = (fields.iter())
        .filter(|r| r.stored)
        .map(|r| (r.typed.bson.clone(), r.required, r.types))
        .collect();
    let (id_field, id_ty) = id.map(|r| (r.typed.ident, r.typed.ty))?;
    Some(Doc {
        ident: &input.ident,
        collection: collection?.value,
        id_field,
        id_ty,
        fields: fields
            .into_iter()
            .filter(|r| r.stored)
            .map(|r| r.typed)
            .collect(),
        keywords,
        versioning: None,
        history: None,
        approximate,
        computed: None,
        subset: None,
        references,
        referenced_by: Vec::new(),
        propagation: None,
        attributes,
        indexed,
        shape,
        variant_of: None,
        archive: None,
    })
}
