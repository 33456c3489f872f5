//! The library's error: the patterns' meanings ([`Error`]) over what a store can say
//! ([`store::Error`](crate::store::Error), which it wraps as [`Error::Store`]).

use std::fmt;

pub(crate) use pattern_store::error::display_bson;
pub use pattern_store::error::MAX_DOCUMENT_BYTES;
use pattern_store::{Error as StoreError, FromStore};

/// Every error the library returns. Match on the variant; the messages are for people.
///
/// What the store itself said (the server unreachable, a duplicate key, a write conflict, a
/// validator's refusal, a document too large, a retry loop that gave up...) is
/// [`Error::Store`], holding the store's [`store::Error`](crate::store::Error). The other
/// variants are the patterns' own meanings: a tree's cycle, a newer schema version, a revision
/// that changed since it was read...
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// What the store said: [`store::Error`](crate::store::Error) has its variants (a
    /// duplicate key, a write conflict, a schema violation, too large, the server...).
    #[error(transparent)]
    Store(#[from] StoreError),

    /// The parent document of an outlier push does not exist.
    #[error("no document with _id {id} in collection `{collection}`")]
    NotFound {
        /// The collection.
        collection: String,
        /// The `_id` asked for, as relaxed Extended JSON.
        id: String,
    },

    /// A lease another process holds: what this call needs to run alone (a follower of the same
    /// name) runs elsewhere, or this process lost it to another. Nothing of the call was kept.
    /// Not a conflict to retry at once: the holder keeps it while it runs and gives it up when
    /// it stops; one that dies holds it until `until` (its last renewal plus its lease).
    #[error("{what}")]
    LeaseHeld {
        /// Whose lease, who holds it and what to do.
        what: String,
        /// When the holder's lease ends without a renewal, when known.
        until: Option<bson::DateTime>,
    },

    /// A tree operation named a node that does not exist.
    #[error("no node with _id {id} in tree collection `{collection}`")]
    UnknownNode {
        /// The tree's collection.
        collection: String,
        /// The node's id, as relaxed Extended JSON.
        id: String,
    },

    /// A move would put a node under itself or under one of its own descendants.
    #[error("moving {node} under {under} in `{collection}` would make a cycle: {under} is {node} or one of its descendants")]
    Cycle {
        /// The tree's collection.
        collection: String,
        /// The node moved.
        node: String,
        /// The new parent asked for.
        under: String,
    },

    /// A write would put a node deeper than the tree's `max_depth` (a root has depth 0).
    #[error(
        "a node of `{collection}` would be at depth {depth}, deeper than max_depth = {max_depth}"
    )]
    TooDeep {
        /// The tree's collection.
        collection: String,
        /// The depth a node would get.
        depth: u64,
        /// The tree's limit.
        max_depth: u32,
    },

    /// `pattern_core::bucket::ingest` stopped on an error: the items at `unwritten`
    /// (indexes into its input, in order) were not written, every other one was, once.
    /// Ingesting exactly those again completes the load.
    #[error("ingest wrote {written} items and stopped, {} not written: {source}", unwritten.len())]
    Ingest {
        /// Items written (each once).
        written: u64,
        /// Indexes into the input of the items not written, in order.
        unwritten: Vec<usize>,
        #[source]
        /// The error that stopped it.
        source: Box<Error>,
    },

    /// A push to a `#[bucket(rollup)]` series wrote its items, but the key's roll-up (the
    /// summary of its whole history) could not be updated: do not push the items again. The
    /// roll-up is marked stale when that could be written (an ingest leaves its batch's pending
    /// mark instead), and reads then count the key's buckets; `pattern_core::bucket::backfill`
    /// recomputes it.
    #[error("the items were written to `{collection}`, but the roll-up of key {key} was not updated: {source}")]
    RollupBehind {
        /// The buckets' collection.
        collection: String,
        /// The key, as extended JSON.
        key: String,
        #[source]
        /// Why the roll-up's update failed.
        source: Box<Error>,
    },

    /// A resumable operation (a migration, a money conversion, an archive) was asked to run
    /// with other settings than those its checkpoint was written with: resuming would mix what
    /// both settings do (two layouts in one collection, two cut-offs in one archive pass), and a
    /// finished migration is in the checkpoint's layout, not the one asked for.
    /// Nothing was written. `stored` and `given` hold the settings that differ, by name.
    #[error("{}", settings_changed(checkpoint, *finished, stored, given, restart))]
    SettingsChanged {
        /// The checkpoint's `_id` in `pattern_core::adopt::CHECKPOINTS`.
        checkpoint: String,
        /// The operation had finished (else it is part-way).
        finished: bool,
        /// The checkpoint's values of the settings that differ.
        stored: Box<bson::Document>,
        /// This run's values of the same settings.
        given: Box<bson::Document>,
        /// How to start over with the new settings (the checkpoint to delete first).
        restart: String,
    },

    /// A migration or conversion was pointed at data that is not there (a typo in a
    /// collection or field name): refused before anything was written.
    #[error("{}", source_not_found(collection, missing, found))]
    SourceNotFound {
        /// The collection named.
        collection: String,
        /// What is missing (boxed: errors stay small).
        missing: Box<Missing>,
        /// What was found instead: the database's collections when the collection is
        /// missing, else the top-level fields of (a sample of) its documents.
        found: Vec<String>,
    },

    /// A stored document is of a schema version newer than this program knows
    /// (`#[document(version = ...)]`): written by a newer build during a rolling deploy. It was
    /// not decoded (its shape is not one this build knows), and a write refused with this left
    /// it as it was: an older build never writes an older shape over a newer document.
    #[error("document {id} in collection `{collection}` is at schema version {found}, newer than the {known} this program knows: read and write it with a build that knows version {found}")]
    NewerVersion {
        /// The collection.
        collection: String,
        /// The `_id` of the document, as relaxed Extended JSON.
        id: String,
        /// The version stored in the document.
        found: u32,
        /// The newest version this program declares.
        known: u32,
    },

    /// A write conditioned on the revision the caller read (`save_if`, `update_if`,
    /// `delete_if` of a type with `#[document(history = ...)]`) found another revision: the
    /// document changed since it was read (`found`: its revision now; `None`: it was deleted).
    /// Nothing was written; read it again and redo the change.
    #[error("document {id} in collection `{collection}` is at revision {}, not the {expected} the write expected: it changed since it was read", found.map_or_else(|| "none (deleted)".to_owned(), |f| f.to_string()))]
    Conflict {
        /// The collection.
        collection: String,
        /// The `_id` of the document, as relaxed Extended JSON.
        id: String,
        /// The revision the write was conditioned on.
        expected: u64,
        /// The revision stored now; `None` when there is no such document.
        found: Option<u64>,
    },

    /// A delete of a document that other documents hold a required copy of (an extended
    /// reference, `#[document(reference)]` of a type that is not an `Option`): deleting it would
    /// leave copies of nothing. Nothing was deleted; delete or repoint the referencing
    /// documents first, or make the reference optional (then the copies become `null`).
    #[error("document {id} in collection `{collection}` is still referenced by `{}` (e.g. document {}): delete or repoint those first, or make the reference an Option", by.field, by.example)]
    StillReferenced {
        /// The source's collection.
        collection: String,
        /// The source's `_id`, as relaxed Extended JSON.
        id: String,
        /// Who holds a copy (boxed: errors stay small).
        by: Box<ReferencedBy>,
    },

    /// A stored document of a polymorphic collection (`#[derive(Document)]` on an enum) whose
    /// discriminator is missing or names no variant this program knows: written by another
    /// tool or a newer build. It was not decoded (never as a wrong variant); a find can skip
    /// such documents instead (`Find::skip_unknown_variants`), and `verify_variants` lists
    /// them.
    #[error("document {id} in collection `{collection}` has {}: not one of this program's variants", match &variant.value { Some(v) => format!("`{}: {v}`", variant.field), None => format!("no `{}`", variant.field) })]
    UnknownVariant {
        /// The collection.
        collection: String,
        /// The `_id` of the document, as relaxed Extended JSON.
        id: String,
        /// The discriminator field and the value found (boxed: errors stay small).
        variant: Box<StoredVariant>,
    },

    /// A write of one variant over a stored document of another (the same `_id`): a save of
    /// a polymorphic type never changes a document's variant by accident. Nothing was
    /// written; change it explicitly (the enum's `change_variant`).
    #[error("document {id} in collection `{collection}` is {}, not the `{}` written: change its variant explicitly (`change_variant`)", variant.stored.as_ref().map_or_else(|| "of no variant (no discriminator)".to_owned(), |v| format!("a `{v}`")), variant.written)]
    OtherVariant {
        /// The collection.
        collection: String,
        /// The `_id` of the document, as relaxed Extended JSON.
        id: String,
        /// The variant stored and the one written (boxed: errors stay small).
        variant: Box<VariantChange>,
    },
}

#[cfg(test)]
#[test]
fn errors_stay_small() {
    // Every call returns a `Result<_, Error>`: its size is copied on every return. The store's
    // error bounds its own size; the patterns' variants stay within it.
    let (ours, store) = (size_of::<Error>(), size_of::<StoreError>());
    assert!(ours <= store.max(80), "{ours} > {store}");
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The variant's name (`"Cycle"`, `"NewerVersion"`...), or the store error's
    /// (`"DuplicateKey"`, `"WriteConflict"`...): a low-cardinality kind for logs and metrics
    /// (the `error.type` of an operation's span, see [`observe`](crate::observe)).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Error::Store(e) => e.kind_name(),
            Error::NotFound { .. } => "NotFound",
            Error::LeaseHeld { .. } => "LeaseHeld",
            Error::UnknownNode { .. } => "UnknownNode",
            Error::Cycle { .. } => "Cycle",
            Error::TooDeep { .. } => "TooDeep",
            Error::Ingest { .. } => "Ingest",
            Error::RollupBehind { .. } => "RollupBehind",
            Error::SettingsChanged { .. } => "SettingsChanged",
            Error::SourceNotFound { .. } => "SourceNotFound",
            Error::NewerVersion { .. } => "NewerVersion",
            Error::Conflict { .. } => "Conflict",
            Error::StillReferenced { .. } => "StillReferenced",
            Error::UnknownVariant { .. } => "UnknownVariant",
            Error::OtherVariant { .. } => "OtherVariant",
        }
    }

    /// The store's error, when this is one ([`Error::Store`]).
    pub fn store_error(&self) -> Option<&StoreError> {
        match self {
            Error::Store(e) => Some(e),
            _ => None,
        }
    }

    /// A document of `collection` (`_id` `id`) that does not decode: the store error
    /// [`Decode`](crate::store::Error::Decode).
    pub fn decode(collection: &str, id: Option<&bson::Bson>, reason: impl fmt::Display) -> Self {
        Error::Store(StoreError::decode(collection, id, reason))
    }

    /// Input the operation refuses: the store error
    /// [`InvalidInput`](crate::store::Error::InvalidInput).
    pub fn invalid(msg: impl fmt::Display) -> Self {
        Error::Store(StoreError::invalid(msg))
    }

    /// True for a conflict that a retry of the whole transaction may resolve (the store error
    /// [`WriteConflict`](crate::store::Error::WriteConflict)).
    pub fn is_transient(&self) -> bool {
        self.store_error().is_some_and(StoreError::is_transient)
    }

    /// True when the server could not be reached or timed out.
    pub fn is_unavailable(&self) -> bool {
        self.store_error().is_some_and(StoreError::is_unavailable)
    }
}

impl FromStore for Error {
    fn store_error(&self) -> Option<&StoreError> {
        Error::store_error(self)
    }
    fn kind_name(&self) -> &'static str {
        Error::kind_name(self)
    }
}

/// Who holds a copy of a document [`Error::StillReferenced`] refused to delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferencedBy {
    /// The referencing collection and field (`films.director`).
    pub field: String,
    /// The `_id` of one referencing document, as relaxed Extended JSON.
    pub example: String,
}

/// The discriminator [`Error::UnknownVariant`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredVariant {
    /// The discriminator field (`kind`).
    pub field: String,
    /// Its value, as relaxed Extended JSON for a value that is not a string; `None`: the
    /// document has no such field.
    pub value: Option<String>,
}

/// The variants of [`Error::OtherVariant`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariantChange {
    /// The stored document's discriminator value (`None`: it has none, or not a string).
    pub stored: Option<String>,
    /// The written document's.
    pub written: String,
}

/// What [`Error::SourceNotFound`] did not find.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Missing {
    /// The collection does not exist.
    Collection,
    /// No document of the collection has this field (with the type the operation needs).
    Field {
        /// The field's name.
        field: String,
        /// What it should hold: "an array", "a key", "a time"...
        holding: String,
    },
}

fn settings_changed(
    checkpoint: &str,
    finished: bool,
    stored: &bson::Document,
    given: &bson::Document,
    restart: &str,
) -> String {
    let diff: Vec<String> = stored
        .iter()
        .map(|(k, v)| {
            let g = given.get(k).map_or("(none)".to_owned(), display_bson);
            format!("{k} {} in the checkpoint, {g} given", display_bson(v))
        })
        .collect();
    let diff = diff.join("; ");
    if finished {
        format!(
            "`{checkpoint}` finished with other settings ({diff}): the data is in the checkpoint's layout, not in \
             the one asked for. To redo it with the new settings, {restart}"
        )
    } else {
        format!(
            "`{checkpoint}` is part-way with other settings ({diff}): resuming would mix what both settings do (two \
             layouts, two cut-offs). Run it again \
             with the checkpoint's settings to finish it; or, to start over with the new ones, {restart}"
        )
    }
}

fn source_not_found(collection: &str, missing: &Missing, found: &[String]) -> String {
    let found = if found.is_empty() {
        "none".to_owned()
    } else {
        found.join(", ")
    };
    match missing {
        Missing::Collection => format!(
            "no collection `{collection}` in this database (its collections: {found}); nothing was written"
        ),
        Missing::Field { field, holding } => format!(
            "no document of `{collection}` has `{field}` holding {holding} (fields found: {found}); nothing was written"
        ),
    }
}
