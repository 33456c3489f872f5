//! Computed parents: a parent's aggregates over its children rebuilt when a child is inserted,
//! deleted, changed or moved to another parent, or when the parent itself is written.

use std::slice;

use bson::{doc, Bson};

use super::rule::{bad, leak, parents_of, scope_from, scope_name, scope_stored, text};
use super::rule::{repair_each, wrote_each, Applied, Keys, Rule};
use crate::document::{drifted_parents, parents_in_line, Computed, ComputedField, ComputedOp};
use crate::store::{BoxFuture, Change, Store};
use crate::Result;

/// The aggregates `computed` keeps in its parents over `children`.
pub(crate) struct Aggregates {
    pub children: &'static str,
    pub computed: Computed,
}

impl<S: Store> Rule<S> for Aggregates {
    fn name(&self) -> String {
        let (c, children) = (&self.computed, self.children);
        format!(
            "computed {} over {children}{}",
            c.parent,
            scope_name(c.children)
        )
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

    /// The parents of every key at once: one read of their children, one of them, one batch of
    /// updates.
    fn apply<'t>(
        &'t self,
        tx: &'t S::Txn,
        keys: &'t [Bson],
    ) -> BoxFuture<'t, Result<Vec<Applied>>> {
        Box::pin(async move {
            let wrote = parents_in_line(tx, self.children, &self.computed, keys).await?;
            Ok(wrote_each(wrote))
        })
    }

    fn apply_key<'t>(&'t self, tx: &'t S::Txn, key: &'t Bson) -> BoxFuture<'t, Result<Applied>> {
        Box::pin(async move {
            let wrote =
                parents_in_line(tx, self.children, &self.computed, slice::from_ref(key)).await?;
            Ok(Applied::wrote(wrote[0]))
        })
    }

    fn repair<'a>(&'a self, store: &'a S) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let drifted = drifted_parents(store, self.children, &self.computed).await?;
            repair_each(self, store, drifted).await
        })
    }

    fn stored(&self) -> Option<bson::Document> {
        let c = &self.computed;
        let aggregates: Vec<Bson> = (c.aggregates.iter())
            .map(|g| {
                let op = match g.op {
                    ComputedOp::Sum => "sum",
                    ComputedOp::Min => "min",
                    ComputedOp::Max => "max",
                    ComputedOp::Avg => "avg",
                };
                Bson::Document(doc! {"of": g.of, "op": op, "into": g.into})
            })
            .collect();
        Some(doc! {
            "rule": "computed", "children": self.children, "parent": c.parent, "key": c.key,
            "count": c.count.map_or(Bson::Null, |c| Bson::String(c.into())),
            "aggregates": aggregates, "variant": scope_stored(c.children),
        })
    }
}

impl Aggregates {
    /// The rule its [`Rule::stored`] document describes.
    pub(crate) fn from_stored(r: &bson::Document) -> Result<Self> {
        let mut aggregates = Vec::new();
        for g in r.get_array("aggregates").unwrap_or(&Vec::new()) {
            let g = g.as_document().ok_or_else(|| bad("an aggregate"))?;
            let op = match text(g, "op")? {
                "sum" => ComputedOp::Sum,
                "min" => ComputedOp::Min,
                "max" => ComputedOp::Max,
                "avg" => ComputedOp::Avg,
                other => return Err(bad(&format!("an aggregate `{other}`"))),
            };
            aggregates.push(ComputedField {
                of: leak(text(g, "of")?),
                op,
                into: leak(text(g, "into")?),
            });
        }
        Ok(Aggregates {
            children: leak(text(r, "children")?),
            computed: Computed {
                parent: leak(text(r, "parent")?),
                key: leak(text(r, "key")?),
                count: r.get_str("count").ok().map(leak),
                aggregates: Box::leak(aggregates.into_boxed_slice()),
                children: scope_from(r, "variant")?,
            },
        })
    }
}
