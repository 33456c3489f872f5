//! The in-memory indexes: index keys ordered as MongoDB orders values, each index's entries
//! (key values -> the `_id`s holding them), and what an update does to a document's entry.

use std::cmp::Ordering;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use bson::{Bson, Document};

use super::collection::Moved;
use super::plan::{any_leaf, eq_on, range_on, Order, Plan, Source};
use crate::query::eval::{compare_values, get_path};
use crate::query::{Filter, IndexSpec, Update};
use crate::Error;

/// A BSON value ordered by MongoDB's comparison (so `1`, `1_i64` and `1.0` are one key, as in
/// a MongoDB index).
#[derive(Clone, Debug)]
pub(super) struct Key(pub(super) Bson);

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            // The usual `_id`s and index keys, straight to what `compare_values` would do.
            (Bson::String(a), Bson::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Bson::Int32(a), Bson::Int32(b)) => a.cmp(b),
            (Bson::Int64(a), Bson::Int64(b)) => a.cmp(b),
            (a, b) => compare_values(a, b),
        }
    }
}

/// The `_id`s of the documents an index entry holds: most often one (an index that ends in
/// `_id`, or on a unique key), kept without a set (a set of one `_id` would allocate a whole
/// B-tree node, over a kilobyte).
#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
pub(super) enum Holders {
    One(Key),
    /// Once an entry has held two (it stays a set when they leave again; empty only while
    /// the entry is being removed).
    Many(BTreeSet<Key>),
}

impl Holders {
    /// Adds `id`; whether it was not there.
    pub(super) fn insert(&mut self, id: Key) -> bool {
        match self {
            Holders::One(one) if *one == id => false,
            Holders::One(_) => {
                let Holders::One(one) = std::mem::replace(self, Holders::Many(BTreeSet::new()))
                else {
                    unreachable!("matched above")
                };
                let Holders::Many(set) = self else {
                    unreachable!("just set")
                };
                set.insert(one);
                set.insert(id)
            }
            Holders::Many(set) => set.insert(id),
        }
    }

    /// Removes `id`, returning the `_id` the entry held.
    pub(super) fn take(&mut self, id: &Key) -> Option<Key> {
        match self {
            Holders::One(one) if one == id => {
                match std::mem::replace(self, Holders::Many(BTreeSet::new())) {
                    Holders::One(one) => Some(one),
                    Holders::Many(_) => unreachable!("matched above"),
                }
            }
            Holders::One(_) => None,
            Holders::Many(set) => set.take(id),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        matches!(self, Holders::Many(set) if set.is_empty())
    }

    /// The `_id`s in ascending order.
    pub(super) fn iter(&self) -> HolderIds<'_> {
        match self {
            Holders::One(one) => HolderIds::One(Some(one).into_iter()),
            Holders::Many(set) => HolderIds::Many(set.iter()),
        }
    }
}

/// The `_id`s of an index entry, in order (either way).
pub(super) enum HolderIds<'a> {
    One(std::option::IntoIter<&'a Key>),
    Many(std::collections::btree_set::Iter<'a, Key>),
}

impl<'a> Iterator for HolderIds<'a> {
    type Item = &'a Key;
    fn next(&mut self) -> Option<&'a Key> {
        match self {
            HolderIds::One(it) => it.next(),
            HolderIds::Many(it) => it.next(),
        }
    }
}

impl<'a> DoubleEndedIterator for HolderIds<'a> {
    fn next_back(&mut self) -> Option<&'a Key> {
        match self {
            HolderIds::One(it) => it.next_back(),
            HolderIds::Many(it) => it.next_back(),
        }
    }
}

/// An index's entries: key values -> the `_id`s of the documents with those values.
pub(super) type Entries = BTreeMap<Vec<Key>, Holders>;

#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
pub(super) struct MemIndex {
    pub(super) spec: IndexSpec,
    /// index key values -> the `_id`s of the documents with those values
    pub(super) entries: Entries,
    /// The top-level fields the keys read, and those only the partial filter reads: what
    /// [`MemIndex::moved_by`] compares an update's fields with.
    pub(super) key_fields: Vec<String>,
    pub(super) filter_fields: Vec<String>,
}

impl MemIndex {
    /// The document's entry key in this index; `None` when a partial index leaves it out.
    pub(super) fn key_of(&self, doc: &Document) -> Option<Vec<Key>> {
        self.in_filter(doc).then(|| self.values_of(doc))
    }

    /// Whether the index holds the document (its partial filter, if any, matches).
    pub(super) fn in_filter(&self, doc: &Document) -> bool {
        self.spec.partial.as_ref().is_none_or(|p| p.matches(doc))
    }

    /// The values of the index's keys in the document.
    pub(super) fn values_of(&self, doc: &Document) -> Vec<Key> {
        self.spec
            .keys
            .iter()
            .map(|(path, _)| Key(get_path(doc, path).cloned().unwrap_or(Bson::Null)))
            .collect()
    }

    pub(super) fn add(&mut self, doc: &Document, id: &Key) {
        self.add_key(self.key_of(doc), id);
    }

    pub(super) fn remove(&mut self, doc: &Document, id: &Key) {
        self.remove_key(self.key_of(doc), id);
    }

    pub(super) fn add_key(&mut self, key: Option<Vec<Key>>, id: &Key) {
        if let Some(k) = key {
            match self.entries.entry(k) {
                Entry::Vacant(e) => {
                    e.insert(Holders::One(id.clone()));
                }
                Entry::Occupied(e) => {
                    e.into_mut().insert(id.clone());
                }
            }
        }
    }

    pub(super) fn remove_key(&mut self, key: Option<Vec<Key>>, id: &Key) {
        if let Some(k) = key {
            if let Some(set) = self.entries.get_mut(&k) {
                set.take(id);
                if set.is_empty() {
                    self.entries.remove(&k);
                }
            }
        }
    }

    /// Moves document `id` from its entry under `old` to the one under `new` (keys as
    /// [`MemIndex::key_of`] gives them); nothing to do when they are equal. The `_id` the old
    /// entry held moves to the new one (no copy).
    pub(super) fn rekey(&mut self, old: Option<Vec<Key>>, new: Option<Vec<Key>>, id: &Key) {
        if old == new {
            return;
        }
        let mut held = None;
        if let Some(k) = old {
            if let Some(set) = self.entries.get_mut(&k) {
                held = set.take(id);
                if set.is_empty() {
                    self.entries.remove(&k);
                }
            }
        }
        if let Some(k) = new {
            let id = held.unwrap_or_else(|| id.clone());
            match self.entries.entry(k) {
                Entry::Vacant(e) => {
                    e.insert(Holders::One(id));
                }
                Entry::Occupied(e) => {
                    e.into_mut().insert(id);
                }
            }
        }
    }

    /// The first `_id` among the entries whose first key is `value` (`last`: the last one).
    pub(super) fn first_under(&self, value: &Bson, last: bool) -> Option<&Key> {
        // Every such entry sorts between `[value]` and `[value, MaxKey]`: the last entry up to
        // the one, or the first from the other, if its first key is `value`.
        let of_value = |k: &Vec<Key>| {
            k.first()
                .is_some_and(|f| compare_values(&f.0, value).is_eq())
        };
        if last {
            let hi = [Key(value.clone()), Key(Bson::MaxKey)];
            let mut k = self
                .entries
                .range::<[Key], _>((Bound::Unbounded, Bound::Included(&hi[..])));
            let (k, ids) = k.next_back()?;
            of_value(k).then(|| ids.iter().next_back()).flatten()
        } else {
            let lo = [Key(value.clone())];
            let mut k = self
                .entries
                .range::<[Key], _>((Bound::Included(&lo[..]), Bound::Unbounded));
            let (k, ids) = k.next()?;
            of_value(k).then(|| ids.iter().next()).flatten()
        }
    }

    /// How `update` can move a document's entry (or make it conflict): `Keys` when it writes
    /// a top-level field the index's keys read, `Filter` when it writes only fields its
    /// partial filter reads (the entry can only come or go), `None` otherwise.
    pub(super) fn moved_by(&self, update: &Update) -> Option<Moved> {
        if self.key_fields.iter().any(|f| update.writes(f)) {
            Some(Moved::Keys)
        } else if self.filter_fields.iter().any(|f| update.writes(f)) {
            Some(Moved::Filter)
        } else {
            None
        }
    }

    pub(super) fn new(spec: IndexSpec) -> Self {
        fn top(path: &str) -> String {
            path.split('.').next().unwrap_or(path).to_owned()
        }
        fn filter_paths(f: &Filter, out: &mut Vec<String>) {
            match f {
                Filter::And(fs) => fs.iter().for_each(|f| filter_paths(f, out)),
                leaf => out.push(top(leaf.path())),
            }
        }
        let key_fields: Vec<String> = spec.keys.iter().map(|(p, _)| top(p)).collect();
        let mut filter_fields = Vec::new();
        if let Some(p) = &spec.partial {
            filter_paths(p, &mut filter_fields);
        }
        filter_fields.retain(|f| !key_fields.contains(f));
        MemIndex {
            spec,
            entries: BTreeMap::new(),
            key_fields,
            filter_fields,
        }
    }

    /// A plan over this index: equalities on a prefix of its keys, then at most a range on
    /// the next key. `None` when the query constrains no prefix of the index.
    pub(super) fn plan<'a>(&'a self, filter: &Filter) -> Option<Plan<'a>> {
        let keys = &self.spec.keys;
        // `bounds` = `prefix ++ [lo]` (the start) then `prefix ++ [hi or MaxKey]` (the end).
        let mut bounds: Vec<Key> = Vec::with_capacity(2 * keys.len() + 2);
        for (path, _) in keys {
            match eq_on(filter, path) {
                Some(v) => bounds.push(v),
                None => break,
            }
        }
        let m = bounds.len();
        let (lo, hi) = keys
            .get(m)
            .map_or((None, None), |(path, _)| range_on(filter, path));
        if m == 0 && lo.is_none() && hi.is_none() {
            return None;
        }
        // Entry keys have one value per index key: `prefix ++ [lo]` sorts before every entry
        // of the range and `prefix ++ [hi or MaxKey]` after (inclusive bounds: a superset).
        bounds.extend(lo);
        let split = bounds.len();
        bounds.extend_from_within(..m);
        bounds.push(hi.unwrap_or(Key(Bson::MaxKey)));
        let covered = self.covers(filter, &bounds[..m]);
        Some(Plan {
            source: Source::Index {
                entries: &self.entries,
                bounds,
                split,
            },
            // Entries iterate in ascending order of their values, whatever the declared
            // direction: the keys after the prefix, then `_id`.
            order: Order::Keys(&keys[m..]),
            covered,
        })
    }

    /// Whether the entries a plan enumerates, with `values` for the equalities on the index's
    /// first keys, are exactly the matches of `filter`: each of its conditions is one of those
    /// equalities (with the value the plan looks up, and one that is stored as itself: a
    /// scalar, not null, which a missing field's entry would hold too), or one of the
    /// conditions of the partial filter, which every entry meets.
    pub(super) fn covers(&self, filter: &Filter, values: &[Key]) -> bool {
        let prefix = &self.spec.keys[..values.len()];
        let partial = self.spec.partial.as_ref();
        !any_leaf(filter, &mut |leaf| {
            let equality = match leaf {
                Filter::Eq(p, v) => {
                    crate::query::is_plain_scalar(v)
                        && !matches!(v, Bson::Null)
                        && (prefix.iter().zip(values))
                            .any(|((k, _), value)| k == p && compare_values(v, &value.0).is_eq())
                }
                _ => false,
            };
            let in_partial = partial.is_some_and(|f| any_leaf(f, &mut |l| l == leaf));
            !(equality || in_partial)
        })
    }

    /// Another document (not `id`) already holds `doc`'s key in this unique index.
    pub(super) fn conflicts(&self, doc: &Document, id: &Key) -> bool {
        self.spec.unique && self.holds_other(self.key_of(doc).as_deref(), id)
    }

    /// In a unique index, another document than `id` holds `key` (as [`MemIndex::key_of`]
    /// gives it).
    pub(super) fn holds_other(&self, key: Option<&[Key]>, id: &Key) -> bool {
        self.spec.unique
            && key
                .and_then(|k| self.entries.get(k))
                .is_some_and(|ids| ids.iter().any(|x| x != id))
    }

    /// The error of a write this unique index refuses.
    pub(super) fn duplicate(&self, coll: &str) -> Error {
        Error::DuplicateKey {
            collection: coll.to_owned(),
            message: format!(
                "E11000 duplicate key error collection: {coll} index: {}",
                self.spec.name
            ),
        }
    }
}
