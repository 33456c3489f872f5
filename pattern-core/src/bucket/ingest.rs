//! Bulk ingest across keys.

use super::{time_of, Bucket};
use crate::key::KeyPart;
use crate::series::{self, Entry};
use crate::store::Store;
use crate::{Error, Result};

/// Items per batch of [`ingest`] (one ordered batch of writes each), at most; fewer when they
/// pass 8 MiB.
pub const INGEST_BATCH: usize = 10_000;

#[doc = crate::__bucket_doc!(ingest)]
///
/// A batch is [`INGEST_BATCH`] items; per key, a compare-and-set push fills its open bucket, then
/// whole new buckets are inserted. Concurrent pushes and ingests to the same keys keep every
/// invariant of a push: a write the batch could not apply (another writer pushed first) stops the
/// batch there, and the rest goes through the ordinary push ([`Error::Ingest`]).
pub async fn ingest<B, S>(store: &S, items: &[(B::Key, B::Item)]) -> Result<u64>
where
    B: Bucket + ?Sized,
    B::Key: Sized,
    S: Store,
{
    crate::observe::traced_op!(
        bucket.ingest,
        store,
        B::SPEC.collection,
        ingest_in::<B, S>(store, items)
    )
}

async fn ingest_in<B, S>(store: &S, items: &[(B::Key, B::Item)]) -> Result<u64>
where
    B: Bucket + ?Sized,
    B::Key: Sized,
    S: Store,
{
    // Nothing written: every item is unwritten.
    let none_written = |e: Error| Error::Ingest {
        written: 0,
        unwritten: (0..items.len()).collect(),
        source: Box::new(e),
    };
    let mut entries = Vec::with_capacity(items.len());
    for (index, (key, item)) in items.iter().enumerate() {
        let value = crate::codec::ser::item(item).map_err(none_written)?;
        entries.push(Entry {
            key: key.to_key_bson(),
            prefix: key.id_prefix(),
            item: value,
            millis: time_of::<B>(item),
            index,
        });
    }
    super::validated::<B, S>(store)
        .await
        .map_err(none_written)?;
    series::ingest(store, &B::SPEC.series(), entries, INGEST_BATCH).await
}
