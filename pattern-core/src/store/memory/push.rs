//! The series push, done natively (see [`Store::push_open`](crate::store::Store::push_open)): the
//! key's open document straight off the series' open-document index, the items appended in
//! place after the size check, or a new document inserted as the upsert would build it. Any
//! document it does not handle goes through the generic update or upsert, with the same
//! result; the oracle tests below check that the two leave the same documents and indexes.

use bson::{Bson, Document};

use super::collection::{Collection, PushShape};
use super::index::Key;
use super::plan::keys_sorted_by;
use crate::spec::SeriesSpec;
use crate::store::query::eval::is_number;
use crate::store::query::{Filter, Update};
use crate::store::Kept;
use crate::Result;

impl Collection {
    /// [`Collection::first_in_order`] for the one query shape every push sends (the series'
    /// open document: an equality on the first key of a partial index, then exactly that
    /// index's partial filter, then any other conditions, sorted by the index), read straight
    /// off the index's entries: `Some(the first match, if any)`. `None` for any other query,
    /// or when the first entry fails the other conditions: those go through
    /// [`Collection::plan`]. It answers exactly as the plan would: the entries of such an
    /// index under that value are the matches of the query without its other conditions (see
    /// [`MemIndex::covers`]).
    pub(super) fn first_open(
        &self,
        filter: &Filter,
        sort: &[(crate::store::query::Path, i32)],
    ) -> Option<Option<Key>> {
        let Filter::And(conditions) = filter else {
            return None;
        };
        let Some((Filter::Eq(path, value), rest)) = conditions.split_first() else {
            return None;
        };
        if !crate::store::query::is_plain_scalar(value) || matches!(value, Bson::Null) {
            return None;
        }
        // The index, and the conditions beyond its partial filter (checked on the document).
        let (index, residual) = self.indexes.iter().find_map(|ix| {
            let partial = match &ix.spec.partial {
                Some(Filter::And(fs)) => &fs[..],
                Some(leaf) => std::slice::from_ref(leaf),
                None => return None,
            };
            let first = ix.spec.keys.first().is_some_and(|(k, _)| k == path);
            let residual = rest.strip_prefix(partial).filter(|_| first)?;
            Some((ix, residual))
        })?;
        let order = &index.spec.keys[1..];
        let backward = if keys_sorted_by(order, sort, false) {
            false
        } else if keys_sorted_by(order, sort, true) {
            true
        } else {
            return None;
        };
        match index.first_under(value, backward) {
            // The first entry fails the other conditions: a later one may match (the plan
            // finds it).
            Some(id) if !residual.iter().all(|f| f.matches(&self.docs[id].doc)) => None,
            first => Some(first.cloned()),
        }
    }

    /// The series push natively (see [`Store::push_open`](crate::store::Store::push_open)): the
    /// key's open document straight off the series' open-document index, then the push's
    /// update (its `$inc`, `$push` and the `$min`/`$max`/`$inc` of the values it keeps)
    /// applied in place ([`Push::apply_shaped`]: the bounds' index entry waits while the
    /// bucket is open), or as any update is where that declines; or the new document, with
    /// its kept values and marks, inserted as the upsert would make it. `None` (nothing done)
    /// where the upsert must decide (a validated collection, no such index, a key that is not
    /// a plain scalar, a document whose number field is not a number): it runs as on any
    /// store, with the same result.
    pub(super) fn push_open(
        &mut self,
        spec: &SeriesSpec<'_>,
        key: &Bson,
        items: &mut Vec<Bson>,
        kept: &Kept,
        seq: i64,
        new_id: &dyn Fn() -> Bson,
    ) -> Option<Result<bool>> {
        // A validated collection: every write through the checked update and insert.
        if self.validator.is_some() {
            return None;
        }
        let open = (self.indexes.iter()).position(|ix| spec.is_open_index(&ix.spec))?;
        if !crate::store::query::is_plain_scalar(key) || matches!(key, Bson::Null) {
            return None;
        }
        let window = spec.window(kept).zip(spec.span_bounds());
        // The update's operators applied in place, with no update built.
        let n = i32::try_from(items.len()).ok()?;
        let vals = spec.kept_ops(kept);
        let push = Push::series(spec, n, vals.ops(), kept.items_bytes);
        let shape = self.push_shape(&push);
        let Collection {
            docs,
            indexes,
            clock,
            pending,
            ..
        } = &mut *self;
        // The `_id` stays borrowed from the index: copied only where an entry moves.
        let candidate = indexes[open].first_under(key, true);
        // Cut by span, the entry found is the open document of the latest window: the one to
        // push into when it is of the items' window; when its window is earlier, the items'
        // window has no open document (a new one opens); anything else goes through the
        // upsert's query.
        let candidate = match (candidate, window) {
            (Some(id), Some((w, (min, max, span)))) => {
                let doc = &docs.get(id)?.doc;
                let time = |f: &str| match doc.get(f) {
                    Some(Bson::DateTime(d)) => Some(d.timestamp_millis()),
                    _ => None,
                };
                let end = w.saturating_add(span);
                match (time(min)?, time(max)?) {
                    (lo, _) if lo < w => None,
                    (lo, hi) if lo < end && hi < end => Some(id),
                    _ => return None,
                }
            }
            (candidate, _) => candidate,
        };
        let Some(id) = candidate else {
            // Its entries in the indexes on kept values wait, as a push into it leaves them:
            // the pushes to come move its bounds.
            let defer = shape.map_or(0, |(keyed, filtered)| keyed & !filtered & !(1_u64 << open));
            return Some(self.open_new(spec, key, items, kept, seq, new_id, defer));
        };
        // Every index's entry may wait but the open-document index's, which the next push
        // reads; the document is in that one (it was found there).
        let defer = !(1_u64 << open);
        let stored = docs.get_mut(id)?;
        let applied = shape.and_then(|shape| {
            push.apply_shaped(stored, indexes, clock, items, Some(open), defer, shape)
        });
        match applied {
            Some(Ok((_, moved))) => {
                if moved.is_empty() {
                    return Some(Ok(false));
                }
                let id = id.clone();
                if moved.file(indexes, pending, &stored.doc, &id) {
                    self.settle();
                }
                Some(Ok(false))
            }
            Some(Err(e)) => Some(Err(e)),
            None => {
                let id = id.clone();
                // Of the series (`SeriesSpec::in_series`): a number, or none; else declined:
                // the upsert's query passes over it.
                let of_series = (self.docs.get(&id))
                    .is_some_and(|s| s.doc.get(spec.order.field()).is_none_or(is_number));
                if !of_series {
                    return None;
                }
                self.settle();
                let mut update = spec.push_update(std::mem::take(items), kept);
                let done = self.update(spec.collection, &id, &mut update, None);
                if done.is_err() {
                    // Refused, nothing applied: the items are still in the update.
                    *items = std::mem::take(&mut update.push[0].1);
                }
                Some(done.map(|_| false))
            }
        }
    }

    /// Opens document `seq` holding `items` (and their kept values), as the push's upsert
    /// would: the items move into it, and back should it be refused. `defer`: as
    /// [`Collection::insert_deferring`] takes it.
    #[allow(clippy::too_many_arguments)]
    fn open_new(
        &mut self,
        spec: &SeriesSpec<'_>,
        key: &Bson,
        items: &mut Vec<Bson>,
        kept: &Kept,
        seq: i64,
        new_id: &dyn Fn() -> Bson,
        defer: u64,
    ) -> Result<bool> {
        let doc = spec.new_doc_taking(key, new_id(), seq, items, kept);
        match self.insert_deferring(spec.collection, doc, defer) {
            Ok(()) => Ok(true),
            Err(refused) => {
                let (e, mut doc) = *refused;
                if let Some(Bson::Array(taken)) = doc.remove(spec.items_field) {
                    *items = taken;
                }
                Err(e)
            }
        }
    }

    /// [`Push::shape`] of `push` on this collection's indexes, remembered until a push of
    /// other fields or a change of index.
    fn push_shape(&mut self, push: &Push<'_>) -> Option<(u64, u64)> {
        let kept = &push.kept;
        let known = self.push_shape.as_ref().filter(|s| {
            let n = kept.sum.len() + kept.min.len() + kept.max.len();
            s.count == push.count
                && s.array == push.array
                && s.kept.len() == n
                && (s.kept.iter()).zip(kept.fields()).all(|(a, b)| a == b)
        });
        if let Some(s) = known {
            return s.moved;
        }
        let moved = push.shape(&self.indexes);
        self.push_shape = Some(PushShape {
            count: push.count.to_owned(),
            array: push.array.to_owned(),
            kept: push.kept.fields().map(str::to_owned).collect(),
            moved,
        });
        moved
    }

    /// [`Collection::update`] for the update every push into an open document sends: one
    /// `$inc` of an Int32 field and one `$push` to an array, top-level fields that no index
    /// keys on, and the values a series keeps beside (`$inc`, `$min`, `$max` of top-level
    /// fields that hold a value of the same fixed-size type, which non-unique indexes may
    /// key on), applied in place with no undo log: everything that can refuse it (the size
    /// limit) is checked first. `None` (nothing done) for any other update or document, which
    /// goes through [`Collection::update`]; the result is the same either way.
    ///
    /// `defer`: the indexes (bit `i`: index `i`) whose entry may wait in
    /// [`Collection::pending`] rather than move now (see [`Collection::settle`]).
    pub(super) fn push_in_place(
        &mut self,
        coll: &str,
        id: &Key,
        update: &mut Update,
        fields: Option<&[&str]>,
        defer: u64,
    ) -> Option<Result<Option<Document>>> {
        let Update {
            inc,
            push,
            sum,
            min,
            max,
            ..
        } = update;
        let ([(count, n)], [(array, items)]) = (&inc[..], &mut push[..]) else {
            return None;
        };
        if !update.set.is_empty()
            || !update.pull.is_empty()
            || !update.rewrite.is_empty()
            || !update.unset.is_empty()
        {
            return None;
        }
        let push = Push {
            coll,
            count,
            n: *n,
            array,
            fields,
            number: None,
            kept: KeptOps { sum, min, max },
            items_bytes: None,
        };
        self.push_in_place_of(&push, id, items, None, defer)
    }

    /// [`Collection::push_in_place`]'s work, for `push` (of `items`) into document `id`:
    /// `held_by` an index known to hold it. Refused ([`Err`]), nothing changed and `items`
    /// are still there; declined (`None`), the same.
    fn push_in_place_of(
        &mut self,
        push: &Push<'_>,
        id: &Key,
        items: &mut Vec<Bson>,
        held_by: Option<usize>,
        defer: u64,
    ) -> Option<Result<Option<Document>>> {
        if self.validator.is_some() {
            return None; // the checked update
        }
        let shape = self.push_shape(push)?;
        let Collection {
            docs,
            indexes,
            clock,
            pending,
            ..
        } = self;
        let stored = docs.get_mut(id)?;
        let applied = push.apply_shaped(stored, indexes, clock, items, held_by, defer, shape)?;
        let (before, moved) = match applied {
            Ok(done) => done,
            Err(e) => return Some(Err(e)),
        };
        if moved.file(indexes, pending, &stored.doc, id) {
            self.settle();
        }
        Some(Ok(before))
    }
}

mod in_place;
#[cfg(test)]
mod tests;

pub(super) use in_place::{KeptOps, Push};
