//! Computed parents: a parent's aggregates over its children rebuilt when a child is inserted,
//! deleted, changed or moved to another parent, or when the parent itself is written.

use bson::Bson;

use super::rule::{value_at, Applied, Keys, Rule};
use crate::document::{parent_in_line, repair_parents, Computed};
use crate::store::{BoxFuture, Change, ChangeOp, Store};
use crate::Result;

/// The aggregates `computed` keeps in its parents over `children`.
pub(crate) struct Aggregates {
    pub children: &'static str,
    pub computed: Computed,
}

impl<S: Store> Rule<S> for Aggregates {
    fn name(&self) -> String {
        format!("computed {} over {}", self.computed.parent, self.children)
    }

    fn watches(&self) -> Vec<(&'static str, bool)> {
        vec![(self.children, true), (self.computed.parent, false)]
    }

    /// A child's parent before and after the change (a delete's, or an update's before it,
    /// from the before-image: without it, unknown); a parent's own `_id`.
    fn keys(&self, change: &Change) -> Keys {
        parents_of(
            change,
            self.children,
            self.computed.parent,
            self.computed.key,
        )
    }

    fn apply<'t>(&'t self, tx: &'t S::Txn, key: &'t Bson) -> BoxFuture<'t, Result<Applied>> {
        Box::pin(async move {
            let wrote = parent_in_line(tx, self.children, &self.computed, key).await?;
            Ok(Applied::wrote(wrote))
        })
    }

    fn repair<'a>(&'a self, store: &'a S) -> BoxFuture<'a, Result<u64>> {
        Box::pin(repair_parents(store, self.children, &self.computed))
    }

    fn stored(&self) -> Option<bson::Document> {
        Some(super::stored::computed(self))
    }
}

/// The parents a change to a child (of `children`, naming its parent in `key`) or to a
/// parent (of `parents`) concerns.
pub(crate) fn parents_of(change: &Change, children: &str, parents: &str, key: &str) -> Keys {
    let mut keys = Vec::new();
    if change.collection == parents {
        keys.extend(change.id.clone());
    }
    if change.collection == children {
        if change.op != ChangeOp::Insert {
            if change.before.is_none() {
                return Keys::Unknown;
            }
            keys.extend(value_at(change.before.as_ref(), key));
        }
        keys.extend(value_at(change.after.as_ref(), key));
    }
    Keys::Some(keys)
}
