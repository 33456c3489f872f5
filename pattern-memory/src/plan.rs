//! The query planner: which documents a filter may match (an `_id` lookup or range, an index
//! range, or a scan) and in which order, and the finds that walk those candidates.

use std::collections::btree_map::{self};
use std::ops::Bound;

use bson::Bson;

use super::collection::{Collection, Docs, Stored};
use super::index::{sorted_once, Entries, HolderIds, Holders, MemIndex};
use super::key::Key;
use pattern_store::query::Filter;

impl Collection {
    /// The cheapest plan for `filter`: an `_id` equality or range on the documents themselves,
    /// an index (a partial one only when the query carries its partial filter), or a scan.
    pub(super) fn plan<'a>(&'a self, filter: &Filter) -> Plan<'a> {
        let docs = &self.docs;
        let by_id = |source| Plan {
            source,
            order: Order::Id,
            covered: false,
            index: None,
        };
        if let Some(id) = eq_on(filter, "_id", None) {
            return by_id(Source::Id(docs, id));
        }
        if let Some(values) = in_on(filter, "_id", None) {
            let mut ids: Vec<&Key> = (values.iter())
                .filter_map(|v| docs.get_key_value(&Key::of(v)).map(|(k, _)| k))
                .collect();
            ids.sort();
            ids.dedup();
            return by_id(Source::List(ids));
        }
        // A disjunction whose every branch has a plan: the union of their candidates.
        if let Filter::Or(branches) = filter {
            let mut ids: Vec<&Key> = Vec::new();
            let mut indexed = true;
            for branch in branches {
                let plan = self.plan(branch);
                if matches!(plan.source, Source::Scan(_)) {
                    indexed = false;
                    break;
                }
                ids.extend(plan.ids());
            }
            if indexed {
                ids.sort();
                ids.dedup();
                return by_id(Source::List(ids));
            }
        }
        let (lo, hi) = range_on(filter, "_id", None);
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

    /// What the planner does for `filter`: the index it walks, the documents it examines
    /// (its candidates) and how many of them match.
    pub(super) fn explain(&self, filter: &Filter) -> MemoryPlan {
        let plan = self.plan(filter);
        let (mut examined, mut returned) = (0, 0);
        for id in plan.ids() {
            examined += 1;
            returned += usize::from(filter.matches(&self.docs[id].doc));
        }
        MemoryPlan {
            index: plan.index.map(str::to_owned),
            examined,
            returned,
        }
    }
}

/// What the in-memory planner does for a filter ([`MemoryStore::explain`](super::MemoryStore::explain)),
/// as MongoDB's `explain` tells it: the index it walks, if any, the documents it examines and
/// how many of them it returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryPlan {
    /// The index's name; `None` when the planner reads the documents themselves (an `_id`
    /// lookup or range, or a scan of the collection).
    pub index: Option<String>,
    /// Documents examined (the plan's candidates).
    pub examined: usize,
    /// Documents that match.
    pub returned: usize,
}

/// `_id`s (of documents borrowed for `'a`) in the order of a plan: an
/// enum rather than a boxed iterator, so that a lookup allocates nothing.
pub(super) enum Ids<'a> {
    One(std::option::IntoIter<&'a Key>),
    List(std::vec::IntoIter<&'a Key>),
    Docs(std::iter::Map<btree_map::Range<'a, Key, Stored>, FirstOf<'a, Key, Stored>>),
    Index(EntryIds<'a>),
    Scan(btree_map::Keys<'a, Key, Stored>),
}

pub(super) type FirstOf<'a, K, V> = fn((&'a K, &'a V)) -> &'a K;
/// The `_id`s of a range of index entries.
pub(super) type EntryIds<'a> = std::iter::FlatMap<
    btree_map::Range<'a, Vec<Key>, Holders>,
    HolderIds<'a>,
    fn((&'a Vec<Key>, &'a Holders)) -> HolderIds<'a>,
>;

impl<'a> Iterator for Ids<'a> {
    type Item = &'a Key;
    fn next(&mut self) -> Option<&'a Key> {
        match self {
            Ids::One(it) => it.next(),
            Ids::List(it) => it.next(),
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
            Ids::List(it) => it.next_back(),
            Ids::Docs(it) => it.next_back(),
            Ids::Index(it) => it.next_back(),
            Ids::Scan(it) => it.next_back(),
        }
    }
}

/// How to enumerate the candidates of a query (a superset of its matches), and the sort
/// order they come in.
pub(super) struct Plan<'a> {
    pub(super) source: Source<'a>,
    pub(super) order: Order<'a>,
    /// Every candidate matches the query (the index answers it exactly), so a caller that
    /// needs only `_id`s need not look at the documents.
    pub(super) covered: bool,
    /// The name of the index it walks (`None`: the documents themselves, by `_id` or a scan).
    pub(super) index: Option<&'a str>,
}

/// The order a plan's candidates come in, ascending.
pub(super) enum Order<'a> {
    /// By `_id`.
    Id,
    /// By these index keys (whatever their declared direction), then `_id`.
    Keys(&'a [(String, i32)]),
}

/// Where a plan's candidates come from.
pub(super) enum Source<'a> {
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
    /// These `_id`s (of existing documents, or of index entries: a superset of the matches),
    /// ascending, each once.
    List(Vec<&'a Key>),
}

impl<'a> Plan<'a> {
    pub(super) fn ids(&self) -> Ids<'a> {
        match self.source {
            Source::Id(docs, ref id) => {
                Ids::One(docs.get_key_value(id).map(|(k, _)| k).into_iter())
            }
            Source::IdRange(docs, ref lower, ref upper) => {
                // Contradictory bounds (`$gte: 5, $lte: 3`) match nothing (a `BTreeMap` range
                // would panic).
                if let (Bound::Included(lo), Bound::Included(hi)) = (lower, upper) {
                    if lo > hi {
                        return Ids::List(Vec::new().into_iter());
                    }
                }
                Ids::Docs(
                    docs.range::<Key, _>((lower.as_ref(), upper.as_ref()))
                        .map(|(k, _)| k),
                )
            }
            Source::Index {
                entries,
                ref bounds,
                split,
            } => {
                let (start, end) = bounds.split_at(split);
                if start > end {
                    return Ids::List(Vec::new().into_iter());
                }
                let range = (Bound::Included(start), Bound::Included(end));
                Ids::Index(
                    entries
                        .range::<[Key], _>(range)
                        .flat_map(|(_, ids)| ids.iter()),
                )
            }
            Source::Scan(docs) => Ids::Scan(docs.keys()),
            Source::List(ref ids) => Ids::List(ids.clone().into_iter()),
        }
    }

    /// Candidates, counted up to a cap (enough to tell a point lookup from a range).
    pub(super) fn estimate(&self) -> usize {
        self.ids().take(64).count()
    }

    /// Whether the candidates come in `sort` order (`reversed`: when iterated backwards).
    pub(super) fn sorted_by(
        &self,
        sort: &[(pattern_store::query::Path, i32)],
        reversed: bool,
    ) -> bool {
        let keys = match self.order {
            Order::Id => &[][..],
            Order::Keys(keys) => keys,
        };
        keys_sorted_by(keys, sort, reversed)
    }
}

/// Whether candidates ordered by `keys` (ascending), then `_id`, come in `sort` order
/// (`reversed`: when iterated backwards).
pub(super) fn keys_sorted_by(
    keys: &[(String, i32)],
    sort: &[(pattern_store::query::Path, i32)],
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
pub(super) fn any_leaf<'f>(f: &'f Filter, visit: &mut impl FnMut(&'f Filter) -> bool) -> bool {
    match f {
        Filter::And(fs) | Filter::Clause(fs) => fs.iter().any(|f| any_leaf(f, visit)),
        leaf => visit(leaf),
    }
}

/// Calls `visit` on each leaf condition of `f` on `path` until it returns `true`; whether
/// one did. Within `scope`, an element match of `f`, its conditions count too, with their
/// paths within the element (`{specs: {$elemMatch: {k: "a"}}}` holds `k: "a"` on `specs.k`):
/// every match holds such a value on `path` in that element, and an index through the array
/// holds the element's values in one entry. Conditions of two element matches are never
/// combined: they may hold in different elements.
pub(super) fn any_leaf_on<'f>(
    f: &'f Filter,
    path: &str,
    scope: Option<&Filter>,
    visit: &mut impl FnMut(&'f Filter) -> bool,
) -> bool {
    match f {
        Filter::And(fs) | Filter::Clause(fs) => {
            fs.iter().any(|f| any_leaf_on(f, path, scope, visit))
        }
        Filter::ElemMatch(p, fs) if scope.is_some_and(|s| std::ptr::eq(s, f)) => {
            match path
                .strip_prefix(p.as_str())
                .and_then(|r| r.strip_prefix('.'))
            {
                Some(rest) => fs.iter().any(|f| any_leaf_on(f, rest, None, visit)),
                None => false,
            }
        }
        leaf => leaf.path() == path && visit(leaf),
    }
}

/// Calls `visit` on each element match among the query's conditions.
fn each_elem_match<'f>(f: &'f Filter, visit: &mut impl FnMut(&'f Filter)) {
    match f {
        Filter::And(fs) | Filter::Clause(fs) => fs.iter().for_each(|f| each_elem_match(f, visit)),
        Filter::ElemMatch(..) => visit(f),
        _ => {}
    }
}

/// Whether `partial` (an index's partial filter) is among the query's conditions: then every
/// match of the query is in the index.
pub(super) fn implied(partial: &Filter, filter: &Filter) -> bool {
    match partial {
        Filter::And(fs) | Filter::Clause(fs) => fs.iter().all(|f| implied(f, filter)),
        leaf => any_leaf(filter, &mut |l| l == leaf),
    }
}

/// The value of an equality on `path` among the query's conditions (the first value of an
/// `$all`, which every match holds too: what MongoDB looks up in an index for it).
pub(super) fn eq_on(filter: &Filter, path: &str, scope: Option<&Filter>) -> Option<Key> {
    let mut found = None;
    any_leaf_on(filter, path, scope, &mut |l| match l {
        Filter::Eq(_, v) => {
            found = Some(Key::of(v));
            true
        }
        Filter::All(_, vs) if !vs.is_empty() => {
            found = Some(Key::of(&vs[0]));
            true
        }
        _ => false,
    });
    found
}

/// The values of an `$in` on `path` among the query's conditions.
pub(super) fn in_on<'f>(
    filter: &'f Filter,
    path: &str,
    scope: Option<&Filter>,
) -> Option<&'f [Bson]> {
    let mut found = None;
    any_leaf_on(filter, path, scope, &mut |l| match l {
        Filter::In(_, vs) => {
            found = Some(&vs[..]);
            true
        }
        _ => false,
    });
    found
}

/// Inclusive bounds implied by the range conditions on `path` (a superset of the exact range:
/// every match meets each condition, so any one of them bounds the range). A string prefix
/// is the range from the prefix to the first string after every string that starts with it.
pub(super) fn range_on(
    filter: &Filter,
    path: &str,
    scope: Option<&Filter>,
) -> (Option<Key>, Option<Key>) {
    let (mut lo, mut hi) = (None, None);
    any_leaf_on(filter, path, scope, &mut |l| {
        match l {
            Filter::Gt(_, v) | Filter::Gte(_, v) => lo = Some(Key::of(v)),
            Filter::Lt(_, v) | Filter::Lte(_, v) => hi = Some(Key::of(v)),
            Filter::StartsWith(_, prefix) if !prefix.is_empty() => {
                lo = Some(Key::new(Bson::String(prefix.clone())));
                if let Some(after) = after_prefix(prefix) {
                    hi = Some(Key::new(Bson::String(after)));
                }
            }
            _ => {}
        }
        false
    });
    (lo, hi)
}

/// The first string (in byte order, which is code point order) after every string that
/// starts with `prefix`: the prefix with its last character incremented (dropped when it is
/// the last character there is). `None` when there is none.
pub(super) fn after_prefix(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(c) = chars.pop() {
        let next = match c as u32 + 1 {
            0xD800 => '\u{E000}', // past the surrogates, which no string holds
            n => match char::from_u32(n) {
                Some(next) => next,
                None => continue,
            },
        };
        chars.push(next);
        return Some(chars.into_iter().collect());
    }
    None
}

impl MemIndex {
    /// A plan over this index: equalities on a prefix of its keys, then at most a range on
    /// the next key. `None` when the query constrains no prefix of the index.
    ///
    /// Over a multikey index, a value that is an array is not looked up (the documents
    /// holding it are under its elements), and unless the plan looks up whole keys (where
    /// each document has at most one entry) its `_id`s are collected, each once, in `_id`
    /// order. With no equality or range on its first key, an `$in` on it is a lookup per
    /// value.
    ///
    /// Keys through an array of documents are bounded by the conditions of one element
    /// match at a time ([`any_leaf_on`]): the plan of the element match that bounds the
    /// fewest candidates, or of the conditions outside any.
    pub(super) fn plan<'a>(&'a self, filter: &Filter) -> Option<Plan<'a>> {
        let mut best = self.plan_within(filter, None);
        if !self.spec.keys.iter().any(|(p, _)| p.contains('.')) {
            return best;
        }
        each_elem_match(filter, &mut |scope| {
            if let Some(plan) = self.plan_within(filter, Some(scope)) {
                if best.as_ref().is_none_or(|b| plan.estimate() < b.estimate()) {
                    best = Some(plan);
                }
            }
        });
        best
    }

    /// [`MemIndex::plan`] with the conditions of `scope`, one of the query's element
    /// matches, and of none other.
    fn plan_within<'a>(&'a self, filter: &Filter, scope: Option<&Filter>) -> Option<Plan<'a>> {
        let keys = &self.spec.keys;
        let usable = |v: &Key| !(self.multikey && v.array().is_some());
        // `bounds` = `prefix ++ [lo]` (the start) then `prefix ++ [hi or MaxKey]` (the end).
        let mut bounds: Vec<Key> = Vec::with_capacity(2 * keys.len() + 2);
        for (path, _) in keys {
            match eq_on(filter, path, scope) {
                Some(v) if usable(&v) => bounds.push(v),
                _ => break,
            }
        }
        let m = bounds.len();
        let (lo, hi) = keys
            .get(m)
            .map_or((None, None), |(path, _)| range_on(filter, path, scope));
        let (lo, hi) = (lo.filter(usable), hi.filter(usable));
        if m == 0 && lo.is_none() && hi.is_none() {
            return self.plan_in(filter, scope);
        }
        // Entry keys have one value per index key: `prefix ++ [lo]` sorts before every entry
        // of the range and `prefix ++ [hi or MaxKey]` after (inclusive bounds: a superset).
        bounds.extend(lo);
        let split = bounds.len();
        bounds.extend_from_within(..m);
        bounds.push(hi.unwrap_or(Key::Max));
        let covered = self.covers(filter, &bounds[..m]);
        if self.multikey && m < keys.len() {
            let (start, end) = bounds.split_at(split);
            let range = (Bound::Included(start), Bound::Included(end));
            let ids = self
                .entries
                .range::<[Key], _>(range)
                .flat_map(|(_, ids)| ids.iter());
            return Some(Plan {
                source: Source::List(sorted_once(ids)),
                order: Order::Id,
                covered,
                index: Some(&self.spec.name),
            });
        }
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
            index: Some(&self.spec.name),
        })
    }

    /// A plan for an `$in` on the index's first key: the entries under each value.
    fn plan_in<'a>(&'a self, filter: &Filter, scope: Option<&Filter>) -> Option<Plan<'a>> {
        let (path, _) = self.spec.keys.first()?;
        let values = in_on(filter, path, scope)?;
        if self.multikey && values.iter().any(|v| matches!(v, Bson::Array(_))) {
            return None;
        }
        let mut ids = Vec::new();
        for v in values {
            let (lo, hi) = ([Key::of(v)], [Key::of(v), Key::Max]);
            let range = (Bound::Included(&lo[..]), Bound::Included(&hi[..]));
            ids.extend(
                self.entries
                    .range::<[Key], _>(range)
                    .flat_map(|(_, ids)| ids.iter()),
            );
        }
        Some(Plan {
            source: Source::List(sorted_once(ids)),
            order: Order::Id,
            covered: false,
            index: Some(&self.spec.name),
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
                    pattern_store::query::is_plain_scalar(v)
                        && !matches!(v, Bson::Null)
                        && (prefix.iter().zip(values))
                            .any(|((k, _), value)| k == p && Key::of(v) == *value)
                }
                _ => false,
            };
            let in_partial = partial.is_some_and(|f| any_leaf(f, &mut |l| l == leaf));
            !(equality || in_partial)
        })
    }
}
