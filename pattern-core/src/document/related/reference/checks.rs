//! The `const fn`s the derives call: each takes only the right types, so a mistake in an
//! extended reference's attributes is a compile error at the name that makes it.

use super::{at_current, Copied, Reference, ReferenceField, Referrer, Slot, SourceUpgrade};
use crate::document::{Approximate, Document, Field, Scope};

/// The reference field `f` of `D` (the derive's check: `f` holds a [`Slot`]).
pub const fn reference_field<D: Document, F: Slot>(f: Field<D, F>) -> ReferenceField {
    ReferenceField {
        path: f.name(),
        source: <<F::Ref as Reference>::Source as Document>::COLLECTION,
        fields: <F::Ref as Reference>::FIELDS,
        optional: F::OPTIONAL,
        upgrade: match <<F::Ref as Reference>::Source as Document>::VERSIONING {
            Some(_) => Some(SourceUpgrade(at_current::<<F::Ref as Reference>::Source>)),
            None => None,
        },
        holders: Scope::of(D::POLYMORPHIC),
        sources: Scope::of(<<F::Ref as Reference>::Source as Document>::POLYMORPHIC),
    }
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

/// Whether `by` (a source's `REFERENCED_BY`) lists the field `path` of `collection` (the
/// derive's check that a source knows each of its copies).
pub const fn lists(by: &[Referrer], collection: &str, path: &str) -> bool {
    let mut i = 0;
    while i < by.len() {
        if same_str(by[i].collection, collection) && same_str(by[i].field.path, path) {
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
