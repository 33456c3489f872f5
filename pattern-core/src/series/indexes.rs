//! The series' indexes, created once per store and collection: the stale ones of earlier
//! versions or sizes dropped first.

use crate::query::IndexSpec;
use crate::spec::SeriesSpec;
use crate::store::Store;
use crate::{Error, Result};

impl SeriesSpec {
    /// Creates the indexes once per store; an open-document index for another `size` is
    /// dropped first. Runs before every push and read: once done, it is one set lookup.
    pub(crate) async fn ensure_indexes<S: Store>(&self, store: &S) -> Result<()> {
        if store.memo().contains(self) {
            return Ok(());
        }
        if self.size == 0 || self.size > i32::MAX as u32 {
            return Err(Error::invalid(format!(
                "series size must be in 1..=2^31-1, got {}",
                self.size
            )));
        }
        match ensure_indexes(store, self.collection, &self.indexes(), &self.stale_prefixes()).await {
            Ok(()) => {
                store.memo().insert(*self);
                Ok(())
            }
            Err(Error::DuplicateKey { message, .. }) => Err(Error::invalid(format!(
                "cannot create the indexes of `{}`: two of its documents have the same key and sequence number \
                 (written by another tool?): {message}",
                self.collection
            ))),
            other => other,
        }
    }
}

/// Creates `indexes` on `coll`, dropping indexes whose name starts with one of
/// `stale_prefixes` and that are not in the set (an older `size`). Idempotent.
pub(crate) async fn ensure_indexes<S: Store>(
    store: &S,
    coll: &str,
    indexes: &[IndexSpec],
    stale_prefixes: &[String],
) -> Result<()> {
    if !stale_prefixes.is_empty() {
        for name in store.index_names(coll).await? {
            let stale = stale_prefixes.iter().any(|p| name.starts_with(p.as_str()))
                && !indexes.iter().any(|i| i.name == name);
            if stale {
                store.drop_index(coll, &name).await?;
            }
        }
    }
    for index in indexes {
        store.create_index(coll, index).await?;
    }
    Ok(())
}
