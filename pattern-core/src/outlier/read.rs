//! Reads of the outlier pattern: the typical document alone, every item (main + overflow, one
//! reply for the overflow), a stream chunk by chunk, the count.

use crate::store::Error as StoreError;
use std::pin::Pin;

use bson::spec::ElementType;
use bson::{RawBsonRef, RawDocument, RawDocumentBuf};
use futures::stream::{self, Stream, StreamExt, TryStreamExt};
use serde::de::DeserializeOwned;

use super::{decode_doc, existing_main, main_parts, read_main, read_main_raw, Outlier, Typical};
use crate::bucket::Counts;
use crate::codec::raw::from_raw;
use crate::key::KeyRef;
use crate::series;
use crate::spec::OutlierSpec;
use crate::store::Store;
use crate::{Error, Result};

#[doc = crate::__outlier_doc!(typical)]
pub async fn typical<T: Outlier, S: Store, Q: KeyRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<Option<Typical<T>>> {
    crate::observe::traced_op!(outlier.typical, store, T::SPEC.collection, async move {
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
    })
}

/// How many times a read of a document caught mid-migration is taken again before giving up.
const CONSISTENT_READS: u32 = 20;

/// Whether a main document read as bytes is flagged and holds more than `threshold` items in
/// its array: written before the layout (a migration moves the items beyond the threshold to
/// the front of the overflow, in one transaction). Reading its main document and then its
/// overflow could see the items twice (the migration committed in between), so such a read is
/// checked by reading the main document again.
fn in_transition(spec: &OutlierSpec<'_>, main: &RawDocument) -> bool {
    raw_flag(spec, main) == Some(true)
        && matches!(main.get(spec.items_field), Ok(Some(RawBsonRef::Array(a)))
            if a.into_iter().nth(spec.threshold as usize).is_some())
}

/// The main document of `id` and, when it is flagged, its overflow documents in order, as one
/// consistent picture: when the main document is [`in_transition`], it is read again after the
/// overflow and the whole read is taken again if it changed (at most [`CONSISTENT_READS`]
/// times, then [`store::Error::Contention`](crate::store::Error::Contention)).
async fn main_and_overflow<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
    id: &bson::Bson,
) -> Result<Option<(RawDocumentBuf, Vec<RawDocumentBuf>)>> {
    for _ in 0..CONSISTENT_READS {
        let Some(main) = read_main_raw(store, spec, id).await? else {
            return Ok(None);
        };
        if raw_flag(spec, &main) != Some(true) {
            return Ok(Some((main, Vec::new())));
        }
        spec.overflow.ensure_indexes(store).await?;
        let chunks = series::all_docs(store, &spec.overflow, id).await?;
        if !in_transition(spec, &main) {
            return Ok(Some((main, chunks)));
        }
        match read_main_raw(store, spec, id).await? {
            Some(again) if again.as_bytes() == main.as_bytes() => return Ok(Some((main, chunks))),
            _ => continue,
        }
    }
    Err(Error::Store(StoreError::Contention {
        attempts: CONSISTENT_READS,
        what: format!(
            "`{}` {} kept changing while it was read (being migrated?)",
            spec.collection,
            crate::error::display_bson(id)
        ),
    }))
}

#[doc = crate::__outlier_doc!(full)]
///
/// `T` is decoded once, straight from the bytes the store returned, the overflow's items joined to
/// the main array as bytes.
pub async fn full<T: Outlier, S: Store, Q: KeyRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<Option<T>> {
    crate::observe::traced_op!(outlier.full, store, T::SPEC.collection, async move {
        let spec = T::SPEC;
        let id = id.to_key_bson();
        let Some((main, chunks)) = main_and_overflow(store, &spec, &id).await? else {
            return Ok(None);
        };
        let Some(flag) = raw_flag(&spec, &main) else {
            return full_from_docs(&spec, &main, &[]).map(Some); // reports the flag
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
    })
}

/// [`full`] through `Document`s: what reports a document that does not decode.
fn full_from_docs<T: DeserializeOwned>(
    spec: &OutlierSpec<'_>,
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
fn raw_flag(spec: &OutlierSpec<'_>, main: &RawDocument) -> Option<bool> {
    match main.get(spec.flag_field) {
        Ok(None) | Ok(Some(RawBsonRef::Null)) => Some(false),
        Ok(Some(RawBsonRef::Boolean(b))) => Some(b),
        _ => None,
    }
}

/// The bytes of `main` with its array replaced by one holding its items and then the items of
/// every chunk, in order: a document `T` decodes from in one pass. The items are copied as
/// bytes, not decoded. `None` when an array is neither an array nor missing or null.
fn joined(
    spec: &OutlierSpec<'_>,
    main: &RawDocument,
    chunks: &[RawDocumentBuf],
) -> Option<Vec<u8>> {
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

#[doc = crate::__outlier_doc!(all_items)]
pub async fn all_items<T: Outlier, S: Store, Q: KeyRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<Option<Vec<T::Item>>> {
    crate::observe::traced_op!(outlier.all_items, store, T::SPEC.collection, async {
        all_items_of::<T, S>(store, &id.to_key_bson()).await
    })
}

/// [`all_items`] by the id's BSON value.
async fn all_items_of<T: Outlier, S: Store>(
    store: &S,
    id: &bson::Bson,
) -> Result<Option<Vec<T::Item>>> {
    let spec = T::SPEC;
    let Some((main, chunks)) = main_and_overflow(store, &spec, id).await? else {
        return Ok(None);
    };
    let flag = match raw_flag(&spec, &main) {
        Some(flag) => flag,
        None => main_parts(&spec, &mut from_raw(spec.collection, &main)?)?.1,
    };
    let mut items = series::decode_raw_items(spec.collection, spec.items_field, &main)?;
    if flag {
        let ov = &spec.overflow;
        for chunk in chunks {
            items.extend(series::decode_raw_items::<T::Item>(
                ov.collection,
                ov.items_field,
                &chunk,
            )?);
        }
    }
    Ok(Some(items))
}

#[doc = crate::__outlier_doc!(items)]
pub fn items<'a, T: Outlier + 'a, S: Store, Q: KeyRef<T::Id> + ?Sized>(
    store: &'a S,
    id: &Q,
) -> impl Stream<Item = Result<T::Item>> + Send + 'a {
    type Boxed<'a, I> = Pin<Box<dyn Stream<Item = Result<I>> + Send + 'a>>;
    let spec = T::SPEC;
    let id = id.to_key_bson();
    let span = crate::observe::op_span!(outlier.items, store, spec.collection);
    let items = stream::once(async move {
        let main = read_main(store, &spec, &id).await?;
        let Some(mut doc) = main else {
            return Ok::<_, Error>(Box::pin(stream::empty()) as Boxed<'a, T::Item>);
        };
        let (items, flag) = main_parts(&spec, &mut doc)?;
        if flag && items.len() > spec.threshold as usize {
            // Mid-migration: read whole, consistently (see `in_transition`).
            let all = all_items_of::<T, S>(store, &id).await?.unwrap_or_default();
            return Ok(Box::pin(stream::iter(all.into_iter().map(Ok))) as Boxed<'a, T::Item>);
        }
        let first = stream::iter(
            series::decode_values::<T::Item>(spec.collection, Some(&id), spec.items_field, items)?
                .into_iter()
                .map(Ok),
        );
        if !flag {
            return Ok(Box::pin(first) as Boxed<'a, T::Item>);
        }
        let ov = spec.overflow;
        let rest = series::doc_stream(store, ov, id, series::STREAM_BATCH)
            .map(move |d| {
                d.and_then(|d| {
                    series::decode_raw_items::<T::Item>(ov.collection, ov.items_field, &d)
                })
            })
            .map_ok(|v| stream::iter(v.into_iter().map(Ok)))
            .try_flatten();
        Ok(Box::pin(first.chain(rest)) as Boxed<'a, T::Item>)
    })
    .try_flatten();
    crate::observe::traced_stream(span, items)
}

#[doc = crate::__outlier_doc!(counts)]
pub async fn counts<T: Outlier, S: Store, Q: KeyRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<Counts> {
    crate::observe::traced_op!(outlier.counts, store, T::SPEC.collection, async move {
        let spec = T::SPEC;
        let id = id.to_key_bson();
        for _ in 0..CONSISTENT_READS {
            let mut doc = existing_main(store, &spec, &id).await?;
            let before = doc.clone();
            let (items, flag) = main_parts(&spec, &mut doc)?;
            let (extra, chunks) = if flag {
                let s = series::stats(store, &spec.overflow, &id).await?;
                (s.items, s.documents)
            } else {
                (0, 0)
            };
            // Mid-migration (see `in_transition`): the count holds if the main document did not
            // change meanwhile.
            if flag
                && items.len() > spec.threshold as usize
                && read_main(store, &spec, &id).await? != Some(before)
            {
                continue;
            }
            return Ok(Counts {
                items: items.len() as u64 + extra,
                pages: 1 + chunks,
            });
        }
        Err(Error::Store(StoreError::Contention {
            attempts: CONSISTENT_READS,
            what: format!(
                "`{}` kept changing while its items were counted",
                spec.collection
            ),
        }))
    })
}

#[doc = crate::__outlier_doc!(is_outlier)]
pub async fn is_outlier<T: Outlier, S: Store, Q: KeyRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<bool> {
    crate::observe::traced_op!(outlier.is_outlier, store, T::SPEC.collection, async {
        let spec = T::SPEC;
        let id = id.to_key_bson();
        let mut doc = existing_main(store, &spec, &id).await?;
        let (items, flag) = main_parts(&spec, &mut doc)?;
        Ok(flag || items.len() > spec.threshold as usize)
    })
}

#[cfg(test)]
mod tests {
    use bson::{doc, RawDocumentBuf};
    use serde::Deserialize;

    use super::*;
    use crate::spec::{SeriesOrder, SeriesSpec};

    const SPEC: OutlierSpec<'static> = OutlierSpec {
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
            keeps: crate::spec::Keeps::NONE,
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
        let Error::Store(StoreError::Decode {
            collection,
            id,
            reason,
        }) = e
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
