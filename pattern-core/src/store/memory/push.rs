//! The series push, done natively (see [`Store::push_open`](crate::store::Store::push_open)): the
//! key's open document straight off the series' open-document index, the items appended in
//! place after the size check, or a new document inserted as the upsert would build it. Any
//! document it does not handle goes through the generic update or upsert, with the same
//! result; the oracle tests below check that the two leave the same documents and indexes.

use bson::{Bson, Document};

use super::collection::{Collection, PushShape, PENDING_MAX};
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

    /// The series push natively (see [`Store::push_open`](crate::store::Store::push_open)): the key's open document straight
    /// off the series' open-document index, the items pushed in place, or a new document
    /// inserted as the upsert would make it. `None` (nothing done) when the collection lacks
    /// that index, or the document is one [`Push::apply`] declines: then the upsert
    /// runs as on any store, with the same result.
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
        if !spec.keeps.is_none() {
            return self.push_open_keeping(spec, key, items, kept, seq, new_id);
        }
        let count = spec.count_field;
        let open = self
            .indexes
            .iter()
            .position(|ix| spec.is_open_index(&ix.spec));
        let (Some(open), Ok(n)) = (open, i32::try_from(items.len())) else {
            return None;
        };
        if !crate::store::query::is_plain_scalar(key) || matches!(key, Bson::Null) {
            return None;
        }
        // Its entries under the key are the key's open documents (see `first_open`).
        let Collection {
            docs,
            indexes,
            clock,
            ..
        } = self;
        match indexes[open].first_under(key, true) {
            Some(id) => {
                // A document whose number is neither absent nor a number is not of the
                // series: declined, the upsert's query passes over it.
                let push = Push {
                    coll: spec.collection,
                    count,
                    n,
                    array: spec.items_field,
                    fields: None,
                    number: Some(spec.order.field()),
                    kept: KeptOps::NONE,
                };
                let stored = docs.get_mut(id)?;
                let moved = match push.apply(stored, indexes, clock, items, Some(open), 0)? {
                    Ok((_, moved)) => moved,
                    Err(e) => return Some(Err(e)),
                };
                // The `_id` is copied only when an entry moves (the document filled).
                if !moved.is_empty() {
                    let id = id.clone();
                    moved.rekey(indexes, &stored.doc, &id);
                }
                Some(Ok(false))
            }
            None => Some(self.open_new(spec, key, items, &Kept::NONE, seq, new_id)),
        }
    }

    /// [`Collection::push_open`] for a series that keeps values beside its items: the open
    /// document straight off the open-document index, then the push's update (with its
    /// `$min`/`$max`/`$inc`) applied in place ([`Collection::push_in_place`]: the bounds'
    /// index entry moves only when a bound does), or as any update is where that declines; or
    /// the new document, with its kept values and marks. `None` where
    /// the upsert must decide (no such index, a key that is not a plain scalar, a document
    /// whose number field is not a number).
    fn push_open_keeping(
        &mut self,
        spec: &SeriesSpec<'_>,
        key: &Bson,
        items: &mut Vec<Bson>,
        kept: &Kept,
        seq: i64,
        new_id: &dyn Fn() -> Bson,
    ) -> Option<Result<bool>> {
        let open = (self.indexes.iter()).position(|ix| spec.is_open_index(&ix.spec))?;
        if !crate::store::query::is_plain_scalar(key) || matches!(key, Bson::Null) {
            return None;
        }
        let window = spec.window(kept).zip(spec.span_bounds());
        let candidate = self.indexes[open].first_under(key, true).cloned();
        // Cut by span, the entry found is the open document of the latest window: the one to
        // push into when it is of the items' window; when its window is earlier, the items'
        // window has no open document (a new one opens); anything else goes through the
        // upsert's query.
        let candidate = match (candidate, window) {
            (Some(id), Some((w, (min, max, span)))) => {
                let doc = &self.docs.get(&id)?.doc;
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
        match candidate {
            Some(id) => {
                let mut update = spec.push_update(std::mem::take(items), kept);
                // Every index's entry may wait but the open-document index's, which the next
                // push reads.
                let defer = !(1_u64 << open);
                // Of the series (`SeriesSpec::in_series`): a number, or none; else declined.
                let number = Some(spec.order.field());
                let in_place =
                    self.push_in_place_of(spec.collection, &id, &mut update, None, number, defer);
                let done = match in_place {
                    Some(done) => done,
                    None => {
                        let of_series = (self.docs.get(&id))
                            .is_some_and(|s| s.doc.get(spec.order.field()).is_none_or(is_number));
                        if !of_series {
                            // Not of the series: the upsert's query passes over it.
                            *items = std::mem::take(&mut update.push[0].1);
                            return None;
                        }
                        self.settle();
                        self.update(spec.collection, &id, &mut update, None)
                    }
                };
                match done {
                    Ok(_) => Some(Ok(false)),
                    Err(e) => {
                        // Refused, nothing applied: the items are still in the update.
                        *items = std::mem::take(&mut update.push[0].1);
                        Some(Err(e))
                    }
                }
            }
            None => Some(self.open_new(spec, key, items, kept, seq, new_id)),
        }
    }

    /// Opens document `seq` holding `items` (and their kept values), as the push's upsert
    /// would: the items move into it, and back should it be refused.
    fn open_new(
        &mut self,
        spec: &SeriesSpec<'_>,
        key: &Bson,
        items: &mut Vec<Bson>,
        kept: &Kept,
        seq: i64,
        new_id: &dyn Fn() -> Bson,
    ) -> Result<bool> {
        let doc = spec.new_doc_taking(key, new_id(), seq, items, kept);
        match self.insert_or_return(spec.collection, doc) {
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
        let known = self.push_shape.as_ref().filter(|s| {
            s.count == push.count
                && s.array == push.array
                && s.kept.iter().map(String::as_str).eq(push.kept.fields())
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
        self.push_in_place_of(coll, id, update, fields, None, defer)
    }

    /// [`Collection::push_in_place`] of a series push: declined, too, when the document's
    /// `number` field holds anything but a number ([`Push::number`]).
    fn push_in_place_of(
        &mut self,
        coll: &str,
        id: &Key,
        update: &mut Update,
        fields: Option<&[&str]>,
        number: Option<&str>,
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
        if self.validator.is_some() {
            return None; // the checked update
        }
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
            number,
            kept: KeptOps { sum, min, max },
        };
        let shape = self.push_shape(&push)?;
        let Collection {
            docs,
            indexes,
            clock,
            pending,
            ..
        } = self;
        let stored = docs.get_mut(id)?;
        let applied = push.apply_shaped(stored, indexes, clock, items, None, defer, shape)?;
        let (before, mut moved) = match applied {
            Ok(done) => done,
            Err(e) => return Some(Err(e)),
        };
        let waiting = std::mem::take(&mut moved.deferred);
        moved.rekey(indexes, &stored.doc, id);
        pending.extend(waiting.into_iter().map(|(i, key)| (i, id.clone(), key)));
        if pending.len() > PENDING_MAX {
            self.settle();
        }
        Some(Ok(before))
    }
}

mod in_place;
#[cfg(test)]
mod tests;

pub(super) use in_place::{KeptOps, Push};
