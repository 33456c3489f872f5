//! Subsets: a parent's first children by the declared order rewritten when a child is
//! inserted, deleted, changed or moved, or when the parent itself is written.

use std::future::Future;

use bson::{doc, Bson};

use super::parents::{Kept, Parents};
use super::rule::{bad, leak, scope_from, scope_name, scope_stored, text};
use crate::document::{drifted_subsets, subsets_in_line, Subset};
use crate::store::Store;
use crate::Result;

/// The subset a parent keeps of its children.
pub(crate) type Subsets = Parents<Subset>;

impl Kept for Subset {
    fn parent(&self) -> &'static str {
        self.parent
    }

    fn key(&self) -> &'static str {
        self.key
    }

    fn name(&self, children: &str) -> String {
        let scope = scope_name(self.children);
        format!("subset {}.{} of {children}{scope}", self.parent, self.into)
    }

    /// The subsets of every key's parent at once: one read of the parents, one of their
    /// children, one batch of updates.
    fn in_line<'t, T: Store>(
        &'t self,
        tx: &'t T,
        children: &'t str,
        keys: &'t [Bson],
    ) -> impl Future<Output = Result<Vec<bool>>> + Send + 't {
        subsets_in_line(tx, children, self, keys)
    }

    fn drifted<'a, S: Store>(
        &'a self,
        store: &'a S,
        children: &'a str,
    ) -> impl Future<Output = Result<Vec<Bson>>> + Send + 'a {
        drifted_subsets(store, children, self)
    }

    fn stored(&self, children: &str) -> bson::Document {
        let t = self;
        doc! {
            "rule": "subset", "children": children, "parent": t.parent, "key": t.key,
            "into": t.into, "keep": i64::from(t.keep), "order": t.order,
            "variant": scope_stored(t.children),
        }
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
            kept: Subset {
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
