//! The bucket pattern: a long series (a customer's trades) stored `size` items per document.
//!
//! Implemented by `#[derive(Bucket)]`; the functions here are what the derived methods call,
//! usable directly with any [`Bucket`] type.
//!
//! Layout: the seed's, plus a page number. One document per bucket,
//! `{_id: "<key>_<epoch seconds of its first item>", <key field>: key, count: n, <items>: [...],
//! page: p}`, where `page` numbers a key's buckets 1, 2, 3... so that page `p` is one indexed
//! lookup however deep (the seed finds page `p` with `skip(p - 1)`, which walks every page
//! before it).
//!
//! Cost on MongoDB:
//! - push: one `update`, the seed's conditional upsert (`{key, count < size}`, served by an
//!   index that holds only open buckets, newest first), also when it opens a bucket (in a
//!   burst within one second too), once this process has pushed to the key (it then knows the
//!   next page number and the newest bucket's `_id`). The first push of a process to a key is
//!   a `findAndModify` that returns the bucket's number and `_id`; when no bucket is open
//!   then, that push costs three: the miss, a read of the newest bucket, an insert;
//! - page `n`: one `find` of `{key, page: n}` on the index `{key: 1, page: 1, _id: 1}`, however
//!   deep; buckets without a number (written by the seed's recipe, or by other tools) come
//!   first and are counted instead, with a second `find`, only when no bucket has number `n`;
//!   none for `n` past 2^63-1 (no bucket has such a number);
//! - the streams ([`pages`], [`items`]) walk the same index by range, [`STREAM_BATCH`] buckets a
//!   round trip;
//! - counts: one `aggregate`.
//!
//! Indexes (created on first use, idempotently): `{<key>: 1, page: 1, _id: 1}` for reads;
//! `{<key>: 1, page: -1, _id: -1}` partial on `count < size` (the open buckets, newest first)
//! for pushes; a unique one
//! on `{<key>: 1, page: -1}` (partial on `page` existing), which lets only one of two concurrent
//! writers open bucket `n + 1`: the other pushes into it.

use bson::Bson;
use futures::stream::{Stream, StreamExt, TryStreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::codec::BsonType;
use crate::key::{KeyPart, KeyRef};
use crate::observe::op_span;
use crate::series;
use crate::spec::BucketSpec;
use crate::store::query::Schema;
use crate::store::Store;
use crate::validator;
use crate::Result;

mod archive;
mod docs;
mod ingest;
mod rollup;
mod summary;
mod time;
mod totals;

pub use crate::series::STREAM_BATCH;
pub use archive::{
    archive, archive_layout, verify_archive, verify_archive_layout, ArchiveAt, ArchiveReport,
    History,
};
pub use ingest::{ingest, INGEST_BATCH};
pub(crate) use rollup::{keys as rollup_keys, rollup_in_line};
pub use summary::{backfill, summary};
pub use time::{latest, lease_width, range};
pub use totals::{Number, Totals};

/// A type stored with the bucket pattern. Derive it with `#[derive(Bucket)]`.
pub trait Bucket {
    /// The key field's type (`i64`, `String`, `ObjectId`...).
    type Key: KeyPart + ?Sized;
    /// The type of the series' items.
    type Item: Serialize + DeserializeOwned + Send + Sync;
    /// What [`summary`] returns: with `#[bucket(summary(...))]` the derive's typed
    /// `<Name>Summary`, otherwise [`Totals`].
    type Summary: From<Totals> + Send;
    /// The storage layout.
    const SPEC: BucketSpec<'static>;
    /// Whether the writes install the layout's validator ([`ensure_validator`]) with the
    /// indexes, once per store and process (`#[bucket(validate)]`).
    const VALIDATE: bool = false;
    /// The item's time in epoch milliseconds, from the field named by
    /// `#[bucket(time = "...")]`; `None` uses the current time.
    fn item_millis(item: &Self::Item) -> Option<i64>;
}

/// One bucket of items: a page.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    /// The bucket's `_id` (`"123_1698335223"`).
    pub id: Bson,
    /// The items, in push order.
    pub items: Vec<T>,
}

/// How much a key holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Items over all the key's buckets.
    pub items: u64,
    /// Buckets (pages).
    pub pages: u64,
}

fn time_of<B: Bucket + ?Sized>(item: &B::Item) -> i64 {
    B::item_millis(item).unwrap_or_else(crate::key::now_millis)
}

#[doc = crate::__bucket_doc!(push)]
pub async fn push<B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &S,
    key: &Q,
    item: &B::Item,
) -> Result<()> {
    crate::observe::traced_op!(
        bucket.push,
        store,
        B::SPEC.collection,
        push_item::<B, S, Q>(store, key, item)
    )
}

async fn push_item<B, S, Q>(store: &S, key: &Q, item: &B::Item) -> Result<()>
where
    B: Bucket + ?Sized,
    S: Store,
    Q: KeyPart + ?Sized,
{
    let bson = crate::codec::ser::item(item)?;
    push_values::<B, S, Q>(store, key, vec![bson], &[time_of::<B>(item)]).await
}

#[doc = crate::__bucket_doc!(push_many)]
pub async fn push_many<B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &S,
    key: &Q,
    items: &[B::Item],
) -> Result<()> {
    crate::observe::traced_op!(bucket.push_many, store, B::SPEC.collection, async {
        let values = items
            .iter()
            .map(crate::codec::ser::item)
            .collect::<Result<Vec<_>>>()?;
        let times: Vec<i64> = items.iter().map(time_of::<B>).collect();
        push_values::<B, S, Q>(store, key, values, &times).await
    })
}

/// Appends serialized items, `times[i]` the epoch milliseconds of item `i`.
async fn push_values<B, S, Q>(store: &S, key: &Q, values: Vec<Bson>, times: &[i64]) -> Result<()>
where
    B: Bucket + ?Sized,
    S: Store,
    Q: KeyPart + ?Sized,
{
    // A constant: the series memo knows it by its address once its indexes are ensured.
    let spec: &'static crate::spec::SeriesSpec<'static> = &const { B::SPEC.series() };
    let key_value = key.to_key_bson();
    // Made only when a push opens a bucket.
    let prefix = series::PrefixOf::new(key);
    validated::<B, S>(store).await?;
    series::push(store, spec, &key_value, &prefix, values, times).await?;
    series::memo(store).know_static(spec);
    Ok(())
}

/// A bucket's page from its BSON bytes, its items decoded straight from them.
fn raw_page<B: Bucket + ?Sized>(raw: &bson::RawDocument) -> Result<Page<B::Item>> {
    let spec = B::SPEC;
    let id = match raw.get("_id") {
        Ok(Some(id)) => crate::codec::raw::raw_value(spec.collection, id)?,
        _ => Bson::Null,
    };
    let items = series::decode_raw_items(spec.collection, spec.items_field, raw)?;
    Ok(Page { id, items })
}

#[doc = crate::__bucket_doc!(page)]
pub async fn page<B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &S,
    key: &Q,
    n: u64,
) -> Result<Option<Page<B::Item>>> {
    crate::observe::traced_op!(bucket.page, store, B::SPEC.collection, async {
        let doc = series::nth_doc(store, &B::SPEC.series(), &key.to_key_bson(), n).await?;
        doc.map(|raw| raw_page::<B>(&raw)).transpose()
    })
}

#[doc = crate::__bucket_doc!(pages)]
///
/// A batch is [`STREAM_BATCH`] buckets.
pub fn pages<'a, B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &'a S,
    key: &Q,
) -> impl Stream<Item = Result<Page<B::Item>>> + Send + 'a {
    let span = op_span!(bucket.pages, store, B::SPEC.collection);
    crate::observe::traced_stream(span, pages_of::<B, S>(store, key.to_key_bson()))
}

fn pages_of<'a, B, S>(
    store: &'a S,
    key: Bson,
) -> impl Stream<Item = Result<Page<B::Item>>> + Send + 'a
where
    B: Bucket + ?Sized,
    S: Store,
{
    series::doc_stream(store, B::SPEC.series(), key, STREAM_BATCH)
        .map(|d| d.and_then(|raw| raw_page::<B>(&raw)))
}

#[doc = crate::__bucket_doc!(items)]
pub fn items<'a, B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &'a S,
    key: &Q,
) -> impl Stream<Item = Result<B::Item>> + Send + 'a
where
    B::Item: 'a,
{
    let span = op_span!(bucket.items, store, B::SPEC.collection);
    let items = pages_of::<B, S>(store, key.to_key_bson())
        .map_ok(|p| futures::stream::iter(p.items.into_iter().map(Ok)))
        .try_flatten();
    crate::observe::traced_stream(span, items)
}

#[doc = crate::__bucket_doc!(all_items)]
pub async fn all_items<B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &S,
    key: &Q,
) -> Result<Vec<B::Item>> {
    items::<B, S, Q>(store, key).try_collect().await
}

#[doc = crate::__bucket_doc!(counts)]
pub async fn counts<B: Bucket + ?Sized, S: Store, Q: KeyRef<B::Key> + ?Sized>(
    store: &S,
    key: &Q,
) -> Result<Counts> {
    crate::observe::traced_op!(bucket.counts, store, B::SPEC.collection, async {
        let s = series::stats(store, &B::SPEC.series(), &key.to_key_bson()).await?;
        Ok(Counts {
            items: s.items,
            pages: s.documents,
        })
    })
}

#[doc = crate::__bucket_doc!(ensure_indexes)]
pub async fn ensure_indexes<B: Bucket + ?Sized, S: Store>(store: &S) -> Result<()> {
    crate::observe::traced_op!(bucket.ensure_indexes, store, B::SPEC.collection, async {
        validated::<B, S>(store).await?;
        B::SPEC.series().ensure_indexes(store).await
    })
}

/// The `$jsonSchema` of the layout's buckets, with its collection ([`schemas_of`] with the key type's
/// [`KeyPart::BSON_TYPES`]).
pub fn schemas<B: Bucket + ?Sized>() -> [(&'static str, Schema); 1] {
    schemas_of(&B::SPEC, <B::Key as KeyPart>::BSON_TYPES)
}

/// The `$jsonSchema` every bucket of `spec` passes, with its collection; keys of `key_types` (any type when empty):
/// the key, `count` (an `int` or `long` in `0..=size`) and the items (an array of at most
/// `size`) required; `page` an `int` or `long` from 1 where present (the seed's buckets have
/// none); the time bounds `date`s, `bounded` a `bool`, the summary's values numbers and
/// `summarized` an array of strings, where present.
pub fn schemas_of<'a>(spec: &BucketSpec<'a>, key_types: &[BsonType]) -> [(&'a str, Schema); 1] {
    [(spec.collection, spec.series().schema(key_types))]
}

#[doc = crate::__bucket_doc!(ensure_validator)]
///
/// The schema is [`schemas`]; [`Store::set_validator`] installs it. With roll-ups
/// (`#[bucket(rollup)]`), their collection's too, first.
pub async fn ensure_validator<B: Bucket + ?Sized, S: Store>(store: &S) -> Result<()> {
    crate::observe::traced_op!(bucket.ensure_validator, store, B::SPEC.collection, async {
        let key_types = <B::Key as KeyPart>::BSON_TYPES;
        if let Some((rollups, schema)) = B::SPEC.series().rollup_schema(key_types) {
            validator::install(store, rollups, &schema).await?;
        }
        let [(coll, schema)] = schemas::<B>();
        validator::install(store, coll, &schema).await
    })
}

/// [`ensure_validator`] once per store and process, when the type asks for it
/// ([`Bucket::VALIDATE`]): what every write runs first.
pub(crate) async fn validated<B: Bucket + ?Sized, S: Store>(store: &S) -> Result<()> {
    if B::VALIDATE && !validator::installed(store, B::SPEC.collection) {
        // Boxed: once per process (every push's future would carry it).
        Box::pin(ensure_validator::<B, S>(store)).await?;
    }
    Ok(())
}

#[doc = crate::__bucket_doc!(verify)]
///
/// The checks: [`adopt::verify_bucket`](crate::adopt::verify_bucket).
pub async fn verify<B: Bucket + ?Sized, S: Store>(store: &S) -> Result<crate::layout::Verified> {
    crate::layout::verify_bucket(store, &B::SPEC, &crate::pass::Options::default()).await
}

#[doc = crate::__bucket_doc!(index_report)]
///
/// The report: [`adopt::index_report_bucket`](crate::adopt::index_report_bucket).
pub async fn index_report<B: Bucket + ?Sized, S: Store>(
    store: &S,
) -> Result<Vec<crate::layout::IndexReport>> {
    crate::layout::index_report_bucket(store, &B::SPEC).await
}
