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
//! overflow, an upsert of the main document and an insert per chunk. The typical document
//! is one `find` on the main collection; every item of an outlier is two (`find` main + one
//! `find` over all its chunks, in one reply while they total under 16 MiB).
//!
//! Indexes on the overflow collection (created on first use, idempotently): those of every
//! series ([`SeriesSpec::indexes`]): `{<parent ref>: 1, seq: 1, _id: 1}` (serves every read by
//! parent), the open-chunk index `{<parent ref>: 1, seq: -1, _id: -1}` partial on
//! `{count: {$lt: chunk}}`, and a unique one on `{<parent ref>: 1, seq: -1}` (one chunk per
//! number).

use std::borrow::Borrow;
use std::pin::Pin;

use bson::spec::ElementType;
use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf};
use futures::stream::{self, Stream, StreamExt, TryStreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::key::KeyPart;
use crate::query::{Filter, FindOptions, Update};
use crate::series::{self, SeriesSpec};
use crate::store::{from_raw, Store};
use crate::{Error, Result};

/// Items per overflow document unless `#[outlier(chunk = N)]` says otherwise.
pub const DEFAULT_CHUNK: u32 = 500;

/// Where and how an outlier type is stored (filled in by the derive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutlierSpec {
    /// `#[outlier(collection = "sales")]`
    pub collection: &'static str,
    /// The array field's name in BSON.
    pub items_field: &'static str,
    /// `#[outlier(threshold = 50)]`
    pub threshold: u32,
    /// `#[outlier(flag = "has_extras")]`
    pub flag_field: &'static str,
    /// The overflow chunks: `collection` from `overflow = "..."`, `key_field` from
    /// `reference = "..."` (default `<struct name in snake case>_id`), `items_field` from
    /// `extra = "..."` (default `<array>_extra`), size from `chunk`, ordered by `seq`.
    pub overflow: SeriesSpec,
}

impl OutlierSpec {
    /// Refuses a threshold outside 1..=2^31-1 (the derive checks it at compile time; a spec
    /// written by hand is checked here, before anything is sent).
    fn check(&self) -> Result<()> {
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
    const SPEC: OutlierSpec;
}

/// The typical document: the main document alone, its array cut at the threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Typical<T> {
    pub doc: T,
    /// More items exist than the array shows (the document is an outlier).
    pub has_extras: bool,
}

fn by_id(id: &Bson) -> Filter {
    Filter::Eq("_id".into(), id.clone())
}

/// [`read_main`] as the document's BSON bytes.
async fn read_main_raw<S: Store>(
    store: &S,
    spec: &OutlierSpec,
    id: &Bson,
) -> Result<Option<RawDocumentBuf>> {
    let one = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    let mut found = store.find_raw(spec.collection, &by_id(id), &one).await?;
    Ok(found.pop())
}

async fn read_main<S: Store>(store: &S, spec: &OutlierSpec, id: &Bson) -> Result<Option<Document>> {
    let one = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    Ok(store
        .find(spec.collection, &by_id(id), &one)
        .await?
        .into_iter()
        .next())
}

/// The main document's array (taken out of it, not copied) and flag.
fn main_parts(spec: &OutlierSpec, doc: &mut Document) -> Result<(Vec<Bson>, bool)> {
    let items = match doc.get_mut(spec.items_field) {
        Some(Bson::Array(a)) => std::mem::take(a),
        None | Some(Bson::Null) => Vec::new(),
        Some(other) => {
            let found = other.element_type();
            return Err(Error::decode(
                spec.collection,
                doc.get("_id"),
                format!("`{}` is not an array but {found:?}", spec.items_field),
            ));
        }
    };
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

fn decode_doc<T: DeserializeOwned>(coll: &str, doc: Document) -> Result<T> {
    let id = doc.get("_id").cloned();
    bson::from_document(doc).map_err(|e| Error::decode(coll, id.as_ref(), e))
}

fn decode_items<T: DeserializeOwned>(
    spec: &OutlierSpec,
    id: Option<&Bson>,
    items: Vec<Bson>,
) -> Result<Vec<T>> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            bson::from_bson(b).map_err(|e| {
                Error::decode(
                    spec.collection,
                    id,
                    format!("`{}.{i}`: {e}", spec.items_field),
                )
            })
        })
        .collect()
}

/// Inserts `value`, or replaces the stored document with the same `_id`: the first `threshold`
/// items go to the main document, the rest to new overflow chunks, and the parent's previous
/// overflow is deleted first. Not atomic as a whole: pushes to the same parent while it is
/// being replaced may be lost with the overflow it replaces.
pub async fn save<T: Outlier, S: Store>(store: &S, value: &T) -> Result<()> {
    let spec = T::SPEC;
    spec.check()?;
    spec.overflow.ensure_indexes(store).await?;
    let mut doc = bson::to_document(value)
        .map_err(|e| Error::invalid(format!("document does not serialize to BSON: {e}")))?;
    let id = doc
        .get("_id")
        .cloned()
        .ok_or_else(|| Error::invalid("the id field must serialize as `_id`"))?;
    let all = match doc.get_mut(spec.items_field) {
        Some(Bson::Array(a)) => std::mem::take(a),
        None => Vec::new(),
        Some(_) => {
            return Err(Error::invalid(format!(
                "`{}` must serialize to an array",
                spec.items_field
            )))
        }
    };
    let t = spec.threshold as usize;
    let (main, rest) = all.split_at(all.len().min(t));
    doc.insert(spec.items_field, main.to_vec());
    doc.remove(spec.flag_field);
    if !rest.is_empty() {
        doc.insert(spec.flag_field, true);
    }
    store
        .delete_many(
            spec.overflow.collection,
            &Filter::Eq(spec.overflow.key_field.into(), id.clone()),
        )
        .await?;
    store
        .replace_one(spec.collection, &by_id(&id), doc, true)
        .await?;
    // The overflow was just deleted: its chunks are inserted numbered from 1, without a read.
    series::push_fresh(store, &spec.overflow, &id, rest.to_vec()).await
}

/// Sets the flag on the parent (before any overflow write). `NotFound` when there is none.
async fn flag<S: Store>(store: &S, spec: &OutlierSpec, id: &Bson) -> Result<()> {
    let mut set = Update {
        set: vec![(spec.flag_field.into(), Bson::Boolean(true))],
        ..Update::default()
    };
    if store
        .update_one(spec.collection, &by_id(id), &mut set, false)
        .await?
        .matched
    {
        Ok(())
    } else {
        Err(Error::NotFound {
            collection: spec.collection.to_owned(),
            id: crate::error::display_bson(id),
        })
    }
}

/// The array holds exactly `len` items (at most `len` and at least `len`) and is not flagged:
/// a compare-and-set on its length.
fn main_has_len(spec: &OutlierSpec, id: &Bson, len: usize) -> Filter {
    let mut conds = vec![
        by_id(id),
        Filter::Exists(format!("{}.{}", spec.items_field, len).into(), false),
        Filter::Ne(spec.flag_field.into(), Bson::Boolean(true)),
    ];
    if len > 0 {
        conds.push(Filter::Exists(
            format!("{}.{}", spec.items_field, len - 1).into(),
            true,
        ));
    }
    Filter::And(conds)
}

/// Appends `item` to the array of parent `id`: to the main document while it is below the
/// threshold (one round trip), else to the overflow. `NotFound` when the parent does not exist.
pub async fn push<T, S, Q>(store: &S, id: &Q, item: &T::Item) -> Result<()>
where
    T: Outlier,
    T::Id: Borrow<Q>,
    S: Store,
    Q: KeyPart + ?Sized,
{
    let spec = T::SPEC;
    spec.check()?;
    let id = id.to_key_bson();
    let x = crate::ser::item(item)?;
    crate::error::check_item_size(spec.collection, &x)?;
    spec.overflow.ensure_indexes(store).await?;
    let room = Filter::and([
        by_id(&id),
        Filter::Exists(
            format!("{}.{}", spec.items_field, spec.threshold - 1).into(),
            false,
        ),
        Filter::Ne(spec.flag_field.into(), Bson::Boolean(true)),
    ]);
    let mut update = Update {
        push: vec![(spec.items_field.into(), vec![x])],
        ..Update::default()
    };
    let pushed = match store
        .update_one(spec.collection, &room, &mut update, false)
        .await
    {
        Ok(outcome) => outcome,
        Err(e) => {
            let coll = spec.collection;
            return Err(series::name_foreign(store, coll, &by_id(&id), spec.items_field, e).await);
        }
    };
    if pushed.matched {
        return Ok(());
    }
    // Not applied: the update still holds the item.
    let x = std::mem::take(&mut update.push[0].1);
    flag(store, &spec, &id).await?;
    series::push(store, &spec.overflow, &id, "", x, &[]).await
}

/// Appends `items` in order: as many as fit to the main document (one conditional update), the
/// rest to the overflow (one write per chunk touched).
pub async fn push_many<T, S, Q>(store: &S, id: &Q, items: &[T::Item]) -> Result<()>
where
    T: Outlier,
    T::Id: Borrow<Q>,
    S: Store,
    Q: KeyPart + ?Sized,
{
    let spec = T::SPEC;
    spec.check()?;
    let id = id.to_key_bson();
    let mut xs = items
        .iter()
        .map(crate::ser::item)
        .collect::<Result<Vec<_>>>()?;
    for x in &xs {
        crate::error::check_item_size(spec.collection, x)?;
    }
    if xs.is_empty() {
        return Ok(());
    }
    spec.overflow.ensure_indexes(store).await?;
    let t = spec.threshold as usize;
    let mut done = 0;
    for _ in 0..10_000 {
        let mut doc = read_main(store, &spec, &id)
            .await?
            .ok_or_else(|| Error::NotFound {
                collection: spec.collection.to_owned(),
                id: crate::error::display_bson(&id),
            })?;
        let (main, flagged) = main_parts(&spec, &mut doc)?;
        if flagged || main.len() >= t {
            break;
        }
        let take = (t - main.len()).min(xs.len() - done);
        let mut update = Update {
            push: vec![(spec.items_field.into(), xs[done..done + take].to_vec())],
            ..Update::default()
        };
        let cas = main_has_len(&spec, &id, main.len());
        let pushed = match store
            .update_one(spec.collection, &cas, &mut update, false)
            .await
        {
            Ok(outcome) => outcome,
            Err(e) => {
                let coll = spec.collection;
                return Err(series::name_foreign(store, coll, &cas, spec.items_field, e).await);
            }
        };
        if pushed.matched {
            done += take;
            if done == xs.len() {
                return Ok(());
            }
        }
    }
    flag(store, &spec, &id).await?;
    series::push(store, &spec.overflow, &id, "", xs.split_off(done), &[]).await
}

/// The typical document: the main document alone (the overflow is not read), its array cut
/// at the threshold. `None` when there is no such document.
pub async fn typical<T, S, Q>(store: &S, id: &Q) -> Result<Option<Typical<T>>>
where
    T: Outlier,
    T::Id: Borrow<Q>,
    S: Store,
    Q: KeyPart + ?Sized,
{
    let spec = T::SPEC;
    let Some(mut doc) = read_main(store, &spec, &id.to_key_bson()).await? else {
        return Ok(None);
    };
    let (mut items, flag) = main_parts(&spec, &mut doc)?;
    let has_extras = flag || items.len() > spec.threshold as usize;
    items.truncate(spec.threshold as usize);
    doc.insert(spec.items_field, items);
    Ok(Some(Typical {
        doc: decode_doc(spec.collection, doc)?,
        has_extras,
    }))
}

/// The document with every item of its array (main + overflow, in push order): two finds
/// for an outlier, one for a typical document. `T` is decoded once, straight from the bytes
/// the store returned, the overflow's items joined to the main array as bytes.
pub async fn full<T, S, Q>(store: &S, id: &Q) -> Result<Option<T>>
where
    T: Outlier,
    T::Id: Borrow<Q>,
    S: Store,
    Q: KeyPart + ?Sized,
{
    let spec = T::SPEC;
    let id = id.to_key_bson();
    let Some(main) = read_main_raw(store, &spec, &id).await? else {
        return Ok(None);
    };
    let Some(flag) = raw_flag(&spec, &main) else {
        return full_from_docs(&spec, &main, &[]).map(Some); // reports the flag
    };
    let chunks = if flag {
        spec.overflow.ensure_indexes(store).await?;
        series::all_docs(store, &spec.overflow, &id).await?
    } else {
        Vec::new()
    };
    let whole = !flag && matches!(main.get(spec.items_field), Ok(Some(RawBsonRef::Array(_))));
    let decoded = if whole {
        bson::from_slice::<T>(main.as_bytes()).ok()
    } else {
        joined(&spec, &main, &chunks).and_then(|bytes| bson::from_slice::<T>(&bytes).ok())
    };
    match decoded {
        Some(doc) => Ok(Some(doc)),
        // Something unexpected: decoded through `Document`s, for the errors they give.
        None => full_from_docs(&spec, &main, &chunks).map(Some),
    }
}

/// [`full`] through `Document`s: what reports a document that does not decode.
fn full_from_docs<T: DeserializeOwned>(
    spec: &OutlierSpec,
    main: &RawDocument,
    chunks: &[RawDocumentBuf],
) -> Result<T> {
    let mut doc = from_raw(spec.collection, main)?;
    let (mut items, flag) = main_parts(spec, &mut doc)?;
    if flag {
        let ov = &spec.overflow;
        for chunk in chunks {
            let chunk = from_raw(ov.collection, chunk)?;
            items.extend(series::take_items(ov.collection, ov.items_field, chunk)?);
        }
    }
    doc.insert(spec.items_field, items);
    decode_doc(spec.collection, doc)
}

/// The flag of a main document read as bytes: `None` when it is neither a boolean nor
/// missing or null (which [`main_parts`] reports).
fn raw_flag(spec: &OutlierSpec, main: &RawDocument) -> Option<bool> {
    match main.get(spec.flag_field) {
        Ok(None) | Ok(Some(RawBsonRef::Null)) => Some(false),
        Ok(Some(RawBsonRef::Boolean(b))) => Some(b),
        _ => None,
    }
}

/// The bytes of `main` with its array replaced by one holding its items and then the items of
/// every chunk, in order: a document `T` decodes from in one pass. The items are copied as
/// bytes, not decoded. `None` when an array is neither an array nor missing or null.
fn joined(spec: &OutlierSpec, main: &RawDocument, chunks: &[RawDocumentBuf]) -> Option<Vec<u8>> {
    use std::fmt::Write;
    // The array, written as the document it is (`{"0": .., "1": ..}`).
    let mut items = RawDocumentBuf::new();
    let (mut key, mut n) = (String::new(), 0usize);
    let arrays = std::iter::once((main, spec.items_field))
        .chain(chunks.iter().map(|c| (&**c, spec.overflow.items_field)));
    for (doc, field) in arrays {
        match doc.get(field).ok()? {
            None | Some(RawBsonRef::Null) => {}
            Some(RawBsonRef::Array(a)) => {
                for item in a {
                    key.clear();
                    write!(key, "{n}").ok()?;
                    items.append_ref(&key, item.ok()?);
                    n += 1;
                }
            }
            Some(_) => return None,
        }
    }
    let mut out = RawDocumentBuf::new();
    // Where the array's type byte goes: the end of the document before it is appended (over
    // the document's final NUL).
    let mut at = None;
    for field in main {
        let (k, v) = field.ok()?;
        if k == spec.items_field {
            at = Some(out.as_bytes().len() - 1);
            out.append_ref(k, RawBsonRef::Document(&items));
        } else {
            out.append_ref(k, v);
        }
    }
    let at = at.unwrap_or_else(|| {
        let at = out.as_bytes().len() - 1;
        out.append_ref(spec.items_field, RawBsonRef::Document(&items));
        at
    });
    let mut bytes = out.into_bytes();
    bytes[at] = ElementType::Array as u8;
    Some(bytes)
}

/// Every item of parent `id`'s array, in push order (see [`full`]), decoded straight from the
/// bytes the store returned.
pub async fn all_items<T, S, Q>(store: &S, id: &Q) -> Result<Option<Vec<T::Item>>>
where
    T: Outlier,
    T::Id: Borrow<Q>,
    S: Store,
    Q: KeyPart + ?Sized,
{
    let spec = T::SPEC;
    let id = id.to_key_bson();
    let Some(main) = read_main_raw(store, &spec, &id).await? else {
        return Ok(None);
    };
    let flag = match raw_flag(&spec, &main) {
        Some(flag) => flag,
        None => main_parts(&spec, &mut from_raw(spec.collection, &main)?)?.1,
    };
    let mut items = series::decode_raw_items(spec.collection, spec.items_field, &main)?;
    if flag {
        let ov = &spec.overflow;
        ov.ensure_indexes(store).await?;
        for chunk in series::all_docs(store, ov, &id).await? {
            items.extend(series::decode_raw_items::<T::Item>(
                ov.collection,
                ov.items_field,
                &chunk,
            )?);
        }
    }
    Ok(Some(items))
}

/// Every item of parent `id`'s array in push order, the overflow read a batch of chunks at a
/// time: for paging through a large outlier without holding it whole. Empty when there is no
/// such document.
pub fn items<'a, T, S, Q>(store: &'a S, id: &Q) -> impl Stream<Item = Result<T::Item>> + Send + 'a
where
    T: Outlier + 'a,
    T::Id: Borrow<Q>,
    S: Store,
    Q: KeyPart + ?Sized,
{
    type Boxed<'a, I> = Pin<Box<dyn Stream<Item = Result<I>> + Send + 'a>>;
    let spec = T::SPEC;
    let id = id.to_key_bson();
    stream::once(async move {
        let main = read_main(store, &spec, &id).await?;
        let Some(mut doc) = main else {
            return Ok::<_, Error>(Box::pin(stream::empty()) as Boxed<'a, T::Item>);
        };
        let (items, flag) = main_parts(&spec, &mut doc)?;
        let first = stream::iter(
            decode_items::<T::Item>(&spec, Some(&id), items)?
                .into_iter()
                .map(Ok),
        );
        if !flag {
            return Ok(Box::pin(first) as Boxed<'a, T::Item>);
        }
        let ov = spec.overflow;
        let rest = series::doc_stream(store, ov, id, crate::bucket::STREAM_BATCH)
            .map(move |d| {
                d.and_then(|d| {
                    series::decode_raw_items::<T::Item>(ov.collection, ov.items_field, &d)
                })
            })
            .map_ok(|v| stream::iter(v.into_iter().map(Ok)))
            .try_flatten();
        Ok(Box::pin(first.chain(rest)) as Boxed<'a, T::Item>)
    })
    .try_flatten()
}

/// How many items parent `id`'s array holds, main + overflow. `NotFound` when there is no
/// such document.
pub async fn count<T, S, Q>(store: &S, id: &Q) -> Result<u64>
where
    T: Outlier,
    T::Id: Borrow<Q>,
    S: Store,
    Q: KeyPart + ?Sized,
{
    let spec = T::SPEC;
    let id = id.to_key_bson();
    let mut doc = read_main(store, &spec, &id)
        .await?
        .ok_or_else(|| Error::NotFound {
            collection: spec.collection.to_owned(),
            id: crate::error::display_bson(&id),
        })?;
    let (items, flag) = main_parts(&spec, &mut doc)?;
    let extra = if flag {
        series::stats(store, &spec.overflow, &id).await?.items
    } else {
        0
    };
    Ok(items.len() as u64 + extra)
}

/// Whether parent `id` overflowed (its main document has the flag). `NotFound` when there is
/// no such document.
pub async fn is_outlier<T, S, Q>(store: &S, id: &Q) -> Result<bool>
where
    T: Outlier,
    T::Id: Borrow<Q>,
    S: Store,
    Q: KeyPart + ?Sized,
{
    let spec = T::SPEC;
    let id = id.to_key_bson();
    let mut doc = read_main(store, &spec, &id)
        .await?
        .ok_or_else(|| Error::NotFound {
            collection: spec.collection.to_owned(),
            id: crate::error::display_bson(&id),
        })?;
    let (items, flag) = main_parts(&spec, &mut doc)?;
    Ok(flag || items.len() > spec.threshold as usize)
}

/// Deletes parent `id` and its overflow; returns whether the parent existed.
pub async fn delete<T, S, Q>(store: &S, id: &Q) -> Result<bool>
where
    T: Outlier,
    T::Id: Borrow<Q>,
    S: Store,
    Q: KeyPart + ?Sized,
{
    let spec = T::SPEC;
    let id = id.to_key_bson();
    let n = store.delete_many(spec.collection, &by_id(&id)).await?;
    let ov = spec.overflow.collection;
    store
        .delete_many(ov, &Filter::Eq(spec.overflow.key_field.into(), id.clone()))
        .await?;
    store.ensured().take_next_number(ov, &id);
    Ok(n > 0)
}

/// Creates the overflow collection's indexes now rather than on first use.
pub async fn ensure_indexes<T: Outlier, S: Store>(store: &S) -> Result<()> {
    T::SPEC.overflow.ensure_indexes(store).await
}

#[cfg(test)]
mod tests {
    use bson::{doc, RawDocumentBuf};
    use serde::Deserialize;

    use super::*;
    use crate::series::SeriesOrder;

    const SPEC: OutlierSpec = OutlierSpec {
        collection: "main",
        items_field: "v",
        threshold: 2,
        flag_field: "has_extras",
        overflow: SeriesSpec {
            collection: "extra",
            key_field: "main_id",
            items_field: "v_extra",
            count_field: "count",
            size: 2,
            order: SeriesOrder::Seq("seq"),
        },
    };

    #[derive(Debug, Deserialize, PartialEq)]
    struct Doc {
        #[serde(rename = "_id")]
        id: i64,
        v: Vec<String>,
        after: Option<String>,
    }

    fn raw(d: bson::Document) -> RawDocumentBuf {
        RawDocumentBuf::from_document(&d).unwrap()
    }

    /// The joined bytes decode to what the `Document` path gives: the main items then every
    /// chunk's in order, with the fields after the array kept, chunks without items (missing,
    /// null, empty) skipped, and the array added when the main document has none.
    #[test]
    fn joined_arrays_decode_like_the_document_path() {
        let chunks = [
            raw(doc! {"_id": 1, "v_extra": ["c", "d"]}),
            raw(doc! {"_id": 2, "v_extra": null}),
            raw(doc! {"_id": 3}),
            raw(doc! {"_id": 4, "v_extra": []}),
            raw(doc! {"_id": 5, "v_extra": ["e"]}),
        ];
        let cases = [
            doc! {"_id": 7_i64, "v": ["a", "b"], "has_extras": true, "after": "x"},
            doc! {"_id": 7_i64, "has_extras": true, "after": "x"},
            doc! {"_id": 7_i64, "v": null, "has_extras": true},
        ];
        for main in cases {
            let main = raw(main);
            let bytes = joined(&SPEC, &main, &chunks).expect("joins");
            let fast: Doc = bson::from_slice(&bytes).unwrap();
            let slow: Doc = full_from_docs(&SPEC, &main, &chunks).unwrap();
            assert_eq!(fast, slow);
            assert!(fast.v.ends_with(&["c".into(), "d".into(), "e".into()]));
        }
        let wrong = raw(doc! {"_id": 8, "v_extra": "not an array"});
        assert!(joined(&SPEC, &raw(doc! {"_id": 7_i64, "v": []}), &[wrong]).is_none());
        assert!(joined(&SPEC, &raw(doc! {"_id": 7_i64, "v": 5}), &[]).is_none());
    }

    /// An item that does not decode is reported as the `Document` path reports it.
    #[test]
    fn raw_items_report_the_item_that_does_not_decode() {
        let d = raw(doc! {"_id": "c1", "v_extra": ["a", 5, "c"]});
        let e = series::decode_raw_items::<String>("extra", "v_extra", &d).unwrap_err();
        let Error::Decode {
            collection,
            id,
            reason,
        } = e
        else {
            panic!("{e:?}")
        };
        assert_eq!((collection.as_str(), id.as_str()), ("extra", "\"c1\""));
        assert!(reason.starts_with("`v_extra.1`"), "{reason}");
        let ok = raw(doc! {"_id": "c2", "v_extra": ["a", "b"]});
        let items = series::decode_raw_items::<String>("extra", "v_extra", &ok).unwrap();
        assert_eq!(items, ["a", "b"]);
    }
}
