//! The series' indexes, created once per store and collection: the library's indexes of
//! another size or key dropped first.

use bson::Bson;

use super::memo;
use crate::spec::{SeriesSpec, BOUNDED_COLLECTIONS, BOUNDED_FIELD};
use crate::store::query::{Filter, FindOptions, IndexSpec, Update};
use crate::store::Store;
use crate::{Error, Result};

impl SeriesSpec<'_> {
    /// Creates the indexes once per store; an open-document index for another `size` is
    /// dropped first. Runs before every push and read: once done, it is one set lookup.
    pub(crate) async fn ensure_indexes<S: Store>(&self, store: &S) -> Result<()> {
        if memo(store).contains(self) {
            return Ok(());
        }
        if self.size == 0 || self.size > i32::MAX as u32 {
            return Err(Error::invalid(format!(
                "series size must be in 1..=2^31-1, got {}",
                self.size
            )));
        }
        let stale = |name: &str| self.is_stale(name);
        match ensure_indexes(store, self.collection, &self.indexes(), Some(&stale)).await {
            Ok(existed) => {
                // A collection this process creates holds only buckets written with bounds.
                if self.keeps.bounds.is_some() && !existed {
                    mark_bounded(store, self.collection).await?;
                }
                memo(store).insert(self);
                Ok(())
            }
            Err(Error::DuplicateKey { message, .. }) => Err(Error::invalid(format!(
                "cannot create the indexes of `{}`: two of its documents have the same key and sequence number \
                 (written by another tool?): {message}",
                self.collection
            ))),
            Err(e) => Err(e),
        }
    }
}

impl SeriesSpec<'_> {
    /// Whether every bucket of the collection carries complete time bounds: its mark in
    /// [`BOUNDED_COLLECTIONS`], read once per process (one find) and remembered.
    pub(crate) async fn all_bounded<S: Store>(&self, store: &S) -> Result<bool> {
        let coll = self.collection;
        if let Some(known) = memo(store).all_bounded(coll) {
            return Ok(known);
        }
        let one = FindOptions {
            limit: Some(1),
            ..FindOptions::default()
        };
        let mark = Filter::Eq("_id".into(), Bson::String(coll.into()));
        let marked = (store.find(BOUNDED_COLLECTIONS, &mark, &one).await?.first())
            .is_some_and(|m| m.get_bool(BOUNDED_FIELD) == Ok(true));
        memo(store).set_all_bounded(coll, marked);
        Ok(marked)
    }
}

/// Marks every bucket of `coll` as carrying complete time bounds.
pub(crate) async fn mark_bounded<S: Store>(store: &S, coll: &str) -> Result<()> {
    let mark = Filter::Eq("_id".into(), Bson::String(coll.into()));
    let mut set = Update {
        set: vec![(BOUNDED_FIELD.into(), Bson::Boolean(true))],
        ..Update::default()
    };
    store
        .update_one(BOUNDED_COLLECTIONS, &mark, &mut set, true)
        .await?;
    memo(store).set_all_bounded(coll, true);
    Ok(())
}

/// Creates `indexes` on `coll`, first dropping the indexes `stale` names (an older `size`,
/// another key). Idempotent. Returns whether the collection existed (had any index) before
/// (always `true` without `stale`, which is read from the same listing).
pub(crate) async fn ensure_indexes<S: Store>(
    store: &S,
    coll: &str,
    indexes: &[IndexSpec],
    stale: Option<&(dyn Fn(&str) -> bool + Sync)>,
) -> Result<bool> {
    let mut existed = true;
    if let Some(stale) = stale {
        let names = store.index_names(coll).await?;
        existed = !names.is_empty();
        for name in names {
            if stale(&name) {
                store.drop_index(coll, &name).await?;
            }
        }
    }
    for index in indexes {
        store.create_index(coll, index).await?;
    }
    Ok(existed)
}
