//! The update engine: how the in-memory store applies an update of the query language in
//! place, with MongoDB's semantics for the subset: the operators, the pipeline rewrites of tree
//! moves and computed parents, the sorted `$push`, and the undo log that puts a refused update
//! back.

use bson::{Bson, Document};

use pattern_store::codec::number::{self, NumberError};
use pattern_store::codec::order::{compare_values, values_equal};
use pattern_store::codec::size::{element_at_bytes, field_bytes};
use pattern_store::query::eval::get_path;
use pattern_store::query::{Expr, Path, Rewrite, Update};

/// An update applied in place, as the in-memory store applies it.
pub(crate) trait UpdateEngine {
    fn apply(&self, doc: &mut Document, inserting: bool) -> Result<(), String>;
    fn apply_taking(&mut self, doc: &mut Document, inserting: bool) -> Result<(), String>;
    fn undo_log(&self, doc: &Document, inserting: bool) -> Undo;
    fn changes_nothing(&self, doc: &Document) -> bool;
    fn sets_alone(&self) -> bool;
}

/// The steps of [`UpdateEngine`], each over the whole update.
trait Steps {
    fn operators_taking(&mut self, doc: &mut Document, inserting: bool) -> Result<(), String>;
    fn write_push_sorts(&self, doc: &mut Document);
    fn write_pulls(&self, doc: &mut Document);
    fn takes(&self, i: usize, inserting: bool) -> bool;
    fn prepare(&self, doc: &Document, inserting: bool) -> Result<Prepared, String>;
    fn write_fields(&self, doc: &mut Document, prepared: Prepared, inserting: bool);
    fn value_seen<'a>(
        &'a self,
        doc: &'a Document,
        incs: &'a [Bson],
        k: &str,
        inserting: bool,
    ) -> Option<&'a Bson>;
    fn field_name(&self, f: Written) -> &str;
}

impl UpdateEngine for Update {
    /// Applies the update to `doc` in place (`inserting`: whether `$setOnInsert` applies).
    /// Fails, leaving `doc` unchanged, where MongoDB would refuse the update (`$inc` of a
    /// non-number, `$push` or `$pull` to a non-array, a rewrite of a field that does not hold
    /// what it rewrites, rewrites beside operators a pipeline cannot carry).
    ///
    /// The operators apply in the order `$set`, `$setOnInsert`, `$inc` (`inc` then `sum`),
    /// `$min`, `$max`, `$push`, `$pull`, each seeing what the ones before it wrote (a field is
    /// written by one of them: MongoDB refuses an update naming a field twice). Rewrites (which only come with `$set`) are
    /// computed from the document as it was, as an update pipeline's `$set` stage computes
    /// them, and written after `$set` (a rewrite of a field `$set` also writes wins). Everything
    /// that can fail is checked before `doc` is touched, so `doc` is never copied.
    ///
    /// An update with a [`require`](Update::require)d condition (checked by the caller) is
    /// applied as its pipeline computes it ([`Update::required_fields`]): by the operators,
    /// which agree with it, unless a field it writes is null or an operator refuses (a date
    /// plus a number, an Int64 sum past its range), then by the expressions.
    fn apply(&self, doc: &mut Document, inserting: bool) -> Result<(), String> {
        if self.require.is_some() {
            return self.clone().apply_taking(doc, inserting);
        }
        let prepared = self.prepare(doc, inserting)?;
        if !prepared.holds {
            return Ok(());
        }
        self.write_fields(doc, prepared, inserting);
        for (k, items) in &self.push {
            append(doc, k, items.clone());
        }
        self.write_push_sorts(doc);
        self.write_pulls(doc);
        Ok(())
    }

    /// [`Update::apply`], moving the pushed items into `doc` instead of copying them, where
    /// [`Undo::restore`] can give them back: the items of each field that is pushed once and
    /// written by no other operator (the others are copied). On `Err` nothing was moved.
    fn apply_taking(&mut self, doc: &mut Document, inserting: bool) -> Result<(), String> {
        if self.require.is_none() {
            return self.operators_taking(doc, inserting);
        }
        let nulls = (self.written().iter()).any(|k| matches!(doc.get(*k), Some(Bson::Null)));
        if !nulls && self.operators_taking(doc, inserting).is_ok() {
            return Ok(());
        }
        let fields = self.required_fields();
        let pipeline = Update {
            rewrite: (fields.into_iter())
                .map(|(field, expr)| Rewrite::Expr { field, expr })
                .collect(),
            // `$mergeObjects`: a field whose value is missing stays as it was.
            rewrite_if: Some(Expr::Literal(Bson::Boolean(true))),
            ..Update::default()
        };
        pipeline.apply(doc, inserting)?;
        // As the operators would have left it: the items of each push taken.
        for i in 0..self.push.len() {
            if self.takes(i, inserting) {
                self.push[i].1.clear();
            }
        }
        Ok(())
    }

    /// Whether the update, applied to the existing document `doc`, would leave it as it is,
    /// told without applying it: `$set`s and `$unset`s alone ([`UpdateEngine::sets_alone`]),
    /// each `$set` finding the same value in place (same type and same bytes, a document's
    /// fields in the same order: what MongoDB takes for a no-op, which it does not write),
    /// each `$unset` naming a top-level field that is not there. `false` where it cannot be
    /// told so (any other operator, a dotted `$unset`): such an update is applied, and claims
    /// its document, as any other.
    fn changes_nothing(&self, doc: &Document) -> bool {
        self.sets_alone()
            && (self.set.iter()).all(|(p, v)| get_path(doc, p).is_some_and(|old| identical(old, v)))
            && (self.unset.iter()).all(|p| !p.contains('.') && !doc.contains_key(p.as_str()))
    }

    /// Whether the update is `$set`s and `$unset`s alone (at least one), which
    /// [`UpdateEngine::changes_nothing`] can tell a no-op of.
    fn sets_alone(&self) -> bool {
        // Every field named: an operator added to `Update` must be considered here.
        let Update {
            set,
            set_on_insert: _,
            inc,
            sum,
            min,
            max,
            unset,
            push,
            push_sort,
            pull,
            rewrite,
            rewrite_if,
            require,
        } = self;
        inc.is_empty()
            && sum.is_empty()
            && min.is_empty()
            && max.is_empty()
            && push.is_empty()
            && push_sort.is_empty()
            && pull.is_empty()
            && rewrite.is_empty()
            && rewrite_if.is_none()
            && require.is_none()
            && !(set.is_empty() && unset.is_empty())
    }

    /// Saves what [`Update::apply`] (or [`Update::apply_taking`]) would change in `doc`
    /// (`inserting` as there), so that [`Undo::restore`] can put it back. A `$push` target
    /// costs its length, not a copy.
    fn undo_log(&self, doc: &Document, inserting: bool) -> Undo {
        let mut saved: Vec<(Written, Saved)> = Vec::new();
        let soi = if inserting {
            self.set_on_insert.len()
        } else {
            0
        };
        let written = (0..self.set.len()).map(Written::Set);
        // A pulled or rewritten array is saved whole (a `$push` beside it too): only an array
        // that is appended to and nothing else is saved as its length.
        let written = written
            .chain((0..soi).map(Written::SetOnInsert))
            .chain((0..self.inc.len()).map(Written::Inc))
            .chain((0..self.sum.len()).map(Written::Sum))
            .chain((0..self.min.len()).map(Written::Min))
            .chain((0..self.max.len()).map(Written::Max))
            .chain((0..self.unset.len()).map(Written::Unset))
            .chain((0..self.pull.len()).map(Written::Pull))
            .chain((0..self.rewrite.len()).map(Written::Rewrite));
        let seen = |saved: &[(Written, Saved)], k: &str| {
            saved.iter().any(|(f, _)| self.field_name(*f) == k)
        };
        for f in written {
            let k = self.field_name(f);
            if !seen(&saved, k) {
                saved.push((f, Saved::Value(doc.get(k).cloned())));
            }
        }
        for (i, (k, _)) in self.push.iter().enumerate() {
            if !seen(&saved, k) {
                // A sorted push reorders and cuts the array: saved whole.
                let sorted = self.push_sort.iter().any(|s| s.field == *k);
                let was = match doc.get(k) {
                    Some(Bson::Array(a)) if !sorted => Saved::Len(a.len()),
                    other => Saved::Value(other.cloned()),
                };
                saved.push((Written::Push(i), was));
            }
        }
        Undo { saved, inserting }
    }
}

/// Refuses `update` on `doc` of collection `coll` where its [`require`](Update::require)d
/// condition does not hold ([`Error::Unmet`](pattern_store::Error::Unmet)), or evaluating it
/// refuses the update.
pub(crate) fn check_requirement(
    coll: &str,
    update: &Update,
    doc: &Document,
) -> pattern_store::Result<()> {
    let Some(test) = &update.require else {
        return Ok(());
    };
    match test.eval(doc) {
        Ok(v) if v.as_ref().is_some_and(truthy) => Ok(()),
        Ok(_) => Err(pattern_store::Error::Unmet {
            collection: coll.to_owned(),
        }),
        Err(message) => Err(pattern_store::Error::Server {
            message,
            source: None,
        }),
    }
}

impl Steps for Update {
    /// [`UpdateEngine::apply_taking`] by the operators.
    fn operators_taking(&mut self, doc: &mut Document, inserting: bool) -> Result<(), String> {
        let prepared = self.prepare(doc, inserting)?;
        if !prepared.holds {
            return Ok(());
        }
        self.write_fields(doc, prepared, inserting);
        for i in 0..self.push.len() {
            let taken = self.takes(i, inserting);
            let (k, items) = &mut self.push[i];
            let items = if taken {
                std::mem::take(items)
            } else {
                items.clone()
            };
            append(doc, k, items);
        }
        self.write_push_sorts(doc);
        self.write_pulls(doc);
        Ok(())
    }

    /// Sorts and cuts each array a sorted `$push` wrote ([`PushSort`]): a stable sort by the
    /// elements' fields in BSON order (a missing field, or an element that is not a document,
    /// as null), then the first `keep` kept.
    fn write_push_sorts(&self, doc: &mut Document) {
        for s in &self.push_sort {
            let Some(Bson::Array(a)) = doc.get_mut(s.field.as_str()) else {
                continue;
            };
            fn value<'e>(e: &'e Bson, f: &str) -> &'e Bson {
                match e {
                    Bson::Document(d) => d.get(f).unwrap_or(&Bson::Null),
                    _ => &Bson::Null,
                }
            }
            a.sort_by(|x, y| {
                (s.by.iter())
                    .map(|(f, dir)| {
                        let o = compare_values(value(x, f), value(y, f));
                        if *dir < 0 {
                            o.reverse()
                        } else {
                            o
                        }
                    })
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            a.truncate(s.keep as usize);
        }
    }

    /// Removes the `$pull` values from their arrays (once checked: each field is absent or an
    /// array).
    fn write_pulls(&self, doc: &mut Document) {
        for (k, v) in &self.pull {
            if let Some(Bson::Array(a)) = doc.get_mut(k) {
                a.retain(|e| !values_equal(e, v));
            }
        }
    }

    /// Whether [`Update::apply_taking`] moves the items of push `i`: its field is pushed once
    /// and written by no other operator, so they are the tail of the array afterwards.
    fn takes(&self, i: usize, inserting: bool) -> bool {
        let k = &self.push[i].0;
        let written = |ops: &[(Path, Bson)]| ops.iter().any(|(f, _)| f == k);
        let pushed_once = self.push.iter().filter(|(f, _)| f == k).count() == 1;
        let other_write = written(&self.set)
            || (inserting && written(&self.set_on_insert))
            || self.inc.iter().any(|(f, _)| f == k)
            || written(&self.sum)
            || written(&self.min)
            || written(&self.max)
            || self.unset.iter().any(|f| f == k)
            || written(&self.pull)
            || self.rewrite.iter().any(|r| r.field() == k)
            || self.push_sort.iter().any(|s| s.field == *k);
        pushed_once && !other_write
    }

    /// Checks that the update applies to `doc`; returns the value each `$inc` writes (in the
    /// order of `inc`), from the value its field has by then, and what each rewrite leaves in
    /// its field.
    fn prepare(&self, doc: &Document, inserting: bool) -> Result<Prepared, String> {
        self.check().map_err(|e| e.to_string())?;
        // A condition for the rewrites that does not hold: nothing is computed or written
        // (the pipeline's `$cond` keeps `$$ROOT`). `check` allows only `$set` beside them.
        if let Some(test) = &self.rewrite_if {
            if !truthy(&test.eval(doc)?.unwrap_or(Bson::Null)) {
                return Ok(Prepared {
                    holds: false,
                    incs: Vec::new(),
                    sums: Vec::new(),
                    mins: Vec::new(),
                    maxs: Vec::new(),
                    rewrites: Vec::new(),
                });
            }
        }
        let mut incs: Vec<Bson> = Vec::with_capacity(self.inc.len());
        for (k, n) in &self.inc {
            let new = match self.value_seen(doc, &incs, k, inserting) {
                None => Bson::Int32(*n),
                Some(Bson::Int32(x)) => match x.checked_add(*n) {
                    Some(s) => Bson::Int32(s),
                    None => Bson::Int64(*x as i64 + *n as i64),
                },
                Some(Bson::Int64(x)) => match x.checked_add(*n as i64) {
                    Some(s) => Bson::Int64(s),
                    None => {
                        return Err(format!(
                            "Failed to apply $inc operations to current value ({x}) for `{k}`: overflow"
                        ))
                    }
                },
                Some(Bson::Double(x)) => Bson::Double(x + *n as f64),
                Some(other) => {
                    return Err(format!(
                        "cannot apply $inc to `{k}` of type {:?}",
                        other.element_type()
                    ))
                }
            };
            incs.push(new);
        }
        let mut sums = Vec::with_capacity(self.sum.len());
        for (k, v) in &self.sum {
            let new = match self.value_seen(doc, &incs, k, inserting) {
                None => v.clone(),
                Some(old) => pattern_store::codec::number::add(old, v).map_err(|e| match e {
                    pattern_store::codec::number::NumberError::Overflow => format!(
                        "Failed to apply $inc operations to current value ({}) for `{k}`: overflow",
                        pattern_store::error::display_bson(old)
                    ),
                    pattern_store::codec::number::NumberError::NotANumber(t) => {
                        format!("cannot apply $inc to `{k}` of type {t:?}")
                    }
                })?,
            };
            sums.push(new);
        }
        let bound = |ops: &[(Path, Bson)], keep: std::cmp::Ordering| {
            ops.iter()
                .map(|(k, v)| match self.value_seen(doc, &incs, k, inserting) {
                    Some(old) if compare_values(v, old) != keep => None,
                    _ => Some(v.clone()),
                })
                .collect::<Vec<_>>()
        };
        let (mins, maxs) = (
            bound(&self.min, std::cmp::Ordering::Less),
            bound(&self.max, std::cmp::Ordering::Greater),
        );
        for (i, (k, _)) in self.push.iter().enumerate() {
            if self.push[..i].iter().any(|(p, _)| p == k) {
                continue; // an array by then: an earlier `$push` made sure of it
            }
            match self.value_seen(doc, &incs, k, inserting) {
                None | Some(Bson::Array(_)) => {}
                Some(other) => {
                    return Err(format!(
                        "cannot $push to `{k}` of type {:?}",
                        other.element_type()
                    ))
                }
            }
        }
        for (k, _) in &self.pull {
            if self.push.iter().any(|(p, _)| p == k) {
                continue; // an array by then: the `$push` made sure of it
            }
            match self.value_seen(doc, &incs, k, inserting) {
                None | Some(Bson::Array(_)) => {}
                Some(other) => {
                    return Err(format!(
                        "cannot $pull from `{k}` of type {:?}: not an array",
                        other.element_type()
                    ))
                }
            }
        }
        let rewrites = (self.rewrite.iter())
            .map(|r| r.compute(doc))
            .collect::<Result<_, _>>()?;
        Ok(Prepared {
            holds: true,
            incs,
            sums,
            mins,
            maxs,
            rewrites,
        })
    }

    /// Writes `$set`, `$setOnInsert` (when `inserting`), the `$inc` results and the rewrites'
    /// values (as [`Update::prepare`] gives them). Nothing fails here.
    fn write_fields(&self, doc: &mut Document, prepared: Prepared, inserting: bool) {
        for (k, v) in &self.set {
            set_field(doc, k, v.clone());
        }
        if inserting {
            for (k, v) in &self.set_on_insert {
                set_field(doc, k, v.clone());
            }
        }
        for ((k, _), v) in self.inc.iter().zip(prepared.incs) {
            set_field(doc, k, v);
        }
        for ((k, _), v) in self.sum.iter().zip(prepared.sums) {
            set_field(doc, k, v);
        }
        let bounds = (self.min.iter().zip(prepared.mins)).chain(self.max.iter().zip(prepared.maxs));
        for ((k, _), v) in bounds {
            if let Some(v) = v {
                set_field(doc, k, v);
            }
        }
        for k in &self.unset {
            doc.remove(k.as_str());
        }
        for (r, v) in self.rewrite.iter().zip(prepared.rewrites) {
            match v {
                Some(v) => set_field(doc, r.field(), v),
                // The value is missing: a pipeline's `$set` leaves the field out; merged
                // under a condition (`$mergeObjects`), the field stays as it was.
                None if self.rewrite_if.is_some() => {}
                None => {
                    doc.remove(r.field());
                }
            }
        }
    }

    /// The value field `k` has once `$set`, `$setOnInsert` and the first `incs.len()` `$inc`s
    /// (whose results are `incs`) applied: what a later `$inc` or a `$push` of `k` sees.
    fn value_seen<'a>(
        &'a self,
        doc: &'a Document,
        incs: &'a [Bson],
        k: &str,
        inserting: bool,
    ) -> Option<&'a Bson> {
        let last = |ops: &'a [(Path, Bson)]| ops.iter().rev().find(|(f, _)| f == k);
        (self.inc.iter().zip(incs).rev())
            .find(|((f, _), _)| f == k)
            .map(|(_, v)| v)
            .or_else(|| {
                inserting
                    .then(|| last(&self.set_on_insert))
                    .flatten()
                    .map(|(_, v)| v)
            })
            .or_else(|| last(&self.set).map(|(_, v)| v))
            .or_else(|| doc.get(k))
    }

    /// The name of a field an [`Undo`] saved.
    fn field_name(&self, f: Written) -> &str {
        match f {
            Written::Set(i) => &self.set[i].0,
            Written::SetOnInsert(i) => &self.set_on_insert[i].0,
            Written::Inc(i) => &self.inc[i].0,
            Written::Sum(i) => &self.sum[i].0,
            Written::Min(i) => &self.min[i].0,
            Written::Max(i) => &self.max[i].0,
            Written::Unset(i) => &self.unset[i],
            Written::Push(i) => &self.push[i].0,
            Written::Pull(i) => &self.pull[i].0,
            Written::Rewrite(i) => self.rewrite[i].field(),
        }
    }
}

/// Appends `items` to the array `k` of `doc`, or sets it to them (once checked: the field is
/// absent or an array).
fn append(doc: &mut Document, k: &str, items: Vec<Bson>) {
    match doc.get_mut(k) {
        Some(Bson::Array(a)) => a.extend(items),
        _ => {
            doc.insert(k, Bson::Array(items));
        }
    }
}

/// Replaces the value of field `k` where it stands, or appends the field.
fn set_field(doc: &mut Document, k: &str, v: Bson) {
    match doc.get_mut(k) {
        Some(slot) => *slot = v,
        None => {
            doc.insert(k, v);
        }
    }
}

/// A field an update writes: the operator and the position in its list.
#[derive(Clone, Copy, Debug)]
enum Written {
    Set(usize),
    SetOnInsert(usize),
    Inc(usize),
    Sum(usize),
    Min(usize),
    Max(usize),
    Unset(usize),
    Push(usize),
    Pull(usize),
    Rewrite(usize),
}

/// What [`Update::prepare`] computed: the value each `$inc` writes, and what each rewrite
/// leaves in its field (`None`: the field is left out).
struct Prepared {
    /// The update's [`rewrite_if`](Update::rewrite_if) holds (or it has none): it writes.
    holds: bool,
    incs: Vec<Bson>,
    sums: Vec<Bson>,
    /// The value each `$min` / `$max` writes; `None` where it leaves the field as it is.
    mins: Vec<Option<Bson>>,
    maxs: Vec<Option<Bson>>,
    rewrites: Vec<Option<Bson>>,
}

/// A rewrite's new value.
trait Compute {
    fn compute(&self, doc: &Document) -> Result<Option<Bson>, String>;
}

impl Compute for Rewrite {
    /// The field's new value from its value `old` (`None`: missing), as the rewrite's
    /// aggregation expression computes it; `None` when it leaves the field out. Fails where
    /// the update is refused.
    fn compute(&self, doc: &Document) -> Result<Option<Bson>, String> {
        let old = doc.get(self.field());
        match self {
            Rewrite::Expr { expr, .. } => Ok(expr.eval(doc)?),
            Rewrite::ArrayPrefix {
                field,
                drop,
                prefix,
            } => match old {
                Some(Bson::Array(a)) => {
                    // `$slice` from past the end is empty.
                    let rest = &a[(*drop).min(a.len())..];
                    let mut new = Vec::with_capacity(prefix.len() + rest.len());
                    new.extend(prefix.iter().cloned());
                    new.extend(rest.iter().cloned());
                    Ok(Some(Bson::Array(new)))
                }
                other => Err(format!(
                    "cannot rewrite `{field}`: {} is not an array",
                    describe(other)
                )),
            },
            Rewrite::StringPrefix {
                field,
                drop,
                prefix,
            } => match old {
                Some(Bson::String(s)) => {
                    // `$substrCP` counts code points: a Rust `char` is one.
                    let rest = s.char_indices().nth(*drop).map_or("", |(i, _)| &s[i..]);
                    Ok(Some(Bson::String(format!("{prefix}{rest}"))))
                }
                other => Err(format!(
                    "cannot rewrite `{field}`: {} is not a string",
                    describe(other)
                )),
            },
            Rewrite::Shift { field, pieces } => {
                let shifted = |x: f64| {
                    pieces
                        .iter()
                        .find(|p| p.from as f64 <= x && x <= p.to as f64)
                };
                let new = match old {
                    // `$add` of an Int32 or Int64 and the Int64 `by` is an Int64; past its
                    // range, a Double.
                    Some(Bson::Int32(x)) => {
                        let x = i64::from(*x);
                        pieces
                            .iter()
                            .find(|p| p.from <= x && x <= p.to)
                            .map(|p| add_i64(x, p.by))
                    }
                    Some(Bson::Int64(x)) => pieces
                        .iter()
                        .find(|p| p.from <= *x && *x <= p.to)
                        .map(|p| add_i64(*x, p.by)),
                    Some(Bson::Double(x)) => shifted(*x).map(|p| Bson::Double(x + p.by as f64)),
                    Some(Bson::Decimal128(_)) => {
                        return Err(format!(
                        "cannot shift `{field}`: the in-memory store does no Decimal128 arithmetic"
                    ))
                    }
                    _ => None,
                };
                Ok(new.or_else(|| old.cloned()))
            }
        }
    }
}

/// `x + by` as `$add` of two Int64s: an Int64, or a Double when it overflows.
/// An expression's value.
trait Eval {
    fn eval(&self, doc: &Document) -> Result<Option<Bson>, String>;
}

impl Eval for Expr {
    /// The expression's value over `doc` (`None`: missing), as MongoDB computes it.
    fn eval(&self, doc: &Document) -> Result<Option<Bson>, String> {
        let null = |v: &Option<Bson>| matches!(v, None | Some(Bson::Null));
        let value = |e: &Expr| e.eval(doc).map(|v| v.unwrap_or(Bson::Null));
        Ok(match self {
            Expr::Field(f) => doc.get(f.as_str()).cloned(),
            Expr::Literal(v) => Some(v.clone()),
            Expr::IfNull(a, b) => match a.eval(doc)? {
                v if null(&v) => b.eval(doc)?,
                v => v,
            },
            Expr::Add(xs) => {
                let mut sum = Bson::Int32(0);
                for x in xs {
                    let v = x.eval(doc)?;
                    if null(&v) {
                        return Ok(Some(Bson::Null));
                    }
                    let v = v.unwrap_or(Bson::Null);
                    sum = match number::add(&sum, &v) {
                        Ok(s) => s,
                        // Integers past Int64: a Double, as `$add` gives.
                        Err(NumberError::Overflow) if is_integer(&sum) && is_integer(&v) => {
                            Bson::Double(number::as_f64(&sum) + number::as_f64(&v))
                        }
                        Err(_) => return Err(format!("$add only supports numbers, not {v:?}")),
                    };
                }
                Some(sum)
            }
            Expr::Divide(a, b) => {
                let (a, b) = (value(a)?, value(b)?);
                if matches!(a, Bson::Null) || matches!(b, Bson::Null) {
                    return Ok(Some(Bson::Null));
                }
                let number =
                    |v: &Bson| matches!(v, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_));
                if !number(&a) || !number(&b) {
                    return Err(format!(
                        "$divide of {a:?} by {b:?}: only Int32, Int64 and Double here"
                    ));
                }
                if number::as_f64(&b) == 0.0 {
                    return Err("can't $divide by zero".to_owned());
                }
                Some(Bson::Double(number::as_f64(&a) / number::as_f64(&b)))
            }
            Expr::Cond {
                test,
                then,
                otherwise,
            } => {
                if truthy(&value(test)?) {
                    then.eval(doc)?
                } else {
                    otherwise.eval(doc)?
                }
            }
            Expr::Gte(a, b) => Some(Bson::Boolean(
                compare_values(&value(a)?, &value(b)?).is_ge(),
            )),
            Expr::Lte(a, b) => Some(Bson::Boolean(
                compare_values(&value(a)?, &value(b)?).is_le(),
            )),
            Expr::And(xs) => {
                for x in xs {
                    if !truthy(&value(x)?) {
                        return Ok(Some(Bson::Boolean(false)));
                    }
                }
                Some(Bson::Boolean(true))
            }
            Expr::OfType {
                value,
                kinds,
                or_missing,
            } => Some(Bson::Boolean(match value.eval(doc)? {
                None => *or_missing,
                Some(v) => kinds.iter().any(|k| k.holds(&v)),
            })),
            Expr::Eq(a, b) => Some(Bson::Boolean(
                compare_values(&value(a)?, &value(b)?).is_eq(),
            )),
            Expr::Abs(a) => Some(match value(a)? {
                Bson::Null => Bson::Null,
                Bson::Int32(x) => x
                    .checked_abs()
                    .map_or(Bson::Int64(i64::from(x).abs()), Bson::Int32),
                Bson::Int64(x) => match x.checked_abs() {
                    Some(a) => Bson::Int64(a),
                    None => return Err(format!("can't take $abs of long long min ({x})")),
                },
                Bson::Double(x) => Bson::Double(x.abs()),
                // The sign is the top bit of the last byte (IEEE 754 decimal128, little-endian).
                Bson::Decimal128(d) => {
                    let mut bytes = d.bytes();
                    bytes[15] &= 0x7f;
                    Bson::Decimal128(bson::Decimal128::from_bytes(bytes))
                }
                v => return Err(format!("$abs only supports numeric types, not {v:?}")),
            }),
            Expr::Min(xs) | Expr::Max(xs) => {
                let keep = match self {
                    Expr::Min(_) => std::cmp::Ordering::Less,
                    _ => std::cmp::Ordering::Greater,
                };
                let mut best: Option<Bson> = None;
                for x in xs {
                    let v = x.eval(doc)?;
                    if null(&v) {
                        continue;
                    }
                    let v = v.expect("not missing");
                    if best.as_ref().is_none_or(|b| compare_values(&v, b) == keep) {
                        best = Some(v);
                    }
                }
                Some(best.unwrap_or(Bson::Null))
            }
            Expr::Concat(xs) => {
                let mut all = Vec::new();
                for x in xs {
                    match x.eval(doc)? {
                        None | Some(Bson::Null) => return Ok(Some(Bson::Null)),
                        Some(Bson::Array(a)) => all.extend(a),
                        Some(v) => {
                            return Err(format!("$concatArrays only supports arrays, not {v:?}"))
                        }
                    }
                }
                Some(Bson::Array(all))
            }
        })
    }
}

/// MongoDB's truth: false, null, missing (here null), undefined and zero are false.
fn truthy(v: &Bson) -> bool {
    match v {
        Bson::Boolean(b) => *b,
        Bson::Null | Bson::Undefined => false,
        Bson::Int32(x) => *x != 0,
        Bson::Int64(x) => *x != 0,
        Bson::Double(x) => *x != 0.0,
        Bson::Decimal128(d) => d.to_string().trim_start_matches('-').parse::<f64>() != Ok(0.0),
        _ => true,
    }
}

fn is_integer(v: &Bson) -> bool {
    matches!(v, Bson::Int32(_) | Bson::Int64(_))
}

fn add_i64(x: i64, by: i64) -> Bson {
    x.checked_add(by)
        .map_or_else(|| Bson::Double(x as f64 + by as f64), Bson::Int64)
}

/// A value's type, for messages.
fn describe(v: Option<&Bson>) -> String {
    match v {
        None => "a missing field".to_owned(),
        Some(Bson::Array(a)) => format!("an array of {} elements", a.len()),
        Some(v) => format!("a value of type {:?}", v.element_type()),
    }
}

/// The fields an update writes, as they were before it: see [`Update::undo_log`].
pub(crate) struct Undo {
    saved: Vec<(Written, Saved)>,
    inserting: bool,
}

enum Saved {
    /// The field's value (`None`: it did not exist).
    Value(Option<Bson>),
    /// The length of the array the update appends to.
    Len(usize),
}

impl Undo {
    /// How many bytes `update` added to `doc`'s BSON size (negative: removed), from the
    /// fields it changed only; `None` when a value involved does not serialize.
    pub(crate) fn size_change(&self, doc: &Document, update: &Update) -> Option<isize> {
        let field = |k: &str, v: Option<&Bson>| v.map_or(Some(0), |v| field_bytes(k, v));
        let mut change = 0_isize;
        for (f, was) in &self.saved {
            let k = update.field_name(*f);
            match was {
                Saved::Value(old) => {
                    change += field(k, doc.get(k))? as isize;
                    change -= field(k, old.as_ref())? as isize;
                }
                // An array grows by its new elements.
                Saved::Len(n) => {
                    let Some(Bson::Array(a)) = doc.get(k) else {
                        return None;
                    };
                    for (i, v) in a.iter().enumerate().skip(*n) {
                        change += element_at_bytes(i, v)? as isize;
                    }
                }
            }
        }
        Some(change)
    }

    /// Whether `update` changed `doc` (as [`Undo`] saved it before): a field's value (its
    /// type, its bytes, a document's field order: [`identical`]), its presence, or an
    /// appended array's length differs. MongoDB's `nModified`.
    pub(crate) fn changed(&self, doc: &Document, update: &Update) -> bool {
        self.saved.iter().any(|(f, was)| {
            let now = doc.get(update.field_name(*f));
            match was {
                Saved::Value(old) => match (now, old) {
                    (Some(now), Some(old)) => !identical(now, old),
                    (now, old) => now.is_some() != old.is_some(),
                },
                Saved::Len(n) => !matches!(now, Some(Bson::Array(a)) if a.len() == *n),
            }
        })
    }

    /// Puts `doc` back as it was before `update` applied, field order included (an update
    /// only replaces values in place or appends fields, and the appended ones are removed),
    /// and gives `update` back the items [`Update::apply_taking`] moved into `doc`.
    pub(crate) fn restore(self, doc: &mut Document, update: &mut Update) {
        for (f, was) in self.saved {
            let taken = match f {
                Written::Push(i) => update.takes(i, self.inserting).then_some(i),
                _ => None,
            };
            let k = update.field_name(f);
            let items = match was {
                Saved::Value(Some(v)) => {
                    set_field(doc, k, v);
                    None
                }
                Saved::Value(None) => doc.remove(k),
                Saved::Len(n) => match doc.get_mut(k) {
                    Some(Bson::Array(a)) => Some(Bson::Array(a.split_off(n))),
                    _ => None,
                },
            };
            if let (Some(i), Some(Bson::Array(items))) = (taken, items) {
                if update.push[i].1.is_empty() {
                    update.push[i].1 = items;
                }
            }
        }
    }
}

/// Whether two values are the same BSON: the same type and the same bytes (a double by its
/// bits, a document's fields in the same order), as MongoDB tells a `$set` that changes
/// nothing.
fn identical(a: &Bson, b: &Bson) -> bool {
    let documents = |x: &Document, y: &Document| {
        x.len() == y.len()
            && (x.iter().zip(y)).all(|((kx, vx), (ky, vy))| kx == ky && identical(vx, vy))
    };
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => x.to_bits() == y.to_bits(),
        (Bson::Document(x), Bson::Document(y)) => documents(x, y),
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical(p, q))
        }
        (Bson::JavaScriptCodeWithScope(x), Bson::JavaScriptCodeWithScope(y)) => {
            x.code == y.code && documents(&x.scope, &y.scope)
        }
        _ => std::mem::discriminant(a) == std::mem::discriminant(b) && a == b,
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
