//! The engine both patterns share: a series of items kept `size` at a time in documents of one
//! collection, keyed by a field (a customer's trade buckets; an outlier's overflow chunks).
//!
//! Invariants, on every store and under any number of concurrent writers:
//! - a document never holds more than `size` items (every write is conditional on `count`);
//! - nothing is lost or duplicated: a write either applies whole or not at all, and the retry
//!   loops only retry writes that did not apply;
//! - a push goes to the key's newest open document (`count < size`), found through a
//!   non-unique index partial on `count < size` that holds only open documents;
//! - [`SeriesOrder::Seq`]: at most one document per key is open. Document `n + 1` is inserted
//!   only after document `n` was seen full, and a unique index on `{key, seq}` lets one of two
//!   concurrent openers win; the other retries into the winner's document. So each writer's
//!   items are read back in the order it pushed them.
//! - [`SeriesOrder::TimeId`]: the seed's layout has no field that two openers of the next bucket
//!   would both write (each names its bucket after its own first item), so two writers that open
//!   a bucket at once *in different seconds* both succeed: the key then has two open buckets,
//!   both filled (newest first) before another is opened. In the same second, the `_id`s collide
//!   and the loser retries into the winner's bucket. (A unique index partial on `count < size`
//!   would prevent this on MongoDB, but the SecantusDB test server does not maintain such an
//!   index when an update takes a document out of its filter, so the library does not rely on it.)

use bson::oid::ObjectId;
use bson::{Bson, Document};
use futures::stream::{self, Stream, TryStreamExt};
use serde::de::DeserializeOwned;

use crate::error::display_bson;
use crate::query::{get_path, Filter, FindOptions, IndexSpec, Update};
use crate::store::{doc_id, ensure_indexes, ArrayStats, Store};
use crate::{Error, Result};

/// Attempts before a retry loop reports [`Error::Contention`]. Every retry follows a write of
/// another writer that did apply, so the loop only spins under that much concurrent traffic.
const MAX_ATTEMPTS: u32 = 10_000;

/// How the documents of one key are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesOrder {
    /// `_id = "<key>_<epoch seconds of the first item>"`, in `_id` order: the seed's bucket
    /// layout. Two documents that would get the same `_id` (first items in the same second)
    /// are told apart by a suffix: `123_1698335223_000001`, which sorts right after.
    TimeId,
    /// An integer field numbering the documents of a key 1, 2, 3...; `_id` is an ObjectId.
    /// Documents without the field (the seed's single overflow document) come first.
    Seq(&'static str),
}

/// Where and how a series is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeriesSpec {
    pub collection: &'static str,
    /// The field holding the key in every document (`customerId`, `book_id`).
    pub key_field: &'static str,
    /// The array field (`history`, `customers_purchased_extra`).
    pub items_field: &'static str,
    /// The field counting the items of the array (`count`).
    pub count_field: &'static str,
    /// Items per document, at least 1.
    pub size: u32,
    pub order: SeriesOrder,
}

impl SeriesSpec {
    /// The indexes the series needs: one that orders a key's documents and serves every read by
    /// key; one partial on `count < size` that holds only open documents (how a push finds its
    /// document in one index probe, however long the series); for [`SeriesOrder::Seq`], a unique
    /// one on `{key, seq}` (documents without `seq` aside) that admits one document `n + 1`.
    pub fn indexes(&self) -> Vec<IndexSpec> {
        let k = self.key_field;
        let mut out = vec![match self.order {
            SeriesOrder::TimeId => IndexSpec {
                name: format!("pattern_{k}_1__id_1"),
                keys: vec![(k.into(), 1), ("_id".into(), 1)],
                unique: false,
                partial: None,
            },
            SeriesOrder::Seq(seq) => IndexSpec {
                name: format!("pattern_{k}_1_{seq}_1"),
                keys: vec![(k.into(), 1), (seq.into(), 1)],
                unique: false,
                partial: None,
            },
        }];
        out.push(IndexSpec {
            name: self.open_index_name(),
            keys: vec![(k.into(), 1), (self.count_field.into(), 1)],
            unique: false,
            partial: Some(Filter::Lt(
                self.count_field.into(),
                Bson::Int32(self.size as i32),
            )),
        });
        if let SeriesOrder::Seq(seq) = self.order {
            // `seq` never changes once written, so this partial index never sees a document
            // leave its filter.
            out.push(IndexSpec {
                name: format!("pattern_{k}_1_{seq}_-1_unique"),
                keys: vec![(k.into(), 1), (seq.into(), -1)],
                unique: true,
                partial: Some(Filter::Exists(seq.into(), true)),
            });
        }
        out
    }

    fn open_index_name(&self) -> String {
        format!("{}{}", self.open_index_prefix(), self.size)
    }

    fn open_index_prefix(&self) -> String {
        format!("pattern_open_{}_{}_lt_", self.key_field, self.count_field)
    }

    /// Creates the indexes once per store; an open-document index for another `size` is
    /// dropped first.
    pub async fn ensure_indexes<S: Store>(&self, store: &S) -> Result<()> {
        if self.size == 0 || self.size > i32::MAX as u32 {
            return Err(Error::invalid(format!(
                "series size must be in 1..=2^31-1, got {}",
                self.size
            )));
        }
        match ensure_indexes(store, self.collection, &self.indexes(), &[self.open_index_prefix()]).await {
            Err(Error::DuplicateKey { message, .. }) => Err(Error::invalid(format!(
                "cannot create the indexes of `{}`: two of its documents have the same key and sequence number \
                 (written by another tool?): {message}",
                self.collection
            ))),
            other => other,
        }
    }

    fn by_key(&self, key: &Bson) -> Filter {
        Filter::Eq(self.key_field.into(), key.clone())
    }

    fn open(&self, key: &Bson) -> Filter {
        Filter::and([
            self.by_key(key),
            Filter::Lt(self.count_field.into(), Bson::Int32(self.size as i32)),
        ])
    }

    fn sort(&self) -> Vec<(String, i32)> {
        match self.order {
            SeriesOrder::TimeId => vec![("_id".into(), 1)],
            SeriesOrder::Seq(seq) => vec![(seq.into(), 1), ("_id".into(), 1)],
        }
    }

    /// Newest document first.
    fn newest_first(&self) -> Vec<(String, i32)> {
        match self.order {
            SeriesOrder::TimeId => vec![("_id".into(), -1)],
            SeriesOrder::Seq(seq) => vec![(seq.into(), -1), ("_id".into(), -1)],
        }
    }

    fn push_update(&self, items: &[Bson]) -> Update {
        Update {
            push: vec![(self.items_field.into(), items.to_vec())],
            inc: vec![(self.count_field.into(), items.len() as i32)],
            ..Update::default()
        }
    }

    /// A new document holding `items`: `_id`, the key, then the other fields in the
    /// lexicographic order MongoDB gives the fields an upsert creates.
    fn new_doc(&self, key: &Bson, id: Bson, seq: Option<i64>, items: &[Bson]) -> Document {
        let mut fields: Vec<(&str, Bson)> = vec![
            (self.count_field, Bson::Int32(items.len() as i32)),
            (self.items_field, Bson::Array(items.to_vec())),
        ];
        if let (SeriesOrder::Seq(f), Some(s)) = (self.order, seq) {
            fields.push((f, Bson::Int64(s)));
        }
        fields.sort_by(|a, b| a.0.cmp(b.0));
        let mut doc = Document::new();
        doc.insert("_id", id);
        doc.insert(self.key_field, key.clone());
        for (k, v) in fields {
            doc.insert(k, v);
        }
        doc
    }
}

/// The `_id` of a [`SeriesOrder::TimeId`] document.
pub fn bucket_id(prefix: &str, seconds: i64, suffix: u32) -> String {
    if suffix == 0 {
        format!("{prefix}_{seconds}")
    } else {
        format!("{prefix}_{seconds}_{suffix:06}")
    }
}

fn contention(what: &str) -> Error {
    Error::Contention {
        attempts: MAX_ATTEMPTS,
        what: what.to_owned(),
    }
}

/// Appends `items` to the series of `key`, in order. `times[i]` is item i's epoch seconds
/// (used by [`SeriesOrder::TimeId`] only). One item costs one round trip in the common case.
pub(crate) async fn push<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    prefix: &str,
    items: &[Bson],
    times: &[i64],
) -> Result<()> {
    for item in items {
        crate::error::check_item_size(spec.collection, item)?;
    }
    spec.ensure_indexes(store).await?;
    match items {
        [] => Ok(()),
        [one] => push_one(store, spec, key, prefix, one, times.first().copied()).await,
        _ => push_many(store, spec, key, prefix, items, times).await,
    }
}

async fn push_one<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    prefix: &str,
    item: &Bson,
    time: Option<i64>,
) -> Result<()> {
    let coll = spec.collection;
    let items = std::slice::from_ref(item);
    let open = spec.open(key);
    match spec.order {
        SeriesOrder::TimeId => {
            // The seed's conditional upsert, with the key queried by equality (never a regex)
            // and a unique partial index that admits one open bucket per key.
            let seconds = time.unwrap_or_else(crate::key::now_seconds);
            let (newest, hint) = (spec.newest_first(), spec.open_index_name());
            let (mut suffix, mut retried) = (0, false);
            for _ in 0..MAX_ATTEMPTS {
                let id = bucket_id(prefix, seconds, suffix);
                let mut update = spec.push_update(items);
                update.set_on_insert = vec![
                    ("_id".into(), Bson::String(id)),
                    (spec.key_field.into(), key.clone()),
                ];
                match store
                    .update_first(coll, &open, &newest, &hint, &update, true)
                    .await
                {
                    Ok(_) => return Ok(()),
                    // The `_id` is taken. Usually another writer just opened this key's bucket in
                    // the same second: retrying pushes into it. If the retry collides too, an
                    // older (full) bucket has this `_id`: take the next free suffix.
                    Err(Error::DuplicateKey { .. }) if !retried => retried = true,
                    Err(Error::DuplicateKey { .. }) => {
                        suffix = next_suffix(store, spec, prefix, seconds, suffix).await?;
                        retried = false;
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(contention("opening a bucket"))
        }
        SeriesOrder::Seq(_) => {
            let (newest, hint) = (spec.newest_first(), spec.open_index_name());
            for _ in 0..MAX_ATTEMPTS {
                if store
                    .update_first(coll, &open, &newest, &hint, &spec.push_update(items), false)
                    .await?
                    .matched
                {
                    return Ok(());
                }
                let Some(seq) = next_seq(store, spec, key).await? else {
                    continue;
                };
                match store
                    .insert_one(
                        coll,
                        spec.new_doc(key, Bson::ObjectId(ObjectId::new()), Some(seq), items),
                    )
                    .await
                {
                    Ok(()) => return Ok(()),
                    Err(Error::DuplicateKey { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(contention("opening an overflow chunk"))
        }
    }
}

/// Several items: fill the open document with a compare-and-set on its `count`, then open
/// new documents of up to `size` items each.
async fn push_many<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    prefix: &str,
    items: &[Bson],
    times: &[i64],
) -> Result<()> {
    let coll = spec.collection;
    let size = spec.size as usize;
    let (mut done, mut suffix, mut failures) = (0usize, 0u32, 0u32);
    let newest = FindOptions {
        sort: spec.newest_first(),
        limit: Some(1),
        ..FindOptions::default()
    };
    while done < items.len() {
        if failures >= MAX_ATTEMPTS {
            return Err(contention("pushing several items"));
        }
        let rest = &items[done..];
        if let Some(doc) = store
            .find(coll, &spec.open(key), &newest)
            .await?
            .into_iter()
            .next()
        {
            let count = read_count(spec, &doc)?;
            let take = (size.saturating_sub(count as usize)).min(rest.len()).max(1);
            let cas = Filter::and([
                Filter::Eq("_id".into(), doc_id(coll, &doc)?.clone()),
                Filter::Eq(spec.count_field.into(), Bson::Int64(count as i64)),
                Filter::Lte(spec.count_field.into(), Bson::Int64((size - take) as i64)),
            ]);
            if store
                .update_one(coll, &cas, &spec.push_update(&rest[..take]), false)
                .await?
                .matched
            {
                done += take;
            } else {
                failures += 1;
            }
            continue;
        }
        let take = size.min(rest.len());
        let (id, seq) = match spec.order {
            SeriesOrder::TimeId => {
                let seconds = times
                    .get(done)
                    .copied()
                    .unwrap_or_else(crate::key::now_seconds);
                (Bson::String(bucket_id(prefix, seconds, suffix)), None)
            }
            SeriesOrder::Seq(_) => match next_seq(store, spec, key).await? {
                Some(seq) => (Bson::ObjectId(ObjectId::new()), Some(seq)),
                None => continue, // the newest document is open again: fill it
            },
        };
        match store
            .insert_one(coll, spec.new_doc(key, id, seq, &rest[..take]))
            .await
        {
            Ok(()) => done += take,
            Err(Error::DuplicateKey { .. }) => {
                failures += 1;
                if spec.order == SeriesOrder::TimeId {
                    let seconds = times
                        .get(done)
                        .copied()
                        .unwrap_or_else(crate::key::now_seconds);
                    suffix = next_suffix(store, spec, prefix, seconds, suffix).await?;
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One past the highest suffix in use for `<prefix>_<seconds>` (and past `suffix`).
async fn next_suffix<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    prefix: &str,
    seconds: i64,
    suffix: u32,
) -> Result<u32> {
    let coll = spec.collection;
    let base = format!("{}_", bucket_id(prefix, seconds, 0));
    let range = Filter::and([
        Filter::Gte("_id".into(), Bson::String(base.clone())),
        Filter::Lt(
            "_id".into(),
            Bson::String(format!("{}`", &base[..base.len() - 1])),
        ),
    ]);
    let desc = FindOptions {
        sort: vec![("_id".into(), -1)],
        limit: Some(1),
        ..FindOptions::default()
    };
    let highest = store
        .find(coll, &range, &desc)
        .await?
        .first()
        .and_then(|d| {
            d.get_str("_id")
                .ok()
                .and_then(|s| s[base.len()..].parse::<u32>().ok())
        })
        .unwrap_or(0);
    Ok(highest.max(suffix) + 1)
}

/// The number of the key's next document: one past the newest (1 for the first), or `None`
/// when the newest is open (another writer just inserted it: push there instead). A document is
/// only ever opened after its predecessor was seen full, so at most one is open.
async fn next_seq<S: Store>(store: &S, spec: &SeriesSpec, key: &Bson) -> Result<Option<i64>> {
    let SeriesOrder::Seq(field) = spec.order else {
        return Ok(Some(0));
    };
    let desc = FindOptions {
        sort: spec.newest_first(),
        limit: Some(1),
        ..FindOptions::default()
    };
    let last = store
        .find(spec.collection, &spec.by_key(key), &desc)
        .await?;
    let Some(doc) = last.first() else {
        return Ok(Some(1));
    };
    if spec.open(key).matches(doc) {
        return Ok(None);
    }
    match doc.get(field) {
        None | Some(Bson::Null) => Ok(Some(1)),
        Some(v) => as_int(v)
            .and_then(|n| n.checked_add(1))
            .map(Some)
            .ok_or_else(|| {
                Error::decode(
                    spec.collection,
                    doc.get("_id"),
                    format!(
                        "`{field}` is not an integer below 2^63-1: {}",
                        display_bson(v)
                    ),
                )
            }),
    }
}

/// An integer stored as Int32, Int64 or an integral Double.
pub fn as_int(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(x) => Some(*x as i64),
        Bson::Int64(x) => Some(*x),
        Bson::Double(x) if x.fract() == 0.0 && x.is_finite() => Some(*x as i64),
        _ => None,
    }
}

fn read_count(spec: &SeriesSpec, doc: &Document) -> Result<u64> {
    let f = spec.count_field;
    match doc.get(f).and_then(as_int) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Error::decode(
            spec.collection,
            doc.get("_id"),
            format!("`{f}` is not a non-negative integer"),
        )),
    }
}

/// The items of one stored document, decoded.
pub(crate) fn decode_items<T: DeserializeOwned>(
    coll: &str,
    items_field: &str,
    doc: &Document,
) -> Result<Vec<T>> {
    let id = doc.get("_id");
    let arr = match doc.get(items_field) {
        Some(Bson::Array(a)) => a,
        None | Some(Bson::Null) => return Ok(Vec::new()),
        Some(other) => {
            return Err(Error::decode(
                coll,
                id,
                format!(
                    "`{items_field}` is not an array but {:?}",
                    other.element_type()
                ),
            ))
        }
    };
    arr.iter()
        .enumerate()
        .map(|(i, b)| {
            bson::from_bson(b.clone())
                .map_err(|e| Error::decode(coll, id, format!("`{items_field}.{i}`: {e}")))
        })
        .collect()
}

/// Page `n` (1-based) of a [`SeriesOrder::TimeId`] series: the n-th document in `_id` order.
pub(crate) async fn nth_doc<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    n: u64,
) -> Result<Option<Document>> {
    if n == 0 {
        return Err(Error::invalid("pages are numbered from 1"));
    }
    spec.ensure_indexes(store).await?;
    let opts = FindOptions {
        sort: spec.sort(),
        skip: n - 1,
        limit: Some(1),
    };
    Ok(store
        .find(spec.collection, &spec.by_key(key), &opts)
        .await?
        .into_iter()
        .next())
}

/// Every document of a key, in order, in one find (one round trip below 16 MiB).
pub(crate) async fn all_docs<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
) -> Result<Vec<Document>> {
    let opts = FindOptions {
        sort: spec.sort(),
        ..FindOptions::default()
    };
    store.find(spec.collection, &spec.by_key(key), &opts).await
}

/// The documents of a key in order, fetched `batch` at a time by range on the order field
/// (keyset pagination: each batch is one indexed range read, however deep).
pub(crate) fn doc_stream<'a, S: Store>(
    store: &'a S,
    spec: SeriesSpec,
    key: Bson,
    batch: i64,
) -> impl Stream<Item = Result<Document>> + Send + 'a {
    // stage 0: documents without a sequence number (Seq only); stage 1: the keyed range.
    let start = (
        if matches!(spec.order, SeriesOrder::Seq(_)) {
            0u8
        } else {
            1
        },
        None::<Bson>,
        false,
    );
    stream::try_unfold(start, move |(stage, after, done)| {
        let key = key.clone();
        async move {
            if done {
                return Ok(None);
            }
            spec.ensure_indexes(store).await?;
            let by_key = spec.by_key(&key);
            let (filter, opts, order_field) = match (spec.order, stage) {
                (SeriesOrder::Seq(f), 0) => {
                    let opts = FindOptions {
                        sort: vec![("_id".into(), 1)],
                        ..FindOptions::default()
                    };
                    let docs = store
                        .find(
                            spec.collection,
                            &Filter::and([by_key, Filter::Exists(f.into(), false)]),
                            &opts,
                        )
                        .await?;
                    return Ok(Some((docs, (1, None, false))));
                }
                (SeriesOrder::Seq(f), _) => {
                    let cond = match &after {
                        Some(a) => Filter::Gt(f.into(), a.clone()),
                        None => Filter::Exists(f.into(), true),
                    };
                    (
                        Filter::and([by_key, cond]),
                        FindOptions {
                            sort: vec![(f.into(), 1)],
                            skip: 0,
                            limit: Some(batch),
                        },
                        f,
                    )
                }
                (SeriesOrder::TimeId, _) => {
                    let filter = match &after {
                        Some(a) => Filter::and([by_key, Filter::Gt("_id".into(), a.clone())]),
                        None => by_key,
                    };
                    (
                        filter,
                        FindOptions {
                            sort: spec.sort(),
                            skip: 0,
                            limit: Some(batch),
                        },
                        "_id",
                    )
                }
            };
            let docs = store.find(spec.collection, &filter, &opts).await?;
            let last = docs.last().and_then(|d| get_path(d, order_field)).cloned();
            let finished = (docs.len() as i64) < batch || last.is_none();
            Ok(Some((docs, (1, last, finished))))
        }
    })
    .map_ok(|docs| stream::iter(docs.into_iter().map(Ok)))
    .try_flatten()
}

/// Documents and items of a key; a document whose array field is not an array is reported as
/// a decode error naming it.
pub(crate) async fn stats<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
) -> Result<ArrayStats> {
    let s = store
        .array_stats(spec.collection, &spec.by_key(key), spec.items_field)
        .await?;
    if s.not_arrays > 0 {
        let bad = Filter::and([spec.by_key(key), Filter::NotArray(spec.items_field.into())]);
        let one = FindOptions {
            limit: Some(1),
            ..FindOptions::default()
        };
        let doc = store.find(spec.collection, &bad, &one).await?;
        return Err(Error::decode(
            spec.collection,
            doc.first().and_then(|d| d.get("_id")),
            format!("`{}` is not an array", spec.items_field),
        ));
    }
    Ok(s)
}
