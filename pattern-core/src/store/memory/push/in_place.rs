//! A push applied in place to the open document (see [`Collection::push_in_place`]): which
//! indexes it moves, the document changed with no undo log once everything that can refuse
//! it is checked, and the index entries to move (or to leave waiting).

use std::cmp::Ordering;

use bson::{Bson, Document};
use smallvec::SmallVec;

use super::super::collection::{empty_document, Clock, Pending, Stored, PENDING_MAX};
use super::super::index::{Key, MemIndex};
use crate::codec::size::{check_size, document_bytes};
use crate::spec::SeriesSpec;
use crate::store::query::eval::{compare_values, is_number};
use crate::store::query::Path;
use crate::store::shape::KeptVals;
use crate::Result;

/// The update every push into an open document sends: `{$inc: {count: n}, $push: {array:
/// {$each: items}}}`, on top-level fields (see [`Collection::push_in_place`]); with `fields`,
/// as [`Collection::update`] takes them.
pub(in crate::store::memory) struct Push<'a> {
    pub(in crate::store::memory) coll: &'a str,
    pub(in crate::store::memory) count: &'a str,
    pub(in crate::store::memory) n: i32,
    pub(in crate::store::memory) array: &'a str,
    pub(in crate::store::memory) fields: Option<&'a [&'a str]>,
    /// The series' number field: a document where it holds anything but a number is declined
    /// (it is not of the series: see `SeriesSpec::open`).
    pub(in crate::store::memory) number: Option<&'a str>,
    /// The values kept beside the items.
    pub(in crate::store::memory) kept: KeptOps<'a>,
    /// The items' size, when measured ([`Kept::items_bytes`](crate::store::Kept::items_bytes)).
    pub(in crate::store::memory) items_bytes: Option<usize>,
}

/// The `$inc` (`sum`), `$min` and `$max` of the values a series keeps beside its items.
pub(in crate::store::memory) struct KeptOps<'a> {
    pub(in crate::store::memory) sum: &'a [(Path, Bson)],
    pub(in crate::store::memory) min: &'a [(Path, Bson)],
    pub(in crate::store::memory) max: &'a [(Path, Bson)],
}

impl KeptVals {
    /// The operators, borrowed.
    pub(in crate::store::memory) fn ops(&self) -> KeptOps<'_> {
        KeptOps {
            sum: &self.sum,
            min: &self.min,
            max: &self.max,
        }
    }
}

impl KeptOps<'_> {
    pub(in crate::store::memory) fn fields(&self) -> impl Iterator<Item = &str> + Clone {
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
        let slot = |f: &Path| found.iter().position(|(g, _)| *g == f.as_str());
        let mut out = SmallVec::new();
        for (f, v) in self.sum {
            let at = slot(f)?;
            let old = &*found[at].1;
            let new = crate::codec::number::add(old, v).ok()?;
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
pub(in crate::store::memory) struct Moved64 {
    pub(in crate::store::memory) changed: u64,
    pub(in crate::store::memory) now: u64,
    /// The indexes keyed on a kept value the push changed, each with the document's key in
    /// it before.
    pub(in crate::store::memory) keys: Vec<(usize, Option<Vec<Key>>)>,
    /// The same for the indexes whose entry is left where it was (filed under that key), to
    /// wait in [`Collection::pending`].
    pub(in crate::store::memory) deferred: Vec<(usize, Option<Vec<Key>>)>,
}

impl Moved64 {
    /// Moves document `id` (now `doc`) in or out of the indexes it entered or left.
    /// Whether no index entry moves.
    pub(in crate::store::memory) fn is_empty(&self) -> bool {
        self.changed == 0 && self.keys.is_empty() && self.deferred.is_empty()
    }

    /// Moves document `id`'s entries (the document now `doc`), the deferred ones left
    /// waiting in `pending` ([`Collection::pending`]); whether those are now so many that
    /// the collection should settle them ([`Collection::settle`]).
    pub(in crate::store::memory) fn file(
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

    pub(in crate::store::memory) fn rekey(
        self,
        indexes: &mut [MemIndex],
        doc: &Document,
        id: &Key,
    ) {
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
    /// The push of `n` items of series `spec` (with `kept`'s operators), which declines a
    /// document not of the series ([`Push::number`]).
    pub(in crate::store::memory) fn series(
        spec: &SeriesSpec<'a>,
        n: i32,
        kept: KeptOps<'a>,
        items_bytes: Option<usize>,
    ) -> Self {
        Push {
            coll: spec.collection,
            count: spec.count_field,
            n,
            array: spec.items_field,
            fields: None,
            number: Some(spec.order.field()),
            kept,
            items_bytes,
        }
    }

    /// Which indexes the push moves: `(keyed, filtered)`, bit `i` for index `i` (see
    /// [`PushShape`](super::collection::PushShape)); `None` for a push it declines. Depends
    /// only on the fields' names and the indexes, so a collection remembers it.
    pub(in crate::store::memory) fn shape(&self, indexes: &[MemIndex]) -> Option<(u64, u64)> {
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
    pub(in crate::store::memory) fn apply_shaped(
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
        let holding = |doc: &Document, known: Option<usize>| {
            let mut held = 0_u64;
            for (i, ix) in indexes.iter().enumerate() {
                if filtered & (1 << i) != 0 && (known == Some(i) || ix.in_filter(doc)) {
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
        let held = holding(doc, held_by);
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
            if k == count {
                counted = Some(v);
            } else if k == array {
                listed = Some(v);
            } else {
                if self.number == Some(k.as_str()) {
                    numbered = is_number(v);
                }
                if let Some(f) = names.iter().find(|f| **f == k) {
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
                    size += crate::codec::size::element_key_bytes(list.len() + i);
                }
            }
            None => {
                for (i, item) in items.iter().enumerate() {
                    size += crate::codec::size::element_at_bytes(list.len() + i, item)?;
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
        let now = holding(doc, None);
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
