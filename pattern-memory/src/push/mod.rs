//! The series push, done natively (see [`Store::push_open`](pattern_store::Store::push_open)): the
//! key's open document straight off the series' open-document index, the items appended in
//! place after the size check, or a new document inserted as the upsert would build it. Any
//! document it does not handle goes through the generic update or upsert, with the same
//! result; the oracle tests below check that the two leave the same documents and indexes.

use std::cmp::Ordering;

use bson::{Bson, Document};
use smallvec::SmallVec;

use super::collection::{
    empty_document, Clock, Collection, Pending, PushShape, Stored, PENDING_MAX,
};
use super::index::MemIndex;
use super::key::Key;
use pattern_store::codec::order::compare_values;
use pattern_store::codec::size::{check_size, document_bytes};
use pattern_store::query::eval::is_number;
use pattern_store::query::{Filter, Path, Update};
use pattern_store::Result;
use pattern_store::{KeptOps, OpenPush};

impl Collection {
    /// The series push natively (see [`Store::push_open`](pattern_store::Store::push_open)): the
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
        push: &OpenPush<'_>,
        items: &mut Vec<Bson>,
    ) -> Option<Result<bool>> {
        // A validated collection: every write through the checked update and insert.
        if self.validator.is_some() {
            return None;
        }
        let open = (self.indexes.iter()).position(|ix| push.is_open_index(&ix.spec))?;
        let key = push.key;
        if !pattern_store::query::is_plain_scalar(key) || matches!(key, Bson::Null) {
            return None;
        }
        // The update's operators applied in place, with no update built.
        let n = i32::try_from(items.len()).ok()?;
        let op = Push::series(push, n);
        let shape = self.push_shape(&op);
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
        let candidate = match (candidate, push.window) {
            (Some(id), Some(w)) => {
                let doc = &docs.get(id)?.doc;
                let time = |f: &str| match doc.get(f) {
                    Some(Bson::DateTime(d)) => Some(d.timestamp_millis()),
                    _ => None,
                };
                let end = w.end;
                // The open documents ordered by their earliest time (cut by span): none after
                // this one starts in the window. Otherwise (a window around the item, in a
                // collection that keeps its buckets' width) another may: the query decides.
                let by_start = push.open_order[0].0 == w.min_field;
                match (time(w.min_field)?, time(w.max_field)?) {
                    (lo, _) if lo < w.start && by_start => None,
                    (lo, hi) if lo >= w.start && lo < end && hi < end => Some(id),
                    _ => return None,
                }
            }
            (candidate, _) => candidate,
        };
        let Some(id) = candidate else {
            // Its entries in the indexes on kept values wait, as a push into it leaves them:
            // the pushes to come move its bounds.
            let defer = shape.map_or(0, |(keyed, filtered)| keyed & !filtered & !(1_u64 << open));
            return Some(self.open_new(push, items, defer));
        };
        // Every index's entry may wait but the open-document index's, which the next push
        // reads; the document is in that one (it was found there).
        let defer = !(1_u64 << open);
        let stored = docs.get_mut(id)?;
        let applied = shape.and_then(|shape| {
            op.apply_shaped(stored, indexes, clock, items, Some(open), defer, shape)
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
                    .is_some_and(|s| s.doc.get(push.number_field).is_none_or(is_number));
                if !of_series {
                    return None;
                }
                self.settle();
                let mut update = push.update(std::mem::take(items));
                let done = self.update(push.collection, &id, &mut update, None);
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
    fn open_new(&mut self, push: &OpenPush<'_>, items: &mut Vec<Bson>, defer: u64) -> Result<bool> {
        let doc = push.new_doc_taking(items);
        match self.insert_deferring(push.collection, doc, defer) {
            Ok(()) => Ok(true),
            Err(refused) => {
                let (e, mut doc) = *refused;
                if let Some(Bson::Array(taken)) = doc.remove(push.items_field) {
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
            same(&s.count, push.count)
                && same(&s.array, push.array)
                && s.kept.len() == n
                && (s.kept.iter()).zip(kept.fields()).all(|(a, b)| same(a, b))
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
        // Nothing to append: the generic update, which tells whether anything changed.
        if items.is_empty()
            || !update.set.is_empty()
            || !update.push_sort.is_empty()
            || !update.pull.is_empty()
            || !update.rewrite.is_empty()
            || !update.unset.is_empty()
            || update.require.is_some()
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
            kept: KeptRefs { sum, min, max },
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

// The push applied in place to the open document (`Collection::push_in_place`): which indexes
// it moves, the document changed with no undo log once everything that can refuse it is
// checked, and the index entries to move (or to leave waiting).

/// The update every push into an open document sends: `{$inc: {count: n}, $push: {array:
/// {$each: items}}}`, on top-level fields (see [`Collection::push_in_place`]); with `fields`,
/// as [`Collection::update`] takes them.
pub(crate) struct Push<'a> {
    pub(crate) coll: &'a str,
    pub(crate) count: &'a str,
    pub(crate) n: i32,
    pub(crate) array: &'a str,
    pub(crate) fields: Option<&'a [&'a str]>,
    /// The series' number field: a document where it holds anything but a number is declined
    /// (it is not of the series: see `SeriesSpec::open`).
    pub(crate) number: Option<&'a str>,
    /// The values kept beside the items.
    pub(crate) kept: KeptRefs<'a>,
    /// The items' size, when measured ([`Kept::items_bytes`](crate::series::Kept::items_bytes)).
    pub(crate) items_bytes: Option<usize>,
}

/// The `$inc` (`sum`), `$min` and `$max` of the values a series keeps beside its items.
pub(crate) struct KeptRefs<'a> {
    pub(crate) sum: &'a [(Path, Bson)],
    pub(crate) min: &'a [(Path, Bson)],
    pub(crate) max: &'a [(Path, Bson)],
}

impl<'a> KeptRefs<'a> {
    /// A prepared push's operators, borrowed.
    fn of(kept: &'a KeptOps) -> Self {
        KeptRefs {
            sum: &kept.sum,
            min: &kept.min,
            max: &kept.max,
        }
    }
}

impl KeptRefs<'_> {
    pub(crate) fn fields(&self) -> impl Iterator<Item = &str> + Clone {
        (self.sum.iter().chain(self.min).chain(self.max)).map(|(f, _)| f.as_str())
    }

    /// What each writes, where it changes the value (`$min` of a later date writes nothing):
    /// the position of its field in `found` (the document's kept fields, by name) and the new
    /// value; `None` where the in-place push declines: a field missing, a value of another
    /// type than the field's or of no fixed size (the document's size would change), a sum
    /// that fails or changes type. [`Update::prepare`] decides those.
    fn writes(&self, found: &[(&str, &mut Bson)]) -> Option<SmallVec<[(usize, Bson); 2]>> {
        let fixed = |a: &Bson, b: &Bson| {
            std::mem::discriminant(a) == std::mem::discriminant(b)
                && matches!(
                    a,
                    Bson::Int32(_)
                        | Bson::Int64(_)
                        | Bson::Double(_)
                        | Bson::DateTime(_)
                        | Bson::Decimal128(_)
                        | Bson::Boolean(_)
                )
        };
        let slot = |f: &Path| found.iter().position(|(g, _)| same(g, f));
        let mut out = SmallVec::new();
        for (f, v) in self.sum {
            let at = slot(f)?;
            let old = &*found[at].1;
            let new = pattern_store::codec::number::add(old, v).ok()?;
            if !fixed(old, &new) {
                return None;
            }
            out.push((at, new));
        }
        let bounds = [(self.min, Ordering::Less), (self.max, Ordering::Greater)];
        for (ops, replaces) in bounds {
            for (f, v) in ops {
                let at = slot(f)?;
                let old = &*found[at].1;
                if !fixed(old, v) {
                    return None;
                }
                if compare_values(v, old) == replaces {
                    out.push((at, v.clone()));
                }
            }
        }
        Some(out)
    }
}

/// The partial indexes a [`Push`] moved the document into (`now` bit set) or out of: bit `i`
/// for index `i`.
#[must_use]
pub(crate) struct Moved64 {
    pub(crate) changed: u64,
    pub(crate) now: u64,
    /// The indexes keyed on a kept value the push changed, each with the document's key in
    /// it before.
    pub(crate) keys: Vec<(usize, Option<Vec<Key>>)>,
    /// The same for the indexes whose entry is left where it was (filed under that key), to
    /// wait in [`Collection::pending`].
    pub(crate) deferred: Vec<(usize, Option<Vec<Key>>)>,
}

impl Moved64 {
    /// Moves document `id` (now `doc`) in or out of the indexes it entered or left.
    /// Whether no index entry moves.
    pub(crate) fn is_empty(&self) -> bool {
        self.changed == 0 && self.keys.is_empty() && self.deferred.is_empty()
    }

    /// Moves document `id`'s entries (the document now `doc`), the deferred ones left
    /// waiting in `pending` ([`Collection::pending`]); whether those are now so many that
    /// the collection should settle them ([`Collection::settle`]).
    pub(crate) fn file(
        mut self,
        indexes: &mut [MemIndex],
        pending: &mut Vec<Pending>,
        doc: &Document,
        id: &Key,
    ) -> bool {
        let waiting = std::mem::take(&mut self.deferred);
        if !self.is_empty() {
            self.rekey(indexes, doc, id);
        }
        pending.extend(waiting.into_iter().map(|(i, key)| (i, id.clone(), key)));
        pending.len() > PENDING_MAX
    }

    pub(crate) fn rekey(self, indexes: &mut [MemIndex], doc: &Document, id: &Key) {
        for (i, old) in self.keys {
            let ix = &mut indexes[i];
            let new = ix.key_of(doc);
            ix.rekey(old, new, id);
        }
        if self.changed == 0 {
            return;
        }
        for (i, ix) in indexes.iter_mut().enumerate() {
            if self.changed & (1 << i) != 0 {
                let values = Some(ix.values_of(doc));
                let (old, new) = if self.now & (1 << i) != 0 {
                    (None, values)
                } else {
                    (values, None)
                };
                ix.rekey(old, new, id);
            }
        }
    }
}

impl<'a> Push<'a> {
    /// The `n` items of a prepared push (with its kept values' operators), which declines a
    /// document whose number field is not a number ([`Push::number`]).
    pub(crate) fn series(push: &'a OpenPush<'_>, n: i32) -> Self {
        Push {
            coll: push.collection,
            count: push.count_field,
            n,
            array: push.items_field,
            fields: None,
            number: Some(push.number_field),
            kept: KeptRefs::of(&push.kept),
            items_bytes: push.items_bytes,
        }
    }

    /// Which indexes the push moves: `(keyed, filtered)`, bit `i` for index `i` (see
    /// [`PushShape`](super::collection::PushShape)); `None` for a push it declines. Depends
    /// only on the fields' names and the indexes, so a collection remembers it.
    pub(crate) fn shape(&self, indexes: &[MemIndex]) -> Option<(u64, u64)> {
        let (count, array) = (self.count, self.array);
        let plain = |f: &str| f != "_id" && !f.contains('.');
        if count == array || !plain(count) || !plain(array) {
            return None;
        }
        // Kept values: each a top-level field of its own.
        let kept = self.kept.fields();
        for (i, f) in kept.clone().enumerate() {
            if !plain(f) || f == count || f == array || kept.clone().take(i).any(|g| g == f) {
                return None;
            }
        }
        // The indexes whose partial filter reads a written field: the document may enter or
        // leave them (bit i: index i).
        let mut filtered = 0_u64;
        // The indexes keyed on a kept value: their entry moves when it does (bit i: index i).
        let mut keyed = 0_u64;
        for (i, ix) in indexes.iter().enumerate() {
            let reads = |fs: &[String]| fs.iter().any(|f| f == count || f == array);
            let reads_kept = |fs: &[String]| fs.iter().any(|f| kept.clone().any(|k| k == f));
            if reads(&ix.key_fields) || i >= 64 || reads_kept(&ix.filter_fields) {
                return None;
            }
            if reads_kept(&ix.key_fields) {
                if ix.spec.unique {
                    return None; // moving in it could conflict: the full checks
                }
                keyed |= 1 << i;
            }
            if reads(&ix.filter_fields) {
                if ix.spec.unique {
                    return None; // entering it could conflict: the full checks
                }
                filtered |= 1 << i;
            }
        }
        Some((keyed, filtered))
    }

    /// Applies the push to `stored` in place, `items` moved to the end of its array, with no
    /// undo log: everything that can refuse it (the size limit) is checked first, and on an
    /// error nothing changed; applied, the document gets the collection's next tick
    /// (`clock`). `held_by`: an index known to hold the document (it was found
    /// there), whose filter need not be read again. Returns the fields wanted as they were and
    /// the index entries to move; `None` (nothing done) for a document or indexes it does not
    /// handle: a count that is no Int32 or would overflow, no array, an index on a written field.
    /// `(keyed, filtered)`: the indexes' [`Push::shape`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn apply_shaped(
        &self,
        stored: &mut Stored,
        indexes: &[MemIndex],
        clock: &mut Clock,
        items: &mut Vec<Bson>,
        held_by: Option<usize>,
        defer: u64,
        (keyed, filtered): (u64, u64),
    ) -> Option<Result<(Option<Document>, Moved64)>> {
        let before = match self.fields {
            None => None,
            Some([]) => Some(empty_document().clone()),
            Some(_) => return None,
        };
        let (count, array) = (self.count, self.array);
        // The indexes holding the document; once its count `c` is known, a filter of the
        // open-document index's form (`count < size`) is read off it, any other matched.
        let holding = |doc: &Document, known: Option<usize>, c: Option<i32>| {
            let mut held = 0_u64;
            for (i, ix) in indexes.iter().enumerate() {
                let holds = || match (&ix.spec.partial, c) {
                    (Some(Filter::Lt(p, Bson::Int32(n))), Some(c)) if p == count => c < *n,
                    _ => ix.in_filter(doc),
                };
                if filtered & (1 << i) != 0 && (known == Some(i) || holds()) {
                    held |= 1 << i;
                }
            }
            held
        };
        let Stored {
            doc,
            bytes,
            stamp,
            pending,
        } = stored;
        // An entry may wait only in an index whose partial filter the push leaves alone; one
        // that waits already where it may not: the caller settles first (declined).
        let defer = defer & keyed & !filtered;
        if *pending & !defer != 0 {
            return None;
        }
        // Copied only when a transaction's copy of the collection shares it.
        let doc = std::sync::Arc::make_mut(doc);
        let held = holding(doc, held_by, None);
        // Where the document's entries are filed in the indexes keyed on a kept value (its
        // key before the writes), for those not waiting yet: moved now or left to wait, should
        // a kept value move.
        let (mut keys, mut deferred) = (Vec::new(), Vec::new());
        if keyed & !*pending != 0 {
            for (i, ix) in indexes.iter().enumerate() {
                let bit = 1_u64 << i;
                if keyed & bit == 0 || *pending & bit != 0 {
                    continue; // not keyed on a kept value, or already waiting
                }
                let filed = if defer & bit != 0 {
                    &mut deferred
                } else {
                    &mut keys
                };
                filed.push((i, ix.key_of(doc)));
            }
        }
        // The fields in one pass (no hashing), the kept ones among them.
        let names: SmallVec<[&str; 4]> = self.kept.fields().collect();
        let mut found: SmallVec<[(&str, &mut Bson); 4]> = SmallVec::new();
        let (mut counted, mut listed, mut numbered) = (None, None, true);
        for (k, v) in doc.iter_mut() {
            if same(k, count) {
                counted = Some(v);
            } else if same(k, array) {
                listed = Some(v);
            } else {
                if self.number.is_some_and(|n| same(k, n)) {
                    numbered = is_number(v);
                }
                if let Some(f) = names.iter().find(|f| same(k, f)) {
                    found.push((f, v));
                }
            }
        }
        let writes = self.kept.writes(&found)?;
        let (Some(Bson::Int32(x)), Some(Bson::Array(list)), true) = (counted, listed, numbered)
        else {
            return None;
        };
        let new_count = x.checked_add(self.n)?;
        // The kept values are of the same fixed-size types: the document's size changes by
        // the items alone.
        let mut size = (*bytes)?;
        match self.items_bytes {
            Some(values) => {
                size += values;
                for i in 0..items.len() {
                    size += pattern_store::codec::size::element_key_bytes(list.len() + i);
                }
            }
            None => {
                for (i, item) in items.iter().enumerate() {
                    size += pattern_store::codec::size::element_at_bytes(list.len() + i, item)?;
                }
            }
        }
        if let Err(e) = check_size(self.coll, Some(size)) {
            return Some(Err(e));
        }
        // Nothing declines or refuses past this point.
        *x = new_count;
        list.append(items);
        if writes.is_empty() {
            // No kept value moves: no entry moves, none waits.
            (keys, deferred) = (Vec::new(), Vec::new());
        }
        for (at, v) in writes {
            *found[at].1 = v;
        }
        drop(found);
        for &(i, _) in &deferred {
            *pending |= 1_u64 << i;
        }
        *bytes = Some(size);
        clock.tick += 1;
        *stamp = clock.tick;
        debug_assert_eq!(*bytes, document_bytes(doc), "size of the updated document");
        let now = holding(doc, None, Some(new_count));
        Some(Ok((
            before,
            Moved64 {
                changed: held ^ now,
                now,
                keys,
                deferred,
            },
        )))
    }
}

/// Whether two field names are the same: most names a push compares differ in length or in
/// their first byte, told apart without a call to compare the bytes.
#[inline]
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().first() == b.as_bytes().first() && a == b
}

#[cfg(test)]
pub(crate) mod tests;
