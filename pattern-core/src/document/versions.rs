//! Schema versioning (`#[document(version = N, previous(...))]`): each stored document carries
//! the version of the struct that wrote it; reads decode it as that version's type and upgrade
//! it along the declared conversions to the current type; a document of a newer version than
//! this build knows is never decoded into another shape nor overwritten
//! ([`Error::NewerVersion`]).

use std::fmt;
use std::marker::PhantomData;

use bson::{Bson, Document as BsonDocument};
use serde::de::DeserializeOwned;

use super::{part_of, parts, Document, Polymorphic};
use crate::error::display_bson;
use crate::store::query::Filter;
use crate::{Error, Result};

/// How a versioned document type stores its schema version: what `#[document(version = ...)]`
/// declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versioning {
    /// The field holding the version (`version_field`, default `"schema_version"`), an Int32.
    pub field: &'static str,
    /// The version of the type itself: what every write stores.
    pub current: u32,
    /// The version of a document without the field (written before versioning was declared):
    /// `unversioned`, by default the lowest declared version.
    pub unversioned: u32,
    /// The lowest version this build reads (the oldest declared in `previous(...)`).
    pub oldest: u32,
    /// Whether reads that upgraded a document write it back (`write_back`), as a
    /// compare-and-set on the version they read.
    pub write_back: bool,
}

impl Versioning {
    /// The version `doc` stores: its field, or [`Versioning::unversioned`] without one. A field
    /// that holds no positive integer is an [`store::Error::Decode`](crate::store::Error::Decode).
    pub fn of(&self, coll: &str, doc: &BsonDocument) -> Result<u32> {
        let value = match doc.get(self.field) {
            None => return Ok(self.unversioned),
            Some(v) => v,
        };
        let n = match value {
            Bson::Int32(n) => i64::from(*n),
            Bson::Int64(n) => *n,
            Bson::Double(f) if f.fract() == 0.0 && f.abs() < 1e10 => *f as i64,
            _ => -1,
        };
        u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
            Error::decode(
                coll,
                doc.get("_id"),
                format!(
                    "its schema version `{}` holds {}, not a version number",
                    self.field,
                    display_bson(value)
                ),
            )
        })
    }

    /// The documents stored at version `n` (without the field too when `n` is the
    /// unversioned one).
    pub fn at(&self, n: u32) -> Filter {
        let eq = Filter::Eq(self.field.into(), Bson::Int32(n as i32));
        if n == self.unversioned {
            Filter::Or(vec![eq, Filter::Exists(self.field.into(), false)])
        } else {
            eq
        }
    }

    /// The documents stored at a version other than the current one.
    pub fn not_current(&self) -> Filter {
        let ne = Filter::Ne(self.field.into(), Bson::Int32(self.current as i32));
        if self.unversioned == self.current {
            Filter::And(vec![ne, Filter::Exists(self.field.into(), true)])
        } else {
            ne
        }
    }

    /// The documents stored at an older version than the current one (the sweep's).
    pub fn older(&self) -> Filter {
        let lt = Filter::Lt(self.field.into(), Bson::Int32(self.current as i32));
        if self.unversioned < self.current {
            Filter::Or(vec![lt, Filter::Exists(self.field.into(), false)])
        } else {
            lt
        }
    }

    /// The documents this build may overwrite: at the current version or an older one.
    pub fn not_newer(&self) -> Filter {
        Filter::Or(vec![
            Filter::Lte(self.field.into(), Bson::Int32(self.current as i32)),
            Filter::Exists(self.field.into(), false),
        ])
    }
}

/// What a stored document is, by its version.
pub(crate) enum Stored {
    /// At the current version: decode it as the type.
    Current,
    /// At an older version: upgrade it.
    Older(u32),
}

/// The schema versions of the stored or written document `doc` of `D`: `D`'s, or on a
/// polymorphic enum its variant's (versions are each variant's own).
pub(crate) fn versioning_of<D: Document>(doc: &BsonDocument) -> Option<Versioning> {
    match D::POLYMORPHIC {
        Some(Polymorphic::Enum { .. }) => part_of::<D>(doc)?.versioning,
        _ => D::VERSIONING,
    }
}

/// The version of a stored document of `D` (on an enum, by its variant's versions), or
/// [`Error::NewerVersion`].
pub(crate) fn classify<D: Document>(doc: &BsonDocument) -> Result<Stored> {
    let Some(v) = versioning_of::<D>(doc) else {
        return Ok(Stored::Current);
    };
    let found = v.of(D::COLLECTION, doc)?;
    if found == v.current {
        Ok(Stored::Current)
    } else if found > v.current {
        Err(newer::<D>(doc.get("_id"), found, v.current))
    } else {
        Ok(Stored::Older(found))
    }
}

pub(crate) fn newer<D: Document>(id: Option<&Bson>, found: u32, known: u32) -> Error {
    Error::NewerVersion {
        collection: D::COLLECTION.to_owned(),
        id: id.map_or_else(|| "(no _id)".to_owned(), display_bson),
        found,
        known,
    }
}

/// Whether any document of `D` carries schema versions (`D`'s own, or a variant's on an enum).
pub(crate) fn versioned<D: Document>() -> bool {
    parts::<D>().iter().any(|p| p.versioning.is_some())
}

/// The documents of `D` at their current version (`None`: `D` has no versions): `D`'s, or on
/// an enum each variant's at its own, and every document of an unversioned variant.
pub(crate) fn current_filter<D: Document>() -> Option<Filter> {
    by_variant::<D>(|v| v.at(v.current), true)
}

/// The documents of `D` at another version than their current one (`None`: no versions).
pub(crate) fn not_current_filter<D: Document>() -> Option<Filter> {
    by_variant::<D>(Versioning::not_current, false)
}

/// `each` of `D`'s versions; on an enum, per versioned variant, with its discriminator (and
/// the unversioned variants' documents when `unversioned`).
fn by_variant<D: Document>(
    each: impl Fn(&Versioning) -> Filter,
    unversioned: bool,
) -> Option<Filter> {
    let Some(Polymorphic::Enum { field, variants }) = D::POLYMORPHIC else {
        return D::VERSIONING.map(|v| each(&v));
    };
    if !versioned::<D>() {
        return None;
    }
    let tag = |value: &str| Filter::Eq(field.into(), Bson::String(value.to_owned()));
    let any = (variants.iter()).filter_map(|s| match s.part.versioning {
        Some(v) => Some(Filter::And(vec![tag(s.value), each(&v)])),
        None => unversioned.then(|| tag(s.value)),
    });
    Some(Filter::Or(any.collect()))
}

/// A conversion from the previous version's type `A` to the next one's: implemented for every
/// `B: TryFrom<A>` (so for every `B: From<A>`) whose error displays. `#[derive(Document)]`
/// chains them from a stored document's version up to the current type.
#[diagnostic::on_unimplemented(
    message = "no upgrade from `{A}` to `{Self}`: `#[document(previous(...))]` needs `impl From<{A}> for {Self}` (or `TryFrom` with an error that implements `Display`)",
    label = "no `From<{A}>` (or `TryFrom<{A}>`) for `{Self}`"
)]
pub trait UpgradeFrom<A>: Sized {
    /// `A` upgraded, or why it cannot be.
    fn upgrade_from(value: A) -> Result<Self, String>;
}

impl<A, B> UpgradeFrom<A> for B
where
    B: TryFrom<A>,
    B::Error: fmt::Display,
{
    fn upgrade_from(value: A) -> Result<Self, String> {
        B::try_from(value).map_err(|e| e.to_string())
    }
}

/// A stored document being upgraded to `D`: what `#[derive(Document)]`'s `upgrade` starts
/// from ([`Upgrading::read`] the stored version's type, then [`Hop::then`] each next one).
pub struct Upgrading<D> {
    id: Option<Bson>,
    from: u32,
    doc: BsonDocument,
    of: PhantomData<fn() -> D>,
}

impl<D: Document> Upgrading<D> {
    /// The stored `doc`, at version `from`.
    pub fn new(from: u32, doc: BsonDocument) -> Self {
        Upgrading {
            id: doc.get("_id").cloned(),
            from,
            doc,
            of: PhantomData,
        }
    }

    /// Decodes the document as `T`, the type of its stored version.
    pub fn read<T: DeserializeOwned>(self) -> Result<Hop<D, T>> {
        let value = bson::from_document(self.doc).map_err(|e| {
            Error::decode(
                D::COLLECTION,
                self.id.as_ref(),
                format!("as schema version {}: {e}", self.from),
            )
        })?;
        Ok(Hop {
            id: self.id,
            at: self.from,
            value,
            of: PhantomData,
        })
    }

    /// The error of a version this build declares no type for.
    pub fn unknown(self) -> Error {
        Error::decode(
            D::COLLECTION,
            self.id.as_ref(),
            format!(
                "schema version {} is older than any version this build declares",
                self.from
            ),
        )
    }
}

/// A document upgraded to version `at`, as `T`.
pub struct Hop<D, T> {
    id: Option<Bson>,
    at: u32,
    value: T,
    of: PhantomData<fn() -> D>,
}

impl<D: Document, T> Hop<D, T> {
    /// Upgrades it to the next version's type.
    pub fn then<U: UpgradeFrom<T>>(self) -> Result<Hop<D, U>> {
        let value = U::upgrade_from(self.value).map_err(|e| {
            Error::decode(
                D::COLLECTION,
                self.id.as_ref(),
                format!(
                    "upgrading from schema version {} to {}: {e}",
                    self.at,
                    self.at + 1
                ),
            )
        })?;
        Ok(Hop {
            id: self.id,
            at: self.at + 1,
            value,
            of: PhantomData,
        })
    }

    /// The upgraded value.
    pub fn done(self) -> Result<T> {
        Ok(self.value)
    }
}
