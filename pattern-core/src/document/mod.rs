//! Plain documents (`#[derive(Document)]`): one struct, one document, typed field paths
//! that follow serde's renames, and two recipes of MongoDB's data-modeling article.
//!
//! - Atomic operations: fields that change together live in one document and change in one
//!   conditional update ([`update_one`]: the checkout `{_id, available: {$gt: 0}}`, `$inc`,
//!   `$push`), whose result says whether it applied. No read-modify-write.
//! - Keyword search: a `Vec<String>` field marked `#[document(keywords)]` has a multikey index
//!   `{field: 1}`, and [`Field::contains`] / [`Field::contains_all`] find the documents holding
//!   one keyword or all of several ([`find`], with a projection of chosen fields), keywords
//!   optionally lowercased on write and on query ([`Normalize`](crate::spec::Normalize)).
//!
//! The functions are generic over the document type; the derive generates the same as typed
//! methods on the struct, and one [`Field`] constant per field.

mod approximate;
mod archive;
mod attributes;
mod codec;
mod docs;
mod find;
mod history;
mod indexes;
mod model;
mod ops;
mod polymorphic;
mod related;
mod scope;
mod sweep;
mod typed;
mod versions;
mod write;

pub use crate::error::{ReferencedBy, StoredVariant, VariantChange};
pub use crate::local_time::{LocalTime, LocalTimeError};
pub use approximate::{counters_without_history, estimate, flush, increment, pending, Approximate};
pub use archive::{
    archive, archive_layout, get_with_archive, verify_archive, verify_archive_layout, Archive,
    ArchiveAt, ArchiveReport, ARCHIVE_MOVE,
};
pub use attributes::{Attribute, Attributes};
pub use codec::to_document;
pub(crate) use codec::{decode, decode_stored, id_bson, read_stored, strip_kept};
pub use find::Find;
pub use history::{
    as_of, at_revision, get_revision, history, shard_keys, Revision, REVISED_AT, REVISION,
};
pub(crate) use indexes::indexes_ready;
pub use indexes::{
    ensure_indexes, ensure_validator, gathered_indexes, history_indexes, indexes, own_indexes,
    schemas,
};
pub(crate) use model::declares;
pub use model::Document;
pub(crate) use ops::find_by_id;
pub use ops::{
    change_variant, delete, delete_if, find, get, insert, save, save_if, update_if, update_one,
};
pub(crate) use polymorphic::{part_of, parts};
pub use polymorphic::{
    verify_variants, Part, Polymorphic, StoredField, Undecodable, Variant, VariantShape,
    VARIANTS_VERIFY,
};
pub(crate) use related::computed::{drifted as drifted_parents, parents_in_line};
pub use related::computed::{
    recompute, verify, Computed, ComputedField, ComputedOp, Drift, COMPUTED_EXTREME,
    COMPUTED_RECOMPUTE, COMPUTED_SUM, COMPUTED_VERIFY,
};
pub(crate) use related::reference::{at_current, repair_copies_of, source_in_line};
pub use related::reference::{
    copy_of, load_copy, pending_propagations, propagate, repair_copies, verify_copies, Copied,
    Elements, NoSource, Pending, Propagated, Propagation, Reference, ReferenceField, Referrer,
    Repaired, Slot, SourceUpgrade, StaleCopy, DEFAULT_FAN_OUT, REFERENCES, REFERENCE_COPIES,
    REFERENCE_SOURCE, REFERENCE_VERIFY,
};
pub(crate) use related::set_each;
pub(crate) use related::subset::{drifted as drifted_subsets, subsets_in_line};
pub use related::subset::{resubset, subset, verify_subsets, Subset, SUBSET_READ, SUBSET_VERIFY};
pub use scope::Scope;
pub(crate) use sweep::older_in_line;
pub use sweep::{migrate, Sweep, SWEEP_BATCH_MAX, SWEEP_SCAN};
pub use typed::{Array, Field, Filter, Numeric, Update};

// The derive's compile-time checks: each takes a typed field and gives its name, refusing a
// field of the wrong type with a message saying what it must be. Generated code calls them;
// a program never does, so they are out of the documentation.
#[doc(hidden)]
pub use archive::{age_field, pin_field, AgeValue, PinFlag};
#[doc(hidden)]
pub use attributes::attributes_field;
#[doc(hidden)]
pub use polymorphic::variant_check;
#[doc(hidden)]
pub use related::computed::{avg_field, count_field, extreme_field, key_field, sum_field};
#[doc(hidden)]
pub use related::reference::{
    copied_field, copies_a_counter, listed_each, listed_in, lists, reference_each, reference_field,
    reference_in, referrer, referrer_at,
};
#[doc(hidden)]
pub use related::subset::{order_field, subset_field};
#[doc(hidden)]
pub use typed::same_field;
pub use versions::{Hop, UpgradeFrom, Upgrading, Versioning};

/// The `comment` of a keyword search (a collection-wide read: on a collection sharded by
/// another field, every shard answers it).
pub const KEYWORD_SEARCH: &str = "pattern scatter: keyword search";
/// The `comment` of any other [`find`] without an equality on `_id`.
pub const DOCUMENT_FIND: &str = "pattern scatter: document find";

pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests;
