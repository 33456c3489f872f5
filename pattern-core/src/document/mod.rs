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

use std::borrow::Borrow;

use bson::{Bson, Document as BsonDocument};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::observe::{op_span, operation};
use crate::spec::Keywords;
use crate::store::query::{self, FindOptions, IndexSpec};
use crate::store::Store;
use crate::{Error, Result};
use write::Write;

mod approximate;
mod archive;
mod attributes;
mod computed;
mod find;
mod history;
mod indexes;
mod polymorphic;
mod reference;
mod subset;
mod sweep;
mod typed;
mod versions;
mod write;

pub use approximate::{estimate, flush, increment, pending, Approximate};
pub use archive::{
    age_field, archive, archive_layout, get_with_archive, keep_field, verify_archive,
    verify_archive_layout, AgeValue, Archive, ArchiveAt, ArchiveReport, KeepFlag, ARCHIVE_MOVE,
};
pub use attributes::{attributes_field, Attribute, Attributes};
pub use computed::{
    avg_field, count_field, extreme_field, key_field, recompute, sum_field, verify, Aggregate,
    Computed, Drift, Op, COMPUTED_EXTREME, COMPUTED_RECOMPUTE, COMPUTED_SUM, COMPUTED_VERIFY,
};
pub(crate) use computed::{parents_in_line, repair_parents};
pub use find::Find;
pub use history::{
    as_of, at_revision, get_revision, history, shard_keys, Revision, REVISED_AT, REVISION,
};
pub(crate) use indexes::indexes_ready;
pub use indexes::{
    ensure_indexes, ensure_validator, history_indexes, indexes, own_indexes, schemas,
};
pub use polymorphic::{
    variant_check, verify_variants, Polymorphic, StoredField, Undecodable, Variant, VariantShape,
    VARIANTS_VERIFY,
};
pub use reference::{
    copied_field, copies_a_counter, copy_of, lists, load_copy, pending_propagations, propagate,
    reference_field, referrer, repair_copies, verify_copies, Copied, NoSource, Pending, Propagated,
    Propagation, Reference, ReferenceField, Referrer, Repaired, Slot, StaleCopy, DEFAULT_FAN_OUT,
    REFERENCES, REFERENCE_COPIES, REFERENCE_SOURCE, REFERENCE_VERIFY,
};
pub(crate) use reference::{repair_copies_of, source_in_line};
pub use subset::{
    order_field, resubset, subset, subset_field, verify_subsets, Subset, SUBSET_READ, SUBSET_VERIFY,
};
pub(crate) use subset::{repair_subsets, subsets_in_line};
pub(crate) use sweep::older_in_line;
pub use sweep::{migrate, Sweep, SWEEP_BATCH_MAX, SWEEP_SCAN};
pub use typed::{same_field, Array, Field, Filter, Numeric, Update};
pub use versions::{Hop, UpgradeFrom, Upgrading, Versioning};

/// The `comment` of a keyword search (a collection-wide read: on a collection sharded by
/// another field, every shard answers it).
pub const KEYWORD_SEARCH: &str = "pattern scatter: keyword search";
/// The `comment` of any other [`find`] without an equality on `_id`.
pub const DOCUMENT_FIND: &str = "pattern scatter: document find";

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
    /// library bumps the document's [`REVISION`] and records the state it replaces there, in
    /// the same transaction. `None`: no history.
    const HISTORY: Option<&'static str> = None;
    /// The names of the generated methods that write (`insert`, `save`, `update_one`,
    /// `delete`...): what a test walks to check that each one records a revision.
    const WRITES: &'static [&'static str] = &[];
    /// Its attributes fields (`#[document(attributes)]`, of type [`Attributes`]): each with
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
    /// `N` increments ([`increment`], [`flush`]).
    const APPROXIMATE: &'static [Approximate] = &[];
    /// Its archive (`#[document(archive(age = ..., keep = ...))]`): the fields [`archive`]
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
    /// A variant's type: its enum's [`schemas`] (the derive generates it), so that a
    /// variant's `ensure_validator` installs the enum's validator, never one of its own.
    fn enum_schemas() -> Vec<(&'static str, query::Schema)> {
        Vec::new()
    }
}

pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The id as BSON (what `_id` holds).
pub(crate) fn id_bson<Q: Serialize + ?Sized>(id: &Q) -> Result<Bson> {
    crate::codec::raw::id_bson(id, "a document id")
}

/// The document as stored: serialized, with an `_id`, its keywords normalised, and its schema
/// version (a versioned type's).
pub fn to_document<D: Document>(doc: &D) -> Result<BsonDocument> {
    let mut out = bson::to_document(doc).map_err(|e| {
        Error::invalid(format!(
            "a document of `{}` does not serialize to a document: {e}",
            D::COLLECTION
        ))
    })?;
    if !out.contains_key("_id") {
        return Err(Error::invalid(format!(
            "a document of `{}` has no `_id`",
            D::COLLECTION
        )));
    }
    for k in polymorphic::keywords::<D>(&out) {
        if let Some(v) = out.get_mut(k.field) {
            typed::normalize_keywords(k.normalize, v);
        }
    }
    if let Some(v) = D::VERSIONING {
        out.insert(v.field, Bson::Int32(v.current as i32));
    }
    polymorphic::stamp::<D>(&mut out);
    Ok(out)
}

fn decode<P: DeserializeOwned>(coll: &str, doc: BsonDocument) -> Result<P> {
    let id = doc.get("_id").cloned();
    bson::from_document(doc).map_err(|e| Error::decode(coll, id.as_ref(), e))
}

/// The fields the library keeps in a stored document beside the struct's own: the schema
/// version, the revision and its time.
fn strip_kept<D: Document>(doc: &mut BsonDocument) {
    if let Some(v) = D::VERSIONING {
        doc.remove(v.field);
    }
    if D::HISTORY.is_some() {
        doc.remove(REVISION);
        doc.remove(REVISED_AT);
    }
}

/// A stored document of `D` as `D`: decoded as its stored version's type and upgraded; with
/// the older version it was upgraded from. [`Error::NewerVersion`] for a version this build
/// does not know.
pub(crate) fn decode_stored<D: Document>(mut doc: BsonDocument) -> Result<(D, Option<u32>)> {
    polymorphic::check_stored::<D>(&mut doc)?;
    let stored = versions::classify::<D>(&doc)?;
    strip_kept::<D>(&mut doc);
    match stored {
        versions::Stored::Current => Ok((decode(D::COLLECTION, doc)?, None)),
        versions::Stored::Older(from) => Ok((D::upgrade(from, doc)?, Some(from))),
    }
}

/// [`decode_stored`], then, for a type with `write_back`, the upgraded document written back
/// (only over the very document read: a write since the read is never overwritten).
pub(crate) async fn read_stored<D: Document, S: Store>(store: &S, doc: BsonDocument) -> Result<D> {
    let older = D::VERSIONING.is_some_and(|v| v.write_back)
        && matches!(versions::classify::<D>(&doc)?, versions::Stored::Older(_));
    if !older {
        return decode_stored::<D>(doc).map(|(d, _)| d);
    }
    let read = doc.clone();
    let (d, _) = decode_stored::<D>(doc)?;
    write_back::<D, S>(store, read, &d).await?;
    Ok(d)
}

/// Writes `doc`, upgraded from `read`, over the stored document if that is still exactly
/// `read` (a compare-and-set in a transaction: a write since the read, even one that kept the
/// old version, makes it write nothing); whether it wrote. On a type with history, a revision
/// like any other write.
pub(crate) async fn write_back<D: Document, S: Store>(
    store: &S,
    read: BsonDocument,
    doc: &D,
) -> Result<bool> {
    let new = to_document(doc)?;
    write::run::<D, S>(store, Write::Upgrade { read, new }).await
}

/// Inserts the document (one `insert`; with history, a `find` of its last recorded revision
/// first, so that a document deleted and inserted again continues its revisions).
/// [`Error::DuplicateKey`] when its `_id` exists.
pub async fn insert<D: Document, S: Store>(store: &S, doc: &D) -> Result<()> {
    let span = op_span!("document.insert", "insert", store, D::COLLECTION);
    let op = async {
        let doc = to_document(doc)?;
        write::run::<D, S>(store, Write::Insert(doc))
            .await
            .map(|_| ())
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

/// Writes the whole document over the one with its `_id`, or inserts it (one `update` with
/// a replacement document and `upsert`). Last writer wins: for fields that change together
/// under a condition, [`update_one`]; with history, [`save_if`].
///
/// On a versioned type the stored document must be at this build's version or an older one:
/// a newer one is left as it is ([`Error::NewerVersion`]). With history, one transaction
/// records the state it replaces.
pub async fn save<D: Document, S: Store>(store: &S, doc: &D) -> Result<()> {
    let span = op_span!("document.save", "save", store, D::COLLECTION);
    let op = async {
        let doc = to_document(doc)?;
        let save = Write::Save {
            doc,
            expected: None,
            any_variant: false,
        };
        write::run::<D, S>(store, save).await.map(|_| ())
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

/// Parents brought in line by a batch (a follower's keys): `sets` (each parent's `_id` and the
/// fields to set) written to `coll` in one round trip (`write_across`: one `bulkWrite` in a
/// MongoDB transaction); per key of `keys`, whether its parent was among them (by value).
pub(crate) async fn set_each<T: Store>(
    tx: &T,
    coll: &str,
    sets: Vec<(Bson, Vec<(crate::store::query::Path, Bson)>)>,
    keys: &[Bson],
) -> Result<Vec<bool>> {
    use crate::codec::order::value_key;
    let written: std::collections::BTreeSet<Vec<u8>> =
        sets.iter().map(|(id, _)| value_key(id)).collect();
    let writes: Vec<(&str, crate::store::WriteOp)> = (sets.into_iter())
        .map(|(id, set)| {
            let op = crate::store::WriteOp::Update {
                filter: crate::store::query::Filter::Eq("_id".into(), id),
                update: Box::new(crate::store::query::Update {
                    set,
                    ..Default::default()
                }),
                upsert: false,
            };
            (coll, op)
        })
        .collect();
    if !writes.is_empty() {
        tx.write_across(writes, None).await?;
    }
    Ok(keys
        .iter()
        .map(|k| written.contains(&value_key(k)))
        .collect())
}

/// The stored document with this `_id`.
pub(crate) async fn find_by_id<S: Store>(
    store: &S,
    coll: &str,
    id: &Bson,
) -> Result<Option<BsonDocument>> {
    let by_id = query::Filter::Eq("_id".into(), id.clone());
    let opts = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    Ok(store.find(coll, &by_id, &opts).await?.pop())
}

/// The document with this `_id`, or `None` (one `find` by `_id`). A document of an older
/// schema version is upgraded (and written back with `write_back`); one of a newer version is
/// [`Error::NewerVersion`].
pub async fn get<D, S, Q>(store: &S, id: &Q) -> Result<Option<D>>
where
    D: Document,
    S: Store,
    Q: Serialize + ?Sized,
    D::Id: Borrow<Q>,
{
    let span = crate::observe::op_span!("document.get", "get", store, D::COLLECTION);
    crate::observe::traced!(span, async move {
        let by_id = polymorphic::scope::<D>(query::Filter::Eq("_id".into(), id_bson(id)?));
        let one = FindOptions {
            limit: Some(1),
            ..FindOptions::default()
        };
        match store.find(D::COLLECTION, &by_id, &one).await?.pop() {
            Some(d) => read_stored::<D, S>(store, d).await.map(Some),
            None => Ok(None),
        }
    })
}

/// How many times a versioned update upgrades a document it found at an older version and
/// tries again before giving up ([`Error::Contention`]).
const UPGRADE_ATTEMPTS: u32 = 8;

/// Applies `update` to the first document matching `filter`, atomically, in one `update`
/// command; whether a document matched (and was updated). The article's checkout:
/// `filter` `{_id, available: {$gt: 0}}`, `update` `$inc: {available: -1}`, `$push: {checkout:
/// {...}}`: `false` means no copy was available, and nothing was written. Refuses, before
/// sending anything, a filter or update whose values did not serialize, and an update that
/// does nothing ([`Error::InvalidInput`]).
///
/// On a versioned type the update applies to a document at this build's version only (its
/// paths are this version's): when none matched, a `find` looks for a match at another
/// version: an older one is upgraded (written back, compare-and-set) and the update tried
/// again; a newer one is [`Error::NewerVersion`], nothing written. With history, the update
/// runs in a transaction that records the state it replaces.
pub async fn update_one<D: Document, S: Store>(
    store: &S,
    filter: Filter<D>,
    update: Update<D>,
) -> Result<bool> {
    let span = op_span!("document.update_one", "update_one", store, D::COLLECTION);
    let op = async {
        let filter = polymorphic::scope::<D>(filter.to_query()?);
        let update = update.into_query()?;
        let update = Write::Update {
            filter,
            update,
            expected: None,
        };
        write::run::<D, S>(store, update).await
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

/// Deletes the document with this `_id`; whether there was one (one `delete`). With history,
/// a transaction that records its last state (its history stays: [`history`], [`as_of`]).
pub async fn delete<D, S, Q>(store: &S, id: &Q) -> Result<bool>
where
    D: Document,
    S: Store,
    Q: Serialize + ?Sized,
    D::Id: Borrow<Q>,
{
    let span = op_span!("document.delete", "delete", store, D::COLLECTION);
    let op = async {
        let id = id_bson(id)?;
        write::run::<D, S>(store, Write::Delete { id, expected: None }).await
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

/// Writes the whole document over the stored one if that is still at revision `expected`
/// (the revision the caller read, [`get_revision`]); else [`Error::Conflict`] with the
/// revision found (`None`: deleted), nothing written. One transaction: a read, the history
/// record, the replacement.
pub async fn save_if<D: Document, S: Store>(store: &S, doc: &D, expected: u64) -> Result<()> {
    let span = op_span!("document.save_if", "save_if", store, D::COLLECTION);
    // A type without history is refused before anything is sent.
    let first = async {
        history::history_of::<D>()?;
        indexes_ready::<D, S>(store).await
    };
    let op = async {
        let doc = to_document(doc)?;
        let save = Write::Save {
            doc,
            expected: Some(expected),
            any_variant: false,
        };
        write::run::<D, S>(store, save).await.map(|_| ())
    };
    operation(span, first, op, Ok).await
}

/// Applies `update` to the document `id` if it is still at revision `expected`; else
/// [`Error::Conflict`], nothing written. A document at an older schema version is upgraded
/// first, in the same transaction (a revision of its own).
pub async fn update_if<D, S, Q>(store: &S, id: &Q, expected: u64, update: Update<D>) -> Result<()>
where
    D: Document,
    S: Store,
    Q: Serialize + ?Sized,
    D::Id: Borrow<Q>,
{
    let span = op_span!("document.update_if", "update_if", store, D::COLLECTION);
    // A type without history is refused before anything is sent.
    let first = async {
        history::history_of::<D>()?;
        indexes_ready::<D, S>(store).await
    };
    let op = async {
        let update = update.into_query()?;
        let id = id_bson(id)?;
        let update = Write::Update {
            filter: query::Filter::Eq("_id".into(), id.clone()),
            update,
            expected: Some((id, expected)),
        };
        write::run::<D, S>(store, update).await.map(|_| ())
    };
    operation(span, first, op, Ok).await
}

/// Deletes the document `id` if it is still at revision `expected`; else [`Error::Conflict`].
pub async fn delete_if<D, S, Q>(store: &S, id: &Q, expected: u64) -> Result<()>
where
    D: Document,
    S: Store,
    Q: Serialize + ?Sized,
    D::Id: Borrow<Q>,
{
    let span = op_span!("document.delete_if", "delete_if", store, D::COLLECTION);
    // A type without history is refused before anything is sent.
    let first = async {
        history::history_of::<D>()?;
        indexes_ready::<D, S>(store).await
    };
    let op = async {
        let id = id_bson(id)?;
        let delete = Write::Delete {
            id,
            expected: Some(expected),
        };
        write::run::<D, S>(store, delete).await.map(|_| ())
    };
    operation(span, first, op, Ok).await
}

/// Writes `doc` over the stored document with its `_id`, whatever variant that one is: the
/// explicit change of a document's variant (a `save` refuses it). Whether a document was
/// there (none: nothing written; insert it). One `update` with a replacement.
pub async fn change_variant<D: Document, S: Store>(store: &S, doc: &D) -> Result<bool> {
    let span = op_span!(
        "document.change_variant",
        "change_variant",
        store,
        D::COLLECTION
    );
    let op = async {
        let doc = to_document(doc)?;
        let change = Write::Save {
            doc,
            expected: None,
            any_variant: true,
        };
        write::run::<D, S>(store, change).await
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

/// A find of the documents matching `filter` (see [`Find`]: a projection, a sort, a limit).
pub fn find<D: Document>(filter: Filter<D>) -> Find<D> {
    Find::new(filter)
}

#[cfg(test)]
mod tests;
