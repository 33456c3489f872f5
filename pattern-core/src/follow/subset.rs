//! Subsets: a parent's first children by the declared order rewritten when a child is
//! inserted, deleted, changed or moved, or when the parent itself is written.

use bson::Bson;

use super::computed::parents_of;
use super::rule::{Applied, Keys, Rule};
use crate::document::{repair_subsets, subset_in_line, Subset};
use crate::store::{BoxFuture, Change, Store};
use crate::Result;

/// The subset `subset` keeps in its parents of `children`.
pub(crate) struct Subsets {
    pub children: &'static str,
    pub subset: Subset,
}

impl<S: Store> Rule<S> for Subsets {
    fn name(&self) -> String {
        format!(
            "subset {}.{} of {}",
            self.subset.parent, self.subset.into, self.children
        )
    }

    fn watches(&self) -> Vec<(&'static str, bool)> {
        vec![(self.children, true), (self.subset.parent, false)]
    }

    fn keys(&self, change: &Change) -> Keys {
        parents_of(change, self.children, self.subset.parent, self.subset.key)
    }

    fn apply<'t>(&'t self, tx: &'t S::Txn, key: &'t Bson) -> BoxFuture<'t, Result<Applied>> {
        Box::pin(async move {
            let wrote = subset_in_line(tx, self.children, &self.subset, key).await?;
            Ok(Applied::wrote(wrote))
        })
    }

    fn repair<'a>(&'a self, store: &'a S) -> BoxFuture<'a, Result<u64>> {
        Box::pin(repair_subsets(store, self.children, &self.subset))
    }

    fn stored(&self) -> Option<bson::Document> {
        Some(super::stored::subset(self))
    }
}
