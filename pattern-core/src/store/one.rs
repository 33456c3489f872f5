//! The first document matching a filter: a `find` with limit 1, written once for the reads
//! of one document by `_id` or by key.

use std::future::Future;

use bson::Document;
use futures::TryFutureExt;

use super::query::{Filter, FindOptions};
use super::{Error, Store};

/// Limit 1, nothing else.
static ONE: FindOptions = FindOptions {
    sort: Vec::new(),
    skip: 0,
    limit: Some(1),
    projection: Vec::new(),
    comment: None,
};

/// The first document of `coll` matching `filter`, or `None`: one `find` with limit 1. The
/// store's own future, mapped (no `async` state of its own): as deep as the `find` it sends.
pub(crate) fn find_one<'a, S: Store>(
    store: &'a S,
    coll: &'a str,
    filter: &'a Filter,
) -> impl Future<Output = Result<Option<Document>, Error>> + Send + 'a {
    store
        .find(coll, filter, &ONE)
        .map_ok(|mut found| found.pop())
}
