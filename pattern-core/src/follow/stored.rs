//! The rules as data, in the follower's document (`rules`): written by every run, so that a
//! follower started without the application's types (the `pattern follow` command) keeps the
//! same derived data. A rule that needs a type to run (schema versions: the upgrade is the
//! type's code) is not stored, and is not kept by such a follower.

use bson::{doc, Bson, Document};

use super::computed::Aggregates;
use super::copies::Copies;
use super::rule::Rule;
use super::subset::Subsets;
use crate::document::{Aggregate, Computed, Copied, Op, ReferenceField, Subset};
use crate::store::Store;
use crate::{Error, Result};

/// The copies of a reference field.
pub(crate) fn copies(c: &Copies) -> Document {
    let fields: Vec<Bson> = (c.field.fields.iter())
        .map(|f| Bson::Document(doc! {"from": f.from, "to": f.to}))
        .collect();
    doc! {
        "rule": "copies", "collection": c.collection, "path": c.field.path,
        "source": c.field.source, "fields": fields, "optional": c.field.optional,
    }
}

/// A parent's aggregates.
pub(crate) fn computed(a: &Aggregates) -> Document {
    let c = &a.computed;
    let aggregates: Vec<Bson> = (c.aggregates.iter())
        .map(|g| {
            let op = match g.op {
                Op::Sum => "sum",
                Op::Min => "min",
                Op::Max => "max",
                Op::Avg => "avg",
            };
            Bson::Document(doc! {"of": g.of, "op": op, "into": g.into})
        })
        .collect();
    doc! {
        "rule": "computed", "children": a.children, "parent": c.parent, "key": c.key,
        "count": c.count.map_or(Bson::Null, |c| Bson::String(c.into())),
        "aggregates": aggregates,
    }
}

/// A parent's subset.
pub(crate) fn subset(s: &Subsets) -> Document {
    let t = &s.subset;
    doc! {
        "rule": "subset", "children": s.children, "parent": t.parent, "key": t.key,
        "into": t.into, "keep": i64::from(t.keep), "order": t.order,
    }
}

/// The rules of `stored` (the follower document's `rules`), each as it was registered. Their
/// names and specs live as long as the process (a follower is built once).
pub(crate) fn rules<S: Store>(stored: &[Bson]) -> Result<Vec<Box<dyn Rule<S>>>> {
    let mut out: Vec<Box<dyn Rule<S>>> = Vec::new();
    for r in stored {
        let r = r
            .as_document()
            .ok_or_else(|| bad("a rule that is not a document"))?;
        match text(r, "rule")? {
            "copies" => {
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
                    source: leak(text(r, "source")?),
                    fields: Box::leak(fields.into_boxed_slice()),
                    optional: r.get_bool("optional").unwrap_or(false),
                }));
                out.push(Box::new(Copies {
                    collection: leak(text(r, "collection")?),
                    field,
                }));
            }
            "computed" => {
                let mut aggregates = Vec::new();
                for g in r.get_array("aggregates").unwrap_or(&Vec::new()) {
                    let g = g.as_document().ok_or_else(|| bad("an aggregate"))?;
                    let op = match text(g, "op")? {
                        "sum" => Op::Sum,
                        "min" => Op::Min,
                        "max" => Op::Max,
                        "avg" => Op::Avg,
                        other => return Err(bad(&format!("an aggregate `{other}`"))),
                    };
                    aggregates.push(Aggregate {
                        of: leak(text(g, "of")?),
                        op,
                        into: leak(text(g, "into")?),
                    });
                }
                out.push(Box::new(Aggregates {
                    children: leak(text(r, "children")?),
                    computed: Computed {
                        parent: leak(text(r, "parent")?),
                        key: leak(text(r, "key")?),
                        count: r.get_str("count").ok().map(leak),
                        aggregates: Box::leak(aggregates.into_boxed_slice()),
                    },
                }));
            }
            "subset" => {
                let keep = (r.get("keep").and_then(crate::codec::as_int))
                    .and_then(|k| u32::try_from(k).ok())
                    .ok_or_else(|| bad("a subset without `keep`"))?;
                out.push(Box::new(Subsets {
                    children: leak(text(r, "children")?),
                    subset: Subset {
                        parent: leak(text(r, "parent")?),
                        key: leak(text(r, "key")?),
                        into: leak(text(r, "into")?),
                        keep,
                        order: leak(text(r, "order")?),
                    },
                }));
            }
            other => return Err(bad(&format!("a rule `{other}`"))),
        }
    }
    Ok(out)
}

fn text<'d>(d: &'d Document, field: &str) -> Result<&'d str> {
    d.get_str(field)
        .map_err(|_| bad(&format!("a rule without `{field}`")))
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

fn bad(what: &str) -> Error {
    Error::decode(
        super::FOLLOW,
        None,
        format!("the follower's rules hold {what} (written by another version of the library?)"),
    )
}
