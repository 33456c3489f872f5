//! The trait a document type implements (`#[derive(Document)]`): its collection, its id and
//! what its attributes declare, the constants the write pipeline builds a type's stages from.

use bson::Document as BsonDocument;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{
    Approximate, Archive, Computed, Polymorphic, Propagation, ReferenceField, Referrer,
    StoredField, Subset, Upgrading, Versioning, DEFAULT_FAN_OUT,
};
use crate::spec::Keywords;
use crate::store::query::{self, IndexSpec};
use crate::Result;

/// A plain document type: the user's struct, stored as one document in [`Document::COLLECTION`]
/// with `_id` = [`Document::id`]. Implemented by `#[derive(Document)]`.
pub trait Document: Serialize + DeserializeOwned + Send + Sync + Sized {
    /// The collection.
    const COLLECTION: &'static str;
    /// The type of the field stored as `_id`.
    type Id: Serialize + DeserializeOwned + Clone + std::fmt::Debug + Send + Sync;
    /// This document's id.
    fn id(&self) -> &Self::Id;
    /// Its keyword arrays (`#[document(keywords)]`), each with a multikey index.
    const KEYWORDS: &'static [Keywords] = &[];
    /// Its schema versioning (`#[document(version = N, previous(...))]`); `None`: documents
    /// carry no version.
    const VERSIONING: Option<Versioning> = None;
    /// Its history collection (`#[document(history = "...")]`): every write through the
    /// library bumps the document's [`REVISION`](super::REVISION) and records the state it replaces there, in
    /// the same transaction. `None`: no history.
    const HISTORY: Option<&'static str> = None;
    /// The names of the generated methods that write (`insert`, `save`, `update_one`,
    /// `delete`...): what the suite walks to check that each one records a revision. Not a
    /// public API.
    #[doc(hidden)]
    const __WRITES: &'static [&'static str] = &[];
    /// Its attributes fields (`#[document(attributes)]`, of type [`Attributes`](super::Attributes)): each with
    /// the compound index `{field.k: 1, field.v: 1}`.
    const ATTRIBUTES: &'static [&'static str] = &[];
    /// Its indexed fields (`#[document(index)]`): each with the index `{field: 1}` (on a
    /// variant's type, partial on its variant).
    const INDEXED: &'static [&'static str] = &[];
    /// Its part in a polymorphic collection (`#[derive(Document)]` on a serde internally
    /// tagged enum, and `#[document(variant_of = ...)]` on each variant's type). `None`: every
    /// document of the collection is of this type.
    const POLYMORPHIC: Option<Polymorphic> = None;
    /// A variant's type: its stored fields, what the enum's validator checks of them.
    const STORED: &'static [StoredField] = &[];
    /// Its approximate counters (`#[document(approximate(every = N))]`): written once every
    /// `N` increments ([`increment`](super::increment), [`flush`](super::flush)).
    const APPROXIMATE: &'static [Approximate] = &[];
    /// Its archive (`#[document(archive(age = ..., keep = ...))]`): the fields [`archive`](super::archive)
    /// moves old documents by.
    const ARCHIVE: Option<Archive> = None;
    /// The parent this child type keeps aggregates in (`#[document(computed(...))]`): every
    /// write of a child adjusts them in the same transaction. `None`: no parent.
    const COMPUTED: Option<Computed> = None;
    /// The parent this child type keeps a subset of its children in
    /// (`#[document(subset(...))]`): every write of a child rewrites it in the same
    /// transaction. `None`: no subset.
    const SUBSET: Option<Subset> = None;
    /// Its fields holding copies of other documents' fields (`#[document(reference)]`): each
    /// write fills them from their sources in its transaction.
    const REFERENCES: &'static [ReferenceField] = &[];
    /// The fields of other types holding copies of this type's fields
    /// (`#[document(referenced_by(Film = director))]`): every write of a document updates
    /// them ([`Propagation`]).
    const REFERENCED_BY: &'static [Referrer] = &[];
    /// How a write reaches the copies of this type's fields (`fan_out = N`, `deferred`).
    const PROPAGATION: Propagation = Propagation {
        fan_out: DEFAULT_FAN_OUT,
        deferred: false,
    };
    /// Decodes `doc`, stored at the older schema version `from`, as that version's type and
    /// upgrades it to this one, hop by hop ([`Upgrading`]). The derive generates it from
    /// `previous(...)`; without versioning every version is unknown.
    fn upgrade(from: u32, doc: BsonDocument) -> Result<Self> {
        Err(Upgrading::<Self>::new(from, doc).unknown())
    }
    /// A polymorphic enum: the indexes its variants' types declare, each partial on its
    /// variant; a variant's type: its enum's (the derive generates both; whichever of the
    /// types is used first ensures them all).
    fn variant_indexes() -> Vec<IndexSpec> {
        Vec::new()
    }
    /// A variant's type: its enum's [`schemas`](super::schemas) (the derive generates it), so that a
    /// variant's `ensure_validator` installs the enum's validator, never one of its own.
    fn enum_schemas() -> Vec<(&'static str, query::Schema)> {
        Vec::new()
    }
}

/// What `D` declares (`part`: `D::COMPUTED`, `D::SUBSET`...), or the refusal of an operation
/// that needs it: "`<collection>` declares no <what>: <attribute>".
pub(crate) fn declares<D: Document, T>(part: Option<T>, what: &str, attribute: &str) -> Result<T> {
    part.ok_or_else(|| {
        crate::Error::invalid(format!(
            "`{}` declares no {what}: {attribute}",
            D::COLLECTION
        ))
    })
}
