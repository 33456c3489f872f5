//! The outlier pattern: an array kept at most `threshold` items in the main document; the
//! rest in an overflow collection that references the parent, in chunks.
//!
//! Implemented by `#[derive(Outlier)]`; the functions here are what the derived methods call.
//!
//! Layout. Main document (the seed's): the struct as serde writes it, the array holding its
//! first `threshold` items, and `"has_extras": true` once it overflowed. Overflow documents:
//! `{_id: ObjectId, <parent ref>: id, count: n, <array>_extra: [...], seq: k}`, at most
//! `chunk` items each (default [`DEFAULT_CHUNK`]), numbered 1, 2, 3... per parent. An overflow
//! document in the seed's layout (`{book_id: 2, customers_purchased_extra: [...]}`, no `count`
//! nor `seq`) is read first and never written to.
//!
//! Atomic push. The seed's read-then-write logic races; ours is one conditional update:
//! push to the main array only where it has no element at index `threshold - 1` and the
//! document is not flagged (filter `{_id, "<array>.<threshold-1>": {$exists: false},
//! has_extras: {$ne: true}}`). When nothing matched, the flag is set, then the item goes to the
//! overflow's open chunk. The flag is set *before* the overflow write, so an item in the
//! overflow is always reachable from the main document; once flagged, every push goes to the
//! overflow, which keeps push order across main + overflow even if the threshold changes.
//!
//! Cost on MongoDB: a push below the threshold is one `update`; above it, three writes (main
//! miss, flag, overflow), also when it opens a chunk once this process has pushed to the
//! parent's overflow (the first such push of a process finds the open chunk with a
//! `findAndModify`, and opens one with a read and an insert). A save is a delete of the old
//! overflow, an upsert of the main document and its chunks in one batch (one `bulkWrite`; an
//! `insert` for one chunk). The typical document
//! is one `find` on the main collection; every item of an outlier is two (`find` main + one
//! `find` over all its chunks, in one reply while they total under 16 MiB).
//!
//! Indexes on the overflow collection (created on first use, idempotently): those of every
//! series ([`SeriesSpec::indexes`](crate::spec::SeriesSpec::indexes)): `{<parent ref>: 1, seq: 1, _id: 1}` (serves every read by
//! parent), the open-chunk index `{<parent ref>: 1, seq: -1, _id: -1}` partial on
//! `{count: {$lt: chunk}}`, and a unique one on `{<parent ref>: 1, seq: -1}` (one chunk per
//! number).

use bson::{Bson, Document, RawDocumentBuf};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::codec::BsonType;
use crate::key::{KeyPart, KeyRef};
use crate::series;
use crate::spec::OutlierSpec;
use crate::store::query::{Filter, FindOptions, Schema};
use crate::store::{find_one, Store};
use crate::validator;
use crate::{Error, Result};

mod docs;
mod read;
mod write;

pub use crate::bucket::Counts;
pub use read::{all_items, counts, full, is_outlier, items, typical};
pub use write::{push, push_many, save};

/// Items per overflow document unless `#[outlier(chunk = N)]` says otherwise.
pub const DEFAULT_CHUNK: u32 = 500;

impl OutlierSpec<'_> {
    /// Refuses a threshold outside 1..=2^31-1 (the derive checks it at compile time; a spec
    /// written by hand is checked here, before anything is sent).
    pub(crate) fn check(&self) -> Result<()> {
        if self.threshold == 0 || self.threshold > i32::MAX as u32 {
            return Err(Error::invalid(format!(
                "threshold must be in 1..=2^31-1, got {}",
                self.threshold
            )));
        }
        Ok(())
    }
}

/// A type stored with the outlier pattern. Derive it with `#[derive(Outlier)]`.
pub trait Outlier: Serialize + DeserializeOwned + Send + Sync {
    /// The id field's type (serialized as `_id`).
    type Id: KeyPart + ?Sized;
    /// The array's item type.
    type Item: Serialize + DeserializeOwned + Send + Sync;
    /// The storage layout.
    const SPEC: OutlierSpec<'static>;
    /// Whether the writes install the layout's validators ([`ensure_validator`]) with the
    /// indexes, once per store and process (`#[outlier(validate)]`).
    const VALIDATE: bool = false;
}

/// The typical document: the main document alone, its array cut at the threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Typical<T> {
    /// The main document, its array holding at most `threshold` items.
    pub doc: T,
    /// More items exist than the array shows (the document is an outlier).
    pub has_extras: bool,
}

pub(super) fn by_id(id: &Bson) -> Filter {
    Filter::Eq("_id".into(), id.clone())
}

/// [`read_main`] as the document's BSON bytes.
pub(super) async fn read_main_raw<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
    id: &Bson,
) -> Result<Option<RawDocumentBuf>> {
    let one = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    let mut found = store.find_raw(spec.collection, &by_id(id), &one).await?;
    Ok(found.pop())
}

pub(super) async fn read_main<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
    id: &Bson,
) -> Result<Option<Document>> {
    Ok(find_one(store, spec.collection, &by_id(id)).await?)
}

/// The main document's array (taken out of it, not copied) and flag.
pub(super) fn main_parts(spec: &OutlierSpec<'_>, doc: &mut Document) -> Result<(Vec<Bson>, bool)> {
    let items = series::take_array(spec.collection, spec.items_field, doc)?;
    let flag = match doc.get(spec.flag_field) {
        None | Some(Bson::Null) | Some(Bson::Boolean(false)) => false,
        Some(Bson::Boolean(true)) => true,
        Some(other) => {
            return Err(Error::decode(
                spec.collection,
                doc.get("_id"),
                format!(
                    "`{}` is not a boolean but {:?}",
                    spec.flag_field,
                    other.element_type()
                ),
            ))
        }
    };
    Ok((items, flag))
}

pub(super) fn decode_doc<T: DeserializeOwned>(coll: &str, doc: Document) -> Result<T> {
    let id = doc.get("_id").cloned();
    bson::from_document(doc).map_err(|e| Error::decode(coll, id.as_ref(), e))
}

/// The main document of parent `id`; `NotFound` when there is none.
pub(super) async fn existing_main<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
    id: &Bson,
) -> Result<Document> {
    read_main(store, spec, id)
        .await?
        .ok_or_else(|| not_found(spec, id))
}

/// The parent `id` does not exist.
pub(super) fn not_found(spec: &OutlierSpec<'_>, id: &Bson) -> Error {
    Error::NotFound {
        collection: spec.collection.to_owned(),
        id: crate::error::display_bson(id),
    }
}

#[doc = crate::__outlier_doc!(delete)]
pub async fn delete<T: Outlier, S: Store, Q: KeyRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<bool> {
    crate::observe::traced_op!(outlier.delete, store, T::SPEC.collection, async move {
        let spec = T::SPEC;
        let id = id.to_key_bson();
        let n = store.delete_many(spec.collection, &by_id(&id)).await?;
        let ov = spec.overflow.collection;
        store
            .delete_many(ov, &Filter::Eq(spec.overflow.key_field.into(), id.clone()))
            .await?;
        crate::series::memo(store).take_next_number(ov, &id);
        Ok(n > 0)
    })
}

#[doc = crate::__outlier_doc!(ensure_indexes)]
pub async fn ensure_indexes<T: Outlier, S: Store>(store: &S) -> Result<()> {
    crate::observe::traced_op!(outlier.ensure_indexes, store, T::SPEC.collection, async {
        validated::<T, S>(store).await?;
        T::SPEC.overflow.ensure_indexes(store).await
    })
}

/// The `$jsonSchema`s of the layout, each with its collection: the main collection's, then
/// the overflow's ([`schemas_of`] with the id type's [`KeyPart::BSON_TYPES`]).
pub fn schemas<T: Outlier>() -> [(&'static str, Schema); 2] {
    schemas_of(&T::SPEC, <T::Id as KeyPart>::BSON_TYPES)
}

/// The `$jsonSchema`s every document of `spec` passes, ids of `id_types` (any type when
/// empty), each with its collection. Main documents: `_id` of `id_types`, the array at most
/// `threshold` long, the flag a `bool`, each where present (the struct's other fields are the
/// user's). Overflow chunks: the parent reference (of `id_types`), `count` (an `int` or `long`
/// in `0..=chunk`) and the array (at most `chunk` long) required, `seq` an `int` or `long`
/// from 1 where present. The seed's single overflow document (no `count`) is read, never
/// written: a new one is refused.
pub fn schemas_of<'a>(spec: &OutlierSpec<'a>, id_types: &[BsonType]) -> [(&'a str, Schema); 2] {
    let mut main = Schema::object();
    if !id_types.is_empty() {
        main = main.property("_id", Schema::of(id_types));
    }
    let main = main
        .property(
            spec.items_field,
            Schema::of(&[BsonType::Array]).max_items(u64::from(spec.threshold)),
        )
        .property(spec.flag_field, Schema::of(&[BsonType::Bool]));
    [
        (spec.collection, main),
        (spec.overflow.collection, spec.overflow.schema(id_types)),
    ]
}

#[doc = crate::__outlier_doc!(ensure_validator)]
///
/// The schemas are [`schemas`]; [`Store::set_validator`] installs them.
pub async fn ensure_validator<T: Outlier, S: Store>(store: &S) -> Result<()> {
    crate::observe::traced_op!(outlier.ensure_validator, store, T::SPEC.collection, async {
        for (coll, schema) in schemas::<T>() {
            validator::install(store, coll, &schema).await?;
        }
        Ok(())
    })
}

/// [`ensure_validator`] once per store and process, when the type asks for it
/// ([`Outlier::VALIDATE`]): what every write runs first.
pub(crate) async fn validated<T: Outlier, S: Store>(store: &S) -> Result<()> {
    if T::VALIDATE && !validator::installed(store, T::SPEC.overflow.collection) {
        ensure_validator::<T, S>(store).await?;
    }
    Ok(())
}

#[doc = crate::__outlier_doc!(verify)]
///
/// The checks: [`adopt::verify_outlier`](crate::adopt::verify_outlier).
pub async fn verify<T: Outlier, S: Store>(store: &S) -> Result<crate::layout::Verified> {
    crate::layout::verify_outlier(store, &T::SPEC, &crate::pass::Options::default()).await
}

#[doc = crate::__outlier_doc!(index_report)]
///
/// The report: [`adopt::index_report_outlier`](crate::adopt::index_report_outlier).
pub async fn index_report<T: Outlier, S: Store>(
    store: &S,
) -> Result<Vec<crate::layout::IndexReport>> {
    crate::layout::index_report_outlier(store, &T::SPEC).await
}
