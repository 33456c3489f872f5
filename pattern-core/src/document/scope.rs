//! The documents of one variant of a polymorphic collection ([`Scope`]): what a variant's
//! features read and write of the collection its enum shares, the filter that narrows them.

use bson::Bson;

use super::{Document, Polymorphic};
use crate::store::query;

/// The documents of one variant of a polymorphic collection, those whose `field` is `value`:
/// what a variant's feature reads and writes of the collection its enum shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scope {
    /// The discriminator field.
    pub field: &'static str,
    /// The variant's value.
    pub value: &'static str,
}

impl Scope {
    /// A variant's type's scope; `None` for an enum or a type that is not polymorphic (every
    /// document of its collection is its own).
    pub const fn of(p: Option<Polymorphic>) -> Option<Scope> {
        match p {
            Some(Polymorphic::Variant { field, value }) => Some(Scope { field, value }),
            _ => None,
        }
    }

    /// `filter` narrowed to `scope` (`None`: as it is).
    pub(crate) fn narrow(scope: Option<Scope>, filter: query::Filter) -> query::Filter {
        match scope {
            Some(Scope { field, value }) => query::Filter::And(vec![
                query::Filter::Eq(field.into(), Bson::String(value.to_owned())),
                filter,
            ]),
            None => filter,
        }
    }

    /// `filter` narrowed to `D`'s variant when `D` is a variant's type.
    pub(crate) fn narrow_to<D: Document>(filter: query::Filter) -> query::Filter {
        Scope::narrow(Scope::of(D::POLYMORPHIC), filter)
    }
}
