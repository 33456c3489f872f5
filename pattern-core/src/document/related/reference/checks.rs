//! The `const fn`s the derives call: each takes only the right types, so a mistake in an
//! extended reference's attributes is a compile error at the name that makes it.

use super::{at_current, Copied, Reference, ReferenceField, Referrer, Slot, SourceUpgrade};
use crate::document::{Approximate, Document, Field, Scope};

/// The reference field `f` of `D` (the derive's check: `f` holds a [`Slot`]).
pub const fn reference_field<D: Document, F: Slot>(f: Field<D, F>) -> ReferenceField {
    placed::<D, F>(f.name(), "", false)
}

/// The reference `within` inside `D`'s embedded document `f` (`#[document(reference(in =
/// director))]`; the derive's check: `field` reads a [`Slot`] out of `f`'s type).
pub const fn reference_in<D: Document, M, F: Slot>(
    f: Field<D, M>,
    within: &'static str,
    _field: fn(M) -> F,
) -> ReferenceField {
    placed::<D, F>(f.name(), within, false)
}

/// The reference `within` inside each element of `D`'s array `f` (`#[document(reference(each
/// = person))]`; the derive's check: `field` reads a [`Slot`] out of an element).
pub const fn reference_each<D: Document, A: Elements, F: Slot>(
    f: Field<D, A>,
    within: &'static str,
    _field: fn(A::Item) -> F,
) -> ReferenceField {
    placed::<D, F>(f.name(), within, true)
}

const fn placed<D: Document, F: Slot>(
    path: &'static str,
    within: &'static str,
    each: bool,
) -> ReferenceField {
    ReferenceField {
        path,
        within,
        each,
        many: F::MANY,
        source: <<F::Ref as Reference>::Source as Document>::COLLECTION,
        fields: <F::Ref as Reference>::FIELDS,
        optional: F::OPTIONAL,
        upgrade: match <<F::Ref as Reference>::Source as Document>::VERSIONING {
            Some(_) => Some(SourceUpgrade(at_current::<<F::Ref as Reference>::Source>)),
            None => None,
        },
        holders: Scope::of(D::POLYMORPHIC),
        sources: Scope::of(<<F::Ref as Reference>::Source as Document>::POLYMORPHIC),
        subset: D::SUBSET,
    }
}

/// An array of embedded documents, each holding a copy (`#[document(reference(each = ...))]`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an array of embedded documents",
    label = "#[document(reference(each = field))] goes on a `Vec` of structs, each holding a copy in `field`"
)]
pub trait Elements {
    /// An element's type.
    type Item;
}

impl<T> Elements for Vec<T> {
    type Item = T;
}

/// `D`'s field `f` as a referrer of `S` (the derive's check: `f` holds copies of `S`).
pub const fn referrer<S: Document, D: Document, F: Slot>(f: Field<D, F>) -> Referrer
where
    F::Ref: Reference<Source = S>,
{
    Referrer {
        collection: D::COLLECTION,
        field: reference_field(f),
    }
}

/// `D`'s reference `within` inside its field `f` as a referrer of `S`
/// (`referenced_by(Film = meta.director)`): the one `D` declares there, which must copy `S`.
pub const fn referrer_at<S: Document, D: Document, M>(
    f: Field<D, M>,
    within: &'static str,
) -> Referrer {
    let mut i = 0;
    while i < D::REFERENCES.len() {
        let r = D::REFERENCES[i];
        if same_str(r.path, f.name())
            && same_str(r.within, within)
            && same_str(r.source, S::COLLECTION)
        {
            return Referrer {
                collection: D::COLLECTION,
                field: r,
            };
        }
        i += 1;
    }
    panic!(
        "referenced_by(Type = field.inner) names no copy of this type there: declare it on the \
         field with #[document(reference(in = inner))] or #[document(reference(each = inner))]"
    )
}

/// Whether `f`'s embedded copy is listed by its source (the derive's check, as [`lists`]).
pub const fn listed_in<D: Document, M, F: Slot>(
    f: Field<D, M>,
    within: &'static str,
    _field: fn(M) -> F,
) -> bool {
    listed::<D, F>(f.name(), within)
}

/// Whether the copy in each of `f`'s elements is listed by its source (as [`listed_in`]).
pub const fn listed_each<D: Document, A: Elements, F: Slot>(
    f: Field<D, A>,
    within: &'static str,
    _field: fn(A::Item) -> F,
) -> bool {
    listed::<D, F>(f.name(), within)
}

/// Whether the source of `D`'s copy at `path` (`within` it) lists it.
const fn listed<D: Document, F: Slot>(path: &str, within: &str) -> bool {
    let by = <<F::Ref as Reference>::Source as Document>::REFERENCED_BY;
    lists(by, D::COLLECTION, path, within)
}

/// A copied field (the derive's check: the source's field `f` has the copy field's type).
pub const fn copied_field<S, T>(f: Field<S, T>, to: &'static str) -> Copied {
    Copied { from: f.name(), to }
}

const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `by` (a source's `REFERENCED_BY`) lists the field `path` of `collection`, its copy
/// at `within` (`""`: the field's own; the derive's check that a source knows each of its
/// copies).
pub const fn lists(by: &[Referrer], collection: &str, path: &str, within: &str) -> bool {
    let mut i = 0;
    while i < by.len() {
        if same_str(by[i].collection, collection)
            && same_str(by[i].field.path, path)
            && same_str(by[i].field.within, within)
        {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether a copy in `by` copies one of `counters` (the derive's check: an approximate counter
/// is written by increments that no copy would follow).
pub const fn copies_a_counter(by: &[Referrer], counters: &[Approximate]) -> bool {
    let mut i = 0;
    while i < by.len() {
        let fields = by[i].field.fields;
        let mut j = 0;
        while j < fields.len() {
            let mut k = 0;
            while k < counters.len() {
                if same_str(fields[j].from, counters[k].field) {
                    return true;
                }
                k += 1;
            }
            j += 1;
        }
        i += 1;
    }
    false
}
