//! Subsets: a parent's first children by the declared order rewritten when a child is
//! inserted, deleted, changed or moved, or when the parent itself is written.

use std::slice;

use bson::{doc, Bson};

use super::rule::{bad, leak, parents_of, scope_from, scope_name, scope_stored, text};
use super::rule::{repair_each, wrote_each, Applied, Keys, Rule};
use crate::document::{drifted_subsets, subsets_in_line, Subset};
use crate::store::{BoxFuture, Change, Store};
use crate::Result;

/// The subset `subset` keeps in its parents of `children`.
pub(crate) struct Subsets {
    pub children: &'static str,
    pub subset: Subset,
}

impl<S: Store> Rule<S> for Subsets {
    fn name(&self) -> String {
        let s = &self.subset;
        let scope = scope_name(s.children);
        format!("subset {}.{} of {}{scope}", s.parent, s.into, self.children)
    }

    fn watches(&self) -> Vec<(&'static str, bool)> {
        vec![(self.children, true), (self.subset.parent, false)]
    }

    fn keys(&self, change: &Change) -> Keys {
        parents_of(change, self.children, self.subset.parent, self.subset.key)
    }

    /// The subsets of every key's parent at once: one read of the parents, one of their
    /// children, one batch of updates.
    fn apply<'t>(
        &'t self,
        tx: &'t S::Txn,
        keys: &'t [Bson],
    ) -> BoxFuture<'t, Result<Vec<Applied>>> {
        Box::pin(async move {
            let wrote = subsets_in_line(tx, self.children, &self.subset, keys).await?;
            Ok(wrote_each(wrote))
        })
    }

    fn apply_key<'t>(&'t self, tx: &'t S::Txn, key: &'t Bson) -> BoxFuture<'t, Result<Applied>> {
        Box::pin(async move {
            let wrote =
                subsets_in_line(tx, self.children, &self.subset, slice::from_ref(key)).await?;
            Ok(Applied::wrote(wrote[0]))
        })
    }

    fn repair<'a>(&'a self, store: &'a S) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let drifted = drifted_subsets(store, self.children, &self.subset).await?;
            repair_each(self, store, drifted).await
        })
    }

    fn stored(&self) -> Option<bson::Document> {
        let t = &self.subset;
        Some(doc! {
            "rule": "subset", "children": self.children, "parent": t.parent, "key": t.key,
            "into": t.into, "keep": i64::from(t.keep), "order": t.order,
            "variant": scope_stored(t.children),
        })
    }
}

impl Subsets {
    /// The rule its [`Rule::stored`] document describes.
    pub(crate) fn from_stored(r: &bson::Document) -> Result<Self> {
        let keep = (r.get("keep").and_then(crate::codec::as_int))
            .and_then(|k| u32::try_from(k).ok())
            .ok_or_else(|| bad("a subset without `keep`"))?;
        Ok(Subsets {
            children: leak(text(r, "children")?),
            subset: Subset {
                parent: leak(text(r, "parent")?),
                key: leak(text(r, "key")?),
                into: leak(text(r, "into")?),
                keep,
                order: leak(text(r, "order")?),
                children: scope_from(r, "variant")?,
            },
        })
    }
}
