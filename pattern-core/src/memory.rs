//! The embedded in-memory store: the default, nothing to install.
//!
//! It keeps the same collections and documents the MongoDB store writes, applies each write
//! atomically under one lock, and enforces the same indexes: `_id` is unique, and unique
//! (optionally partial) indexes reject duplicates with [`Error::DuplicateKey`]. Secondary
//! indexes also serve reads: a query with an equality on an index's first key scans only that
//! key's documents.
//!
//! The series push ([`Store::push_open`]) is done natively: the open document is the last
//! entry under the key in the series' open-document index, and the items go into its array in
//! place; any document it does not handle goes through the conditional upsert every store
//! runs, with the same result.

use std::cmp::Ordering;
use std::collections::btree_map::{self, Entry};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use bson::{Bson, Document, RawDocumentBuf};

use crate::error::document_bytes;
use crate::query::{
    compare_by, compare_values, get_path, is_number, Filter, FindOptions, IndexSpec, Update,
};
use crate::series::SeriesSpec;
use crate::store::{ArrayStats, EnsuredIndexes, Store, UpdateOutcome};
use crate::{Error, Result, MAX_DOCUMENT_BYTES};

/// A BSON value ordered by MongoDB's comparison (so `1`, `1_i64` and `1.0` are one key, as in
/// a MongoDB index).
#[derive(Clone, Debug)]
struct Key(Bson);

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

/// Refuses a document over [`MAX_DOCUMENT_BYTES`], as MongoDB does.
#[cfg(feature = "mongodb")]
pub(crate) fn check_document_size(coll: &str, doc: &Document) -> Result<()> {
    check_size(coll, document_bytes(doc))
}

/// Refuses a document of `bytes` (`None`: one that does not serialize) over
/// [`MAX_DOCUMENT_BYTES`].
fn check_size(coll: &str, bytes: Option<usize>) -> Result<()> {
    let n = bytes.unwrap_or(usize::MAX);
    if n > MAX_DOCUMENT_BYTES {
        return Err(Error::TooLarge {
            collection: coll.to_owned(),
            message: format!("a document of {n} bytes (the maximum is {MAX_DOCUMENT_BYTES})"),
        });
    }
    Ok(())
}

/// The `_id`s of the documents an index entry holds: most often one (an index that ends in
/// `_id`, or on a unique key), kept without a set (a set of one `_id` would allocate a whole
/// B-tree node, over a kilobyte).
#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
enum Holders {
    One(Key),
    /// Once an entry has held two (it stays a set when they leave again; empty only while
    /// the entry is being removed).
    Many(BTreeSet<Key>),
}

impl Holders {
    /// Adds `id`; whether it was not there.
    fn insert(&mut self, id: Key) -> bool {
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
    fn take(&mut self, id: &Key) -> Option<Key> {
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

    fn is_empty(&self) -> bool {
        matches!(self, Holders::Many(set) if set.is_empty())
    }

    /// The `_id`s in ascending order.
    fn iter(&self) -> HolderIds<'_> {
        match self {
            Holders::One(one) => HolderIds::One(Some(one).into_iter()),
            Holders::Many(set) => HolderIds::Many(set.iter()),
        }
    }
}

/// The `_id`s of an index entry, in order (either way).
enum HolderIds<'a> {
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
type Entries = BTreeMap<Vec<Key>, Holders>;

#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
struct MemIndex {
    spec: IndexSpec,
    /// index key values -> the `_id`s of the documents with those values
    entries: Entries,
    /// The top-level fields the keys read, and those only the partial filter reads: what
    /// [`MemIndex::moved_by`] compares an update's fields with.
    key_fields: Vec<String>,
    filter_fields: Vec<String>,
}

impl MemIndex {
    /// The document's entry key in this index; `None` when a partial index leaves it out.
    fn key_of(&self, doc: &Document) -> Option<Vec<Key>> {
        self.in_filter(doc).then(|| self.values_of(doc))
    }

    /// Whether the index holds the document (its partial filter, if any, matches).
    fn in_filter(&self, doc: &Document) -> bool {
        self.spec.partial.as_ref().is_none_or(|p| p.matches(doc))
    }

    /// The values of the index's keys in the document.
    fn values_of(&self, doc: &Document) -> Vec<Key> {
        self.spec
            .keys
            .iter()
            .map(|(path, _)| Key(get_path(doc, path).cloned().unwrap_or(Bson::Null)))
            .collect()
    }

    fn add(&mut self, doc: &Document, id: &Key) {
        self.add_key(self.key_of(doc), id);
    }

    fn remove(&mut self, doc: &Document, id: &Key) {
        self.remove_key(self.key_of(doc), id);
    }

    fn add_key(&mut self, key: Option<Vec<Key>>, id: &Key) {
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

    fn remove_key(&mut self, key: Option<Vec<Key>>, id: &Key) {
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
    fn rekey(&mut self, old: Option<Vec<Key>>, new: Option<Vec<Key>>, id: &Key) {
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
    fn first_under(&self, value: &Bson, last: bool) -> Option<&Key> {
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
    fn moved_by(&self, update: &Update) -> Option<Moved> {
        if self.key_fields.iter().any(|f| update.writes(f)) {
            Some(Moved::Keys)
        } else if self.filter_fields.iter().any(|f| update.writes(f)) {
            Some(Moved::Filter)
        } else {
            None
        }
    }

    fn new(spec: IndexSpec) -> Self {
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
    fn plan<'a>(&'a self, filter: &Filter) -> Option<Plan<'a>> {
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
    fn covers(&self, filter: &Filter, values: &[Key]) -> bool {
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
    fn conflicts(&self, doc: &Document, id: &Key) -> bool {
        self.spec.unique && self.holds_other(self.key_of(doc).as_deref(), id)
    }

    /// In a unique index, another document than `id` holds `key` (as [`MemIndex::key_of`]
    /// gives it).
    fn holds_other(&self, key: Option<&[Key]>, id: &Key) -> bool {
        self.spec.unique
            && key
                .and_then(|k| self.entries.get(k))
                .is_some_and(|ids| ids.iter().any(|x| x != id))
    }

    /// The error of a write this unique index refuses.
    fn duplicate(&self, coll: &str) -> Error {
        Error::DuplicateKey {
            collection: coll.to_owned(),
            message: format!(
                "E11000 duplicate key error collection: {coll} index: {}",
                self.spec.name
            ),
        }
    }
}

#[derive(Debug, Default)]
#[cfg_attr(test, derive(Clone))]
struct Collection {
    docs: Docs,
    indexes: Vec<MemIndex>,
}

/// A collection's documents by `_id`.
type Docs = BTreeMap<Key, Stored>;

/// A stored document and its BSON size (`None`: it does not serialize), kept so that an
/// update checks the size limit from what it changed rather than by measuring everything.
#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
struct Stored {
    doc: Document,
    bytes: Option<usize>,
}

impl Collection {
    fn insert(&mut self, coll: &str, doc: Document) -> Result<()> {
        self.insert_or_return(coll, doc)
            .map_err(|refused| refused.0)
    }

    /// [`Collection::insert`], giving the document back when it is refused.
    fn insert_or_return(
        &mut self,
        coll: &str,
        mut doc: Document,
    ) -> std::result::Result<(), Box<(Error, Document)>> {
        let mut bytes = document_bytes(&doc);
        if let Err(e) = check_size(coll, bytes) {
            return Err(Box::new((e, doc)));
        }
        if !doc.contains_key("_id") {
            doc.insert("_id", bson::oid::ObjectId::new());
            // Type byte, "_id" and its NUL, 12 bytes of ObjectId.
            bytes = bytes.map(|n| n + 1 + 4 + 12);
        }
        let doc = id_first(doc);
        let id = Key(doc.get("_id").cloned().unwrap_or(Bson::Null));
        let Collection { docs, indexes } = self;
        let Entry::Vacant(slot) = docs.entry(id) else {
            let e = Error::DuplicateKey {
                collection: coll.to_owned(),
                message: format!("E11000 duplicate key error collection: {coll} index: _id_"),
            };
            return Err(Box::new((e, doc)));
        };
        let id = slot.key();
        let keys: Vec<_> = indexes.iter().map(|ix| ix.key_of(&doc)).collect();
        for (index, key) in indexes.iter().zip(&keys) {
            if index.holds_other(key.as_deref(), id) {
                return Err(Box::new((index.duplicate(coll), doc)));
            }
        }
        for (index, key) in indexes.iter_mut().zip(keys) {
            index.add_key(key, id);
        }
        slot.insert(Stored { doc, bytes });
        Ok(())
    }

    /// Replaces document `id` (which exists) by `new`.
    fn replace(&mut self, coll: &str, id: &Key, new: Document) -> Result<()> {
        let bytes = document_bytes(&new);
        check_size(coll, bytes)?;
        let Collection { docs, indexes } = self;
        let slot = docs.get_mut(id).expect("replace: the document exists");
        // Each index's key for the old document and for the new one: an entry moves only
        // when they differ (and only then can a unique index conflict).
        let keys: Vec<_> = indexes
            .iter()
            .map(|ix| (ix.key_of(&slot.doc), ix.key_of(&new)))
            .collect();
        for (index, (old, key)) in indexes.iter().zip(&keys) {
            if old != key && index.holds_other(key.as_deref(), id) {
                return Err(index.duplicate(coll));
            }
        }
        *slot = Stored { doc: new, bytes };
        for (index, (old, new)) in indexes.iter_mut().zip(keys) {
            index.rekey(old, new, id);
        }
        Ok(())
    }

    /// Applies `update` to document `id` (which exists) in place, moving its pushed items
    /// into the document ([`Update::apply_taking`]). On error the document, the indexes and
    /// `update` are unchanged. Returns, when `fields` is given, those top-level fields
    /// (`_id` only if listed) as they were before.
    fn update(
        &mut self,
        coll: &str,
        id: &Key,
        update: &mut Update,
        fields: Option<&[&str]>,
    ) -> Result<Option<Document>> {
        let Collection { docs, indexes } = self;
        let Stored { doc, bytes } = docs.get_mut(id).expect("update: the document exists");
        let before = fields.map(|fields| match fields {
            // Only whether a document matched: a copy of an empty document costs less than a
            // new one (which seeds its hasher).
            [] => empty_document().clone(),
            _ => doc
                .iter()
                .filter(|(k, _)| fields.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Document>(),
        });
        // The indexes whose entry for the document the update may move (those reading a
        // field it writes), with the document's key in them before the update.
        let moving: Vec<(usize, Before)> = indexes
            .iter()
            .enumerate()
            .filter_map(|(i, ix)| match ix.moved_by(update)? {
                Moved::Keys => Some((i, Before::Key(ix.key_of(doc)))),
                Moved::Filter => Some((i, Before::InFilter(ix.in_filter(doc)))),
            })
            .collect();
        let undo = update.undo_log(doc, false);
        update.apply_taking(doc, false).map_err(|e| Error::Server {
            message: e,
            source: None,
        })?;
        // Its size: the old one plus what changed, else (the old document, or a value it
        // replaced, did not serialize) measured whole.
        let size = bytes
            .zip(undo.size_change(doc, update))
            .and_then(|(n, change)| n.checked_add_signed(change))
            .or_else(|| document_bytes(doc));
        debug_assert_eq!(size, document_bytes(doc), "size of the updated document");
        // The checks a replacement by the updated document would make; a refusal undoes it.
        match check_updated(coll, doc, size, id, indexes, moving, update.writes("_id")) {
            Ok(moves) => {
                for (i, old, new) in moves {
                    indexes[i].rekey(old, new, id);
                }
                *bytes = size;
                Ok(before)
            }
            Err(e) => {
                undo.restore(doc, update);
                Err(e)
            }
        }
    }

    /// The cheapest plan for `filter`: an `_id` equality or range on the documents themselves,
    /// an index (a partial one only when the query carries its partial filter), or a scan.
    fn plan<'a>(&'a self, filter: &Filter) -> Plan<'a> {
        let docs = &self.docs;
        let by_id = |source| Plan {
            source,
            order: Order::Id,
            covered: false,
        };
        if let Some(id) = eq_on(filter, "_id") {
            return by_id(Source::Id(docs, id));
        }
        let (lo, hi) = range_on(filter, "_id");
        // The best plan so far, with its estimate.
        let mut best: Option<(Plan<'a>, usize)> = (lo.is_some() || hi.is_some()).then(|| {
            let lower = lo.map_or(Bound::Unbounded, Bound::Included);
            let upper = hi.map_or(Bound::Unbounded, Bound::Included);
            let plan = by_id(Source::IdRange(docs, lower, upper));
            let estimate = plan.estimate();
            (plan, estimate)
        });
        // Partial indexes first: they hold one open document per key.
        let partial = self.indexes.iter().filter(|i| i.spec.partial.is_some());
        let full = self.indexes.iter().filter(|i| i.spec.partial.is_none());
        for index in partial.chain(full) {
            if best.as_ref().is_some_and(|(_, estimate)| *estimate <= 1) {
                break;
            }
            let usable = index
                .spec
                .partial
                .as_ref()
                .is_none_or(|p| implied(p, filter));
            if let Some(plan) = usable.then(|| index.plan(filter)).flatten() {
                // Its candidates are exactly the matches: no plan reads fewer.
                if plan.covered {
                    return plan;
                }
                let estimate = plan.estimate();
                if best.as_ref().is_none_or(|(_, b)| estimate < *b) {
                    best = Some((plan, estimate));
                }
            }
        }
        // No index fits: scan every document in `_id` order.
        best.map_or_else(|| by_id(Source::Scan(docs)), |(plan, _)| plan)
    }

    /// [`Collection::first_in_order`] for the one query shape every push sends (the series'
    /// open document: an equality on the first key of a partial index, then exactly that
    /// index's partial filter, then any other conditions, sorted by the index), read straight
    /// off the index's entries: `Some(the first match, if any)`. `None` for any other query,
    /// or when the first entry fails the other conditions: those go through
    /// [`Collection::plan`]. It answers exactly as the plan would: the entries of such an
    /// index under that value are the matches of the query without its other conditions (see
    /// [`MemIndex::covers`]).
    fn first_open(
        &self,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
    ) -> Option<Option<Key>> {
        let Filter::And(conditions) = filter else {
            return None;
        };
        let Some((Filter::Eq(path, value), rest)) = conditions.split_first() else {
            return None;
        };
        if !crate::query::is_plain_scalar(value) || matches!(value, Bson::Null) {
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

    /// The series push natively (see [`Store::push_open`]): the key's open document straight
    /// off the series' open-document index, the items pushed in place, or a new document
    /// inserted as the upsert would make it. `None` (nothing done) when the collection lacks
    /// that index, or the document is one [`Push::apply`] declines: then the upsert
    /// runs as on any store, with the same result.
    fn push_open(
        &mut self,
        spec: &SeriesSpec,
        key: &Bson,
        items: &mut Vec<Bson>,
        seq: i64,
        new_id: &dyn Fn() -> Bson,
    ) -> Option<Result<bool>> {
        let (count, size) = (spec.count_field, Bson::Int32(spec.size as i32));
        let keys = [(spec.key_field, 1), (spec.order.field(), -1), ("_id", -1)];
        let open = self.indexes.iter().position(|ix| {
            matches!(&ix.spec.partial, Some(Filter::Lt(p, v)) if p == count && *v == size)
                && ix.spec.keys.len() == keys.len()
                && (ix.spec.keys.iter().zip(keys)).all(|((k, d), (l, e))| k == l && *d == e)
        });
        let (Some(open), Ok(n)) = (open, i32::try_from(items.len())) else {
            return None;
        };
        if !crate::query::is_plain_scalar(key) || matches!(key, Bson::Null) {
            return None;
        }
        // Its entries under the key are the key's open documents (see `first_open`).
        let Collection { docs, indexes } = self;
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
                };
                let stored = docs.get_mut(id)?;
                let moved = match push.apply(stored, indexes, items, Some(open))? {
                    Ok((_, moved)) => moved,
                    Err(e) => return Some(Err(e)),
                };
                // The `_id` is copied only when an entry moves (the document filled).
                if moved.changed != 0 {
                    let id = id.clone();
                    moved.rekey(indexes, &stored.doc, &id);
                }
                Some(Ok(false))
            }
            None => {
                // The items move into the new document, and back should it be refused.
                let doc = spec.new_doc_taking(key, new_id(), seq, items);
                match self.insert_or_return(spec.collection, doc) {
                    Ok(()) => Some(Ok(true)),
                    Err(refused) => {
                        let (e, mut doc) = *refused;
                        if let Some(Bson::Array(taken)) = doc.remove(spec.items_field) {
                            *items = taken;
                        }
                        Some(Err(e))
                    }
                }
            }
        }
    }

    /// [`Collection::update`] for the update every push into an open document sends: one
    /// `$inc` of an Int32 field and one `$push` to an array, top-level fields that no index
    /// keys on, applied in place with no undo log: everything that can refuse it (the size
    /// limit) is checked first. `None` (nothing done) for any other update or document, which
    /// goes through [`Collection::update`]; the result is the same either way.
    fn push_in_place(
        &mut self,
        coll: &str,
        id: &Key,
        update: &mut Update,
        fields: Option<&[&str]>,
    ) -> Option<Result<Option<Document>>> {
        let ([(count, n)], [(array, items)]) = (&update.inc[..], &mut update.push[..]) else {
            return None;
        };
        if !update.set.is_empty() {
            return None;
        }
        let push = Push {
            coll,
            count,
            n: *n,
            array,
            fields,
            number: None,
        };
        let Collection { docs, indexes } = self;
        let stored = docs.get_mut(id)?;
        let (before, moved) = match push.apply(stored, indexes, items, None)? {
            Ok(done) => done,
            Err(e) => return Some(Err(e)),
        };
        moved.rekey(indexes, &stored.doc, id);
        Some(Ok(before))
    }

    /// The `_id` of the first document matching `filter`.
    fn first_match(&self, filter: &Filter) -> Option<Key> {
        self.plan(filter)
            .ids()
            .find(|id| filter.matches(&self.docs[*id].doc))
            .cloned()
    }

    /// The `_id` of the first document matching `filter` in `sort` order.
    fn first_in_order(&self, filter: &Filter, sort: &[(crate::query::Path, i32)]) -> Option<Key> {
        if sort.is_empty() {
            return self.first_match(filter);
        }
        // An index that answers the query exactly, in the sort order: its first (or last) entry.
        let plan = self.plan(filter);
        if plan.covered {
            if plan.sorted_by(sort, false) {
                return plan.ids().next().cloned();
            }
            if plan.sorted_by(sort, true) {
                return plan.ids().next_back().cloned();
            }
        }
        self.find_in_plan(plan, filter, sort, 0, Some(1))
            .first()
            .map(|(id, _)| (*id).clone())
    }

    /// The `_id`s of every document matching `filter`.
    fn matching(&self, filter: &Filter) -> Vec<Key> {
        self.plan(filter)
            .ids()
            .filter(|id| filter.matches(&self.docs[*id].doc))
            .cloned()
            .collect()
    }

    /// The documents matching `filter`, sorted, skipped and limited.
    fn find(&self, filter: &Filter, opts: &FindOptions) -> Vec<Document> {
        self.find_refs(filter, &opts.sort, opts.skip, opts.limit)
            .into_iter()
            .map(|(_, doc)| doc.clone())
            .collect()
    }

    /// [`Collection::find`] without copying: the `_id`s and documents. When the plan already
    /// yields the sort order (forwards or backwards), it stops after `skip + limit` matches.
    fn find_refs<'a>(
        &'a self,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
        skip: u64,
        limit: Option<i64>,
    ) -> Vec<(&'a Key, &'a Document)> {
        self.find_in_plan(self.plan(filter), filter, sort, skip, limit)
    }

    /// [`Collection::find_refs`] through `plan` (a plan for `filter`).
    fn find_in_plan<'a>(
        &'a self,
        plan: Plan<'a>,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
        skip: u64,
        limit: Option<i64>,
    ) -> Vec<(&'a Key, &'a Document)> {
        let limit = match limit {
            Some(n) if n != 0 => n.unsigned_abs() as usize,
            _ => usize::MAX,
        };
        let skip = skip as usize;
        let with_doc = |id: &'a Key| (id, &self.docs[id].doc);
        let matches = |(_, doc): &(&Key, &Document)| filter.matches(doc);
        let forward = plan.sorted_by(sort, false);
        let backward = !forward && plan.sorted_by(sort, true);
        if forward {
            return plan
                .ids()
                .map(with_doc)
                .filter(matches)
                .skip(skip)
                .take(limit)
                .collect();
        }
        if backward {
            return plan
                .ids()
                .rev()
                .map(with_doc)
                .filter(matches)
                .skip(skip)
                .take(limit)
                .collect();
        }
        let candidates = plan.ids().map(with_doc).filter(matches);
        if (skip, limit) == (0, 1) {
            // The first in sort order (of equals, the first found, as a stable sort keeps).
            let first = candidates.min_by(|(_, a), (_, b)| compare_by(a, b, sort));
            return first.into_iter().collect();
        }
        let mut docs: Vec<(&Key, &Document)> = candidates.collect();
        docs.sort_by(|(_, a), (_, b)| compare_by(a, b, sort));
        docs.into_iter().skip(skip).take(limit).collect()
    }
}

/// The update every push into an open document sends: `{$inc: {count: n}, $push: {array:
/// {$each: items}}}`, on top-level fields (see [`Collection::push_in_place`]); with `fields`,
/// as [`Collection::update`] takes them.
struct Push<'a> {
    coll: &'a str,
    count: &'a str,
    n: i32,
    array: &'a str,
    fields: Option<&'a [&'a str]>,
    /// The series' number field: a document where it holds anything but a number is declined
    /// (it is not of the series: see `SeriesSpec::open`).
    number: Option<&'a str>,
}

/// The partial indexes a [`Push`] moved the document into (`now` bit set) or out of: bit `i`
/// for index `i`.
#[must_use]
struct Moved64 {
    changed: u64,
    now: u64,
}

impl Moved64 {
    /// Moves document `id` (now `doc`) in or out of the indexes it entered or left.
    fn rekey(self, indexes: &mut [MemIndex], doc: &Document, id: &Key) {
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

impl Push<'_> {
    /// Applies the push to `stored` in place, `items` moved to the end of its array, with no
    /// undo log: everything that can refuse it (the size limit) is checked first, and on an
    /// error nothing changed. `held_by`: an index known to hold the document (it was found
    /// there), whose filter need not be read again. Returns the fields wanted as they were and
    /// the index entries to move; `None` (nothing done) for a document or indexes it does not
    /// handle: a count that is no Int32 or would overflow, no array, an index on a written field.
    fn apply(
        &self,
        stored: &mut Stored,
        indexes: &[MemIndex],
        items: &mut Vec<Bson>,
        held_by: Option<usize>,
    ) -> Option<Result<(Option<Document>, Moved64)>> {
        let (count, array) = (self.count, self.array);
        let plain = |f: &str| f != "_id" && !f.contains('.');
        if count == array || !plain(count) || !plain(array) {
            return None;
        }
        let before = match self.fields {
            None => None,
            Some([]) => Some(empty_document().clone()),
            Some(_) => return None,
        };
        // The indexes whose partial filter reads a written field: the document may enter or
        // leave them (bit i: index i).
        let mut filtered = 0_u64;
        for (i, ix) in indexes.iter().enumerate() {
            let reads = |fs: &[String]| fs.iter().any(|f| f == count || f == array);
            if reads(&ix.key_fields) || i >= 64 {
                return None;
            }
            if reads(&ix.filter_fields) {
                if ix.spec.unique {
                    return None; // entering it could conflict: the full checks
                }
                filtered |= 1 << i;
            }
        }
        let holding = |doc: &Document, known: Option<usize>| {
            let mut held = 0_u64;
            for (i, ix) in indexes.iter().enumerate() {
                if filtered & (1 << i) != 0 && (known == Some(i) || ix.in_filter(doc)) {
                    held |= 1 << i;
                }
            }
            held
        };
        let Stored { doc, bytes } = stored;
        let held = holding(doc, held_by);
        // The fields in one pass (no hashing).
        let (mut counted, mut listed, mut numbered) = (None, None, true);
        for (k, v) in doc.iter_mut() {
            if k == count {
                counted = Some(v);
            } else if k == array {
                listed = Some(v);
            } else if self.number == Some(k.as_str()) {
                numbered = is_number(v);
            }
        }
        let (Some(Bson::Int32(x)), Some(Bson::Array(list)), true) = (counted, listed, numbered)
        else {
            return None;
        };
        let new_count = x.checked_add(self.n)?;
        let mut size = (*bytes)?;
        for (i, item) in items.iter().enumerate() {
            size += crate::error::element_at_bytes(list.len() + i, item)?;
        }
        if let Err(e) = check_size(self.coll, Some(size)) {
            return Some(Err(e));
        }
        *x = new_count;
        list.append(items);
        *bytes = Some(size);
        debug_assert_eq!(*bytes, document_bytes(doc), "size of the updated document");
        let now = holding(doc, None);
        Some(Ok((
            before,
            Moved64 {
                changed: held ^ now,
                now,
            },
        )))
    }
}

/// An index entry that moves: the index (its position), the old key, the new key.
type Move = (usize, Option<Vec<Key>>, Option<Vec<Key>>);

/// How an update can move a document's entry in an index: see [`MemIndex::moved_by`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Moved {
    Keys,
    Filter,
}

/// What an index held for a document before an update that can move its entry: its key
/// ([`Moved::Keys`]), or whether it held it at all ([`Moved::Filter`]: the key's values are
/// not written, so the entry keeps them if it stays).
enum Before {
    Key(Option<Vec<Key>>),
    InFilter(bool),
}

/// Checks document `id` once updated (`doc`, of `bytes`) as a replacement would: its `_id`
/// is unchanged (looked at only when the update wrote it: `id_written`), its size within the
/// limit, and no unique index among `moving` (an index's position and what it held for the
/// document before the update) holds its new key for another document.
/// Returns the entries to move.
fn check_updated(
    coll: &str,
    doc: &Document,
    bytes: Option<usize>,
    id: &Key,
    indexes: &[MemIndex],
    moving: Vec<(usize, Before)>,
    id_written: bool,
) -> Result<Vec<Move>> {
    if id_written
        && !doc
            .get("_id")
            .is_some_and(|x| compare_values(x, &id.0).is_eq())
    {
        return Err(Error::invalid("an update may not change _id"));
    }
    check_size(coll, bytes)?;
    // Allocated only when an entry moves (a push moves none until its bucket fills).
    let mut moves = Vec::new();
    for (i, before) in moving {
        let index = &indexes[i];
        let (old, new) = match before {
            Before::Key(old) => (old, index.key_of(doc)),
            Before::InFilter(was) => {
                let now = index.in_filter(doc);
                if was == now {
                    continue; // the entry stays as it was
                }
                let values = index.values_of(doc);
                if was {
                    (Some(values), None)
                } else {
                    (None, Some(values))
                }
            }
        };
        if old != new {
            if index.holds_other(new.as_deref(), id) {
                return Err(index.duplicate(coll));
            }
            moves.push((i, old, new));
        }
    }
    Ok(moves)
}

/// `_id`s (of documents borrowed for `'a`) in the order of a plan: an
/// enum rather than a boxed iterator, so that a lookup allocates nothing.
enum Ids<'a> {
    One(std::option::IntoIter<&'a Key>),
    Docs(std::iter::Map<btree_map::Range<'a, Key, Stored>, FirstOf<'a, Key, Stored>>),
    Index(EntryIds<'a>),
    Scan(btree_map::Keys<'a, Key, Stored>),
}

type FirstOf<'a, K, V> = fn((&'a K, &'a V)) -> &'a K;
/// The `_id`s of a range of index entries.
type EntryIds<'a> = std::iter::FlatMap<
    btree_map::Range<'a, Vec<Key>, Holders>,
    HolderIds<'a>,
    fn((&'a Vec<Key>, &'a Holders)) -> HolderIds<'a>,
>;

impl<'a> Iterator for Ids<'a> {
    type Item = &'a Key;
    fn next(&mut self) -> Option<&'a Key> {
        match self {
            Ids::One(it) => it.next(),
            Ids::Docs(it) => it.next(),
            Ids::Index(it) => it.next(),
            Ids::Scan(it) => it.next(),
        }
    }
}

impl<'a> DoubleEndedIterator for Ids<'a> {
    fn next_back(&mut self) -> Option<&'a Key> {
        match self {
            Ids::One(it) => it.next_back(),
            Ids::Docs(it) => it.next_back(),
            Ids::Index(it) => it.next_back(),
            Ids::Scan(it) => it.next_back(),
        }
    }
}

/// How to enumerate the candidates of a query (a superset of its matches), and the sort
/// order they come in.
struct Plan<'a> {
    source: Source<'a>,
    order: Order<'a>,
    /// Every candidate matches the query (the index answers it exactly), so a caller that
    /// needs only `_id`s need not look at the documents.
    covered: bool,
}

/// The order a plan's candidates come in, ascending.
enum Order<'a> {
    /// By `_id`.
    Id,
    /// By these index keys (whatever their declared direction), then `_id`.
    Keys(&'a [(String, i32)]),
}

/// Where a plan's candidates come from.
enum Source<'a> {
    /// The document with this `_id`, if any.
    Id(&'a Docs, Key),
    /// The documents with an `_id` within bounds, in `_id` order.
    IdRange(&'a Docs, Bound<Key>, Bound<Key>),
    /// The entries of an index from `bounds[..split]` to `bounds[split..]`, both included.
    Index {
        entries: &'a Entries,
        bounds: Vec<Key>,
        split: usize,
    },
    /// Every document, in `_id` order.
    Scan(&'a Docs),
}

impl<'a> Plan<'a> {
    fn ids(&self) -> Ids<'a> {
        match self.source {
            Source::Id(docs, ref id) => {
                Ids::One(docs.get_key_value(id).map(|(k, _)| k).into_iter())
            }
            Source::IdRange(docs, ref lower, ref upper) => Ids::Docs(
                docs.range::<Key, _>((lower.as_ref(), upper.as_ref()))
                    .map(|(k, _)| k),
            ),
            Source::Index {
                entries,
                ref bounds,
                split,
            } => {
                let (start, end) = bounds.split_at(split);
                let range = (Bound::Included(start), Bound::Included(end));
                Ids::Index(
                    entries
                        .range::<[Key], _>(range)
                        .flat_map(|(_, ids)| ids.iter()),
                )
            }
            Source::Scan(docs) => Ids::Scan(docs.keys()),
        }
    }

    /// Candidates, counted up to a cap (enough to tell a point lookup from a range).
    fn estimate(&self) -> usize {
        self.ids().take(64).count()
    }

    /// Whether the candidates come in `sort` order (`reversed`: when iterated backwards).
    fn sorted_by(&self, sort: &[(crate::query::Path, i32)], reversed: bool) -> bool {
        let keys = match self.order {
            Order::Id => &[][..],
            Order::Keys(keys) => keys,
        };
        keys_sorted_by(keys, sort, reversed)
    }
}

/// Whether candidates ordered by `keys` (ascending), then `_id`, come in `sort` order
/// (`reversed`: when iterated backwards).
fn keys_sorted_by(
    keys: &[(String, i32)],
    sort: &[(crate::query::Path, i32)],
    reversed: bool,
) -> bool {
    let id_last = keys.last().is_some_and(|(k, _)| k == "_id");
    let order = (keys.iter().map(|(k, _)| k.as_str()))
        .chain((!id_last).then_some("_id"))
        .map(|k| (k, if reversed { -1 } else { 1 }));
    let len = keys.len() + usize::from(!id_last);
    sort.len() <= len && (order.zip(sort)).all(|((k, d), (path, dir))| k == path && d == *dir)
}

/// Calls `visit` on each leaf condition of `f` until it returns `true`; whether one did.
fn any_leaf<'f>(f: &'f Filter, visit: &mut impl FnMut(&'f Filter) -> bool) -> bool {
    match f {
        Filter::And(fs) => fs.iter().any(|f| any_leaf(f, visit)),
        leaf => visit(leaf),
    }
}

/// Whether `partial` (an index's partial filter) is among the query's conditions: then every
/// match of the query is in the index.
fn implied(partial: &Filter, filter: &Filter) -> bool {
    match partial {
        Filter::And(fs) => fs.iter().all(|f| implied(f, filter)),
        leaf => any_leaf(filter, &mut |l| l == leaf),
    }
}

/// The value of an equality on `path` among the query's conditions.
fn eq_on(filter: &Filter, path: &str) -> Option<Key> {
    let mut found = None;
    any_leaf(filter, &mut |l| match l {
        Filter::Eq(p, v) if p == path => {
            found = Some(Key(v.clone()));
            true
        }
        _ => false,
    });
    found
}

/// Inclusive bounds implied by the range conditions on `path` (a superset of the exact range:
/// every match meets each condition, so any one of them bounds the range).
fn range_on(filter: &Filter, path: &str) -> (Option<Key>, Option<Key>) {
    let (mut lo, mut hi) = (None, None);
    any_leaf(filter, &mut |l| {
        match l {
            Filter::Gt(p, v) | Filter::Gte(p, v) if p == path => lo = Some(Key(v.clone())),
            Filter::Lt(p, v) | Filter::Lte(p, v) if p == path => hi = Some(Key(v.clone())),
            _ => {}
        }
        false
    });
    (lo, hi)
}

fn empty_document() -> &'static Document {
    static EMPTY: std::sync::OnceLock<Document> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Document::new)
}

fn id_first(mut doc: Document) -> Document {
    if doc.keys().next().map(String::as_str) == Some("_id") {
        return doc;
    }
    let mut out = Document::new();
    if let Some(id) = doc.remove("_id") {
        out.insert("_id", id);
    }
    out.extend(doc);
    out
}

#[derive(Debug, Default)]
struct State {
    collections: BTreeMap<String, Collection>,
}

impl State {
    /// Collection `coll`, created empty if need be (its name is copied only then).
    fn collection(&mut self, coll: &str) -> &mut Collection {
        if !self.collections.contains_key(coll) {
            self.collections
                .insert(coll.to_owned(), Collection::default());
        }
        self.collections.get_mut(coll).expect("inserted above")
    }
}

/// The embedded store. Cheap to clone: clones share the same data.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    ensured: Arc<EnsuredIndexes>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied write: every write
        // builds the new document first and swaps it in last, except updates, which check
        // whatever can refuse them before changing the document (and undo the change if a
        // check that needs the result refuses it).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Names of the collections that hold documents or indexes.
    pub fn collection_names(&self) -> Vec<String> {
        self.lock().collections.keys().cloned().collect()
    }

    /// Every document of a collection, in `_id` order.
    pub fn dump(&self, coll: &str) -> Vec<Document> {
        self.lock()
            .collections
            .get(coll)
            .map(|c| c.docs.values().map(|s| s.doc.clone()).collect())
            .unwrap_or_default()
    }

    /// Every document of a collection as relaxed Extended JSON, one per line (`mongoexport`'s
    /// format).
    pub fn dump_extjson(&self, coll: &str) -> String {
        self.dump(coll)
            .into_iter()
            .map(|d| Bson::Document(d).into_relaxed_extjson().to_string() + "\n")
            .collect()
    }

    /// Inserts documents as another tool would, bypassing the patterns (for imports and tests).
    pub fn insert_raw(&self, coll: &str, docs: impl IntoIterator<Item = Document>) -> Result<()> {
        let mut state = self.lock();
        let c = state.collection(coll);
        docs.into_iter().try_for_each(|d| c.insert(coll, d))
    }

    /// Drops a collection and its indexes.
    pub fn drop_collection(&self, coll: &str) {
        self.lock().collections.remove(coll);
        self.ensured.clear();
    }

    /// Updates the first document matching `filter` in `sort` order, or upserts. With
    /// `fields`, also returns the matched document's `_id` and those fields, as they were.
    fn sync_update(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
        update: &mut Update,
        upsert: bool,
        fields: Option<&[&str]>,
    ) -> Result<(UpdateOutcome, Option<Document>)> {
        let mut state = self.lock();
        let c = state.collection(coll);
        let first = match c.first_open(filter, sort) {
            Some(first) => first,
            None => c.first_in_order(filter, sort),
        };
        if let Some(id) = first {
            let before = match c.push_in_place(coll, &id, update, fields) {
                Some(done) => done?,
                None => c.update(coll, &id, update, fields)?,
            };
            let outcome = UpdateOutcome {
                matched: true,
                upserted: false,
            };
            return Ok((outcome, before));
        }
        if !upsert {
            return Ok((UpdateOutcome::default(), None));
        }
        let mut doc = Document::new();
        for (k, v) in filter.equalities() {
            doc.insert(k, v.clone());
        }
        let copied = doc.len();
        update.apply(&mut doc, true).map_err(|e| Error::Server {
            message: e,
            source: None,
        })?;
        // MongoDB (5.0+) adds the fields an update creates in lexicographic order. The update
        // appended them after the fields copied from the filter (whose values it may have
        // changed in place).
        // `_id` first, as every stored document has it (so that `insert` need not move it).
        let mut all: Vec<(String, Bson)> = doc.into_iter().collect();
        let mut created = all.split_off(copied);
        created.sort_by(|a, b| a.0.cmp(&b.0));
        let id = match all.iter().position(|(k, _)| k == "_id") {
            Some(i) => Some(all.remove(i)),
            None => (created.iter().position(|(k, _)| k == "_id")).map(|i| created.remove(i)),
        };
        let ordered: Document = id.into_iter().chain(all).chain(created).collect();
        c.insert(coll, ordered)?;
        let outcome = UpdateOutcome {
            matched: false,
            upserted: true,
        };
        Ok((outcome, None))
    }

    fn sync_replace(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        let mut state = self.lock();
        let c = state.collection(coll);
        if let Some(id) = c.first_match(filter) {
            let mut doc = doc;
            doc.insert("_id", id.0.clone());
            c.replace(coll, &id, id_first(doc))?;
            return Ok(UpdateOutcome {
                matched: true,
                upserted: false,
            });
        }
        if !upsert {
            return Ok(UpdateOutcome::default());
        }
        let mut full = Document::new();
        for (k, v) in filter.equalities() {
            if k == "_id" {
                full.insert(k, v.clone());
            }
        }
        full.extend(doc);
        c.insert(coll, full)?;
        Ok(UpdateOutcome {
            matched: false,
            upserted: true,
        })
    }

    fn sync_find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Vec<Document> {
        let state = self.lock();
        state
            .collections
            .get(coll)
            .map(|c| c.find(filter, opts))
            .unwrap_or_default()
    }

    fn sync_stats(&self, coll: &str, filter: &Filter, field: &str) -> ArrayStats {
        let state = self.lock();
        let mut stats = ArrayStats::default();
        let Some(c) = state.collections.get(coll) else {
            return stats;
        };
        for id in c.matching(filter) {
            stats.documents += 1;
            match c.docs[&id].doc.get(field) {
                Some(Bson::Array(a)) => stats.items += a.len() as u64,
                None | Some(Bson::Null) => {}
                Some(_) => stats.not_arrays += 1,
            }
        }
        stats
    }

    fn sync_delete(&self, coll: &str, filter: &Filter) -> u64 {
        let mut state = self.lock();
        let Some(c) = state.collections.get_mut(coll) else {
            return 0;
        };
        let ids = c.matching(filter);
        for id in &ids {
            if let Some(Stored { doc, .. }) = c.docs.remove(id) {
                for index in &mut c.indexes {
                    index.remove(&doc, id);
                }
            }
        }
        ids.len() as u64
    }

    fn sync_create_index(&self, coll: &str, spec: &IndexSpec) -> Result<()> {
        if spec.keys.is_empty() {
            return Err(Error::invalid("an index needs at least one key"));
        }
        let mut state = self.lock();
        let c = state.collection(coll);
        if let Some(existing) = c.indexes.iter().find(|i| i.spec.name == spec.name) {
            if existing.spec != *spec {
                return Err(Error::Server {
                    message: format!(
                        "an index named {} already exists with different options",
                        spec.name
                    ),
                    source: None,
                });
            }
            return Ok(());
        }
        let mut index = MemIndex::new(spec.clone());
        for (id, Stored { doc, .. }) in &c.docs {
            if index.conflicts(doc, id) {
                return Err(Error::DuplicateKey {
                    collection: coll.to_owned(),
                    message: format!(
                        "E11000 duplicate key error building index {} on {coll}",
                        spec.name
                    ),
                });
            }
            index.add(doc, id);
        }
        c.indexes.push(index);
        Ok(())
    }
}

impl Store for MemoryStore {
    async fn insert_one(&self, coll: &str, doc: Document) -> Result<()> {
        self.lock().collection(coll).insert(coll, doc)
    }

    async fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        Ok(self.sync_update(coll, filter, &[], update, upsert, None)?.0)
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
        _hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        let (_, before) = self.sync_update(coll, filter, sort, update, upsert, Some(fields))?;
        Ok(before)
    }

    async fn push_open(
        &self,
        spec: &SeriesSpec,
        key: &Bson,
        items: &mut Vec<Bson>,
        seq: i64,
        new_id: &(dyn Fn() -> Bson + Sync),
    ) -> Result<bool> {
        let native = self
            .lock()
            .collection(spec.collection)
            .push_open(spec, key, items, seq, new_id);
        match native {
            Some(done) => done,
            None => crate::series::push_open_upsert(self, spec, key, items, seq, new_id).await,
        }
    }

    async fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        self.sync_replace(coll, filter, doc, upsert)
    }

    async fn find(&self, coll: &str, filter: &Filter, opts: &FindOptions) -> Result<Vec<Document>> {
        opts.check()?;
        Ok(self.sync_find(coll, filter, opts))
    }

    /// Serialized from the stored documents, without copying them first.
    async fn find_raw(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<RawDocumentBuf>> {
        opts.check()?;
        let state = self.lock();
        let Some(c) = state.collections.get(coll) else {
            return Ok(Vec::new());
        };
        c.find_refs(filter, &opts.sort, opts.skip, opts.limit)
            .into_iter()
            .map(|(_, doc)| crate::store::to_raw(coll, doc))
            .collect()
    }

    async fn array_stats(
        &self,
        coll: &str,
        filter: &Filter,
        array_field: &str,
    ) -> Result<ArrayStats> {
        Ok(self.sync_stats(coll, filter, array_field))
    }

    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64> {
        Ok(self.sync_delete(coll, filter))
    }

    async fn create_index(&self, coll: &str, index: &IndexSpec) -> Result<()> {
        self.sync_create_index(coll, index)
    }

    async fn index_names(&self, coll: &str) -> Result<Vec<String>> {
        let state = self.lock();
        Ok(match state.collections.get(coll) {
            Some(c) => std::iter::once("_id_".to_owned())
                .chain(c.indexes.iter().map(|i| i.spec.name.clone()))
                .collect(),
            None => Vec::new(),
        })
    }

    async fn drop_index(&self, coll: &str, name: &str) -> Result<()> {
        let mut state = self.lock();
        if let Some(c) = state.collections.get_mut(coll) {
            c.indexes.retain(|i| i.spec.name != name);
        }
        Ok(())
    }

    fn ensured(&self) -> &EnsuredIndexes {
        &self.ensured
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn open_index() -> IndexSpec {
        IndexSpec {
            name: "open".into(),
            keys: vec![("k".into(), 1)],
            unique: true,
            partial: Some(Filter::Lt("count".into(), Bson::Int32(3))),
        }
    }

    /// A collection with a series' three indexes (size 3) and `extra`, holding documents of
    /// every shape a push can meet: open, about to fill, full, a count that is not an Int32 or
    /// would overflow, items missing or not an array, and one too large for another item.
    fn series_collection(extra: Option<IndexSpec>, big: bool) -> Collection {
        let spec = crate::series::SeriesSpec {
            collection: "c",
            key_field: "k",
            items_field: "items",
            count_field: "count",
            size: 3,
            order: crate::series::SeriesOrder::Seq("seq"),
        };
        let mut c = Collection::default();
        for index in spec.indexes().into_iter().chain(extra) {
            c.indexes.push(MemIndex::new(index));
        }
        let big = "x".repeat(if big { MAX_DOCUMENT_BYTES - 100 } else { 1 });
        let docs = [
            doc! {"_id": "a1", "k": 1, "count": 3, "items": [1, 2, 3], "seq": 1_i64},
            doc! {"_id": "a2", "k": 1, "count": 2, "items": [4, 5], "seq": 2_i64},
            doc! {"_id": "b1", "k": 2, "count": 0, "items": [], "seq": 1_i64},
            doc! {"_id": "c1", "k": 3, "count": 1_i64, "items": [1], "seq": 1_i64},
            doc! {"_id": "d1", "k": 4, "count": 1, "seq": 1_i64},
            doc! {"_id": "e1", "k": 5, "count": 1, "items": "x", "seq": 1_i64},
            doc! {"_id": "f1", "k": 6, "count": i32::MAX, "items": [1], "seq": 1_i64},
            doc! {"_id": "g1", "k": 7, "count": 1, "items": [big], "seq": 1_i64},
            doc! {"_id": "h1", "k": 8, "count": 5, "items": [1], "seq": 1_i64},
        ];
        for d in docs {
            c.insert("c", d).unwrap();
        }
        c
    }

    /// The in-place push gives exactly what the generic update gives (result, documents,
    /// sizes, index entries), and declines what it does not handle.
    #[test]
    fn in_place_push_is_the_generic_update() {
        let by_count = IndexSpec {
            name: "by_count".into(),
            keys: vec![("count".into(), 1)],
            unique: false,
            partial: None,
        };
        let unique_open = IndexSpec {
            name: "unique_open".into(),
            keys: vec![("k".into(), 1)],
            unique: true,
            partial: Some(Filter::Lt("count".into(), Bson::Int32(3))),
        };
        let mut in_place = 0;
        for extra in [None, Some(by_count), Some(unique_open)] {
            let (small, large) = (
                series_collection(extra.clone(), false),
                series_collection(extra.clone(), true),
            );
            for id in ["a1", "a2", "b1", "c1", "d1", "e1", "f1", "g1", "h1"] {
                for (n, pushed) in [(1, 1), (2, 2), (-3, 1), (1, 0)] {
                    for fields in [None, Some(&[][..]), Some(&["seq"][..])] {
                        let update = Update {
                            inc: vec![("count".into(), n)],
                            push: vec![("items".into(), vec![Bson::Int32(9); pushed])],
                            ..Update::default()
                        };
                        let start = if id == "g1" { &large } else { &small };
                        let id = Key(Bson::String(id.into()));
                        let mut fast = start.clone();
                        let mut fast_update = update.clone();
                        let fast_result =
                            match fast.push_in_place("c", &id, &mut fast_update, fields) {
                                Some(r) => {
                                    in_place += 1;
                                    r
                                }
                                None => fast.update("c", &id, &mut fast_update, fields),
                            };
                        let mut generic = start.clone();
                        let mut generic_update = update.clone();
                        let generic_result = generic.update("c", &id, &mut generic_update, fields);
                        let case = format!("{id:?} {n} {pushed} {fields:?} {extra:?}");
                        assert_eq!(
                            format!("{fast_result:?}"),
                            format!("{generic_result:?}"),
                            "{case}"
                        );
                        assert_eq!(fast_update, generic_update, "{case}");
                        assert_eq!(fast.docs.len(), generic.docs.len(), "{case}");
                        for ((k, a), (l, b)) in fast.docs.iter().zip(&generic.docs) {
                            assert!(k == l && a.doc == b.doc && a.bytes == b.bytes, "{case}");
                        }
                        for (a, b) in fast.indexes.iter().zip(&generic.indexes) {
                            assert_eq!(
                                format!("{:?}", a.entries),
                                format!("{:?}", b.entries),
                                "{case}"
                            );
                        }
                    }
                }
            }
        }
        assert!(in_place >= 20, "the in-place path ran {in_place} times");
    }

    /// The native series push leaves the store exactly as the conditional upsert does (result,
    /// items given back or taken, documents, index entries), over buckets of every shape, new
    /// keys, numbers and `_id`s already taken, and without the open-document index.
    #[tokio::test]
    async fn native_push_is_the_upsert() {
        let spec = crate::series::SeriesSpec {
            collection: "c",
            key_field: "k",
            items_field: "items",
            count_field: "count",
            size: 3,
            order: crate::series::SeriesOrder::TimeId("seq"),
        };
        let docs = [
            doc! {"_id": "1_1", "k": 1, "count": 3, "items": [1, 2, 3], "seq": 1_i64},
            doc! {"_id": "1_2", "k": 1, "count": 1, "items": [4], "seq": 2_i64},
            doc! {"_id": "2_1", "k": 2, "count": 3, "items": [1, 2, 3], "seq": 1_i64},
            doc! {"_id": "3_1", "k": 3, "count": 1_i64, "items": [1], "seq": 1_i64},
            doc! {"_id": "4_1", "k": 4, "count": 1, "items": "x", "seq": 1_i64},
            doc! {"_id": "5_1", "k": 5, "count": 1, "seq": 1_i64},
            // Numbers that are not numbers: not of the series, passed over (the string sorts
            // first, newest first).
            doc! {"_id": "7_1", "k": 7, "count": 1, "items": [1], "seq": 1_i64},
            doc! {"_id": "7_x", "k": 7, "count": 1, "items": [2], "seq": "x"},
            doc! {"_id": "8_x", "k": 8, "count": 1, "items": [1], "seq": null},
        ];
        let native = MemoryStore::new();
        let upsert = MemoryStore::new();
        for s in [&native, &upsert] {
            spec.ensure_indexes(s).await.unwrap();
            s.insert_raw("c", docs.clone()).unwrap();
        }
        // The usual case is native (not the upsert behind it).
        let handled = native.lock().collection("c").push_open(
            &spec,
            &Bson::Int32(1),
            &mut vec![Bson::Int32(0)],
            3,
            &|| Bson::String("1_3".into()),
        );
        assert!(matches!(handled, Some(Ok(false))), "{handled:?}");
        upsert
            .update_one(
                "c",
                &Filter::eq("_id", "1_2"),
                &mut spec_push(&spec, 0),
                false,
            )
            .await
            .unwrap();
        // (key, seq, _id) of each push.
        let pushes = [
            (1, 3, "1_3"),
            (1, 3, "1_3"),
            (1, 4, "1_4"),
            (2, 2, "2_2"),
            (2, 2, "2_1"),
            (2, 1, "2_9"),
            (3, 2, "3_2"),
            (4, 2, "4_2"),
            (5, 2, "5_2"),
            (6, 1, "6_1"),
            (6, 1, "6_1"),
            (7, 2, "7_2"),
            (8, 1, "8_1"),
        ];
        let mut checks = 0;
        for dropped in [false, true] {
            if dropped {
                let open = native.index_names("c").await.unwrap();
                let open = open.iter().find(|n| n.starts_with("0_")).unwrap();
                for s in [&native, &upsert] {
                    s.drop_index("c", open).await.unwrap();
                }
            }
            for round in 0..4 {
                for (k, seq, id) in pushes {
                    let key = Bson::Int32(k);
                    let item = || vec![Bson::Int32(100 * round + k)];
                    let new_id = || Bson::String(id.into());
                    let (mut a, mut b) = (item(), item());
                    let ra = native.push_open(&spec, &key, &mut a, seq, &new_id).await;
                    let rb =
                        crate::series::push_open_upsert(&upsert, &spec, &key, &mut b, seq, &new_id)
                            .await;
                    let case = format!("{k} {seq} {id} round {round}, index dropped: {dropped}");
                    assert_eq!(format!("{ra:?}"), format!("{rb:?}"), "{case}");
                    assert_eq!(a.is_empty(), b.is_empty(), "{case}");
                    assert_eq!(native.dump("c"), upsert.dump("c"), "{case}");
                    let (sa, sb) = (native.lock(), upsert.lock());
                    let (ca, cb) = (&sa.collections["c"], &sb.collections["c"]);
                    for (x, y) in ca.indexes.iter().zip(&cb.indexes) {
                        assert_eq!(
                            format!("{:?}", x.entries),
                            format!("{:?}", y.entries),
                            "{case}"
                        );
                    }
                    checks += 1;
                }
            }
        }
        assert_eq!(checks, 2 * 4 * pushes.len());
    }

    /// The update of one push of `n` into `spec`'s series.
    fn spec_push(spec: &crate::series::SeriesSpec, n: i32) -> Update {
        Update {
            inc: vec![(spec.count_field.into(), 1)],
            push: vec![(spec.items_field.into(), vec![Bson::Int32(n)])],
            ..Update::default()
        }
    }

    /// The open-document lookup finds what the planner finds, for the push's query and others.
    #[test]
    fn open_lookup_is_the_planners() {
        let c = series_collection(None, false);
        let newest = [("seq".into(), -1), ("_id".into(), -1)];
        let oldest = [("seq".into(), 1), ("_id".into(), 1)];
        let mut answered = 0;
        for k in [
            Bson::Int32(1),
            Bson::Int64(2),
            Bson::Double(8.0),
            Bson::Int32(9),
            Bson::Null,
        ] {
            let open = Filter::and([
                Filter::Eq("k".into(), k.clone()),
                Filter::Lt("count".into(), Bson::Int32(3)),
            ]);
            let other_size = Filter::and([
                Filter::Eq("k".into(), k.clone()),
                Filter::Lt("count".into(), Bson::Int32(4)),
            ]);
            let empty = Filter::And(Vec::new());
            for filter in [open, other_size, Filter::Eq("k".into(), k.clone()), empty] {
                for sort in [&newest[..], &oldest[..], &newest[..1], &[][..]] {
                    let planned = c.first_in_order(&filter, sort);
                    if let Some(found) = c.first_open(&filter, sort) {
                        answered += 1;
                        assert_eq!(found, planned, "{filter:?} {sort:?}");
                    }
                }
            }
        }
        assert!(answered >= 8, "the open lookup answered {answered} queries");
    }

    #[tokio::test]
    async fn partial_unique_index_admits_one_open_document_per_key() {
        let s = MemoryStore::new();
        s.create_index("c", &open_index()).await.unwrap();
        s.insert_one("c", doc! {"_id": 1, "k": "a", "count": 1})
            .await
            .unwrap();
        let dup = s
            .insert_one("c", doc! {"_id": 2, "k": "a", "count": 2})
            .await;
        assert!(matches!(dup, Err(Error::DuplicateKey { .. })));
        s.insert_one("c", doc! {"_id": 3, "k": "a", "count": 3})
            .await
            .unwrap(); // full: not indexed
        s.insert_one("c", doc! {"_id": 4, "k": "b", "count": 0})
            .await
            .unwrap();
        // An update that would make a second open document is refused and changes nothing.
        let f = Filter::eq("_id", 3);
        let u = Update {
            inc: vec![("count".into(), -1)],
            push: vec![("items".into(), vec![Bson::Int32(7)])],
            ..Update::default()
        };
        let mut refused = u.clone();
        assert!(matches!(
            s.update_one("c", &f, &mut refused, false).await,
            Err(Error::DuplicateKey { .. })
        ));
        assert_eq!(refused, u, "a refused update keeps its items");
        assert_eq!(s.dump("c")[1], doc! {"_id": 3, "k": "a", "count": 3});
        // Filling the open document frees the key.
        let mut fill = Update {
            inc: vec![("count".into(), 2)],
            ..Update::default()
        };
        s.update_one("c", &Filter::eq("_id", 1), &mut fill, false)
            .await
            .unwrap();
        s.insert_one("c", doc! {"_id": 5, "k": "a", "count": 0})
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn index_over_duplicates_is_refused() {
        let s = MemoryStore::new();
        s.insert_raw(
            "c",
            [
                doc! {"_id": 1, "k": "a", "count": 1},
                doc! {"_id": 2, "k": "a", "count": 1},
            ],
        )
        .unwrap();
        assert!(matches!(
            s.create_index("c", &open_index()).await,
            Err(Error::DuplicateKey { .. })
        ));
        assert_eq!(s.index_names("c").await.unwrap(), ["_id_"]);
    }

    #[tokio::test]
    async fn upsert_builds_the_document_like_mongodb() {
        let s = MemoryStore::new();
        let f = Filter::and([
            Filter::eq("customerId", 123),
            Filter::Lt("count".into(), Bson::Int32(10)),
        ]);
        let u = Update {
            push: vec![("history".into(), vec![Bson::Int32(1)])],
            inc: vec![("count".into(), 1)],
            set_on_insert: vec![
                ("_id".into(), "123_5".into()),
                ("customerId".into(), Bson::Int32(123)),
            ],
            ..Update::default()
        };
        let r = s.update_one("t", &f, &mut u.clone(), true).await.unwrap();
        assert_eq!(
            r,
            UpdateOutcome {
                matched: false,
                upserted: true
            }
        );
        let d = &s.dump("t")[0];
        assert_eq!(
            d,
            &doc! {"_id": "123_5", "customerId": 123, "count": 1, "history": [1]}
        );
        assert_eq!(
            d.keys().collect::<Vec<_>>(),
            ["_id", "customerId", "count", "history"]
        );
        let r = s.update_one("t", &f, &mut u.clone(), true).await.unwrap();
        assert_eq!(
            r,
            UpdateOutcome {
                matched: true,
                upserted: false
            }
        );
        assert_eq!(s.dump("t")[0].get_i32("count"), Ok(2));
    }

    #[tokio::test]
    async fn first_in_order_through_an_index_is_the_scan_s() {
        // The open-document index of a series, partial on `count < 3`, and a plain store.
        let open = IndexSpec {
            name: "open".into(),
            keys: vec![("k".into(), 1), ("page".into(), -1), ("_id".into(), -1)],
            unique: false,
            partial: Some(Filter::Lt("count".into(), Bson::Int32(3))),
        };
        let (indexed, plain) = (MemoryStore::new(), MemoryStore::new());
        indexed.create_index("c", &open).await.unwrap();
        for i in 0..24_i64 {
            let d = doc! {"_id": i, "k": i % 2, "page": i / 4, "count": (i % 5) as i32, "x": i % 3};
            indexed.insert_one("c", d.clone()).await.unwrap();
            plain.insert_one("c", d).await.unwrap();
        }
        let lt = || Filter::Lt("count".into(), Bson::Int32(3));
        let filters = [
            Filter::and([Filter::eq("k", 1_i64), lt()]),
            Filter::and([Filter::eq("k", 0_i32), lt()]),
            // Contradictory equalities on the key: nothing matches.
            Filter::and([Filter::eq("k", 1_i64), Filter::eq("k", 0_i64), lt()]),
            // A condition the index does not hold.
            Filter::and([Filter::eq("k", 1_i64), lt(), Filter::eq("x", 2_i64)]),
            Filter::and([
                Filter::eq("k", 1_i64),
                lt(),
                Filter::Gt("page".into(), 3_i64.into()),
            ]),
            Filter::and([Filter::eq("k", 7_i64), lt()]),
        ];
        let sorts: [Vec<(crate::query::Path, i32)>; 2] = [
            vec![("page".into(), -1), ("_id".into(), -1)],
            vec![("page".into(), 1), ("_id".into(), 1)],
        ];
        for f in &filters {
            for sort in &sorts {
                let mut u = Update {
                    inc: vec![("count".into(), 0)],
                    ..Update::default()
                };
                let a = indexed
                    .update_first("c", f, sort, "", &mut u.clone(), false, &["_id"])
                    .await
                    .unwrap();
                let b = plain
                    .update_first("c", f, sort, "", &mut u, false, &["_id"])
                    .await
                    .unwrap();
                assert_eq!(a, b, "{f:?} sorted by {sort:?}");
            }
        }
    }

    #[tokio::test]
    async fn secondary_index_narrows_and_sorts_like_a_scan() {
        let s = MemoryStore::new();
        let ix = IndexSpec {
            name: "k_id".into(),
            keys: vec![("k".into(), 1), ("_id".into(), 1)],
            unique: false,
            partial: None,
        };
        s.create_index("c", &ix).await.unwrap();
        for i in 0..50 {
            s.insert_one("c", doc! {"_id": format!("{:02}", 49 - i), "k": i % 3})
                .await
                .unwrap();
        }
        let opts = FindOptions {
            sort: vec![("_id".into(), 1)],
            skip: 2,
            limit: Some(3),
        };
        let got = s.find("c", &Filter::eq("k", 1_i64), &opts).await.unwrap();
        let ids: Vec<&str> = got.iter().map(|d| d.get_str("_id").unwrap()).collect();
        assert_eq!(ids, ["06", "09", "12"]);
    }
}
