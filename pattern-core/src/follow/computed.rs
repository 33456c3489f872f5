//! Computed parents: a parent's aggregates over its children rebuilt when a child is inserted,
//! deleted, changed or moved to another parent, or when the parent itself is written.

use std::future::Future;

use bson::{doc, Bson};

use super::parents::{Kept, Parents};
use super::rule::{bad, leak, scope_from, scope_name, scope_stored, text};
use crate::document::{drifted_parents, parents_in_line, Computed, ComputedField, ComputedOp};
use crate::store::Store;
use crate::Result;

/// The aggregates a computed parent keeps over its children.
pub(crate) type Aggregates = Parents<Computed>;

impl Kept for Computed {
    fn parent(&self) -> &'static str {
        self.parent
    }

    fn key(&self) -> &'static str {
        self.key
    }

    fn name(&self, children: &str) -> String {
        format!(
            "computed {} over {children}{}",
            self.parent,
            scope_name(self.children)
        )
    }

    /// The parents of every key at once: one read of their children, one of them, one batch of
    /// updates.
    fn in_line<'t, T: Store>(
        &'t self,
        tx: &'t T,
        children: &'t str,
        keys: &'t [Bson],
    ) -> impl Future<Output = Result<Vec<bool>>> + Send + 't {
        parents_in_line(tx, children, self, keys)
    }

    fn drifted<'a, S: Store>(
        &'a self,
        store: &'a S,
        children: &'a str,
    ) -> impl Future<Output = Result<Vec<Bson>>> + Send + 'a {
        drifted_parents(store, children, self)
    }

    fn stored(&self, children: &str) -> bson::Document {
        let c = self;
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
        doc! {
            "rule": "computed", "children": children, "parent": c.parent, "key": c.key,
            "count": c.count.map_or(Bson::Null, |c| Bson::String(c.into())),
            "aggregates": aggregates, "variant": scope_stored(c.children),
        }
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
            kept: Computed {
                parent: leak(text(r, "parent")?),
                key: leak(text(r, "key")?),
                count: r.get_str("count").ok().map(leak),
                aggregates: Box::leak(aggregates.into_boxed_slice()),
                children: scope_from(r, "variant")?,
            },
        })
    }
}
