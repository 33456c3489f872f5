//! Extended references: the copies of one reference field, kept in line with their sources
//! when a source changes (its copied fields, or its deletion), and when a referencing
//! document is written with a copy that is not its source's.

use bson::{doc, Bson};

use super::rule::{bad, leak, scope_from, scope_name, scope_stored, text};
use super::rule::{Applied, Keys, Rule};
use crate::document::{repair_copies_of, source_in_line, Copied, ReferenceField};
use crate::pass::Options;
use crate::store::{BoxFuture, Change, ChangeOp, Store};
use crate::Result;

/// The copies in `collection`'s field `field.path`, of documents of `field.source`.
pub(crate) struct Copies {
    pub collection: &'static str,
    pub field: &'static ReferenceField,
}

impl<S: Store> Rule<S> for Copies {
    fn name(&self) -> String {
        let scope = scope_name(self.field.holders);
        format!("copies {}.{}{scope}", self.collection, self.field.at())
    }

    fn watches(&self) -> Vec<(&'static str, bool)> {
        vec![(self.field.source, false), (self.collection, false)]
    }

    /// A source's change: its `_id` (the key is the source). A referencing document's insert,
    /// update or replacement: the source its copy names now.
    fn keys(&self, change: &Change) -> Keys {
        let mut keys = Vec::new();
        if change.collection == self.field.source {
            keys.extend(change.id.clone());
        }
        if change.collection == self.collection && change.op != ChangeOp::Delete {
            if let Some(after) = change.after.as_ref() {
                keys.extend(self.field.source_ids(after));
            }
        }
        Keys::Some(keys)
    }

    fn apply_key<'t>(&'t self, tx: &'t S::Txn, key: &'t Bson) -> BoxFuture<'t, Result<Applied>> {
        Box::pin(async move {
            let n = source_in_line(tx, self.collection, self.field, key).await?;
            Ok(Applied::wrote(n > 0))
        })
    }

    fn repair<'a>(&'a self, store: &'a S) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let done = repair_copies_of(store, self.collection, &[self.field], &Options::default())
                .await?;
            Ok(done.copies)
        })
    }

    fn stored(&self) -> Option<bson::Document> {
        let fields: Vec<Bson> = (self.field.fields.iter())
            .map(|f| Bson::Document(doc! {"from": f.from, "to": f.to}))
            .collect();
        Some(doc! {
            "rule": "copies", "collection": self.collection, "path": self.field.path,
            "within": self.field.within, "each": self.field.each, "many": self.field.many,
            "source": self.field.source, "fields": fields, "optional": self.field.optional,
            "variant": scope_stored(self.field.holders),
            "source_variant": scope_stored(self.field.sources),
        })
    }
}

impl Copies {
    /// The rule its [`Rule::stored`] document describes.
    pub(crate) fn from_stored(r: &bson::Document) -> Result<Self> {
        let mut fields = Vec::new();
        for f in r
            .get_array("fields")
            .map_err(|_| bad("copies without fields"))?
        {
            let f = f.as_document().ok_or_else(|| bad("a copied field"))?;
            fields.push(Copied {
                from: leak(text(f, "from")?),
                to: leak(text(f, "to")?),
            });
        }
        let field = Box::leak(Box::new(ReferenceField {
            path: leak(text(r, "path")?),
            within: leak(r.get_str("within").unwrap_or("")),
            each: r.get_bool("each").unwrap_or(false),
            many: r.get_bool("many").unwrap_or(false),
            source: leak(text(r, "source")?),
            fields: Box::leak(fields.into_boxed_slice()),
            optional: r.get_bool("optional").unwrap_or(false),
            // Without the source's type, its documents are read as stored (`pattern follow`
            // runs the rules it recorded; the application's follower upgrades them).
            upgrade: None,
            holders: scope_from(r, "variant")?,
            sources: scope_from(r, "source_variant")?,
            // Without the holder's type, its parents' subsets are the follower's subset rule's.
            subset: None,
        }));
        Ok(Copies {
            collection: leak(text(r, "collection")?),
            field,
        })
    }
}
