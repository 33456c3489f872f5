//! The computed pattern (`#[document(computed(parent = Film, key = film_id, ...))]` on a child
//! type): a parent document keeps aggregates of its children (count, sum, min, max, average of
//! a field), adjusted by every write of a child through the library in the same transaction.
//!
//! Each write reads the parent in its transaction, adds or removes the child's contribution
//! (count and sum exactly, with MongoDB's number rules; min and max from the values; a removed
//! extreme recomputed from the children through their index `{key: 1, field: 1}`), and sets the
//! parent's fields in one update, the average with them. [`recompute`] rebuilds one parent from
//! its children; [`verify`] lists the parents whose stored aggregates differ from their
//! children's (after writes by other tools).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use bson::{Bson, Document as BsonDocument};
use futures::StreamExt;
use serde::Serialize;

use crate::codec::number;
use crate::codec::order::{same_value, value_key, values_equal};
use crate::document::scope::Scope;
use crate::document::{declares, find_by_id, id_bson, set_each, Document, Field, Numeric};
use crate::error::display_bson;
use crate::store::query::{Filter, FindOptions, IndexSpec, Update};
use crate::store::{transaction_with, Store};
use crate::{Error, Result};

/// What a child type's `computed(...)` declares: the parent's collection, the child's field
/// holding the parent's `_id`, and the aggregates kept in the parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Computed {
    /// The parent's collection.
    pub parent: &'static str,
    /// The child's field holding its parent's `_id`.
    pub key: &'static str,
    /// The parent's field counting the children (an Int64), if kept.
    pub count: Option<&'static str>,
    /// The aggregates of the children's fields kept in the parent.
    pub aggregates: &'static [ComputedField],
    /// The children: on a variant's type, the documents of its variant only (`None`: every
    /// document of the child collection).
    pub children: Option<Scope>,
}

/// One aggregate: of a child field, into a parent field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComputedField {
    /// The child's field.
    pub of: &'static str,
    /// What is kept.
    pub op: ComputedOp,
    /// The parent's field.
    pub into: &'static str,
}

/// The aggregates a parent can keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputedOp {
    /// The sum of the values (0 without children), as MongoDB adds them.
    Sum,
    /// The smallest value (`null` without children).
    Min,
    /// The largest value (`null` without children).
    Max,
    /// The mean of the values as a Double (`null` without children).
    Avg,
}

/// The parent field's name of a typed path whose value is the count: `Field<P, i64>` (the
/// derive's type check).
pub const fn count_field<P>(f: Field<P, i64>) -> &'static str {
    f.name()
}

/// A sum kept in a parent field of the child field's own type.
pub const fn sum_field<C, P, T: Numeric>(_child: Field<C, T>, parent: Field<P, T>) -> &'static str {
    parent.name()
}

/// A minimum or maximum kept in a parent field holding an `Option` of the child field's type.
pub const fn extreme_field<C, P, T>(
    _child: Field<C, T>,
    parent: Field<P, Option<T>>,
) -> &'static str {
    parent.name()
}

/// An average kept in an `Option<f64>` parent field, of a numeric child field.
pub const fn avg_field<C, P, T: Numeric>(
    _child: Field<C, T>,
    parent: Field<P, Option<f64>>,
) -> &'static str {
    parent.name()
}

/// The child's key field, holding the parent's `_id` (of the parent's id type).
pub const fn key_field<C, P: Document>(key: Field<C, P::Id>) -> &'static str {
    key.name()
}

/// The indexes of a child collection: `{key: 1}`, and `{key: 1, field: 1}` per min or max.
pub(crate) fn indexes(c: &Computed) -> Vec<IndexSpec> {
    let mut out = vec![IndexSpec {
        name: format!("pattern_computed_{}_1", c.key),
        keys: vec![(c.key.to_owned(), 1)],
        unique: false,
        partial: None,
    }];
    for a in c
        .aggregates
        .iter()
        .filter(|a| matches!(a.op, ComputedOp::Min | ComputedOp::Max))
    {
        let name = format!("pattern_computed_{}_1_{}_1", c.key, a.of);
        if !out.iter().any(|i| i.name == name) {
            out.push(IndexSpec {
                name,
                keys: vec![(c.key.to_owned(), 1), (a.of.to_owned(), 1)],
                unique: false,
                partial: None,
            });
        }
    }
    out
}

/// In a transaction, after a child write: the parents of `before` and `after` adjusted.
pub(crate) async fn adjust<D: Document, T: Store>(
    tx: &T,
    c: &Computed,
    before: Option<&BsonDocument>,
    after: Option<&BsonDocument>,
) -> Result<()> {
    let (kb, ka) = super::parent_keys(c.key, before, after);
    // The same parent whatever the key's number type (numbers by value).
    if same_value(kb.as_ref(), ka.as_ref()) {
        if let Some(k) = kb {
            change::<D, T>(tx, c, &k, before, after).await?;
        }
        return Ok(());
    }
    if let Some(k) = kb {
        change::<D, T>(tx, c, &k, before, None).await?;
    }
    if let Some(k) = ka {
        change::<D, T>(tx, c, &k, None, after).await?;
    }
    Ok(())
}

fn numeric_err<D: Document>(field: &str, e: impl std::fmt::Debug) -> Error {
    Error::invalid(format!(
        "a computed aggregate of `{}`'s field `{field}`: {e:?}",
        D::COLLECTION
    ))
}

fn negate(v: &Bson) -> Option<Bson> {
    match v {
        Bson::Int32(x) => Some(
            x.checked_neg()
                .map_or(Bson::Int64(-i64::from(*x)), Bson::Int32),
        ),
        Bson::Int64(x) => x.checked_neg().map(Bson::Int64),
        Bson::Double(x) => Some(Bson::Double(-x)),
        _ => None,
    }
}

fn is_number(v: &Bson) -> bool {
    matches!(v, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_))
}

/// The parent `key`: `removed`'s contribution taken out, `added`'s put in.
async fn change<D: Document, T: Store>(
    tx: &T,
    c: &Computed,
    key: &Bson,
    removed: Option<&BsonDocument>,
    added: Option<&BsonDocument>,
) -> Result<()> {
    if let (None, Some(child)) = (removed, added) {
        if gain(tx, c, key, child).await? {
            return Ok(());
        }
    }
    let Some(parent) = find_by_id(tx, c.parent, key).await? else {
        // A child that stays with, or leaves, a parent deleted since (an orphan): nothing to
        // adjust. A child is never attached to a parent that does not exist.
        if removed.is_some() {
            return Ok(());
        }
        return Err(Error::NotFound {
            collection: c.parent.to_owned(),
            id: display_bson(key),
        });
    };
    let count = parent
        .get(c.count.unwrap_or(""))
        .and_then(crate::codec::as_int)
        .unwrap_or(0);
    let new_count = count - i64::from(removed.is_some()) + i64::from(added.is_some());
    let mut set: Vec<(crate::store::query::Path, Bson)> = Vec::new();
    if let Some(f) = c.count {
        set.push((f.into(), Bson::Int64(new_count)));
    }
    // Sums first: averages read them.
    let mut sums: BTreeMap<&str, Bson> = BTreeMap::new();
    for a in c.aggregates {
        if !matches!(a.op, ComputedOp::Sum | ComputedOp::Avg) || sums.contains_key(a.of) {
            continue;
        }
        // The sum kept beside it (the derive requires one, and the count, for an average).
        let stored_sum = c
            .aggregates
            .iter()
            .find(|s| s.op == ComputedOp::Sum && s.of == a.of)
            .and_then(|s| parent.get(s.into).cloned());
        let mut sum = match stored_sum {
            Some(s) if is_number(&s) => s,
            _ => Bson::Int32(0),
        };
        let (gone, new) = (value_of(removed, a.of), value_of(added, a.of));
        let double = |v: Option<&Bson>| matches!(v, Some(Bson::Double(_)));
        if same_value(gone, new) {
            // The value did not change (by value): the sum stays as stored.
        } else if gone.is_some() && (double(gone) || double(new) || double(Some(&sum))) {
            // A double taken out: subtracting it would leave its rounding behind (0.1 + 0.2
            // - 0.1 - 0.2 is not 0); the sum is read again from the children, exactly.
            sum = match sum_of_children::<D, T>(tx, c, key, a.of).await? {
                // No double left (no child, say): still a double, as the field was.
                s if double(Some(&sum)) => Bson::Double(number::as_f64(&s)),
                s => s,
            };
        } else {
            if let Some(v) = gone {
                let neg = negate(v).ok_or_else(|| numeric_err::<D>(a.of, "not negatable"))?;
                sum = number::add(&sum, &neg).map_err(|e| numeric_err::<D>(a.of, e))?;
            }
            if let Some(v) = new {
                sum = number::add(&sum, v).map_err(|e| numeric_err::<D>(a.of, e))?;
            }
        }
        sums.insert(a.of, sum);
    }
    for a in c.aggregates {
        let value = match a.op {
            ComputedOp::Sum => sums.get(a.of).cloned().unwrap_or(Bson::Int32(0)),
            ComputedOp::Avg => match (sums.get(a.of), new_count) {
                (_, 0) | (None, _) => Bson::Null,
                (Some(s), n) => Bson::Double(number::as_f64(s) / n as f64),
            },
            ComputedOp::Min | ComputedOp::Max => {
                extreme::<D, T>(tx, c, key, a, &parent, removed, added).await?
            }
        };
        set.push((a.into.into(), value));
    }
    let mut update = Update {
        set,
        ..Update::default()
    };
    tx.update_one(
        c.parent,
        &Filter::Eq("_id".into(), key.clone()),
        &mut update,
        false,
    )
    .await?;
    Ok(())
}

/// A child gained by the parent `key` (inserted, or moved to it), in one update: the count, the
/// sums, the averages and the extremes computed by the server from the parent's own values,
/// exactly as [`change`] computes them, when the parent holds what this library writes (a
/// count that is an integer and not negative, sums that are numbers, extremes that are
/// numbers or null, each or missing; a sum that cannot pass Int64), checked by the update
/// itself. `false` when the parent does not hold that (or does not exist): nothing written,
/// [`change`] reads it and decides; `false` too when the values it computes are those stored
/// (no count, a maximum the child does not pass), and [`change`] writes them again.
async fn gain<T: Store>(tx: &T, c: &Computed, key: &Bson, child: &BsonDocument) -> Result<bool> {
    use crate::codec::BsonType as Ty;
    use crate::store::query::{Expr, Rewrite};
    let field = |f: &str| Expr::Field(f.into());
    let lit = Expr::Literal;
    let of_type = |f: &str, kinds: Vec<Ty>| Expr::OfType {
        value: Box::new(field(f)),
        kinds,
        or_missing: true,
    };
    // The stored value, 0 when there is none.
    let or_zero = |f: &str| Box::new(Expr::IfNull(Box::new(field(f)), Box::new(lit(0.into()))));
    // What the parent must hold for the server to compute what `change` would: checked in
    // the update (`rewrite_if`), not in the filter, which this server charges for each
    // condition (test server T22).
    let mut guards = Vec::new();
    let mut rewrite = Vec::new();
    // The new count, from the stored one (an integer, or none).
    let count = c.count.map(|n| {
        guards.push(of_type(n, vec![Ty::Int, Ty::Long]));
        guards.push(Expr::Gte(or_zero(n), Box::new(lit(Bson::Int64(0)))));
        Expr::Add(vec![
            Expr::IfNull(Box::new(field(n)), Box::new(lit(Bson::Int64(0)))),
            lit(Bson::Int64(1)),
        ])
    });
    if let Some((n, e)) = c.count.zip(count.clone()) {
        rewrite.push(Rewrite::Expr {
            field: n.into(),
            expr: e,
        });
    }
    // The new sum of the child field `of`, from the stored sum beside it (a number, or 0).
    let sum_of = |of: &str| -> Option<Expr> {
        let into = (c.aggregates.iter())
            .find(|s| s.op == ComputedOp::Sum && s.of == of)?
            .into;
        let stored = Expr::IfNull(Box::new(field(into)), Box::new(lit(Bson::Int32(0))));
        Some(match value_of(Some(child), of) {
            Some(v) => Expr::Add(vec![stored, lit(v.clone())]),
            None => stored,
        })
    };
    for a in c.aggregates {
        let expr = match a.op {
            ComputedOp::Sum => {
                let numbers = vec![Ty::Int, Ty::Long, Ty::Double];
                guards.push(of_type(a.into, numbers));
                // An Int64 sum that the child's integer would take past Int64: refused by
                // `change`, where `$add` would give a Double.
                let bound = match value_of(Some(child), a.of) {
                    Some(Bson::Int32(v)) => Some(i64::from(*v)),
                    Some(Bson::Int64(v)) => Some(*v),
                    _ => None,
                };
                if let Some(v) = bound {
                    guards.push(match v >= 0 {
                        true => Expr::Lte(or_zero(a.into), Box::new(lit((i64::MAX - v).into()))),
                        false => Expr::Gte(or_zero(a.into), Box::new(lit((i64::MIN - v).into()))),
                    });
                }
                sum_of(a.of)
            }
            ComputedOp::Avg => match (sum_of(a.of), count.clone()) {
                (Some(sum), Some(n)) => Some(Expr::Divide(Box::new(sum), Box::new(n))),
                _ => None,
            },
            ComputedOp::Min | ComputedOp::Max => {
                let kinds = vec![Ty::Int, Ty::Long, Ty::Double, Ty::Null];
                guards.push(of_type(a.into, kinds));
                Some(match value_of(Some(child), a.of) {
                    Some(v) => {
                        // The stored extreme (the child's value in its place when there is
                        // none) unless the child's value goes beyond it; a tie keeps it.
                        let stored =
                            Expr::IfNull(Box::new(field(a.into)), Box::new(lit(v.clone())));
                        let (s, v) = (Box::new(stored), Box::new(lit(v.clone())));
                        let keeps = match a.op {
                            ComputedOp::Min => Expr::Lte(s.clone(), v.clone()),
                            _ => Expr::Gte(s.clone(), v.clone()),
                        };
                        Expr::Cond {
                            test: Box::new(keeps),
                            then: s,
                            otherwise: v,
                        }
                    }
                    None => Expr::IfNull(Box::new(field(a.into)), Box::new(lit(Bson::Null))),
                })
            }
        };
        // An aggregate the derive would not accept (an average without its sum or count):
        // left to `change`.
        let Some(expr) = expr else { return Ok(false) };
        rewrite.push(Rewrite::Expr {
            field: a.into.into(),
            expr,
        });
    }
    if rewrite.is_empty() {
        return Ok(false);
    }
    let mut update = Update {
        rewrite,
        rewrite_if: Some(Expr::And(guards)),
        ..Update::default()
    };
    let by_id = Filter::Eq("_id".into(), key.clone());
    let done = (tx.update_one(c.parent, &by_id, &mut update, false)).await?;
    // Not modified: no parent, a guard that did not hold (nothing written), or values that
    // stay as they were (a maximum the child does not pass, without a count). `change` reads
    // the parent and writes what it must, exactly in every case.
    Ok(done.modified)
}

/// The number a child document holds in `field`, if it holds one.
fn value_of<'d>(doc: Option<&'d BsonDocument>, field: &str) -> Option<&'d Bson> {
    doc.and_then(|d| d.get(field)).filter(|v| is_number(v))
}

/// The new minimum or maximum: the stored one against the added value, unless the removed
/// value was the extreme (then read from the children, which the transaction sees written).
async fn extreme<D: Document, T: Store>(
    tx: &T,
    c: &Computed,
    key: &Bson,
    a: &ComputedField,
    parent: &BsonDocument,
    removed: Option<&BsonDocument>,
    added: Option<&BsonDocument>,
) -> Result<Bson> {
    let want = if a.op == ComputedOp::Min {
        Ordering::Less
    } else {
        Ordering::Greater
    };
    let stored = parent.get(a.into).filter(|v| is_number(v));
    let removed_v = removed.and_then(|d| d.get(a.of)).filter(|v| is_number(v));
    let was_extreme = match (removed_v, stored) {
        (Some(r), Some(s)) => number::compare(r, s) != Some(want.reverse()),
        (Some(_), None) => true,
        _ => false,
    };
    if was_extreme {
        return from_children::<D, T>(tx, c, key, a).await;
    }
    let added_v = added.and_then(|d| d.get(a.of)).filter(|v| is_number(v));
    Ok(match (stored, added_v) {
        (Some(s), Some(v)) if number::compare(v, s) == Some(want) => v.clone(),
        (Some(s), _) => s.clone(),
        (None, Some(v)) => v.clone(),
        (None, None) => Bson::Null,
    })
}

/// The smallest or largest value among the parent's children (one `find` through the index
/// `{key: 1, field: 1}`), `null` without one.
async fn from_children<D: Document, T: Store>(
    tx: &T,
    c: &Computed,
    key: &Bson,
    a: &ComputedField,
) -> Result<Bson> {
    let opts = FindOptions {
        sort: vec![
            (c.key.into(), 1),
            (a.of.into(), if a.op == ComputedOp::Min { 1 } else { -1 }),
        ],
        limit: Some(1),
        projection: vec![a.of.into()],
        comment: Some(COMPUTED_EXTREME),
        ..FindOptions::default()
    };
    let filter = Filter::And(vec![
        Filter::Eq(c.key.into(), key.clone()),
        Filter::NumberOrMissing(a.of.into()),
        Filter::Exists(a.of.into(), true),
    ]);
    let found = tx
        .find(D::COLLECTION, &Scope::narrow(c.children, filter), &opts)
        .await?;
    Ok(found
        .first()
        .and_then(|d| d.get(a.of).cloned())
        .unwrap_or(Bson::Null))
}

/// The exact sum of the field `of` over the parent `key`'s children, as the transaction sees
/// them (one `find` by the key, the field projected): what a sum of doubles is set to when a
/// child's value leaves it.
async fn sum_of_children<D: Document, T: Store>(
    tx: &T,
    c: &Computed,
    key: &Bson,
    of: &str,
) -> Result<Bson> {
    let opts = FindOptions {
        projection: vec![of.into()],
        comment: Some(COMPUTED_SUM),
        ..FindOptions::default()
    };
    let filter = Filter::And(vec![
        Filter::Eq(c.key.into(), key.clone()),
        Filter::NumberOrMissing(of.into()),
        Filter::Exists(of.into(), true),
    ]);
    let children = (tx.find(D::COLLECTION, &Scope::narrow(c.children, filter), &opts)).await?;
    let values: Vec<&Bson> = (children.iter())
        .filter_map(|d| d.get(of))
        .filter(|v| is_number(v))
        .collect();
    number::sum(&values).map_err(|e| numeric_err::<D>(of, e))
}

/// One parent's aggregates as its children give them (the `$set` [`recompute`] writes), each
/// with the rounding a stored value may differ by after writes through the library alone:
/// none, but for sums and averages of doubles ([`rounding`]).
fn from_scratch(c: &Computed, children: &[BsonDocument]) -> Result<Vec<(&'static str, Bson, f64)>> {
    let mut out = Vec::new();
    if let Some(f) = c.count {
        out.push((f, Bson::Int64(children.len() as i64), 0.0));
    }
    for a in c.aggregates {
        let values: Vec<&Bson> = (children.iter())
            .filter_map(|d| d.get(a.of))
            .filter(|v| is_number(v))
            .collect();
        let sum = || -> Result<Bson> {
            number::sum(&values).map_err(|e| Error::invalid(format!("a sum of `{}`: {e:?}", a.of)))
        };
        let pick = |want: Ordering| {
            values
                .iter()
                .copied()
                .reduce(|best, v| {
                    if number::compare(v, best) == Some(want) {
                        v
                    } else {
                        best
                    }
                })
                .cloned()
                .unwrap_or(Bson::Null)
        };
        let (value, tolerance) = match a.op {
            ComputedOp::Sum => (sum()?, rounding(&values)),
            ComputedOp::Min => (pick(Ordering::Less), 0.0),
            ComputedOp::Max => (pick(Ordering::Greater), 0.0),
            ComputedOp::Avg if children.is_empty() => (Bson::Null, 0.0),
            ComputedOp::Avg => {
                let n = children.len() as f64;
                (
                    Bson::Double(number::as_f64(&sum()?) / n),
                    rounding(&values) / n,
                )
            }
        };
        out.push((a.into, value, tolerance));
    }
    Ok(out)
}

/// How far a sum of `values` kept through the library's writes may be from their exact sum:
/// 0 for integers and Decimal128 (added exactly); for doubles, each child added since the last
/// removal rounds once (a removal sets the sum exactly: [`sum_of_children`]), so at most
/// `(n + 1) · ε · Σ|x|` over the `n` children, the bound of recursive summation.
fn rounding(values: &[&Bson]) -> f64 {
    if !values.iter().any(|v| matches!(v, Bson::Double(_))) {
        return 0.0;
    }
    let magnitude: f64 = values.iter().map(|v| number::as_f64(v).abs()).sum();
    (values.len() as f64 + 1.0) * f64::EPSILON * magnitude
}

fn computed_of<D: Document>() -> Result<Computed> {
    let attribute = "#[document(computed(parent = ..., key = ...))]";
    declares::<D, _>(D::COMPUTED, "computed parent", attribute)
}

#[doc = crate::__document_doc!(recompute)]
pub async fn recompute<D, S, Q>(store: &S, id: &Q) -> Result<()>
where
    D: Document,
    S: Store,
    Q: Serialize + ?Sized,
{
    crate::observe::traced_op!(document.recompute, store, D::COLLECTION, async {
        let c = computed_of::<D>()?;
        let id = id_bson(id)?;
        let mut ctx = id;
        transaction_with(store, &mut ctx, |tx, id| {
            Box::pin(async move {
                let opts = FindOptions {
                    comment: Some(COMPUTED_RECOMPUTE),
                    ..FindOptions::default()
                };
                let by_parent = Scope::narrow(c.children, Filter::Eq(c.key.into(), id.clone()));
                let children = tx.find(D::COLLECTION, &by_parent, &opts).await?;
                let set = from_scratch(&c, &children)?;
                let mut update = Update {
                    set: set.into_iter().map(|(k, v, _)| (k.into(), v)).collect(),
                    ..Update::default()
                };
                let done = tx
                    .update_one(
                        c.parent,
                        &Filter::Eq("_id".into(), id.clone()),
                        &mut update,
                        false,
                    )
                    .await?;
                if !done.matched {
                    return Err(Error::NotFound {
                        collection: c.parent.to_owned(),
                        id: display_bson(id),
                    });
                }
                Ok(())
            })
        })
        .await
    })
}

/// In the caller's transaction: the aggregates of each parent in `keys` rebuilt from its
/// children in `children` where a stored one differs from them: one `find` of the children of
/// them all (their key and the aggregated fields only), one of the parents, and one batch of
/// `update`s of those that differ, whatever the number of keys. Per key, whether its parent was
/// written; a parent that does not exist has nothing to rebuild. Keys are matched by value (a
/// parent named by an Int32 and by an Int64 is one).
pub(crate) async fn parents_in_line<T: Store>(
    tx: &T,
    children: &str,
    c: &Computed,
    keys: &[Bson],
) -> Result<Vec<bool>> {
    let mut projection: Vec<crate::store::query::Path> = vec!["_id".into(), c.key.into()];
    projection.extend(c.aggregates.iter().map(|a| a.of.into()));
    let opts = FindOptions {
        projection,
        comment: Some(COMPUTED_RECOMPUTE),
        ..FindOptions::default()
    };
    let of_keys = Scope::narrow(c.children, Filter::In(c.key.into(), keys.to_vec()));
    let mut by_parent: BTreeMap<Vec<u8>, Vec<BsonDocument>> = BTreeMap::new();
    for kid in tx.find(children, &of_keys, &opts).await? {
        if let Some(k) = kid.get(c.key) {
            by_parent.entry(value_key(k)).or_default().push(kid);
        }
    }
    let by_ids = Filter::In("_id".into(), keys.to_vec());
    let parents = tx.find(c.parent, &by_ids, &FindOptions::default()).await?;
    let mut sets = Vec::new();
    for parent in parents {
        let id = parent.get("_id").cloned().unwrap_or(Bson::Null);
        let kids = by_parent
            .get(&value_key(&id))
            .map_or(&[][..], Vec::as_slice);
        let set: Vec<_> = (from_scratch(c, kids)?.into_iter())
            .filter(|(field, want, tolerance)| {
                !same(parent.get(*field).unwrap_or(&Bson::Null), want, *tolerance)
            })
            .map(|(field, want, _)| (field.into(), want))
            .collect();
        if !set.is_empty() {
            sets.push((id, set));
        }
    }
    set_each(tx, c.parent, sets, keys).await
}

/// A parent whose stored aggregate differs from its children's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Drift {
    /// The parent's `_id` (relaxed Extended JSON).
    pub parent: String,
    /// The parent's field.
    pub field: String,
    /// What it stores (relaxed Extended JSON; `null` when missing).
    pub stored: String,
    /// What its children give.
    pub computed: String,
}

#[doc = crate::__document_doc!(verify)]
pub async fn verify<D: Document, S: Store>(store: &S) -> Result<Vec<Drift>> {
    crate::observe::traced_op!(document.verify_computed, store, D::COLLECTION, async {
        let c = computed_of::<D>()?;
        Ok(drifts(store, D::COLLECTION, &c)
            .await?
            .into_iter()
            .map(|(d, _)| d)
            .collect())
    })
}

/// The `_id`s of the parents [`verify`] lists, each once.
pub(crate) async fn drifted<S: Store>(
    store: &S,
    children: &str,
    c: &Computed,
) -> Result<Vec<Bson>> {
    let mut ids: Vec<Bson> = Vec::new();
    for (_, id) in drifts(store, children, c).await? {
        if !ids.last().is_some_and(|last| values_equal(last, &id)) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// [`verify`] over `children`, each drift with its parent's `_id`.
async fn drifts<S: Store>(store: &S, children: &str, c: &Computed) -> Result<Vec<(Drift, Bson)>> {
    let opts = FindOptions {
        sort: vec![(c.key.into(), 1)],
        comment: Some(COMPUTED_VERIFY),
        ..FindOptions::default()
    };
    let all = Filter::And(vec![]);
    // Children by their parent key's value (an Int32 5 and an Int64 5 name one parent).
    let mut by_parent: BTreeMap<Vec<u8>, Vec<BsonDocument>> = BTreeMap::new();
    let kids = Scope::narrow(c.children, all.clone());
    let mut scan = store.scan(children, &kids, &opts, 1_000);
    while let Some(raw) = scan.next().await {
        let doc = raw?
            .to_document()
            .map_err(|e| Error::decode(children, None, e))?;
        if let Some(k) = doc.get(c.key).filter(|k| **k != Bson::Null) {
            by_parent.entry(value_key(k)).or_default().push(doc);
        }
    }
    drop(scan);
    let popts = FindOptions {
        comment: Some(COMPUTED_VERIFY),
        ..FindOptions::default()
    };
    let mut drifts = Vec::new();
    let mut parents = store.scan(c.parent, &all, &popts, 1_000);
    while let Some(raw) = parents.next().await {
        let parent = raw?
            .to_document()
            .map_err(|e| Error::decode(c.parent, None, e))?;
        let id = parent.get("_id").cloned().unwrap_or(Bson::Null);
        let kids = by_parent.remove(&value_key(&id)).unwrap_or_default();
        for (field, want, tolerance) in from_scratch(c, &kids)? {
            let got = parent.get(field).cloned().unwrap_or(Bson::Null);
            if !same(&got, &want, tolerance) {
                let drift = Drift {
                    parent: display_bson(&id),
                    field: field.to_owned(),
                    stored: display_bson(&got),
                    computed: display_bson(&want),
                };
                drifts.push((drift, id.clone()));
            }
        }
    }
    Ok(drifts)
}

/// The `comment` of the read of a parent's children for a removed extreme (by the key, on a
/// child collection sharded by `_id`: every shard answers it).
pub const COMPUTED_EXTREME: &str = "pattern scatter: computed extreme";
/// The `comment` of the read of a parent's children when a double leaves a sum (by the key,
/// on a child collection sharded by `_id`: every shard answers it).
pub const COMPUTED_SUM: &str = "pattern scatter: computed sum";
/// The `comment` of [`recompute`]'s read of a parent's children.
pub const COMPUTED_RECOMPUTE: &str = "pattern scatter: computed recompute";
/// The `comment` of [`verify`]'s scans (collection-wide reads).
pub const COMPUTED_VERIFY: &str = "pattern scatter: computed verify";

/// Whether a stored aggregate is the one the children give: numbers by value (an Int32 3
/// equals an Int64 3), doubles within `tolerance` (see [`rounding`]) and the rounding of one
/// more operation (an average divides the sum).
fn same(a: &Bson, b: &Bson, tolerance: f64) -> bool {
    let double = matches!(a, Bson::Double(_)) || matches!(b, Bson::Double(_));
    match (a, b) {
        (Bson::Null, Bson::Null) => true,
        _ if double && is_number(a) && is_number(b) => {
            let (x, y) = (number::as_f64(a), number::as_f64(b));
            (x - y).abs() <= tolerance + 2.0 * f64::EPSILON * x.abs().max(y.abs())
        }
        // Numbers by value, Decimal128 included; anything else as MongoDB's `$eq` sees it.
        _ => values_equal(a, b),
    }
}
