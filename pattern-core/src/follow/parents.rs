//! The rule of what a parent keeps of its children (computed aggregates, a subset), written
//! once: its keys are the children's parents and the parents themselves, and it is brought in
//! line by the kept data's own function of many keys, repaired parent by parent.

use std::future::Future;
use std::slice;

use bson::Bson;

use super::rule::{parents_of, repair_each, wrote_each, Applied, Keys, Rule};
use crate::store::{BoxFuture, Change, Store};
use crate::Result;

/// What a parent keeps of its children: its collection and key, and how one brings it in line.
pub(crate) trait Kept: Send + Sync {
    /// The parent's collection.
    fn parent(&self) -> &'static str;

    /// The child's field holding its parent's `_id`.
    fn key(&self) -> &'static str;

    /// The rule's name ([`Rule::name`]).
    fn name(&self, children: &str) -> String;

    /// The rule as data ([`Rule::stored`]).
    fn stored(&self, children: &str) -> bson::Document;

    /// In `tx`: the kept data of each parent in `keys` brought in line with its children in
    /// `children`; per key, whether it was written.
    fn in_line<'t, T: Store>(
        &'t self,
        tx: &'t T,
        children: &'t str,
        keys: &'t [Bson],
    ) -> impl Future<Output = Result<Vec<bool>>> + Send + 't;

    /// The `_id`s of the parents whose kept data differs from their children's.
    fn drifted<'a, S: Store>(
        &'a self,
        store: &'a S,
        children: &'a str,
    ) -> impl Future<Output = Result<Vec<Bson>>> + Send + 'a;
}

/// The rule keeping `kept` in the parents of `children`.
pub(crate) struct Parents<K> {
    pub children: &'static str,
    pub kept: K,
}

impl<S: Store, K: Kept> Rule<S> for Parents<K> {
    fn name(&self) -> String {
        self.kept.name(self.children)
    }

    fn watches(&self) -> Vec<(&'static str, bool)> {
        vec![(self.children, true), (self.kept.parent(), false)]
    }

    /// A child's parent before and after the change (a delete's, or an update's before it,
    /// from the before-image: without it, unknown); a parent's own `_id`.
    fn keys(&self, change: &Change) -> Keys {
        parents_of(change, self.children, self.kept.parent(), self.kept.key())
    }

    /// Every key's parent at once: the kept data's reads cover them all, and one batch of
    /// updates.
    fn apply<'t>(
        &'t self,
        tx: &'t S::Txn,
        keys: &'t [Bson],
    ) -> BoxFuture<'t, Result<Vec<Applied>>> {
        Box::pin(async move {
            let wrote = self.kept.in_line(tx, self.children, keys).await?;
            Ok(wrote_each(wrote))
        })
    }

    fn apply_key<'t>(&'t self, tx: &'t S::Txn, key: &'t Bson) -> BoxFuture<'t, Result<Applied>> {
        Box::pin(async move {
            let keys = slice::from_ref(key);
            let wrote = self.kept.in_line(tx, self.children, keys).await?;
            Ok(Applied::wrote(wrote[0]))
        })
    }

    fn repair<'a>(&'a self, store: &'a S) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let drifted = self.kept.drifted(store, self.children).await?;
            repair_each(self, store, drifted).await
        })
    }

    fn stored(&self) -> Option<bson::Document> {
        Some(self.kept.stored(self.children))
    }
}
