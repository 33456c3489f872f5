//! The small, closed query language the patterns speak to a [`Store`](crate::Store).
//!
//! Filters, updates and index specs are typed values, never documents assembled from user
//! input: a user-supplied value only ever sits in value position (behind `$eq`), so it cannot be
//! read as an operator, a field path or a regex. The MongoDB store translates them to the
//! driver's documents ([`Filter::to_document`], [`Update::to_document`]); the in-memory store
//! evaluates them with the functions of this module, with MongoDB's semantics for the subset.

use std::cmp::Ordering;

use bson::{Bson, Document};

/// A query predicate.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// `{path: {$eq: value}}`
    Eq(String, Bson),
    /// `{path: {$ne: value}}` (also matches a missing field)
    Ne(String, Bson),
    /// `{path: {$lt: value}}` (only values of the same type bracket match)
    Lt(String, Bson),
    /// `{path: {$lte: value}}`
    Lte(String, Bson),
    /// `{path: {$gt: value}}`
    Gt(String, Bson),
    /// `{path: {$gte: value}}`
    Gte(String, Bson),
    /// `{path: {$exists: bool}}`; `"arr.49"` exists when the array has a 50th element.
    Exists(String, bool),
    /// `{path: {$exists: true, $not: {$type: "array"}}}`: present but not an array.
    NotArray(String),
    /// Every predicate holds.
    And(Vec<Filter>),
}

impl Filter {
    /// `{path: {$eq: value}}`.
    pub fn eq(path: impl Into<String>, value: impl Into<Bson>) -> Self {
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

    /// The MongoDB query document. Conditions on one path are merged into one operator
    /// document; every value sits behind an operator (`$eq`, never a bare value).
    pub fn to_document(&self) -> Document {
        let mut leaves = Vec::new();
        self.leaves(&mut leaves);
        let mut out = Document::new();
        for leaf in leaves {
            let (path, op, value) = match leaf {
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
                Filter::Eq(p, v) if !p.contains('.') => Some((p.as_str(), v)),
                _ => None,
            })
            .collect()
    }
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
    pub set: Vec<(String, Bson)>,
    /// `$setOnInsert`
    pub set_on_insert: Vec<(String, Bson)>,
    /// `$inc` (by an Int32 amount, as the shell would)
    pub inc: Vec<(String, i32)>,
    /// `$push: {path: {$each: [...]}}`
    pub push: Vec<(String, Vec<Bson>)>,
}

impl Update {
    /// The MongoDB update document.
    pub fn to_document(&self) -> Document {
        let mut out = Document::new();
        let pairs = |v: &[(String, Bson)]| {
            v.iter()
                .map(|(k, v)| (k.clone(), v.clone()))
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
                    .map(|(k, n)| (k.clone(), Bson::Int32(*n)))
                    .collect::<Document>(),
            );
        }
        if !self.push.is_empty() {
            let push: Document = self
                .push
                .iter()
                .map(|(k, items)| {
                    (
                        k.clone(),
                        Bson::Document(bson::doc! {"$each": items.clone()}),
                    )
                })
                .collect();
            out.insert("$push", push);
        }
        out
    }

    /// Applies the update to `doc` in place (`inserting`: whether `$setOnInsert` applies).
    /// Fails, leaving `doc` unchanged, where MongoDB would refuse the update (`$inc` of a
    /// non-number, `$push` to a non-array).
    pub fn apply(&self, doc: &mut Document, inserting: bool) -> Result<(), String> {
        let mut next = doc.clone();
        for (k, v) in &self.set {
            next.insert(k.clone(), v.clone());
        }
        if inserting {
            for (k, v) in &self.set_on_insert {
                next.insert(k.clone(), v.clone());
            }
        }
        for (k, n) in &self.inc {
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
        for (k, items) in &self.push {
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
}

/// Options of a find.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FindOptions {
    /// Sort keys, `1` ascending, `-1` descending.
    pub sort: Vec<(String, i32)>,
    pub skip: u64,
    pub limit: Option<i64>,
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
pub fn compare_by(a: &Document, b: &Document, sort: &[(String, i32)]) -> Ordering {
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
    fn filter_document_puts_values_behind_eq() {
        let f = Filter::and([
            Filter::eq("k", "{\"$gt\": \"\"}"),
            Filter::Lt("count".into(), Bson::Int32(10)),
        ]);
        assert_eq!(
            f.to_document(),
            doc! {"k": {"$eq": "{\"$gt\": \"\"}"}, "count": {"$lt": 10}}
        );
        let d = doc! {"k": {"$gt": ""}};
        assert_eq!(
            Filter::Eq("k".into(), Bson::Document(d.clone())).to_document(),
            doc! {"k": {"$eq": d}}
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
