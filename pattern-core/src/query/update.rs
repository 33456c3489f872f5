//! Updates: the modifications of the store contract, and their MongoDB documents.

use bson::{Bson, Document};

use super::filter::is_modifier_like;
use super::Path;

/// A modification of one document. Paths are top-level field names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    /// `$set`
    pub set: Vec<(Path, Bson)>,
    /// `$setOnInsert`
    pub set_on_insert: Vec<(Path, Bson)>,
    /// `$inc` (by an Int32 amount, as the shell would)
    pub inc: Vec<(Path, i32)>,
    /// `$push: {path: {$each: [...]}}` (one item: `{path: item}`, unless it has `$` fields)
    pub push: Vec<(Path, Vec<Bson>)>,
}

impl Update {
    /// The MongoDB update document.
    pub fn to_document(&self) -> Document {
        let mut out = Document::new();
        let pairs = |v: &[(Path, Bson)]| {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Document>()
        };
        if !self.set.is_empty() {
            out.insert("$set", pairs(&self.set));
        }
        if !self.set_on_insert.is_empty() {
            out.insert("$setOnInsert", pairs(&self.set_on_insert));
        }
        if !self.inc.is_empty() {
            out.insert(
                "$inc",
                self.inc
                    .iter()
                    .map(|(k, n)| (k.to_string(), Bson::Int32(*n)))
                    .collect::<Document>(),
            );
        }
        if !self.push.is_empty() {
            let push: Document = self
                .push
                .iter()
                .map(|(k, items)| {
                    // One item is pushed as itself (the seed's own form), unless it is a
                    // document with a `$` field, which the server could read as `$push`'s
                    // modifiers (`$each`, `$slice`...).
                    let value = match &items[..] {
                        [one] if !is_modifier_like(one) => one.clone(),
                        _ => Bson::Document(bson::doc! {"$each": items.clone()}),
                    };
                    (k.to_string(), value)
                })
                .collect();
            out.insert("$push", push);
        }
        out
    }
}
