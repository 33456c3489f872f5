//! What a push keeps beside its items ([`Keeps`](crate::spec::Keeps)): the values its items
//! add (time bounds, a summary), the update's operators that keep them, and how two values
//! combine.

use bson::Bson;

use crate::codec::number::{self, NumberError};
use crate::spec::{Aggregate, AggregateOp, SeriesSpec};
use crate::store::query::{Path, Update};
use crate::{Error, Result};

/// What one write adds to the values a document keeps of its items ([`Keeps`](crate::spec::Keeps)),
/// computed from the items it pushes: sent as `$min`/`$max`/`$inc` beside the `$push`, or
/// written as they are into a new document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Kept {
    /// The earliest and latest item time, epoch milliseconds (`None`: no bounds kept).
    pub bounds: Option<(i64, i64)>,
    /// For each aggregate of the summary, in order: the items' value (`None` when no item has a
    /// number in that field).
    pub summary: Vec<Option<Bson>>,
    /// The items' size: the sum of their BSON values' sizes, when the caller measured them
    /// (every push does, checking each fits in a document); a store may use it rather than
    /// measure them again. `None`: not measured.
    pub items_bytes: Option<usize>,
}

/// [`SeriesSpec::kept_ops`]: each kept field with its value, by how it combines. Held
/// inline: a series keeps a few values (its time bounds, a summary), and a push computes these
/// every time.
#[derive(Debug, Default)]
pub(crate) struct KeptVals {
    pub(crate) sum: KeptList,
    pub(crate) min: KeptList,
    pub(crate) max: KeptList,
}

/// Fields and values of one [`KeptVals`] operator.
pub(crate) type KeptList = smallvec::SmallVec<[(Path, Bson); 2]>;

impl Kept {
    /// Nothing kept.
    pub const NONE: Kept = Kept {
        bounds: None,
        summary: Vec::new(),
        items_bytes: None,
    };
}

impl<'a> SeriesSpec<'a> {
    /// The push of `items`: `$push` them, `$inc` the count, and keep their values (`kept`,
    /// computed from them by [`SeriesSpec::kept`]).
    pub(crate) fn push_update(&self, items: Vec<Bson>, kept: &Kept) -> Update {
        let mut update = Update {
            inc: vec![(Path::from(self.count_field), items.len() as i32)],
            push: vec![(Path::from(self.items_field), items)],
            ..Update::default()
        };
        for (field, op, v) in self.kept_values(kept) {
            let ops = match op {
                AggregateOp::Sum => &mut update.sum,
                AggregateOp::Min => &mut update.min,
                AggregateOp::Max => &mut update.max,
            };
            ops.push((Path::from(field), v));
        }
        update
    }

    /// The fields `kept` writes, each with how it combines with what a document holds: the
    /// time bounds (`$min`/`$max` of dates), then the summary's values.
    pub(super) fn kept_values<'k>(
        &'k self,
        kept: &'k Kept,
    ) -> impl Iterator<Item = (&'a str, AggregateOp, Bson)> + 'k {
        let date = |ms: i64| Bson::DateTime(bson::DateTime::from_millis(ms));
        // No vector: a push computes these every time.
        let bounds = match (kept.bounds, self.keeps.bounds) {
            (Some((min, max)), Some((fmin, fmax))) => [
                Some((fmin, AggregateOp::Min, date(min))),
                Some((fmax, AggregateOp::Max, date(max))),
            ],
            _ => [None, None],
        };
        let summary = (self.keeps.summary.iter().zip(&kept.summary))
            .filter_map(|(agg, v)| Some((agg.field, agg.op, v.clone()?)));
        bounds.into_iter().flatten().chain(summary)
    }

    /// The kept values' `$inc`/`$min`/`$max` as [`SeriesSpec::push_update`] sends them,
    /// without building the update (the in-memory push applies them in place).
    pub(crate) fn kept_ops(&self, kept: &Kept) -> KeptVals {
        let mut vals = KeptVals::default();
        if let (Some((min, max)), Some((fmin, fmax))) = (kept.bounds, self.keeps.bounds) {
            let date = |ms: i64| Bson::DateTime(bson::DateTime::from_millis(ms));
            vals.min.push((Path::from(fmin), date(min)));
            vals.max.push((Path::from(fmax), date(max)));
        }
        for (agg, v) in self.keeps.summary.iter().zip(&kept.summary) {
            let Some(v) = v else { continue };
            let ops = match agg.op {
                AggregateOp::Sum => &mut vals.sum,
                AggregateOp::Min => &mut vals.min,
                AggregateOp::Max => &mut vals.max,
            };
            ops.push((Path::from(agg.field), v.clone()));
        }
        vals
    }

    /// The values `items` add to what a document keeps (their times `millis`, one per item):
    /// the earliest and latest time, and each aggregate of the summary over the items' field
    /// (a missing or null field is skipped). Refuses an item whose summarized field holds
    /// something other than a number, and a sum that overflows, before anything is written.
    pub(crate) fn kept(&self, items: &[Bson], millis: &[i64]) -> Result<Kept> {
        if self.keeps.is_none() {
            return Ok(Kept::NONE);
        }
        if self.keeps.bounds.is_some() && millis.len() != items.len() {
            return Err(Error::invalid(format!(
                "collection `{}` keeps time bounds: every item needs a time",
                self.collection
            )));
        }
        let bounds = self.keeps.bounds.and_then(|_| {
            let (min, max) = (millis.iter().min()?, millis.iter().max()?);
            Some((*min, *max))
        });
        let mut summary: Vec<Option<Bson>> = vec![None; self.keeps.summary.len()];
        for item in items {
            for (agg, acc) in self.keeps.summary.iter().zip(summary.iter_mut()) {
                let v = match item {
                    Bson::Document(d) => d.get(agg.item_field),
                    _ => None,
                };
                let Some(v) = v.filter(|v| !matches!(v, Bson::Null)) else {
                    continue;
                };
                *acc = Some(combine(self.collection, agg, acc.take(), v)?);
            }
        }
        Ok(Kept {
            bounds,
            summary,
            items_bytes: None,
        })
    }
}

/// `acc` combined with `v` by the aggregate's op (`None`: `v` alone): what a document keeps
/// when it adds an item's value, and what a summary read adds a bucket's value to. Refuses a
/// `v` that is not a number, and a sum that overflows ([`Error::Overflow`] naming the bucket
/// field).
pub(crate) fn combine(
    coll: &str,
    agg: &Aggregate<'_>,
    acc: Option<Bson>,
    v: &Bson,
) -> Result<Bson> {
    let Some(acc) = acc else {
        return match number::compare(v, v) {
            Some(_) => Ok(v.clone()),
            None => Err(not_a_number(coll, agg, v)),
        };
    };
    match agg.op {
        AggregateOp::Sum => number::add(&acc, v).map_err(|e| match e {
            NumberError::Overflow => Error::Overflow {
                collection: coll.to_owned(),
                field: agg.field.to_owned(),
                message: format!("the sum of `{}` overflows", agg.item_field),
            },
            NumberError::NotANumber(_) => not_a_number(coll, agg, v),
        }),
        AggregateOp::Min | AggregateOp::Max => {
            let o = number::compare(v, &acc).ok_or_else(|| not_a_number(coll, agg, v))?;
            let take = if agg.op == AggregateOp::Min {
                o.is_lt()
            } else {
                o.is_gt()
            };
            Ok(if take { v.clone() } else { acc })
        }
    }
}

fn not_a_number(coll: &str, agg: &Aggregate<'_>, v: &Bson) -> Error {
    let field = agg.item_field;
    Error::invalid(format!(
        "summary {}({field}) of collection `{coll}`: `{field}` is not a number but {:?}",
        agg.op.name(),
        v.element_type()
    ))
}
