//! Updates: the modifications of the store contract, and their MongoDB documents.

use bson::{Bson, Document};

use super::filter::is_modifier_like;
use super::Path;
use crate::codec::BsonType;

/// A modification of one document. Paths are top-level field names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    /// `$set`
    pub set: Vec<(Path, Bson)>,
    /// `$setOnInsert`
    pub set_on_insert: Vec<(Path, Bson)>,
    /// `$inc` (by an Int32 amount, as the shell would)
    pub inc: Vec<(Path, i32)>,
    /// `$inc` by any BSON number (a summary's sums), sent in the same `$inc` as `inc`, after
    /// it. An Int64 overflow refuses the update, as MongoDB does (never wraps).
    pub sum: Vec<(Path, Bson)>,
    /// `$min`: the field becomes the value when the value is smaller (in BSON order) or the
    /// field is missing.
    pub min: Vec<(Path, Bson)>,
    /// `$max`: the field becomes the value when the value is larger or the field is missing.
    pub max: Vec<(Path, Bson)>,
    /// `$unset`: removes the fields.
    pub unset: Vec<Path>,
    /// `$push: {path: {$each: [...]}}` (one item: `{path: item}`, unless it has `$` fields)
    pub push: Vec<(Path, Vec<Bson>)>,
    /// `$sort` and `$slice` of a `$push` (`{$each: [...], $sort: {...}, $slice: n}`): after the
    /// push of its field, the array sorted and cut ([`PushSort`]). Each names a field that
    /// `push` pushes once; any other is refused with
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub push_sort: Vec<PushSort>,
    /// `$pull: {path: {$in: [value]}}`: removes every element equal to the value from the
    /// array (a missing field is left missing; a non-array refuses the update).
    pub pull: Vec<(Path, Bson)>,
    /// Rewrites computed from each document's own values, sent as an update pipeline
    /// (`[{$set: {...}}]`). An update with rewrites may also `set` fields (sent as literals) but
    /// nothing else: with `set_on_insert`, `inc`, `push` or `pull` beside them it is refused
    /// with [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub rewrite: Vec<Rewrite>,
    /// A condition on the document as it was, for the rewrites: when it does not hold, the
    /// update leaves the document as it was (it matched, but is not modified: the outcome's
    /// [`modified`](crate::UpdateOutcome::modified) is `false`), and no rewrite is computed.
    /// Sent as one stage, `[{$replaceWith: {$cond: [condition, {$mergeObjects: ["$$ROOT",
    /// {fields...}]}, "$$ROOT"]}}]`: where a field's value is missing, the field is left as
    /// it was. Only beside rewrites; alone it is refused with
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub rewrite_if: Option<Expr>,
    /// A condition the document must meet, tested on the document as it was: when it does not
    /// hold, or no document matches and the update upserts, the update is refused with
    /// [`Error::Unmet`](crate::Error::Unmet) and writes nothing (an ordered batch stops
    /// there). Its operators are then carried by one pipeline stage, `[{$replaceWith: {$cond:
    /// [condition, {$mergeObjects: ["$$ROOT", {fields...}]}, UNMET]}}]` ([`UNMET`]), each field
    /// computed with aggregation's meaning ([`Update::required_fields`]): where it differs
    /// from the operators', a null field is taken as missing, and an Int64 sum past its range
    /// becomes a Double (bound the field in the condition to refuse that, as
    /// [`Expr::Abs`] can). With `set`, `inc`, `sum`, `min`, `max` and `push` only; any other
    /// operator beside it is refused with [`Error::InvalidInput`](crate::Error::InvalidInput).
    ///
    /// The same check as a condition of the filter makes some servers plan a query for each
    /// write (the test server: T25); with it here, the filter can be the `_id` alone.
    pub require: Option<Expr>,
}

/// The value a [`require`](Update::require)d update's pipeline stage gives in place of the
/// document when the condition does not hold: not a document, so the server refuses the write
/// (code 40228, with this text in its message), which a store reads as
/// [`Error::Unmet`](crate::Error::Unmet).
pub const UNMET: &str = "pattern: the update's required condition does not hold";

/// How a `$push` keeps its array sorted and bounded (a subset's newest `keep` children in one
/// update): after the items are appended, the elements are sorted by the fields `by` of each
/// (documents; `1` ascending, `-1` descending, in MongoDB's order of BSON values, a missing
/// field as null), and only the first `keep` stay: `$sort: {by...}, $slice: keep`.
#[derive(Clone, Debug, PartialEq)]
pub struct PushSort {
    /// The pushed array field.
    pub field: Path,
    /// The elements' top-level fields to sort by, each with its direction.
    pub by: Vec<(Path, i32)>,
    /// How many of the sorted elements stay.
    pub keep: u32,
}

/// A rewrite of one field from its own value, applied to every document an update matches
/// (the moves of a tree: one command, however many documents it rewrites).
#[derive(Clone, Debug, PartialEq)]
pub enum Rewrite {
    /// An array whose first `drop` elements are replaced by `prefix` (the prefix alone when it
    /// holds no more than `drop`): `{$concatArrays: [prefix, {$slice: ["$field", drop, {$max:
    /// [1, {$size: "$field"}]}]}]}`. A document whose field is not an array (or is missing)
    /// refuses the update.
    ArrayPrefix {
        /// The array field.
        field: Path,
        /// How many leading elements are replaced.
        drop: usize,
        /// What replaces them.
        prefix: Vec<Bson>,
    },
    /// A string whose first `drop` characters (Unicode code points) are replaced by `prefix`:
    /// `{$concat: [prefix, {$substrCP: ["$field", drop, {$strLenCP: "$field"}]}]}`. A
    /// document whose field is not a string refuses the update.
    StringPrefix {
        /// The string field.
        field: Path,
        /// How many leading characters are replaced.
        drop: usize,
        /// What replaces them.
        prefix: String,
    },
    /// An integer field moved by the first piece whose range holds it (`from <= v <= to`:
    /// `v + by`), left as it is when none does (the renumbering of nested sets):
    /// `{$switch: {branches: [{case: {$and: [{$gte: ["$f", from]}, {$lte: ["$f", to]}]}, then:
    /// {$add: ["$f", by]}}...], default: "$f"}}`. A missing or non-numeric value is left as it is.
    Shift {
        /// The integer field.
        field: Path,
        /// The ranges and what each adds.
        pieces: Vec<Shift>,
    },
    /// The field set to an expression of the document's fields as they were ([`Expr`]; a
    /// computed parent's values from the child it gains, in one update).
    Expr {
        /// The field written.
        field: Path,
        /// Its new value.
        expr: Expr,
    },
}

/// An aggregation expression over the document an update pipeline rewrites, as MongoDB
/// evaluates it: a missing field is null to every operator but [`Expr::IfNull`]'s fallback.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// The document's top-level field (`"$field"`).
    Field(Path),
    /// A constant (`{$literal: value}`; a number, date, boolean, null or ObjectId as itself).
    Literal(Bson),
    /// The first value unless it is null or missing, then the second (`$ifNull`).
    IfNull(Box<Expr>, Box<Expr>),
    /// The sum of numbers (`$add`): null when any is null; an Int32 sum past its range an
    /// Int64, an Int64 sum past its range a Double; with a Double, a Double.
    Add(Vec<Expr>),
    /// The quotient, a Double for Int32, Int64 and Double operands (`$divide`); division by
    /// zero refuses the update.
    Divide(Box<Expr>, Box<Expr>),
    /// `then` when `test` is `true`, else `otherwise` (`$cond`).
    Cond {
        /// A boolean expression.
        test: Box<Expr>,
        /// The value when it holds.
        then: Box<Expr>,
        /// The value when it does not.
        otherwise: Box<Expr>,
    },
    /// Whether the first is greater than or equal to the second, in MongoDB's order of BSON
    /// values (`$gte`).
    Gte(Box<Expr>, Box<Expr>),
    /// Whether the first is less than or equal to the second (`$lte`).
    Lte(Box<Expr>, Box<Expr>),
    /// Whether every expression is true, in MongoDB's truth (`$and`): false, null, missing
    /// and zero are false, every other value true; `true` for none.
    And(Vec<Expr>),
    /// Whether the value's type is one of `kinds`, or the value is missing and `or_missing`
    /// (`{$in: [{$type: value}, [aliases...]]}`, `"missing"` among them with `or_missing`;
    /// [`BsonType::Number`] is sent as the four number types).
    OfType {
        /// The value tested.
        value: Box<Expr>,
        /// The types it may have.
        kinds: Vec<BsonType>,
        /// Whether a missing value passes.
        or_missing: bool,
    },
    /// Whether the two are equal in MongoDB's order of BSON values (`$eq`: numbers by value,
    /// whatever their types).
    Eq(Box<Expr>, Box<Expr>),
    /// The absolute value of a number (`$abs`): null for null or missing; an Int32's that
    /// does not fit an Int32 is an Int64; the least Int64, or a value that is not a number,
    /// refuses the update.
    Abs(Box<Expr>),
    /// The least of the values in MongoDB's order (`$min` of several): null and missing
    /// values are passed over; null when all are.
    Min(Vec<Expr>),
    /// The greatest of the values (`$max` of several), as [`Expr::Min`].
    Max(Vec<Expr>),
    /// The arrays one after another (`$concatArrays`): null when any is null or missing; a
    /// value that is not an array refuses the update.
    Concat(Vec<Expr>),
}

impl Expr {
    /// The aggregation expression's document.
    pub fn to_bson(&self) -> Bson {
        self.clone().into_bson()
    }

    /// [`Expr::to_bson`], its literals moved into it (a fill's items are not copied again to
    /// be sent).
    pub fn into_bson(self) -> Bson {
        use bson::doc;
        let all = |xs: Vec<Expr>| xs.into_iter().map(Expr::into_bson).collect::<Vec<_>>();
        let two = |a: Box<Expr>, b: Box<Expr>| vec![a.into_bson(), b.into_bson()];
        Bson::Document(match self {
            Expr::Field(f) => return Bson::String(format!("${f}")),
            // A number, date, boolean, null or ObjectId is itself in an expression; a string
            // may name a field (`$f`), an array or a document hold expressions: those wrapped.
            Expr::Literal(
                v @ (Bson::Int32(_)
                | Bson::Int64(_)
                | Bson::Double(_)
                | Bson::Decimal128(_)
                | Bson::DateTime(_)
                | Bson::Boolean(_)
                | Bson::Null
                | Bson::ObjectId(_)),
            ) => return v,
            Expr::Literal(v) => doc! {"$literal": v},
            Expr::IfNull(a, b) => doc! {"$ifNull": two(a, b)},
            Expr::Add(xs) => doc! {"$add": all(xs)},
            Expr::Divide(a, b) => doc! {"$divide": two(a, b)},
            Expr::Cond {
                test,
                then,
                otherwise,
            } => doc! {"$cond": [test.into_bson(), then.into_bson(), otherwise.into_bson()]},
            Expr::Gte(a, b) => doc! {"$gte": two(a, b)},
            Expr::Lte(a, b) => doc! {"$lte": two(a, b)},
            Expr::And(xs) => doc! {"$and": all(xs)},
            Expr::OfType {
                value,
                kinds,
                or_missing,
            } => {
                let mut names: Vec<Bson> = Vec::new();
                for k in kinds {
                    match k {
                        BsonType::Number => names.extend(
                            [
                                BsonType::Int,
                                BsonType::Long,
                                BsonType::Double,
                                BsonType::Decimal,
                            ]
                            .map(|t| Bson::String(t.alias().to_owned())),
                        ),
                        k => names.push(Bson::String(k.alias().to_owned())),
                    }
                }
                if or_missing {
                    names.push(Bson::String("missing".to_owned()));
                }
                doc! {"$in": [{"$type": value.into_bson()}, names]}
            }
            Expr::Eq(a, b) => doc! {"$eq": two(a, b)},
            Expr::Abs(a) => doc! {"$abs": a.into_bson()},
            Expr::Min(xs) => doc! {"$min": all(xs)},
            Expr::Max(xs) => doc! {"$max": all(xs)},
            Expr::Concat(xs) => doc! {"$concatArrays": all(xs)},
        })
    }
}

/// One piece of a [`Rewrite::Shift`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shift {
    /// The range's least value.
    pub from: i64,
    /// The range's greatest value.
    pub to: i64,
    /// What is added to a value in the range.
    pub by: i64,
}

impl Rewrite {
    /// The field it rewrites.
    pub fn field(&self) -> &str {
        match self {
            Rewrite::ArrayPrefix { field, .. }
            | Rewrite::StringPrefix { field, .. }
            | Rewrite::Shift { field, .. }
            | Rewrite::Expr { field, .. } => field,
        }
    }

    /// The aggregation expression computing the new value.
    pub fn expression(&self) -> Bson {
        use bson::doc;
        match self {
            Rewrite::ArrayPrefix {
                field,
                drop,
                prefix,
            } => {
                let f = format!("${field}");
                let literal = Bson::Document(doc! {"$literal": prefix.clone()});
                let rest = doc! {"$slice": [f.clone(), *drop as i64, {"$max": [1, {"$size": f}]}]};
                Bson::Document(doc! {"$concatArrays": [literal, rest]})
            }
            Rewrite::StringPrefix {
                field,
                drop,
                prefix,
            } => {
                let f = format!("${field}");
                let literal = Bson::Document(doc! {"$literal": prefix.clone()});
                let rest = doc! {"$substrCP": [f.clone(), *drop as i64, {"$strLenCP": f}]};
                Bson::Document(doc! {"$concat": [literal, rest]})
            }
            Rewrite::Shift { field, pieces } => {
                let f = format!("${field}");
                let branches: Vec<Bson> = pieces
                    .iter()
                    .map(|p| {
                        Bson::Document(doc! {
                            "case": {"$and": [
                                {"$gte": [f.clone(), p.from]},
                                {"$lte": [f.clone(), p.to]},
                            ]},
                            "then": {"$add": [f.clone(), p.by]},
                        })
                    })
                    .collect();
                if branches.is_empty() {
                    return Bson::String(f);
                }
                Bson::Document(doc! {"$switch": {"branches": branches, "default": f}})
            }
            Rewrite::Expr { expr, .. } => expr.to_bson(),
        }
    }
}

impl Update {
    /// The MongoDB update document.
    pub fn to_document(&self) -> Document {
        self.clone().into_document()
    }

    /// The MongoDB update document, its values moved into it (the items of a `$push`: a
    /// batch's fills are not copied again to be sent).
    pub fn into_document(self) -> Document {
        let mut out = Document::new();
        let pairs = |v: Vec<(Path, Bson)>| {
            v.into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<Document>()
        };
        if !self.set.is_empty() {
            out.insert("$set", pairs(self.set));
        }
        if !self.set_on_insert.is_empty() {
            out.insert("$setOnInsert", pairs(self.set_on_insert));
        }
        if !self.inc.is_empty() || !self.sum.is_empty() {
            let inc = (self.inc.into_iter()).map(|(k, n)| (k.to_string(), Bson::Int32(n)));
            let sum = self.sum.into_iter().map(|(k, v)| (k.to_string(), v));
            out.insert("$inc", inc.chain(sum).collect::<Document>());
        }
        if !self.min.is_empty() {
            out.insert("$min", pairs(self.min));
        }
        if !self.max.is_empty() {
            out.insert("$max", pairs(self.max));
        }
        if !self.unset.is_empty() {
            let fields =
                (self.unset.into_iter()).map(|k| (k.to_string(), Bson::String(String::new())));
            out.insert("$unset", fields.collect::<Document>());
        }
        if !self.push.is_empty() {
            let push_sort = self.push_sort;
            let push: Document = (self.push.into_iter())
                .map(|(k, mut items)| {
                    // One item is pushed as itself (the seed's own form), unless it is a
                    // document with a `$` field, which the server could read as `$push`'s
                    // modifiers (`$each`, `$slice`...).
                    let sorted = push_sort.iter().find(|s| s.field == k);
                    let value = match (items.len(), sorted) {
                        (_, Some(s)) => {
                            let by: Document = (s.by.iter())
                                .map(|(f, d)| (f.to_string(), Bson::Int32(*d)))
                                .collect();
                            let keep = i64::from(s.keep);
                            Bson::Document(bson::doc! {"$each": items, "$sort": by, "$slice": keep})
                        }
                        (1, None) if !is_modifier_like(&items[0]) => items.pop().expect("one"),
                        _ => Bson::Document(bson::doc! {"$each": items}),
                    };
                    (k.to_string(), value)
                })
                .collect();
            out.insert("$push", push);
        }
        if !self.pull.is_empty() {
            let pull: Document = (self.pull.into_iter())
                .map(|(k, v)| (k.to_string(), Bson::Document(bson::doc! {"$in": [v]})))
                .collect();
            out.insert("$pull", pull);
        }
        out
    }

    /// Refuses an update with rewrites and an operator that a pipeline cannot carry beside
    /// them.
    pub fn check(&self) -> crate::Result<()> {
        let plain_ops = !self.set_on_insert.is_empty()
            || !self.inc.is_empty()
            || !self.sum.is_empty()
            || !self.min.is_empty()
            || !self.max.is_empty()
            || !self.unset.is_empty()
            || !self.push.is_empty()
            || !self.pull.is_empty();
        for s in &self.push_sort {
            let pushes = self.push.iter().filter(|(f, _)| *f == s.field).count();
            let sorts = self.push_sort.iter().filter(|t| t.field == s.field).count();
            if pushes != 1 || sorts != 1 || s.by.is_empty() {
                return Err(crate::Error::invalid(format!(
                    "a sorted $push of `{}` needs one $push of the field, one sort of it, and \
                     a field to sort by",
                    s.field
                )));
            }
        }
        if self.require.is_some()
            && (!self.set_on_insert.is_empty()
                || !self.unset.is_empty()
                || !self.pull.is_empty()
                || !self.push_sort.is_empty()
                || !self.rewrite.is_empty()
                || self.rewrite_if.is_some())
        {
            return Err(crate::Error::invalid(
                "a required condition (`require`) goes with `set`, `inc`, `sum`, `min`, `max` \
                 and `push` only",
            ));
        }
        if self.rewrite_if.is_some() && self.rewrite.is_empty() {
            return Err(crate::Error::invalid(
                "a condition for rewrites (`rewrite_if`) needs a rewrite",
            ));
        }
        if !self.rewrite.is_empty() && plain_ops {
            return Err(crate::Error::invalid(
                "an update with rewrites may only set fields beside them",
            ));
        }
        // The stores update top-level fields: a dotted path would be a nested field on
        // MongoDB and a field named with a dot in memory.
        if let Some(p) = self.written().into_iter().find(|p| p.contains('.')) {
            return Err(crate::Error::invalid(format!(
                "an update writes top-level fields: `{p}` names a nested field; write the whole \
                 top-level field instead"
            )));
        }
        Ok(())
    }

    /// The update as a pipeline (`[{$set: {...}}]`) when it has rewrites: its `set` fields as
    /// literals, then each rewrite's expression; under a [`rewrite_if`](Update::rewrite_if),
    /// the same fields merged into the document when the condition holds
    /// (`[{$replaceWith: {$cond: [...]}}]`). `None` without rewrites.
    ///
    /// With a [`require`](Update::require)d condition: the operators' fields
    /// ([`Update::required_fields`]) merged into the document when it holds, [`UNMET`] when
    /// it does not.
    pub fn to_pipeline(&self) -> Option<Vec<Document>> {
        if self.require.is_some() {
            return self.clone().into_pipeline();
        }
        if self.rewrite.is_empty() {
            return None;
        }
        let mut set = Document::new();
        for (k, v) in &self.set {
            set.insert(k.to_string(), bson::doc! {"$literal": v.clone()});
        }
        for r in &self.rewrite {
            set.insert(r.field(), r.expression());
        }
        Some(vec![match &self.rewrite_if {
            None => bson::doc! {"$set": set},
            Some(test) => bson::doc! {"$replaceWith": {"$cond": [
                test.to_bson(),
                {"$mergeObjects": ["$$ROOT", set]},
                "$$ROOT",
            ]}},
        }])
    }

    /// Whether the update is sent as a pipeline ([`Update::to_pipeline`]): it has rewrites or
    /// a required condition.
    pub fn is_pipeline(&self) -> bool {
        !self.rewrite.is_empty() || self.require.is_some()
    }

    /// [`Update::to_pipeline`], its values moved into it (a batch's fills are not copied
    /// again to be sent).
    pub fn into_pipeline(mut self) -> Option<Vec<Document>> {
        let Some(test) = self.require.take() else {
            return self.to_pipeline();
        };
        let fields: Document = (self.into_required_fields().into_iter())
            .map(|(k, e)| (k.to_string(), e.into_bson()))
            .collect();
        Some(vec![bson::doc! {"$replaceWith": {"$cond": [
            test.into_bson(),
            {"$mergeObjects": ["$$ROOT", fields]},
            UNMET,
        ]}}])
    }

    /// The fields a [`require`](Update::require)d update writes, each as the aggregation
    /// expression its operator becomes, in the order of the operators: `$set` a literal;
    /// `$inc` `{$add: [{$ifNull: ["$f", 0]}, n]}`; `$min` and `$max` `{$min: ["$f", v]}`
    /// (a null field is passed over, as missing); `$push` `{$concatArrays: [{$ifNull: ["$f",
    /// []]}, [items]]}`.
    pub fn required_fields(&self) -> Vec<(Path, Expr)> {
        self.clone().into_required_fields()
    }

    /// [`Update::required_fields`], the values moved.
    pub fn into_required_fields(self) -> Vec<(Path, Expr)> {
        let field = |f: &Path| Box::new(Expr::Field(f.clone()));
        let add = |f: &Path, n: Bson| {
            Expr::Add(vec![
                Expr::IfNull(field(f), Box::new(Expr::Literal(Bson::Int32(0)))),
                Expr::Literal(n),
            ])
        };
        let mut out = Vec::new();
        out.extend((self.set.into_iter()).map(|(f, v)| (f, Expr::Literal(v))));
        out.extend(self.inc.into_iter().map(|(f, n)| {
            let e = add(&f, Bson::Int32(n));
            (f, e)
        }));
        out.extend(self.sum.into_iter().map(|(f, v)| {
            let e = add(&f, v);
            (f, e)
        }));
        out.extend(self.min.into_iter().map(|(f, v)| {
            let e = Expr::Min(vec![Expr::Field(f.clone()), Expr::Literal(v)]);
            (f, e)
        }));
        out.extend(self.max.into_iter().map(|(f, v)| {
            let e = Expr::Max(vec![Expr::Field(f.clone()), Expr::Literal(v)]);
            (f, e)
        }));
        out.extend(self.push.into_iter().map(|(f, items)| {
            let e = Expr::Concat(vec![
                Expr::IfNull(field(&f), Box::new(Expr::Literal(Bson::Array(Vec::new())))),
                Expr::Literal(Bson::Array(items)),
            ]);
            (f, e)
        }));
        out
    }
}

impl Update {
    /// The fields the update (on an existing document: `$setOnInsert` aside) writes, each as
    /// often as an operator names it: gathered once for the many questions an update of a
    /// document with several indexes asks (which index entries it may move).
    pub fn written(&self) -> Vec<&str> {
        let mut out = Vec::with_capacity(
            self.set.len()
                + self.inc.len()
                + self.sum.len()
                + self.min.len()
                + self.max.len()
                + self.unset.len()
                + self.push.len()
                + self.pull.len()
                + self.rewrite.len(),
        );
        out.extend(self.set.iter().map(|(f, _)| f.as_str()));
        out.extend(self.inc.iter().map(|(f, _)| f.as_str()));
        out.extend(self.sum.iter().map(|(f, _)| f.as_str()));
        out.extend(self.min.iter().map(|(f, _)| f.as_str()));
        out.extend(self.max.iter().map(|(f, _)| f.as_str()));
        out.extend(self.unset.iter().map(|f| f.as_str()));
        out.extend(self.push.iter().map(|(f, _)| f.as_str()));
        out.extend(self.pull.iter().map(|(f, _)| f.as_str()));
        out.extend(self.rewrite.iter().map(|r| r.field()));
        out
    }
}
