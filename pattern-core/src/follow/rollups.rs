//! Roll-ups: a key's whole-history summary (`#[bucket(rollup)]`) recomputed from its buckets
//! when another program inserts, changes or deletes one of them, or writes the roll-up itself
//! (in the roll-ups' collection);
//! and the collection's width (`series::width`) raised to cover the buckets it wrote.

use std::marker::PhantomData;

use bson::Bson;

use super::rule::{repair_each, value_at, Applied, Keys, Rule};
use crate::bucket::{rollup_in_line, rollup_keys, Bucket};
use crate::store::{BoxFuture, Change, Store};
use crate::Result;

/// The roll-ups of `B`'s collection.
pub(crate) struct Rollups<B: ?Sized>(PhantomData<fn() -> Box<B>>);

impl<B: ?Sized> Rollups<B> {
    pub(crate) fn new() -> Self {
        Rollups(PhantomData)
    }
}

impl<B: Bucket + ?Sized, S: Store> Rule<S> for Rollups<B> {
    fn name(&self) -> String {
        format!("roll-ups of {}", B::SPEC.collection)
    }

    /// The buckets (with their before-images, which tell a deleted bucket's key) and the
    /// roll-ups (a roll-up's `_id` is its key).
    fn watches(&self) -> Vec<(&'static str, bool)> {
        let mut watched = vec![(B::SPEC.collection, true)];
        watched.extend(B::SPEC.keeps.rollup.map(|rollups| (rollups, false)));
        watched
    }

    /// The key of the bucket before and after the change; a delete or an update without its
    /// before-image: unknown. A roll-up's: its `_id`.
    fn keys(&self, change: &Change) -> Keys {
        if B::SPEC.keeps.rollup == Some(change.collection.as_str()) {
            return match &change.id {
                Some(id) => Keys::Some(vec![id.clone()]),
                None => Keys::Unknown,
            };
        }
        let field = B::SPEC.series().key_field;
        let mut keys = Vec::new();
        if change.op != crate::store::ChangeOp::Insert {
            if change.before.is_none() {
                return Keys::Unknown;
            }
            keys.extend(value_at(change.before.as_ref(), field));
        }
        keys.extend(value_at(change.after.as_ref(), field));
        Keys::Some(keys)
    }

    fn apply_key<'t>(&'t self, tx: &'t S::Txn, key: &'t Bson) -> BoxFuture<'t, Result<Applied>> {
        Box::pin(async move {
            let series = B::SPEC.series();
            let wrote = rollup_in_line(tx, &series, key).await?;
            // The buckets as the other program left them, within the collection's width.
            crate::series::width::cover_buckets(tx, &series, key).await?;
            Ok(Applied::wrote(wrote))
        })
    }

    /// Every key's roll-up, each in its own transaction (exact beside pushes, unlike
    /// `backfill`, which also completes the buckets).
    fn repair<'a>(&'a self, store: &'a S) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let keys = rollup_keys(store, &B::SPEC.series()).await?;
            repair_each(self, store, keys).await
        })
    }
}
