//! Reads of a key's documents: by number, all at once, as a stream of batches, and counts;
//! items decoded from the documents' BSON bytes.

use std::marker::PhantomData;

use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf};
use futures::stream::{self, Stream, TryStreamExt};
use serde::de::{DeserializeOwned, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::codec::raw::{from_raw, raw_value};
use crate::spec::SeriesSpec;
use crate::store::query::{Filter, FindOptions, Path};
use crate::store::{find_one, ArrayStats, Store};
use crate::{Error, Result};

/// Documents a stream returns per round trip (its first find fetches one more, which it
/// carries into the next batch: a short find is the last).
pub const STREAM_BATCH: i64 = 512;

/// The items of one stored document, decoded (taken out of the document, not copied).
pub(crate) fn decode_items<T: DeserializeOwned>(
    coll: &str,
    items_field: &str,
    mut doc: Document,
) -> Result<Vec<T>> {
    let arr = take_array(coll, items_field, &mut doc)?;
    decode_values(coll, doc.get("_id"), items_field, arr)
}

/// Items of array `items_field` of document `id`, decoded; an item that does not decode is
/// reported with its index.
pub(crate) fn decode_values<T: DeserializeOwned>(
    coll: &str,
    id: Option<&Bson>,
    items_field: &str,
    items: Vec<Bson>,
) -> Result<Vec<T>> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            bson::from_bson(b)
                .map_err(|e| Error::decode(coll, id, format!("`{items_field}.{i}`: {e}")))
        })
        .collect()
}

/// [`decode_items`] from the document's BSON bytes: the array is decoded in one pass, with no
/// `Bson` value built for its items. Anything unexpected (the field missing or not an array,
/// an item that does not decode) goes through [`decode_items`], for the same errors.
pub(crate) fn decode_raw_items<T: DeserializeOwned>(
    coll: &str,
    items_field: &str,
    doc: &RawDocument,
) -> Result<Vec<T>> {
    if let Ok(Some(RawBsonRef::Array(items))) = doc.get(items_field) {
        if let Ok(Values(items)) = bson::from_slice::<Values<T>>(items.as_bytes()) {
            return Ok(items);
        }
    }
    decode_items(coll, items_field, from_raw(coll, doc)?)
}

/// The values of a BSON array read as the document it is (`{"0": .., "1": ..}`), in order.
struct Values<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Values<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Visit<T> {
            type Value = Values<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array's document")
            }
            fn visit_map<M: MapAccess<'de>>(
                self,
                mut m: M,
            ) -> std::result::Result<Values<T>, M::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0));
                while let Some((IgnoredAny, v)) = m.next_entry::<IgnoredAny, T>()? {
                    out.push(v);
                }
                Ok(Values(out))
            }
        }
        d.deserialize_map(Visit(PhantomData))
    }
}

/// The items of one stored document as they are stored (taken out, not copied).
pub(crate) fn take_items(coll: &str, items_field: &str, mut doc: Document) -> Result<Vec<Bson>> {
    take_array(coll, items_field, &mut doc)
}

/// Takes array `items_field` out of `doc` (empty when absent or null).
pub(crate) fn take_array(coll: &str, items_field: &str, doc: &mut Document) -> Result<Vec<Bson>> {
    match doc.get_mut(items_field) {
        Some(Bson::Array(a)) => Ok(std::mem::take(a)),
        None | Some(Bson::Null) => Ok(Vec::new()),
        Some(other) => {
            let found = other.element_type();
            Err(Error::decode(
                coll,
                doc.get("_id"),
                format!("`{items_field}` is not an array but {found:?}"),
            ))
        }
    }
}

/// Document `n` (1-based) of a key, as its BSON bytes: one indexed lookup of its number,
/// however deep. When no document has that number, the key's unnumbered documents (written
/// before numbering, or by other tools), which come first, are counted instead: a second round
/// trip, only then.
pub(crate) async fn nth_doc<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    n: u64,
) -> Result<Option<RawDocumentBuf>> {
    if n == 0 {
        return Err(Error::invalid("pages are numbered from 1"));
    }
    // Numbers are stored as Int64: no document has a number past 2^63-1, and no key has as
    // many unnumbered documents. Answered here, alike on every store.
    let Ok(n) = i64::try_from(n) else {
        return Ok(None);
    };
    spec.ensure_indexes(store).await?;
    let field = spec.order.field();
    let one = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    // A bare equality, the cheapest lookup: only a number equals `n` (MongoDB would also
    // match a foreign array holding `n`, which its unique index already files under `n`).
    let numbered = Filter::And(vec![
        spec.by_key(key),
        Filter::Eq(Path::from(field), Bson::Int64(n)),
    ]);
    if let Some(doc) = store
        .find_raw(spec.collection, &numbered, &one)
        .await?
        .pop()
    {
        return Ok(Some(doc));
    }
    let unnumbered = Filter::and([spec.by_key(key), Filter::Exists(Path::from(field), false)]);
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        skip: n.unsigned_abs() - 1,
        limit: Some(1),
        ..FindOptions::default()
    };
    Ok(store
        .find_raw(spec.collection, &unnumbered, &opts)
        .await?
        .pop())
}

/// Every document of a key, in order, as BSON bytes, in one find (one round trip below
/// 16 MiB). Documents outside the series (see `SeriesSpec::in_series`) are left out here
/// rather than by the query: a bare equality on the key is the cheapest query to serve.
pub(crate) async fn all_docs<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
) -> Result<Vec<RawDocumentBuf>> {
    let opts = FindOptions {
        sort: spec.sort(),
        ..FindOptions::default()
    };
    let mut docs = store
        .find_raw(spec.collection, &spec.by_key(key), &opts)
        .await?;
    let field = spec.order.field();
    docs.retain(|doc| match doc.get(field) {
        Ok(Some(v)) => matches!(
            v,
            RawBsonRef::Int32(_)
                | RawBsonRef::Int64(_)
                | RawBsonRef::Double(_)
                | RawBsonRef::Decimal128(_)
        ),
        // Absent, or a document that does not parse (its decoding reports it).
        Ok(None) | Err(_) => true,
    });
    Ok(docs)
}

/// The documents of a key in order, as BSON bytes, `batch` per round trip (keyset pagination:
/// each find is one indexed range read, however deep), in `max(1, ⌈n / batch⌉)` finds for `n`
/// documents: a find that returns fewer documents than it asked for ends the stream.
///
/// The first find asks for `batch + 1` documents, each later one for `batch`; the one past
/// `batch` in hand is not returned yet but carried into the next batch, and the next find
/// continues after it. So a full last batch needs no empty find to tell it was the last, and
/// no document is read twice. The key's unnumbered documents come first (by `_id`), then the
/// numbered ones (by number), in one order: a find that continues after an unnumbered document
/// takes the unnumbered ones after it and the numbered ones in the same find.
pub(crate) fn doc_stream<'a, S: Store>(
    store: &'a S,
    spec: SeriesSpec<'a>,
    key: Bson,
    batch: i64,
) -> impl Stream<Item = Result<RawDocumentBuf>> + Send + 'a {
    /// Where the next find starts: after the carried document.
    enum After {
        Unnumbered(Bson),
        Numbered(Bson),
    }
    /// The stream's state between finds; `None` once a find came back short.
    struct Next {
        after: Option<After>,
        carried: Option<RawDocumentBuf>,
    }
    let batch = batch.max(1);
    let field = spec.order.field();
    stream::try_unfold(
        Some(Next {
            after: None,
            carried: None,
        }),
        move |next| {
            let key = key.clone();
            async move {
                let Some(Next { after, carried }) = next else {
                    return Ok::<_, Error>(None);
                };
                let mut filter = vec![spec.by_key(&key), spec.in_series()];
                let sort = match &after {
                    None => spec.sort(),
                    // The unnumbered documents after it, then every numbered one: the first
                    // find's order, continued.
                    Some(After::Unnumbered(id)) => {
                        filter.push(Filter::Or(vec![
                            Filter::and([
                                Filter::Exists(Path::from(field), false),
                                Filter::Gt("_id".into(), id.clone()),
                            ]),
                            Filter::Exists(Path::from(field), true),
                        ]));
                        spec.sort()
                    }
                    // Numbered ones only from here: a bare range on the number (test server,
                    // T6).
                    Some(After::Numbered(n)) => {
                        filter.push(Filter::Gt(Path::from(field), n.clone()));
                        vec![(Path::from(field), 1)]
                    }
                };
                spec.ensure_indexes(store).await?;
                // `batch + 1` documents in hand: the carried one and those asked for.
                let wanted = batch + 1 - i64::from(carried.is_some());
                let opts = FindOptions {
                    sort,
                    skip: 0,
                    limit: Some(wanted),
                    ..FindOptions::default()
                };
                let docs = store
                    .find_raw(spec.collection, &Filter::and(filter), &opts)
                    .await?;
                let full = docs.len() as i64 == wanted;
                let mut out: Vec<RawDocumentBuf> = carried.into_iter().chain(docs).collect();
                if !full {
                    return Ok(Some((out, None)));
                }
                let last = out.pop().expect("a full find returned documents");
                let value = |f: &str| -> Result<Option<Bson>> {
                    match last.get(f) {
                        Ok(None) | Ok(Some(RawBsonRef::Null)) => Ok(None),
                        Ok(Some(v)) => Ok(Some(raw_value(spec.collection, v)?)),
                        Err(e) => Err(Error::decode(spec.collection, None, e)),
                    }
                };
                let after = match value(field)? {
                    Some(n) => After::Numbered(n),
                    None => After::Unnumbered(value("_id")?.ok_or_else(|| {
                        Error::decode(spec.collection, None, "document has no _id")
                    })?),
                };
                let next = Next {
                    after: Some(after),
                    carried: Some(last),
                };
                Ok(Some((out, Some(next))))
            }
        },
    )
    .map_ok(|docs| stream::iter(docs.into_iter().map(Ok)))
    .try_flatten()
}

/// Documents and items of a key; a document whose array field is not an array is reported as
/// a decode error naming it.
pub(crate) async fn stats<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
) -> Result<ArrayStats> {
    let s = store
        .array_stats(spec.collection, &spec.docs_of(key, []), spec.items_field)
        .await?;
    if s.not_arrays > 0 {
        let bad = spec.docs_of(
            key,
            [Filter::NotArray(Path::from(spec.items_field.to_owned()))],
        );
        let doc = find_one(store, spec.collection, &bad).await?;
        return Err(Error::decode(
            spec.collection,
            doc.as_ref().and_then(|d| d.get("_id")),
            format!("`{}` is not an array", spec.items_field),
        ));
    }
    Ok(s)
}
