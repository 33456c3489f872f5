//! Filters: the query predicates of the store contract, and their MongoDB documents.

use bson::{Bson, Document};

use super::Path;

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
    /// Absent, or of one of the types ([`BsonType`](crate::codec::BsonType); `{path: {$not:
    /// {$type: [every other type, and array]}}}`): a guard on what a field holds before an
    /// update computes from it. An array never matches (MongoDB's `$type` would look at its
    /// elements), `Array` listed or not.
    TypeOrMissing(Path, Vec<crate::codec::BsonType>),
    /// `{path: {$in: [values]}}`: the value (or, for an array, one of its elements) equals
    /// one of `values`; an empty list matches nothing.
    In(Path, Vec<Bson>),
    /// `{path: {$all: [values]}}`: the value (or, for an array, its elements) holds every one
    /// of `values` (each an equality, as [`Filter::Eq`]); an empty list matches nothing, as on
    /// MongoDB. A server answers it from an index on `path` by looking up the first value.
    All(Path, Vec<Bson>),
    /// A string that begins with the prefix: `{path: {$regex: "^<prefix, metacharacters
    /// escaped>"}}`, which a server answers from an index on `path` as a range of keys. The
    /// prefix is a value, never a pattern: `.`, `*`, `(`... match themselves. Non-strings do
    /// not match.
    StartsWith(Path, String),
    /// `{path: {$elemMatch: {...}}}`: the array at `path` holds one document matching every
    /// predicate (each on a field of the element). Two conditions on one path's elements
    /// hold in the same element, unlike two dotted conditions (`path.k`, `path.v`), which any two
    /// elements satisfy. A missing field or a non-array matches nothing.
    ElemMatch(Path, Vec<Filter>),
    /// Every predicate holds.
    And(Vec<Filter>),
    /// Every predicate holds, sent as an element of its own of the query's `$and`
    /// (`{..., $and: [{...}]}`) rather than merged with the other conditions. The same match
    /// as [`Filter::And`]; a server's router may plan it apart: the test server reads a query
    /// whose `$and` clause repeats a field of the rest as separate conditions and routes the
    /// first through an index, where the merged query would fetch every document of a key
    /// (`TEST-SERVER.md` in the repository, T21). Its equalities are not copied into an upsert's insert.
    Clause(Vec<Filter>),
    /// At least one predicate holds (`{$or: [...]}`); an empty list matches nothing.
    Or(Vec<Filter>),
}

/// Every BSON type but the four numeric ones, by their `$type` codes (string, object, array,
/// binary, undefined, ObjectId, bool, date, null, regex, DBPointer, JavaScript, symbol,
/// JavaScript with scope, timestamp, MinKey, MaxKey).
const NOT_NUMBER_TYPES: [i32; 17] = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, -1, 127];

/// Every BSON type's number (`$type`), the deprecated ones included.
const ALL_TYPE_CODES: [i32; 21] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, -1, 127,
];

/// Whether type `t` holds the values of `$type` number `code` (`number`: the four numbers').
fn holds_code(t: crate::codec::BsonType, code: i32) -> bool {
    match type_code(t) {
        Some(c) => c == code,
        None => matches!(code, 1 | 16 | 18 | 19),
    }
}

/// A type's `$type` number (`None` for `number`, which is four).
fn type_code(t: crate::codec::BsonType) -> Option<i32> {
    use crate::codec::BsonType as T;
    Some(match t {
        T::Double => 1,
        T::String => 2,
        T::Object => 3,
        T::Array => 4,
        T::BinData => 5,
        T::ObjectId => 7,
        T::Bool => 8,
        T::Date => 9,
        T::Null => 10,
        T::Regex => 11,
        T::JavaScript => 13,
        T::Int => 16,
        T::Timestamp => 17,
        T::Long => 18,
        T::Decimal => 19,
        T::MinKey => -1,
        T::MaxKey => 127,
        T::Number => return None,
    })
}

impl Filter {
    /// `{}`: every document (the conjunction of nothing).
    pub const fn everything() -> Self {
        Filter::And(Vec::new())
    }

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

    /// The path a leaf tests (`""` for `And` and `Or`).
    pub fn path(&self) -> &str {
        match self {
            Filter::Eq(p, _)
            | Filter::Ne(p, _)
            | Filter::Lt(p, _)
            | Filter::Lte(p, _)
            | Filter::Gt(p, _)
            | Filter::Gte(p, _)
            | Filter::Exists(p, _)
            | Filter::NotArray(p)
            | Filter::NumberOrMissing(p)
            | Filter::TypeOrMissing(p, _)
            | Filter::In(p, _)
            | Filter::All(p, _)
            | Filter::ElemMatch(p, _)
            | Filter::StartsWith(p, _) => p,
            Filter::And(_) | Filter::Clause(_) | Filter::Or(_) => "",
        }
    }

    /// The MongoDB query document. Conditions on one path are merged into one operator
    /// document. An equality alone on its path with a scalar value (a number, a string, an
    /// ObjectId...) is sent bare, `{path: value}`, which every server
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
                Filter::TypeOrMissing(p, types) => {
                    let others: Vec<i32> = (ALL_TYPE_CODES.iter().copied())
                        .filter(|c| *c == 4 || !types.iter().any(|t| holds_code(*t, *c)))
                        .collect();
                    entry(&mut out, p).insert("$not", bson::doc! {"$type": others});
                    continue;
                }
                Filter::In(p, vs) => (p, "$in", Bson::Array(vs.clone())),
                Filter::All(p, vs) => (p, "$all", Bson::Array(vs.clone())),
                Filter::ElemMatch(p, fs) => {
                    let cond = Bson::Document(Filter::And(fs.clone()).to_document());
                    // Each equality of the element also on the dotted path: implied by the
                    // element match, it lets a planner bound a multikey index on the path
                    // (SecantusDB plans `$elemMatch` itself as a scan).
                    for f in fs {
                        if let Filter::Eq(sub, v) = f {
                            let dotted = format!("{p}.{sub}");
                            if !out.contains_key(&dotted) {
                                out.insert(dotted, v.clone());
                            }
                        }
                    }
                    let ops = entry(&mut out, p);
                    if !ops.contains_key("$elemMatch") {
                        ops.insert("$elemMatch", cond);
                        continue;
                    }
                    // A second element condition on the path: a clause of its own (each may
                    // hold in another element).
                    let mut and = match out.remove("$and") {
                        Some(Bson::Array(a)) => a,
                        _ => Vec::new(),
                    };
                    and.push(Bson::Document(
                        bson::doc! {p.as_str(): {"$elemMatch": cond}},
                    ));
                    out.insert("$and", and);
                    continue;
                }
                Filter::StartsWith(p, prefix) => {
                    let pattern = format!("^{}", escape_regex(prefix));
                    (p, "$regex", Bson::String(pattern))
                }
                Filter::Or(fs) => {
                    let any: Vec<Bson> =
                        fs.iter().map(|f| Bson::Document(f.to_document())).collect();
                    // `{$or: []}` is refused by servers: an empty disjunction is a match of nothing.
                    let any = if any.is_empty() {
                        vec![Bson::Document(bson::doc! {"_id": {"$in": []}})]
                    } else {
                        any
                    };
                    if out.contains_key("$or") {
                        let mut and = match out.remove("$and") {
                            Some(Bson::Array(a)) => a,
                            _ => Vec::new(),
                        };
                        and.push(Bson::Document(bson::doc! {"$or": any}));
                        out.insert("$and", and);
                    } else {
                        out.insert("$or", any);
                    }
                    continue;
                }
                Filter::Clause(fs) => {
                    let mut and = match out.remove("$and") {
                        Some(Bson::Array(a)) => a,
                        _ => Vec::new(),
                    };
                    and.push(Bson::Document(Filter::And(fs.clone()).to_document()));
                    out.insert("$and", and);
                    continue;
                }
                Filter::And(_) => unreachable!("flattened"),
            };
            entry(&mut out, path).insert(op, value);
        }
        out
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

/// `s` with every regex metacharacter escaped, so that the pattern matches `s` literally.
pub(crate) fn escape_regex(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '^'
                | '$'
                | '.'
                | '|'
                | '?'
                | '*'
                | '+'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '-'
                | '/'
                | '#'
                | ' '
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A document with a field starting with `$`: as a `$push` value it would be read as
/// modifiers, so it is pushed behind `$each`.
pub(super) fn is_modifier_like(v: &Bson) -> bool {
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
