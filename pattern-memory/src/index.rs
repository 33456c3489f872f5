//! The in-memory indexes: index keys ordered as MongoDB orders values, each index's entries
//! (key values -> the `_id`s holding them), and what an update does to a document's entry.
//!
//! Indexes are multikey, as MongoDB's are: a document whose key holds an array has one entry
//! per element (an empty array: one entry under `undefined`), so an equality on an element is
//! a lookup; through an array of documents, one entry per element, holding that element's
//! values of the keys under the array (`{specs.k: 1, specs.v: 1}`: each element's name and
//! value together). A document's key is kept as its values (arrays whole; several rows, one
//! after another, through an array of documents), and expanded into its entries only where
//! entries are added, removed or looked up.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use bson::{Bson, Document};

use pattern_store::query::eval::get_path;
use pattern_store::query::paths;
use pattern_store::query::{Filter, IndexSpec};
use pattern_store::Error;

use super::key::Key;

/// A new document's place in an index ([`MemIndex::place`]), filed by [`Place::file`].
pub(super) enum Place<'a> {
    /// A key standing for several entries, and its index.
    Spread(&'a mut MemIndex, Vec<Key>),
    /// The one entry, found.
    Entry(Entry<'a, Vec<Key>, Holders>),
}

impl Place<'_> {
    /// Files document `id` in its place.
    pub(super) fn file(self, id: &Key) {
        match self {
            Place::Spread(index, key) => index.add_key(Some(key), id),
            Place::Entry(Entry::Vacant(e)) => {
                e.insert(Holders::One(id.clone()));
            }
            Place::Entry(Entry::Occupied(e)) => {
                e.into_mut().insert(id.clone());
            }
        }
    }
}

/// The `_id`s of the documents an index entry holds: most often one (an index that ends in
/// `_id`, or on a unique key), kept without a set (a set of one `_id` would allocate a whole
/// B-tree node, over a kilobyte).
#[derive(Clone, Debug)]
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

#[derive(Clone, Debug)]
pub(super) struct MemIndex {
    pub(super) spec: IndexSpec,
    /// index key values -> the `_id`s of the documents with those values
    pub(super) entries: Entries,
    /// The top-level fields the keys read, and those only the partial filter reads: what
    /// [`MemIndex::moved_by`] compares an update's fields with.
    pub(super) key_fields: Vec<String>,
    pub(super) filter_fields: Vec<String>,
    /// A document with an array in its key was added (since the index was built): then a
    /// document may have several entries, and a plan over the index must not look up an
    /// array value, nor yield a document twice (see [`MemIndex::plan`]).
    pub(super) multikey: bool,
}

/// `_id`s in ascending order, each once.
pub(super) fn sorted_once<'a>(ids: impl IntoIterator<Item = &'a Key>) -> Vec<&'a Key> {
    let mut ids: Vec<&Key> = ids.into_iter().collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Whether a key holds an array (then it stands for one entry per element).
fn has_array(key: &[Key]) -> bool {
    key.iter().any(|k| k.array().is_some())
}

/// The entries of a key holding arrays: one per combination of their elements (an empty
/// array counts as `undefined`, as MongoDB indexes it). MongoDB refuses to index two arrays
/// in one key; here such a key has an entry per combination.
fn expand(key: &[Key]) -> Vec<Vec<Key>> {
    let mut out: Vec<Vec<Key>> = vec![Vec::with_capacity(key.len())];
    for k in key {
        let choices: Vec<Key> = match k.array() {
            Some([]) => vec![Key::new(Bson::Undefined)],
            Some(a) => a.iter().map(Key::of).collect(),
            None => vec![k.clone()],
        };
        out = out
            .into_iter()
            .flat_map(|prefix| {
                choices.iter().map(move |c| {
                    let mut next = prefix.clone();
                    next.push(c.clone());
                    next
                })
            })
            .collect();
    }
    out.sort();
    out.dedup();
    out
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

    /// The values of the index's keys in the document, one per key (an array whole: it
    /// stands for an entry per element). Where a key's path passes through an array of
    /// documents, the rows of values MongoDB indexes ([`paths::rows`]: the keys under one
    /// array take their values from one element), one row after another; such a key is
    /// longer than the index's keys and stands for the entries of its rows
    /// ([`MemIndex::spread`]).
    pub(super) fn values_of(&self, doc: &Document) -> Vec<Key> {
        let mut inside = false;
        let values: Vec<Key> = (self.spec.keys.iter())
            .map(|(path, _)| match get_path(doc, path) {
                Some(v) => Key::of(v),
                None => {
                    inside = inside || paths::through_array(doc, path);
                    Key::new(Bson::Null)
                }
            })
            .collect();
        if !inside {
            return values;
        }
        let keys: Vec<&str> = self.spec.keys.iter().map(|(p, _)| p.as_str()).collect();
        let rows = paths::rows(doc, &keys);
        rows.into_iter().flatten().map(Key::new).collect()
    }

    /// Whether a key (as [`MemIndex::key_of`] gives it) stands for several entries, or none
    /// but its expansion: it holds an array, or several rows.
    pub(super) fn spread(&self, key: &[Key]) -> bool {
        key.len() > self.spec.keys.len() || has_array(key)
    }

    /// The entries a key that [`MemIndex::spread`]s stands for: each row's, each once.
    fn entries_of(&self, key: &[Key]) -> Vec<Vec<Key>> {
        let rows = key.chunks(self.spec.keys.len().max(1));
        let mut out: Vec<Vec<Key>> = rows.flat_map(expand).collect();
        out.sort();
        out.dedup();
        out
    }

    pub(super) fn add(&mut self, doc: &Document, id: &Key) {
        self.add_key(self.key_of(doc), id);
    }

    pub(super) fn remove(&mut self, doc: &Document, id: &Key) {
        self.remove_key(self.key_of(doc), id);
    }

    pub(super) fn add_key(&mut self, key: Option<Vec<Key>>, id: &Key) {
        let Some(k) = key else { return };
        if self.spread(&k) {
            self.multikey = true;
            for entry in self.entries_of(&k) {
                self.add_entry(entry, id.clone());
            }
        } else {
            self.add_entry(k, id.clone());
        }
    }

    /// Where a new document `id` goes under `key` (as [`MemIndex::key_of`] gives it), found in
    /// one search of the tree; `None` when this unique index holds the key for another
    /// document. A key that stands for several entries is looked up again when filed.
    pub(super) fn place(&mut self, key: Vec<Key>, id: &Key) -> Option<Place<'_>> {
        if self.spread(&key) {
            return (!self.holds_other(Some(&key), id)).then_some(Place::Spread(self, key));
        }
        let unique = self.spec.unique;
        let entry = self.entries.entry(key);
        let taken = |e: &Entry<'_, Vec<Key>, Holders>| matches!(e, Entry::Occupied(held) if held.get().iter().any(|x| x != id));
        (!(unique && taken(&entry))).then_some(Place::Entry(entry))
    }

    fn add_entry(&mut self, k: Vec<Key>, id: Key) {
        match self.entries.entry(k) {
            Entry::Vacant(e) => {
                e.insert(Holders::One(id));
            }
            Entry::Occupied(e) => {
                e.into_mut().insert(id);
            }
        }
    }

    pub(super) fn remove_key(&mut self, key: Option<Vec<Key>>, id: &Key) {
        let Some(k) = key else { return };
        if self.spread(&k) {
            for entry in self.entries_of(&k) {
                self.remove_entry(&entry, id);
            }
        } else {
            self.remove_entry(&k, id);
        }
    }

    /// Removes `id` from the entry under `k`; the `_id` the entry held.
    fn remove_entry(&mut self, k: &[Key], id: &Key) -> Option<Key> {
        // The usual entry holds this one `_id`: removed in one search of the tree; one that
        // others hold too goes back.
        let (key, mut holders) = self.entries.remove_entry(k)?;
        let held = holders.take(id);
        if !holders.is_empty() {
            self.entries.insert(key, holders);
        }
        held
    }

    /// Moves document `id` from its entry under `old` to the one under `new` (keys as
    /// [`MemIndex::key_of`] gives them); nothing to do when they are equal. The `_id` the old
    /// entry held moves to the new one (no copy).
    pub(super) fn rekey(&mut self, old: Option<Vec<Key>>, new: Option<Vec<Key>>, id: &Key) {
        if old == new {
            return;
        }
        let spread = |k: &Option<Vec<Key>>| k.as_deref().is_some_and(|k| self.spread(k));
        if spread(&old) || spread(&new) {
            self.remove_key(old, id);
            self.add_key(new, id);
            return;
        }
        let held = old.and_then(|k| self.remove_entry(&k, id));
        if let Some(k) = new {
            self.add_entry(k, held.unwrap_or_else(|| id.clone()));
        }
    }

    /// The first `_id` among the entries whose first key is `value` (`last`: the last one).
    pub(super) fn first_under(&self, value: &Bson, last: bool) -> Option<&Key> {
        // Every such entry sorts between `[value]` and `[value, MaxKey]`: the last entry up to
        // the one, or the first from the other, if its first key is `value`.
        let probe = Key::of(value);
        let of_value = |k: &Vec<Key>| k.first().is_some_and(|f| *f == probe);
        if last {
            let hi = [probe.clone(), Key::Max];
            let mut k = self
                .entries
                .range::<[Key], _>((Bound::Unbounded, Bound::Included(&hi[..])));
            let (k, ids) = k.next_back()?;
            of_value(k).then(|| ids.iter().next_back()).flatten()
        } else {
            let lo = [probe.clone()];
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
    /// `written`: the fields the update writes (`Update::written`).
    pub(super) fn moved_by(&self, written: &[&str]) -> Option<Moved> {
        let writes = |f: &String| written.contains(&f.as_str());
        if self.key_fields.iter().any(writes) {
            Some(Moved::Keys)
        } else if self.filter_fields.iter().any(writes) {
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
                Filter::And(fs) | Filter::Clause(fs) => {
                    fs.iter().for_each(|f| filter_paths(f, out))
                }
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
            multikey: false,
        }
    }

    /// Another document (not `id`) already holds `doc`'s key in this unique index.
    pub(super) fn conflicts(&self, doc: &Document, id: &Key) -> bool {
        self.spec.unique && self.holds_other(self.key_of(doc).as_deref(), id)
    }

    /// In a unique index, another document than `id` holds `key` (as [`MemIndex::key_of`]
    /// gives it).
    pub(super) fn holds_other(&self, key: Option<&[Key]>, id: &Key) -> bool {
        let other =
            |k: &[Key]| (self.entries.get(k)).is_some_and(|ids| ids.iter().any(|x| x != id));
        match key {
            Some(k) if self.spec.unique && self.spread(k) => {
                self.entries_of(k).iter().any(|k| other(k))
            }
            Some(k) => self.spec.unique && other(k),
            None => false,
        }
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

/// How an update can move a document's entry in an index: see [`MemIndex::moved_by`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Moved {
    Keys,
    Filter,
}
