//! The small, closed query language the patterns speak to a [`Store`](crate::Store).
//!
//! Filters, updates and index specs are typed values, never documents assembled from user
//! input: a user-supplied value only ever sits in value position (a bare scalar, or behind
//! `$eq`), so it cannot be read as an operator, a field path or a regex. The MongoDB store translates them to the
//! driver's documents ([`Filter::to_document`], [`Update::to_document`]); the in-memory store
//! evaluates them with the functions of this module, with MongoDB's semantics for the subset.

use std::borrow::Cow;
use std::cmp::Ordering;

use bson::{Bson, Document};

use crate::error::{element_at_bytes, field_bytes};

/// A field name or dotted path. The patterns' own paths are `&'static str`s, borrowed
/// without allocating; any `String` converts too (`"count".into()`, `format!(..).into()`).
pub type Path = Cow<'static, str>;

/// A query predicate.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// `{path: {$eq: value}}`
    Eq(Path, Bson),
    /// `{path: {$ne: value}}` (also matches a missing field)
    Ne(Path, Bson),
    /// `{path: {$lt: value}}` (only values of the same type bracket match)
    Lt(Path, Bson),
    /// `{path: {$lte: value}}`
    Lte(Path, Bson),
    /// `{path: {$gt: value}}`
    Gt(Path, Bson),
    /// `{path: {$gte: value}}`
    Gte(Path, Bson),
    /// `{path: {$exists: bool}}`; `"arr.49"` exists when the array has a 50th element.
    Exists(Path, bool),
    /// `{path: {$exists: true, $not: {$type: "array"}}}`: present but not an array.
    NotArray(Path),
    /// Absent, or a number (`{path: {$not: {$type: [every other type]}}}`): the field is
    /// missing or holds an Int32, Int64, Double or Decimal128 (not null, not an array).
    NumberOrMissing(Path),
    /// Every predicate holds.
    And(Vec<Filter>),
}

/// Every BSON type but the four numeric ones, by their `$type` codes (string, object, array,
/// binary, undefined, ObjectId, bool, date, null, regex, DBPointer, JavaScript, symbol,
/// JavaScript with scope, timestamp, MinKey, MaxKey).
const NOT_NUMBER_TYPES: [i32; 17] = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, -1, 127];

/// Int32, Int64, Double or Decimal128.
pub(crate) fn is_number(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

impl Filter {
    /// `{path: {$eq: value}}`.
    pub fn eq(path: impl Into<Path>, value: impl Into<Bson>) -> Self {
        Filter::Eq(path.into(), value.into())
    }

    /// The conjunction of `filters`.
    pub fn and(filters: impl IntoIterator<Item = Filter>) -> Self {
        Filter::And(filters.into_iter().collect())
    }

    fn leaves<'a>(&'a self, out: &mut Vec<&'a Filter>) {
        match self {
            Filter::And(fs) => fs.iter().for_each(|f| f.leaves(out)),
            leaf => out.push(leaf),
        }
    }

    /// The path a leaf tests (`""` for `And`).
    pub(crate) fn path(&self) -> &str {
        match self {
            Filter::Eq(p, _)
            | Filter::Ne(p, _)
            | Filter::Lt(p, _)
            | Filter::Lte(p, _)
            | Filter::Gt(p, _)
            | Filter::Gte(p, _)
            | Filter::Exists(p, _)
            | Filter::NotArray(p)
            | Filter::NumberOrMissing(p) => p,
            Filter::And(_) => "",
        }
    }

    /// The MongoDB query document. Conditions on one path are merged into one operator
    /// document. An equality alone on its path with a scalar value (a number, a string, an
    /// ObjectId...: [`is_plain_scalar`]) is sent bare, `{path: value}`, which every server
    /// reads as that equality and plans a little faster than `$eq`; any other value (a
    /// document, an array, a regex, which a bare value would turn into an operator expression,
    /// an element match or a pattern) sits behind `$eq`.
    pub fn to_document(&self) -> Document {
        let mut leaves = Vec::new();
        self.leaves(&mut leaves);
        let mut out = Document::new();
        for (i, leaf) in leaves.iter().enumerate() {
            if let Filter::Eq(p, v) = leaf {
                let alone = !leaves
                    .iter()
                    .enumerate()
                    .any(|(j, other)| j != i && other.path() == p);
                if alone && is_plain_scalar(v) {
                    out.insert(p.clone(), v.clone());
                    continue;
                }
            }
            let (path, op, value) = match *leaf {
                Filter::Eq(p, v) => (p, "$eq", v.clone()),
                Filter::Ne(p, v) => (p, "$ne", v.clone()),
                Filter::Lt(p, v) => (p, "$lt", v.clone()),
                Filter::Lte(p, v) => (p, "$lte", v.clone()),
                Filter::Gt(p, v) => (p, "$gt", v.clone()),
                Filter::Gte(p, v) => (p, "$gte", v.clone()),
                Filter::Exists(p, b) => (p, "$exists", Bson::Boolean(*b)),
                Filter::NotArray(p) => {
                    let ops = entry(&mut out, p);
                    ops.insert("$exists", true);
                    ops.insert("$not", bson::doc! {"$type": "array"});
                    continue;
                }
                Filter::NumberOrMissing(p) => {
                    entry(&mut out, p).insert("$not", bson::doc! {"$type": &NOT_NUMBER_TYPES[..]});
                    continue;
                }
                Filter::And(_) => unreachable!("flattened"),
            };
            entry(&mut out, path).insert(op, value);
        }
        out
    }

    /// Whether `doc` matches, with MongoDB's semantics for this subset.
    pub fn matches(&self, doc: &Document) -> bool {
        match self {
            Filter::Eq(p, v) => get_path(doc, p).is_some_and(|x| values_equal(x, v)),
            Filter::Ne(p, v) => !get_path(doc, p).is_some_and(|x| values_equal(x, v)),
            Filter::Lt(p, v) => compare_same_bracket(doc, p, v).is_some_and(|o| o.is_lt()),
            Filter::Lte(p, v) => compare_same_bracket(doc, p, v).is_some_and(|o| o.is_le()),
            Filter::Gt(p, v) => compare_same_bracket(doc, p, v).is_some_and(|o| o.is_gt()),
            Filter::Gte(p, v) => compare_same_bracket(doc, p, v).is_some_and(|o| o.is_ge()),
            Filter::Exists(p, b) => get_path(doc, p).is_some() == *b,
            Filter::NotArray(p) => get_path(doc, p).is_some_and(|x| !matches!(x, Bson::Array(_))),
            Filter::NumberOrMissing(p) => get_path(doc, p).is_none_or(is_number),
            Filter::And(fs) => fs.iter().all(|f| f.matches(doc)),
        }
    }

    /// Top-level equality conditions: what an upsert copies into the document it inserts.
    pub fn equalities(&self) -> Vec<(&str, &Bson)> {
        let mut leaves = Vec::new();
        self.leaves(&mut leaves);
        leaves
            .into_iter()
            .filter_map(|l| match l {
                Filter::Eq(p, v) if !p.contains('.') => Some((p.as_ref(), v)),
                _ => None,
            })
            .collect()
    }
}

/// A document with a field starting with `$`: as a `$push` value it would be read as
/// modifiers, so it is pushed behind `$each`.
fn is_modifier_like(v: &Bson) -> bool {
    matches!(v, Bson::Document(d) if d.keys().any(|k| k.starts_with('$')))
}

/// A value that means itself as a bare query value `{path: value}`: the same as
/// `{path: {$eq: value}}`. Documents (operator expressions, or an exact-document match whose
/// keys could be operators), arrays (which also match an array element), regexes (a pattern
/// match) and the JavaScript types are not.
pub fn is_plain_scalar(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Double(_)
            | Bson::String(_)
            | Bson::Boolean(_)
            | Bson::Null
            | Bson::Int32(_)
            | Bson::Int64(_)
            | Bson::ObjectId(_)
            | Bson::DateTime(_)
            | Bson::Timestamp(_)
            | Bson::Decimal128(_)
            | Bson::Binary(_)
    )
}

fn entry<'a>(out: &'a mut Document, path: &str) -> &'a mut Document {
    if !matches!(out.get(path), Some(Bson::Document(_))) {
        out.insert(path, Document::new());
    }
    match out.get_mut(path) {
        Some(Bson::Document(d)) => d,
        _ => unreachable!("inserted above"),
    }
}

/// A modification of one document. Paths are top-level field names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    /// `$set`
    pub set: Vec<(Path, Bson)>,
    /// `$setOnInsert`
    pub set_on_insert: Vec<(Path, Bson)>,
    /// `$inc` (by an Int32 amount, as the shell would)
    pub inc: Vec<(Path, i32)>,
    /// `$push: {path: {$each: [...]}}` (one item: `{path: item}`, unless it has `$` fields)
    pub push: Vec<(Path, Vec<Bson>)>,
}

impl Update {
    /// The MongoDB update document.
    pub fn to_document(&self) -> Document {
        let mut out = Document::new();
        let pairs = |v: &[(Path, Bson)]| {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Document>()
        };
        if !self.set.is_empty() {
            out.insert("$set", pairs(&self.set));
        }
        if !self.set_on_insert.is_empty() {
            out.insert("$setOnInsert", pairs(&self.set_on_insert));
        }
        if !self.inc.is_empty() {
            out.insert(
                "$inc",
                self.inc
                    .iter()
                    .map(|(k, n)| (k.to_string(), Bson::Int32(*n)))
                    .collect::<Document>(),
            );
        }
        if !self.push.is_empty() {
            let push: Document = self
                .push
                .iter()
                .map(|(k, items)| {
                    // One item is pushed as itself (the seed's own form), unless it is a
                    // document with a `$` field, which the server could read as `$push`'s
                    // modifiers (`$each`, `$slice`...).
                    let value = match &items[..] {
                        [one] if !is_modifier_like(one) => one.clone(),
                        _ => Bson::Document(bson::doc! {"$each": items.clone()}),
                    };
                    (k.to_string(), value)
                })
                .collect();
            out.insert("$push", push);
        }
        out
    }

    /// Applies the update to `doc` in place (`inserting`: whether `$setOnInsert` applies).
    /// Fails, leaving `doc` unchanged, where MongoDB would refuse the update (`$inc` of a
    /// non-number, `$push` to a non-array).
    ///
    /// The operators apply in the order `$set`, `$setOnInsert`, `$inc`, `$push`, each seeing
    /// what the ones before it wrote. Everything that can fail is checked before `doc` is
    /// touched, so `doc` is never copied.
    pub fn apply(&self, doc: &mut Document, inserting: bool) -> Result<(), String> {
        let incs = self.prepare(doc, inserting)?;
        self.write_fields(doc, incs, inserting);
        for (k, items) in &self.push {
            append(doc, k, items.clone());
        }
        Ok(())
    }

    /// [`Update::apply`], moving the pushed items into `doc` instead of copying them, where
    /// [`Undo::restore`] can give them back: the items of each field that is pushed once and
    /// written by no other operator (the others are copied). On `Err` nothing was moved.
    pub(crate) fn apply_taking(
        &mut self,
        doc: &mut Document,
        inserting: bool,
    ) -> Result<(), String> {
        let incs = self.prepare(doc, inserting)?;
        self.write_fields(doc, incs, inserting);
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
        Ok(())
    }

    /// Whether [`Update::apply_taking`] moves the items of push `i`: its field is pushed once
    /// and written by no other operator, so they are the tail of the array afterwards.
    fn takes(&self, i: usize, inserting: bool) -> bool {
        let k = &self.push[i].0;
        let written = |ops: &[(Path, Bson)]| ops.iter().any(|(f, _)| f == k);
        let pushed_once = self.push.iter().filter(|(f, _)| f == k).count() == 1;
        let other_write = written(&self.set)
            || (inserting && written(&self.set_on_insert))
            || self.inc.iter().any(|(f, _)| f == k);
        pushed_once && !other_write
    }

    /// Checks that the update applies to `doc`; returns the value each `$inc` writes (in the
    /// order of `inc`), from the value its field has by then.
    fn prepare(&self, doc: &Document, inserting: bool) -> Result<Vec<Bson>, String> {
        let mut incs: Vec<Bson> = Vec::with_capacity(self.inc.len());
        for (k, n) in &self.inc {
            let new = match self.value_seen(doc, &incs, k, inserting) {
                None => Bson::Int32(*n),
                Some(Bson::Int32(x)) => match x.checked_add(*n) {
                    Some(s) => Bson::Int32(s),
                    None => Bson::Int64(*x as i64 + *n as i64),
                },
                Some(Bson::Int64(x)) => Bson::Int64(x.wrapping_add(*n as i64)),
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
        Ok(incs)
    }

    /// Writes `$set`, `$setOnInsert` (when `inserting`) and the `$inc` results (`incs`, as
    /// [`Update::prepare`] gives them). Nothing fails here.
    fn write_fields(&self, doc: &mut Document, incs: Vec<Bson>, inserting: bool) {
        for (k, v) in &self.set {
            set_field(doc, k, v.clone());
        }
        if inserting {
            for (k, v) in &self.set_on_insert {
                set_field(doc, k, v.clone());
            }
        }
        for ((k, _), v) in self.inc.iter().zip(incs) {
            set_field(doc, k, v);
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

    /// Whether the update (on an existing document: `$setOnInsert` aside) writes field `k`.
    pub(crate) fn writes(&self, k: &str) -> bool {
        self.set.iter().any(|(f, _)| f == k)
            || self.inc.iter().any(|(f, _)| f == k)
            || self.push.iter().any(|(f, _)| f == k)
    }

    /// The name of a field an [`Undo`] saved.
    fn field_name(&self, f: Written) -> &str {
        match f {
            Written::Set(i) => &self.set[i].0,
            Written::SetOnInsert(i) => &self.set_on_insert[i].0,
            Written::Inc(i) => &self.inc[i].0,
            Written::Push(i) => &self.push[i].0,
        }
    }

    /// Saves what [`Update::apply`] (or [`Update::apply_taking`]) would change in `doc`
    /// (`inserting` as there), so that [`Undo::restore`] can put it back. A `$push` target
    /// costs its length, not a copy.
    pub(crate) fn undo_log(&self, doc: &Document, inserting: bool) -> Undo {
        let mut saved: Vec<(Written, Saved)> = Vec::new();
        let soi = if inserting {
            self.set_on_insert.len()
        } else {
            0
        };
        let written = (0..self.set.len()).map(Written::Set);
        let written = written
            .chain((0..soi).map(Written::SetOnInsert))
            .chain((0..self.inc.len()).map(Written::Inc));
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
                let was = match doc.get(k) {
                    Some(Bson::Array(a)) => Saved::Len(a.len()),
                    other => Saved::Value(other.cloned()),
                };
                saved.push((Written::Push(i), was));
            }
        }
        Undo { saved, inserting }
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
    Push(usize),
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

/// Options of a find.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FindOptions {
    /// Sort keys, `1` ascending, `-1` descending.
    pub sort: Vec<(Path, i32)>,
    pub skip: u64,
    pub limit: Option<i64>,
}

impl FindOptions {
    /// Refuses what no server takes: a skip past 2^63-1 (MongoDB's `skip` is an Int64).
    pub(crate) fn check(&self) -> crate::Result<()> {
        if i64::try_from(self.skip).is_err() {
            return Err(crate::Error::invalid(format!(
                "skip must be at most 2^63-1, got {}",
                self.skip
            )));
        }
        Ok(())
    }
}

/// An index the patterns need.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexSpec {
    pub name: String,
    pub keys: Vec<(String, i32)>,
    pub unique: bool,
    /// `partialFilterExpression`
    pub partial: Option<Filter>,
}

impl IndexSpec {
    /// The key document, e.g. `{customerId: 1, _id: 1}`.
    pub fn key_document(&self) -> Document {
        self.keys
            .iter()
            .map(|(k, d)| (k.clone(), Bson::Int32(*d)))
            .collect()
    }
}

/// The value at a dotted path: `a.b` descends into documents, `a.3` into arrays.
pub fn get_path<'a>(doc: &'a Document, path: &str) -> Option<&'a Bson> {
    if !path.as_bytes().contains(&b'.') {
        return doc.get(path); // a top-level field: the usual case, without a splitter
    }
    let mut parts = path.split('.');
    let mut cur = doc.get(parts.next()?)?;
    for part in parts {
        cur = match cur {
            Bson::Document(d) => d.get(part)?,
            Bson::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// MongoDB's canonical order of type brackets.
fn bracket(b: &Bson) -> u8 {
    match b {
        Bson::MinKey => 0,
        Bson::Null | Bson::Undefined => 1,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 2,
        Bson::String(_) | Bson::Symbol(_) => 3,
        Bson::Document(_) => 4,
        Bson::Array(_) => 5,
        Bson::Binary(_) => 6,
        Bson::ObjectId(_) => 7,
        Bson::Boolean(_) => 8,
        Bson::DateTime(_) => 9,
        Bson::Timestamp(_) => 10,
        Bson::RegularExpression(_) => 11,
        Bson::MaxKey => 13,
        _ => 12,
    }
}

fn as_f64(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(x) => Some(*x as f64),
        Bson::Int64(x) => Some(*x as f64),
        Bson::Double(x) => Some(*x),
        _ => None,
    }
}

/// A total order over BSON values (MongoDB's sort order for the types the patterns store).
pub fn compare_values(a: &Bson, b: &Bson) -> Ordering {
    let (ba, bb) = (bracket(a), bracket(b));
    if ba != bb {
        return ba.cmp(&bb);
    }
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => x.cmp(y),
        (Bson::Int64(x), Bson::Int64(y)) => x.cmp(y),
        (Bson::Int32(x), Bson::Int64(y)) => (*x as i64).cmp(y),
        (Bson::Int64(x), Bson::Int32(y)) => x.cmp(&(*y as i64)),
        (x, y) if ba == 2 => {
            let (fx, fy) = (as_f64(x).unwrap_or(f64::NAN), as_f64(y).unwrap_or(f64::NAN));
            fx.partial_cmp(&fy)
                .unwrap_or_else(|| fx.is_nan().cmp(&fy.is_nan()).reverse())
        }
        (Bson::String(x), Bson::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.cmp(y),
        (Bson::Timestamp(x), Bson::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (Bson::Document(x), Bson::Document(y)) => {
            for ((kx, vx), (ky, vy)) in x.iter().zip(y.iter()) {
                let o = compare_values(vx, vy).then_with(|| kx.cmp(ky));
                if o.is_ne() {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Bson::Array(x), Bson::Array(y)) => {
            for (vx, vy) in x.iter().zip(y.iter()) {
                let o = compare_values(vx, vy);
                if o.is_ne() {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Bson::Binary(x), Bson::Binary(y)) => x.bytes.cmp(&y.bytes),
        _ => Ordering::Equal,
    }
}

/// Equality as `$eq` sees it (numbers compare by value across Int32/Int64/Double).
pub fn values_equal(a: &Bson, b: &Bson) -> bool {
    bracket(a) == bracket(b) && compare_values(a, b).is_eq()
}

fn compare_same_bracket(doc: &Document, path: &str, v: &Bson) -> Option<Ordering> {
    let x = get_path(doc, path)?;
    (bracket(x) == bracket(v)).then(|| compare_values(x, v))
}

/// Compares two documents by a sort specification (missing fields sort as null).
pub fn compare_by(a: &Document, b: &Document, sort: &[(Path, i32)]) -> Ordering {
    for (path, dir) in sort {
        let (x, y) = (
            get_path(a, path).unwrap_or(&Bson::Null),
            get_path(b, path).unwrap_or(&Bson::Null),
        );
        let o = compare_values(x, y);
        let o = if *dir < 0 { o.reverse() } else { o };
        if o.is_ne() {
            return o;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn filter_document_keeps_values_values() {
        // A scalar alone on its path is bare, and means itself: the text of an operator is a
        // string, not an operator.
        let f = Filter::and([
            Filter::eq("k", "{\"$gt\": \"\"}"),
            Filter::eq("op", "$gt"),
            Filter::Lt("count".into(), Bson::Int32(10)),
        ]);
        assert_eq!(
            f.to_document(),
            doc! {"k": "{\"$gt\": \"\"}", "op": "$gt", "count": {"$lt": 10}}
        );
        // Documents, arrays and regexes would be read as operators, element matches or
        // patterns: behind `$eq`.
        let d = doc! {"$gt": ""};
        let re = Bson::RegularExpression(bson::Regex {
            pattern: "^x$".into(),
            options: String::new(),
        });
        for v in [Bson::Document(d), Bson::Array(vec![1.into()]), re] {
            assert!(!is_plain_scalar(&v));
            assert_eq!(
                Filter::Eq("k".into(), v.clone()).to_document(),
                doc! {"k": {"$eq": v}}
            );
        }
        // An equality sharing its path with another condition merges into its operators.
        let both = Filter::and([Filter::eq("k", 3), Filter::Exists("k".into(), true)]);
        assert_eq!(both.to_document(), doc! {"k": {"$eq": 3, "$exists": true}});
    }

    #[test]
    fn one_item_is_pushed_as_itself() {
        let push = |items: Vec<Bson>| {
            Update {
                push: vec![("a".into(), items)],
                ..Update::default()
            }
            .to_document()
        };
        assert_eq!(push(vec![Bson::Int32(1)]), doc! {"$push": {"a": 1}});
        assert_eq!(
            push(vec![doc! {"x": 1}.into()]),
            doc! {"$push": {"a": {"x": 1}}}
        );
        // An array item is one element either way.
        assert_eq!(
            push(vec![Bson::Array(vec![1.into()])]),
            doc! {"$push": {"a": [1]}}
        );
        // `$` fields, and several items, go behind `$each`.
        let modifiers = doc! {"$each": [1, 2], "$slice": 1};
        assert_eq!(
            push(vec![modifiers.clone().into()]),
            doc! {"$push": {"a": {"$each": [modifiers]}}}
        );
        assert_eq!(
            push(vec![1.into(), 2.into()]),
            doc! {"$push": {"a": {"$each": [1, 2]}}}
        );
    }

    #[test]
    fn positional_exists() {
        let d = doc! {"a": [1, 2, 3]};
        assert!(Filter::Exists("a.2".into(), true).matches(&d));
        assert!(Filter::Exists("a.3".into(), false).matches(&d));
    }

    #[test]
    fn numbers_compare_across_types() {
        let d = doc! {"c": 3_i64};
        assert!(Filter::Lt("c".into(), Bson::Int32(10)).matches(&d));
        assert!(Filter::eq("c", 3.0).matches(&d));
        assert!(!Filter::Lt("c".into(), Bson::String("z".into())).matches(&d));
        assert!(Filter::Ne("missing".into(), Bson::Boolean(true)).matches(&d));
    }

    /// The former `Update::apply`: applies to a copy, kept when every operator applied.
    fn apply_to_copy(u: &Update, doc: &mut Document, inserting: bool) -> Result<(), String> {
        let mut next = doc.clone();
        for (k, v) in &u.set {
            next.insert(k.clone(), v.clone());
        }
        if inserting {
            for (k, v) in &u.set_on_insert {
                next.insert(k.clone(), v.clone());
            }
        }
        for (k, n) in &u.inc {
            let new = match next.get(k) {
                None => Bson::Int32(*n),
                Some(Bson::Int32(x)) => match x.checked_add(*n) {
                    Some(s) => Bson::Int32(s),
                    None => Bson::Int64(*x as i64 + *n as i64),
                },
                Some(Bson::Int64(x)) => Bson::Int64(x.wrapping_add(*n as i64)),
                Some(Bson::Double(x)) => Bson::Double(x + *n as f64),
                Some(other) => {
                    return Err(format!(
                        "cannot apply $inc to `{k}` of type {:?}",
                        other.element_type()
                    ))
                }
            };
            next.insert(k.clone(), new);
        }
        for (k, items) in &u.push {
            match next.get_mut(k) {
                None => {
                    next.insert(k.clone(), Bson::Array(items.clone()));
                }
                Some(Bson::Array(a)) => a.extend(items.iter().cloned()),
                Some(other) => {
                    return Err(format!(
                        "cannot $push to `{k}` of type {:?}",
                        other.element_type()
                    ))
                }
            }
        }
        *doc = next;
        Ok(())
    }

    /// Fields and values in order (`Document`'s `==` ignores the order).
    fn fields(d: &Document) -> Vec<(&String, &Bson)> {
        d.iter().collect()
    }

    #[test]
    fn apply_in_place_is_applying_to_a_copy_and_undoes() {
        let pairs = |v: &[(&str, Bson)]| -> Vec<(Path, Bson)> {
            v.iter()
                .map(|(k, b)| (k.to_string().into(), b.clone()))
                .collect()
        };
        let arr = |v: &[i32]| Bson::Array(v.iter().map(|x| Bson::Int32(*x)).collect());
        let docs = [
            doc! {},
            doc! {"a": 1, "b": [1], "c": "x"},
            doc! {"a": i32::MAX, "b": "s", "c": [], "d": 1.5},
            doc! {"c": {"x": 1}, "a": 2_i64, "_id": 3},
        ];
        let sets = [
            vec![],
            pairs(&[("b", Bson::Int32(7))]),
            pairs(&[("c", arr(&[9])), ("e", "new".into())]),
        ];
        let on_insert = [
            vec![],
            pairs(&[("d", "v".into())]),
            pairs(&[("a", arr(&[])), ("b", Bson::Double(0.5))]),
        ];
        let incs: [Vec<(Path, i32)>; 5] = [
            vec![],
            vec![("a".into(), 1)],
            vec![("b".into(), 1)],
            vec![("a".into(), 1), ("a".into(), i32::MAX)],
            vec![("d".into(), -1), ("f".into(), 2)],
        ];
        let pushes: [Vec<(Path, Vec<Bson>)>; 6] = [
            vec![],
            vec![("b".into(), vec![Bson::Int32(1)])],
            vec![("c".into(), vec![Bson::Int32(1), "two".into()])],
            vec![
                ("c".into(), vec![Bson::Int32(1)]),
                ("c".into(), vec![arr(&[2])]),
            ],
            vec![("a".into(), vec![Bson::Int32(1)])],
            vec![("g".into(), vec![Bson::Int32(1)])],
        ];
        let mut applied = 0;
        for doc in &docs {
            for set in &sets {
                for set_on_insert in &on_insert {
                    for inc in &incs {
                        for push in &pushes {
                            let u = Update {
                                set: set.clone(),
                                set_on_insert: set_on_insert.clone(),
                                inc: inc.clone(),
                                push: push.clone(),
                            };
                            for inserting in [false, true] {
                                let (mut a, mut b) = (doc.clone(), doc.clone());
                                let r = u.apply(&mut a, inserting);
                                assert_eq!(r, apply_to_copy(&u, &mut b, inserting), "{u:?}");
                                assert_eq!(fields(&a), fields(&b), "{u:?} on {doc:?}");
                                if r.is_err() {
                                    continue;
                                }
                                applied += 1;
                                // Taking the pushed items: the same document; undone, the
                                // document as it was and the update whole again.
                                let (mut c, mut taking) = (doc.clone(), u.clone());
                                let undo = taking.undo_log(&c, inserting);
                                taking.apply_taking(&mut c, inserting).unwrap();
                                assert_eq!(fields(&c), fields(&a), "{u:?} on {doc:?}");
                                let size = |d: &Document| bson::to_vec(d).unwrap().len() as isize;
                                assert_eq!(
                                    undo.size_change(&c, &taking),
                                    Some(size(&c) - size(doc)),
                                    "{u:?} on {doc:?}"
                                );
                                undo.restore(&mut c, &mut taking);
                                assert_eq!(fields(&c), fields(doc), "{u:?}");
                                assert_eq!(taking, u, "given back on {doc:?}");
                            }
                        }
                    }
                }
            }
        }
        assert!(applied > 500, "{applied}");
    }

    #[test]
    fn inc_promotes_like_mongodb() {
        let mut d = doc! {"c": i32::MAX};
        let u = Update {
            inc: vec![("c".into(), 1)],
            ..Default::default()
        };
        u.apply(&mut d, false).unwrap();
        assert_eq!(d.get("c"), Some(&Bson::Int64(i32::MAX as i64 + 1)));
        let mut bad = doc! {"c": "x"};
        assert!(u.apply(&mut bad, false).is_err());
        assert_eq!(bad, doc! {"c": "x"});
    }
}
