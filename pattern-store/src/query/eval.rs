//! How the in-memory store evaluates the query language, with MongoDB's semantics for the
//! subset: whether a filter matches a document, and values compared and sorted across types
//! (updates are applied by `apply.rs`). Internal to the crate: a store on a server sends
//! the documents of [`Filter::to_document`] and [`Update::to_document`](crate::query::Update::to_document) instead.

use std::cmp::Ordering;

use bson::{Bson, Document};

use super::{Filter, Path};
use crate::codec::order::{bracket, compare_values, values_equal};

/// MongoDB's equality match: the value equals `v`, or (an array) holds an element equal to
/// `v`; a missing field equals `null`.
fn eq_matches(x: Option<&Bson>, v: &Bson) -> bool {
    match x {
        None => matches!(v, Bson::Null),
        Some(x) if values_equal(x, v) => true,
        Some(Bson::Array(a)) => a.iter().any(|e| values_equal(e, v)),
        Some(_) => false,
    }
}

/// Int32, Int64, Double or Decimal128.
pub fn is_number(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

impl Filter {
    /// Whether `doc` matches, with MongoDB's semantics for this subset. A condition on a
    /// dotted path through an array of documents holds when it holds for what the path
    /// reaches in one element ([`paths::reached`](super::paths::reached)).
    pub fn matches(&self, doc: &Document) -> bool {
        match self {
            Filter::Eq(p, v) => any_reached(doc, p, |x| eq_matches(x, v)),
            Filter::Ne(p, v) => !any_reached(doc, p, |x| eq_matches(x, v)),
            Filter::Lt(p, v) => any_reached(doc, p, |x| range_matches(x, v, Ordering::is_lt)),
            Filter::Lte(p, v) => any_reached(doc, p, |x| range_matches(x, v, Ordering::is_le)),
            Filter::Gt(p, v) => any_reached(doc, p, |x| range_matches(x, v, Ordering::is_gt)),
            Filter::Gte(p, v) => any_reached(doc, p, |x| range_matches(x, v, Ordering::is_ge)),
            Filter::Exists(p, b) => any_reached(doc, p, |x| x.is_some()) == *b,
            Filter::NotArray(p) => get_path(doc, p).is_some_and(|x| !matches!(x, Bson::Array(_))),
            Filter::NumberOrMissing(p) => get_path(doc, p).is_none_or(is_number),
            Filter::TypeOrMissing(p, types) => get_path(doc, p)
                .is_none_or(|v| !matches!(v, Bson::Array(_)) && types.iter().any(|t| t.holds(v))),
            Filter::And(fs) | Filter::Clause(fs) => fs.iter().all(|f| f.matches(doc)),
            Filter::Or(fs) => fs.iter().any(|f| f.matches(doc)),
            Filter::In(p, vs) => any_reached(doc, p, |x| vs.iter().any(|v| eq_matches(x, v))),
            Filter::All(p, vs) => {
                !vs.is_empty() && vs.iter().all(|v| any_reached(doc, p, |x| eq_matches(x, v)))
            }
            Filter::ElemMatch(p, fs) => any_reached(doc, p, |x| match x {
                Some(Bson::Array(a)) => a
                    .iter()
                    .any(|e| matches!(e, Bson::Document(d) if fs.iter().all(|f| f.matches(d)))),
                _ => false,
            }),
            Filter::StartsWith(p, prefix) => any_reached(doc, p, |x| match x {
                Some(Bson::String(s)) => s.starts_with(prefix.as_str()),
                Some(Bson::Array(a)) => a
                    .iter()
                    .any(|e| matches!(e, Bson::String(s) if s.starts_with(prefix.as_str()))),
                _ => false,
            }),
        }
    }
}

/// Whether `holds` holds for something `path` reaches in `doc` ([`paths::reached`]): the one
/// value of a path through no array, read without collecting anything.
fn any_reached(doc: &Document, path: &str, holds: impl Fn(Option<&Bson>) -> bool) -> bool {
    match get_path(doc, path) {
        Some(v) => holds(Some(v)),
        None if !path.contains('.') => holds(None),
        None => {
            let mut reached = Vec::new();
            super::paths::reached(doc, path, &mut reached);
            reached.into_iter().any(holds)
        }
    }
}

/// The value at a dotted path: `a.b` descends into documents, `a.3` into arrays.
pub fn get_path<'a>(doc: &'a Document, path: &str) -> Option<&'a Bson> {
    if !path.as_bytes().contains(&b'.') {
        return field(doc, path); // a top-level field: the usual case, without a splitter
    }
    let mut parts = path.split('.');
    let mut cur = field(doc, parts.next()?)?;
    for part in parts {
        cur = match cur {
            Bson::Document(d) => field(d, part)?,
            Bson::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// The document's field `name`: in a document of up to `SCANNED` fields, found by comparing
/// names one after another (most differ in length), which costs less than hashing `name` for
/// bson's hash table; in a larger one, looked up in that table.
#[inline]
pub fn field<'a>(doc: &'a Document, name: &str) -> Option<&'a Bson> {
    if doc.len() > SCANNED {
        return doc.get(name);
    }
    let name = name.as_bytes();
    doc.iter()
        .find(|(k, _)| k.len() == name.len() && k.as_bytes() == name)
        .map(|(_, v)| v)
}

/// The most fields [`field`] compares one by one.
const SCANNED: usize = 12;

/// Whether a value, or one of its elements when it is an array, compares to `v` as `holds`
/// wants, values of another type bracket never matching (MongoDB's `$lt`... on a field
/// holding an array: `{a: {$gte: 5}}` matches `{a: [1, 7]}`, as a multikey index on `a` finds
/// it).
fn range_matches(x: Option<&Bson>, v: &Bson, holds: fn(Ordering) -> bool) -> bool {
    let within = |x: &Bson| bracket(x) == bracket(v) && holds(compare_values(x, v));
    match x {
        Some(x @ Bson::Array(items)) => within(x) || items.iter().any(within),
        Some(x) => within(x),
        None => false,
    }
}

/// Compares two documents by a sort specification, as MongoDB sorts them: a missing field as
/// null; a field holding an array by its least element in an ascending sort and its greatest
/// in a descending one, an empty array before null; a dotted path through an array of
/// documents by what it reaches in the elements ([`paths::reached`](super::paths::reached)),
/// the same way.
pub fn compare_by(a: &Document, b: &Document, sort: &[(Path, i32)]) -> Ordering {
    for (path, dir) in sort {
        let descending = *dir < 0;
        let o = sort_key(a, path, descending).cmp(&sort_key(b, path, descending));
        let o = if descending { o.reverse() } else { o };
        if o.is_ne() {
            return o;
        }
    }
    Ordering::Equal
}

/// A document's key in a sort on one path.
enum SortKey<'a> {
    /// Nothing but empty arrays: before null (after `MinKey`).
    Empty,
    Value(&'a Bson),
}

impl Ord for SortKey<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (SortKey::Empty, SortKey::Empty) => Ordering::Equal,
            (SortKey::Empty, SortKey::Value(Bson::MinKey)) => Ordering::Greater,
            (SortKey::Empty, SortKey::Value(_)) => Ordering::Less,
            (SortKey::Value(_), SortKey::Empty) => other.cmp(self).reverse(),
            (SortKey::Value(x), SortKey::Value(y)) => compare_values(x, y),
        }
    }
}

impl PartialEq for SortKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for SortKey<'_> {}

impl PartialOrd for SortKey<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// `doc`'s key in a sort on `path` (the greatest of its values when `descending`, else the
/// least): see [`compare_by`].
fn sort_key<'a>(doc: &'a Document, path: &'a str, descending: bool) -> SortKey<'a> {
    const NULL: &Bson = &Bson::Null;
    let reached = match get_path(doc, path) {
        Some(array @ Bson::Array(_)) => vec![Some(array)],
        Some(v) => return SortKey::Value(v),
        None if !path.contains('.') => return SortKey::Value(NULL),
        None => {
            let mut reached = Vec::new();
            super::paths::reached(doc, path, &mut reached);
            reached
        }
    };
    let mut keys = reached.into_iter().flat_map(|r| match r {
        None => vec![SortKey::Value(NULL)],
        Some(Bson::Array(a)) if a.is_empty() => vec![SortKey::Empty],
        Some(Bson::Array(a)) => a.iter().map(SortKey::Value).collect(),
        Some(v) => vec![SortKey::Value(v)],
    });
    let first = keys.next().unwrap_or(SortKey::Value(NULL));
    keys.fold(first, |best, k| match (descending, k.cmp(&best)) {
        (false, Ordering::Less) | (true, Ordering::Greater) => k,
        _ => best,
    })
}
