//! Reading a collection once, as a stream, with progress.

use bson::{Bson, RawDocumentBuf};
use futures::StreamExt;

use super::Options;
use crate::store::query::{Filter, FindOptions, Path, SCATTER};

/// Find options of a scan for operation `what` (its `comment`, a [`SCATTER`] name): `sort`
/// order, `projection` fields.
pub(crate) fn sorted(
    what: &'static str,
    sort: Vec<(Path, i32)>,
    projection: Vec<Path>,
) -> FindOptions {
    FindOptions {
        sort,
        projection,
        comment: Some(what),
        ..FindOptions::default()
    }
}

/// The `comment`s of the adoption's collection-wide reads.
pub(crate) const ANALYZE: &str = "pattern scatter: analyze";
pub(crate) const VERIFY: &str = "pattern scatter: verify";
pub(crate) const MIGRATE: &str = "pattern scatter: migrate";
use crate::store::Store;
use crate::{Error, Result};

/// Documents per batch of a scan (per `getMore` on MongoDB).
pub(crate) const SCAN_BATCH: u32 = 1000;

/// How many documents match `filter` (one server-side count, named `what`).
pub(crate) async fn count<S: Store>(
    store: &S,
    coll: &str,
    filter: &Filter,
    what: &'static str,
) -> Result<u64> {
    Ok(store.count_matching(coll, filter, what).await?)
}

/// Calls `each` on every document matching `filter`, in `find`'s order (and projection), reporting progress as
/// phase `phase` every [`SCAN_BATCH`] documents. Returns how many.
pub(crate) async fn scan<S, F>(
    store: &S,
    coll: &str,
    filter: &Filter,
    find: FindOptions,
    opts: &Options<'_>,
    phase: &str,
    mut each: F,
) -> Result<u64>
where
    S: Store,
    F: FnMut(RawDocumentBuf) -> Result<()>,
{
    let total = if opts.progress.is_some() {
        Some(count(store, coll, filter, find.comment.unwrap_or(SCATTER)).await?)
    } else {
        None
    };
    opts.report(phase, 0, total);
    let mut docs = store.scan(coll, filter, &find, SCAN_BATCH);
    let mut n = 0u64;
    while let Some(doc) = docs.next().await {
        each(doc?)?;
        n += 1;
        if n.is_multiple_of(u64::from(SCAN_BATCH)) {
            opts.report(phase, n, total);
        }
    }
    opts.report(phase, n, total);
    Ok(n)
}

/// A raw document's field as BSON (`None` when missing).
pub(crate) fn field(coll: &str, doc: &RawDocumentBuf, name: &str) -> Result<Option<Bson>> {
    match doc.get(name) {
        Ok(Some(v)) => Ok(Some(crate::codec::raw::raw_value(coll, v)?)),
        Ok(None) => Ok(None),
        Err(e) => Err(Error::decode(coll, None, e)),
    }
}

/// The `_id` of a raw document (`Null` when it has none).
pub(crate) fn id(coll: &str, doc: &RawDocumentBuf) -> Result<Bson> {
    Ok(field(coll, doc, "_id")?.unwrap_or(Bson::Null))
}

/// The number of elements of an array field and its bytes: `None` when the field is missing
/// or not an array.
pub(crate) fn array_len(doc: &RawDocumentBuf, name: &str) -> Option<(u64, u64)> {
    match doc.get(name) {
        Ok(Some(bson::RawBsonRef::Array(a))) => {
            Some((a.into_iter().count() as u64, a.as_bytes().len() as u64))
        }
        _ => None,
    }
}
