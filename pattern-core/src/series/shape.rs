//! The shape of a series in its collection: its indexes, the filters that find a key's
//! documents (and its open one), the update that pushes to it, the document that opens it, the
//! prepared push a store applies ([`OpenPush`]), and the time-named `_id`s of buckets. Then
//! what a push keeps beside its items ([`Keeps`](crate::spec::Keeps)): the values its items
//! add (time bounds, a summary), the update's operators that keep them, and how two values
//! combine.

use crate::store::Error as StoreError;
use bson::{Bson, Document};

use crate::codec::number::{self, NumberError};
use crate::spec::{SeriesSpec, SummaryField, SummaryOp, BOUNDED_FIELD, SUMMARIZED_FIELD};
use crate::store::query::{Expr, Filter, IndexSpec, Path, Update};
use crate::store::{KeptOps, OpenPush, Window};
use crate::{Error, Result};

impl<'a> SeriesSpec<'a> {
    /// The indexes the series needs: `{key, seq, _id}`, which orders a key's documents and
    /// serves every read by key (the newest document is its last entry); one on
    /// `{key, seq: -1, _id: -1}` partial on `count < size`, which holds only open documents,
    /// newest first: how a push finds its document, or finds there is none, in one index probe
    /// however long the series (it both filters and sorts, so the server's planner picks it
    /// without a hint, which costs in proportion to the collection on the test server); and a
    /// unique one on `{key, seq}` (documents without `seq` aside) that admits one document
    /// `n + 1`. `seq` never changes once written, so that partial index never sees a document
    /// leave its filter.
    ///
    /// The open-document index is named to sort before any other index on the key
    /// (`0_pattern_open_...`): a planner that tries a query's candidate indexes in name order
    /// would otherwise walk every document of the key before the open one. (The test server's
    /// behaviours these choices answer: `TEST-SERVER.md` in the repository, T2
    /// to T4.)
    pub fn indexes(&self) -> Vec<IndexSpec> {
        let (k, seq) = (self.key_field, self.order.field());
        let mut all = vec![
            IndexSpec {
                name: self.read_index_name(),
                keys: vec![(k.into(), 1), (seq.into(), 1), ("_id".into(), 1)],
                unique: false,
                partial: None,
            },
            IndexSpec {
                name: self.open_index_name(),
                keys: self.open_keys().map(|(k, d)| (k.to_owned(), d)).to_vec(),
                unique: false,
                partial: Some(self.open_partial()),
            },
            IndexSpec {
                name: format!("pattern_{k}_1_{seq}_-1_unique"),
                keys: vec![(k.into(), 1), (seq.into(), -1)],
                unique: true,
                partial: Some(Filter::Exists(Path::from(seq), true)),
            },
        ];
        if let Some((min, max)) = self.keeps.bounds {
            // The time-range reads: `{key, bounded: true, max >= from, min < to}`, and the
            // buckets without bounds (`bounded: null`), both on this one index.
            all.push(IndexSpec {
                name: format!("pattern_{k}_1_{BOUNDED_FIELD}_1_{max}_1_{min}_1"),
                keys: vec![
                    (k.into(), 1),
                    (BOUNDED_FIELD.into(), 1),
                    (max.into(), 1),
                    (min.into(), 1),
                ],
                unique: false,
                partial: None,
            });
        }
        all
    }

    /// The open-document index's keys: the key, then the newest document first; for a series
    /// cut by span ([`Keeps::span`](crate::spec::Keeps::span)), the key, then the latest
    /// window first (by the documents' earliest time), so that a push finds its window's open
    /// document with one bounded probe, however many older windows' documents stay open.
    pub(crate) fn open_keys(&self) -> [(&'a str, i32); 3] {
        match self.span_bounds() {
            Some((min, _, _)) => [(self.key_field, 1), (min, -1), ("_id", -1)],
            None => [(self.key_field, 1), (self.order.field(), -1), ("_id", -1)],
        }
    }

    /// The span and bound fields of a series cut by span: `(min, max, span)`.
    pub(crate) fn span_bounds(&self) -> Option<(&'a str, &'a str, i64)> {
        let (min, max) = self.keeps.bounds?;
        Some((min, max, self.keeps.span.filter(|s| *s > 0)?))
    }

    /// The window of time a push of values `kept` goes to, for a series cut by span: the
    /// window of its earliest item (a push holds items of one window).
    pub(crate) fn window(&self, kept: &Kept) -> Option<i64> {
        self.span_bounds()?;
        self.keeps.window_of(kept.bounds?.0)
    }

    /// The open-document index's partial filter, which the push's query also carries: the
    /// documents with room (`count < size`).
    pub(crate) fn open_partial(&self) -> Filter {
        Filter::Lt(Path::from(self.count_field), Bson::Int32(self.size as i32))
    }

    pub(crate) fn read_index_name(&self) -> String {
        format!(
            "pattern_{}_1_{}_1__id_1",
            self.key_field,
            self.order.field()
        )
    }

    pub(crate) fn open_index_name(&self) -> String {
        match self.span_bounds() {
            Some((_, _, span)) => format!("{}{}_span_{span}", self.open_index_prefix(), self.size),
            None => format!("{}{}", self.open_index_prefix(), self.size),
        }
    }

    /// The open-document index's name up to its size: `0_pattern_open_<key>_<order>_<count>_lt_`
    /// (the order's field: the number, or the earliest time for a series cut by span).
    pub(crate) fn open_index_prefix(&self) -> String {
        let order = self.open_keys()[1].0;
        open_prefix(self.key_field, order, self.count_field)
    }

    /// The library's indexes of other settings, dropped when found: the open-document index
    /// for another `size`, the `{key, _id}` index of unnumbered buckets, and `{key, seq}`.
    pub(crate) fn stale_prefixes(&self) -> Vec<String> {
        let k = self.key_field;
        let mut stale = vec![open_prefix(k, self.order.field(), self.count_field)];
        if let Some((min, _)) = self.keeps.bounds {
            // The open index of the same series cut by span, or not.
            stale.push(open_prefix(k, min, self.count_field));
        }
        stale.extend([
            format!(
                "pattern_open_{k}_{}_{}_lt_",
                self.order.field(),
                self.count_field
            ),
            format!("pattern_open_{}_{}_lt_", k, self.count_field),
            format!("pattern_{k}_1__id_1"),
            format!("pattern_{k}_1_{}_1", self.order.field()),
        ]);
        stale
    }

    /// Whether `name` is one of the library's indexes that this series drops when it finds
    /// it on its collection: one of [`SeriesSpec::stale_prefixes`], or any of the library's
    /// series indexes on another key field (another reference or key of an earlier run: its
    /// unique `{key, seq}` index would refuse this series' documents, which lack that key).
    pub(crate) fn is_stale(&self, name: &str) -> bool {
        if self.indexes().iter().any(|i| i.name == name) {
            return false;
        }
        if self
            .stale_prefixes()
            .iter()
            .any(|p| name.starts_with(p.as_str()))
        {
            return true;
        }
        let k = self.key_field;
        let mine = name.starts_with(&format!("pattern_{k}_1_"))
            || name.starts_with(&format!("0_pattern_open_{k}_"));
        let ours = name.starts_with("pattern_") || name.starts_with("0_pattern_open_");
        ours && !mine
    }

    pub(crate) fn by_key(&self, key: &Bson) -> Filter {
        Filter::Eq(Path::from(self.key_field), key.clone())
    }

    /// A document of the series: its number is absent (the unnumbered documents that come
    /// first) or a number. A document whose number field holds anything else (a string, null,
    /// an array: written by another tool) is not part of the series: no read returns or
    /// counts it and no push writes to it.
    pub(crate) fn in_series(&self) -> Filter {
        Filter::NumberOrMissing(Path::from(self.order.field()))
    }

    /// The key's documents ([`SeriesSpec::in_series`]), with `more` conditions.
    pub(crate) fn docs_of(&self, key: &Bson, more: impl IntoIterator<Item = Filter>) -> Filter {
        let mut all = vec![self.by_key(key), self.in_series()];
        all.extend(more);
        Filter::And(all)
    }

    /// The key's documents in order: unnumbered ones first (by `_id`), then by number.
    pub(crate) fn sort(&self) -> Vec<(Path, i32)> {
        vec![(Path::from(self.order.field()), 1), ("_id".into(), 1)]
    }

    /// Every key's documents in order, keys one after the other (the read index's order).
    pub(crate) fn sort_by_key(&self) -> Vec<(Path, i32)> {
        vec![
            (Path::from(self.key_field), 1),
            (Path::from(self.order.field()), 1),
            ("_id".into(), 1),
        ]
    }

    /// Newest document first.
    pub(crate) fn newest_first(&self) -> [(Path, i32); 2] {
        [(Path::from(self.order.field()), -1), ("_id".into(), -1)]
    }

    /// How items in order (their times `millis`) are cut into new documents: `size` at a
    /// time and, for a series cut by span, at every change of window.
    pub(crate) fn cut(&self, millis: &[i64]) -> Vec<std::ops::Range<usize>> {
        let size = self.size as usize;
        let spanned = self.span_bounds().is_some();
        let window = |i: usize| {
            let t = millis.get(i).copied().filter(|_| spanned)?;
            self.keeps.window_of(t)
        };
        let (mut out, mut start) = (Vec::new(), 0);
        for i in 0..millis.len() {
            if i - start == size || (i > start && window(i) != window(start)) {
                out.push(start..i);
                start = i;
            }
        }
        if start < millis.len() {
            out.push(start..millis.len());
        }
        out
    }

    /// Of items in order (times `millis`), the first ones that fill documents no later item can
    /// join: how many, and in how many documents. Full documents, and for a series cut by
    /// span, those of windows before the last item's.
    pub(crate) fn closed_prefix(&self, millis: &[i64]) -> (usize, usize) {
        let size = self.size as usize;
        let last = millis.last().and_then(|t| self.keeps.window_of(*t));
        let closed = self.cut(millis).into_iter().take_while(|r| {
            r.len() == size
                || (self.span_bounds().is_some() && self.keeps.window_of(millis[r.start]) != last)
        });
        closed.fold((0, 0), |(_, docs), r| (r.end, docs + 1))
    }

    /// The key's open documents (`count < size`), in any window ([`OpenPush::filter`] is the
    /// open document of a push's items).
    pub(crate) fn open(&self, key: &Bson) -> Filter {
        Filter::And(vec![
            self.by_key(key),
            self.open_partial(),
            self.in_series(),
        ])
    }

    /// What a document opened by this writer is marked complete for: `bounded: true` and
    /// `summarized: [<summary fields>]` (see [`Keeps`](crate::spec::Keeps)); sent in `$setOnInsert`.
    pub(crate) fn marks(&self) -> Vec<(&'a str, Bson)> {
        let mut marks = Vec::new();
        if self.keeps.bounds.is_some() {
            marks.push((BOUNDED_FIELD, Bson::Boolean(true)));
        }
        if !self.keeps.summary.is_empty() {
            let fields = self
                .keeps
                .summary
                .iter()
                .map(|a| Bson::String(a.field.into()));
            marks.push((SUMMARIZED_FIELD, Bson::Array(fields.collect())));
        }
        marks
    }

    /// A new document holding `items`: `_id`, the key, then the other fields in the
    /// lexicographic order MongoDB gives the fields an upsert creates
    /// ([`OpenPush::new_doc_taking`]).
    pub(crate) fn new_doc(
        &self,
        key: &Bson,
        id: Bson,
        seq: i64,
        mut items: Vec<Bson>,
        kept: &Kept,
    ) -> Document {
        let new_id = move || id.clone();
        let marks = || self.marks();
        let push = self.open_push(key, kept, seq, &new_id, &marks);
        push.new_doc_taking(&mut items)
    }
}

/// The name of an open-document index up to its size.
fn open_prefix(key: &str, order: &str, count: &str) -> String {
    format!("0_pattern_open_{key}_{order}_{count}_lt_")
}

/// The `_id` of a [`SeriesOrder::TimeId`](crate::spec::SeriesOrder::TimeId) document: `<prefix>_<seconds>`, then `_<suffix>`
/// in at least 6 digits unless `suffix` is 0. Written digit by digit: every push computes the
/// `_id` of the document it may open, and `format!` costs several times more.
pub(crate) fn bucket_id(prefix: &str, seconds: i64, suffix: u32) -> String {
    let mut id = String::with_capacity(prefix.len() + 28);
    id.push_str(prefix);
    id.push('_');
    if seconds < 0 {
        id.push('-');
    }
    push_digits(&mut id, seconds.unsigned_abs(), 1);
    if suffix != 0 {
        id.push('_');
        push_digits(&mut id, u64::from(suffix), 6);
    }
    id
}

/// Appends `n` in decimal, zero-padded to at least `width` digits (at most 20).
fn push_digits(out: &mut String, mut n: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut start = buf.len();
    while n > 0 || start > buf.len() - width.clamp(1, 20) {
        start -= 1;
        buf[start] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.push_str(std::str::from_utf8(&buf[start..]).expect("ASCII digits"));
}

/// What one write adds to the values a document keeps of its items ([`Keeps`](crate::spec::Keeps)),
/// computed from the items it pushes: sent as `$min`/`$max`/`$inc` beside the `$push`, or
/// written as they are into a new document.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Kept {
    /// The earliest and latest item time, epoch milliseconds (`None`: no bounds kept).
    pub(crate) bounds: Option<(i64, i64)>,
    /// For each aggregate of the summary, in order: the items' value (`None` when no item has a
    /// number in that field).
    pub(crate) summary: Vec<Option<Bson>>,
    /// The items' size: the sum of their BSON values' sizes, when the caller measured them
    /// (every push does, checking each fits in a document); a store may use it rather than
    /// measure them again. `None`: not measured.
    pub(crate) items_bytes: Option<usize>,
}

impl Kept {
    /// Nothing kept.
    pub(crate) const NONE: Kept = Kept {
        bounds: None,
        summary: Vec::new(),
        items_bytes: None,
    };
}

impl<'a> SeriesSpec<'a> {
    /// The push of `items`: `$push` them, `$inc` the count, and keep their values (`kept`,
    /// computed from them by [`SeriesSpec::kept`]).
    pub(crate) fn push_update(&self, items: Vec<Bson>, kept: &Kept) -> Update {
        let KeptOps { sum, min, max } = self.kept_ops(kept);
        Update {
            inc: vec![(Path::from(self.count_field), items.len() as i32)],
            push: vec![(Path::from(self.items_field), items)],
            sum: sum.into_vec(),
            min: min.into_vec(),
            max: max.into_vec(),
            ..Update::default()
        }
    }

    /// The condition of a fill ([`Update::require`]) of a document that held `count` items:
    /// its count is `count`, and each summary sum can take the update's value as the push's
    /// `$inc` would: a number far enough from Int64's ends that the sum stays in range (`$abs`
    /// refuses any other type; a null or missing sum passes, the pipeline taking it as
    /// missing), or the fill is refused, and the caller sends the push that reports the
    /// overflow.
    pub(crate) fn fill_condition(&self, update: &Update, count: u64) -> Expr {
        let field = |f: &Path| Box::new(Expr::Field(f.clone()));
        let mut all = vec![Expr::Eq(
            field(&Path::from(self.count_field)),
            Box::new(Expr::Literal(Bson::Int64(
                i64::try_from(count).unwrap_or(i64::MAX),
            ))),
        )];
        for (f, v) in &update.sum {
            // `$abs` refuses a value that is not a number (a date, which `$add` would move).
            let bound = match v {
                Bson::Int32(n) => Bson::Int64(i64::MAX - i64::from(*n).abs()),
                Bson::Int64(n) => Bson::Int64(n.checked_abs().map_or(0, |n| i64::MAX - n)),
                _ => Bson::Double(f64::INFINITY),
            };
            all.push(Expr::Lte(
                Box::new(Expr::Abs(field(f))),
                Box::new(Expr::Literal(bound)),
            ));
        }
        Expr::And(all)
    }

    /// The kept values' `$inc`/`$min`/`$max`, as [`SeriesSpec::push_update`] and
    /// [`OpenPush`] send them: the time bounds, then the summary's values.
    pub(crate) fn kept_ops(&self, kept: &Kept) -> KeptOps {
        let mut vals = KeptOps::default();
        if let (Some((min, max)), Some((fmin, fmax))) = (kept.bounds, self.keeps.bounds) {
            let date = |ms: i64| Bson::DateTime(bson::DateTime::from_millis(ms));
            vals.min.push((Path::from(fmin), date(min)));
            vals.max.push((Path::from(fmax), date(max)));
        }
        self.summary_ops(kept, &mut vals);
        vals
    }

    /// The summary's values of `kept` added to `ops`: each to the `$inc`, `$min` or `$max` its
    /// aggregate says (none for an aggregate the items have no value of).
    pub(crate) fn summary_ops(&self, kept: &Kept, ops: &mut KeptOps) {
        for (agg, v) in self.keeps.summary.iter().zip(&kept.summary) {
            let Some(v) = v else { continue };
            let list = match agg.op {
                SummaryOp::Sum => &mut ops.sum,
                SummaryOp::Min => &mut ops.min,
                SummaryOp::Max => &mut ops.max,
            };
            list.push((Path::from(agg.field), v.clone()));
        }
    }

    /// The push of items with values `kept` to `key`'s open document, or opening document
    /// `seq` (`_id` `new_id()`, with `marks`: [`SeriesSpec::marks`]), as a store applies it.
    pub(crate) fn open_push<'p>(
        &'p self,
        key: &'p Bson,
        kept: &Kept,
        seq: i64,
        new_id: &'p (dyn Fn() -> Bson + Sync),
        marks: &'p (dyn Fn() -> Vec<(&'p str, Bson)> + Sync),
    ) -> OpenPush<'p> {
        let [_, a, b] = self.open_keys();
        let window = self.window(kept).zip(self.span_bounds());
        OpenPush {
            collection: self.collection,
            key_field: self.key_field,
            key,
            items_field: self.items_field,
            count_field: self.count_field,
            size: self.size,
            number_field: self.order.field(),
            open_order: [a, b],
            window: window.map(|(start, (min_field, max_field, span))| Window {
                min_field,
                max_field,
                start,
                end: start.saturating_add(span),
            }),
            kept: self.kept_ops(kept),
            items_bytes: kept.items_bytes,
            seq,
            new_id,
            marks,
        }
    }

    /// The values `items` add to what a document keeps (their times `millis`, one per item):
    /// the earliest and latest time, and each aggregate of the summary over the items' field
    /// (a missing or null field is skipped). Refuses an item whose summarized field holds
    /// something other than a number, and a sum that overflows, before anything is written.
    pub(crate) fn kept<B: std::borrow::Borrow<Bson>>(
        &self,
        items: &[B],
        millis: &[i64],
    ) -> Result<Kept> {
        if self.keeps.is_none() {
            return Ok(Kept::NONE);
        }
        if self.keeps.bounds.is_some() && millis.len() != items.len() {
            return Err(Error::invalid(format!(
                "collection `{}` keeps time bounds: every item needs a time",
                self.collection
            )));
        }
        let bounds = self.keeps.bounds.and_then(|_| {
            let (min, max) = (millis.iter().min()?, millis.iter().max()?);
            Some((*min, *max))
        });
        let mut summary: Vec<Option<Bson>> = vec![None; self.keeps.summary.len()];
        for item in items {
            for (agg, acc) in self.keeps.summary.iter().zip(summary.iter_mut()) {
                let v = match item.borrow() {
                    Bson::Document(d) => d.get(agg.item_field),
                    _ => None,
                };
                let Some(v) = v.filter(|v| !matches!(v, Bson::Null)) else {
                    continue;
                };
                *acc = Some(combine(self.collection, agg, acc.take(), v)?);
            }
        }
        Ok(Kept {
            bounds,
            summary,
            items_bytes: None,
        })
    }
}

/// `acc` combined with `v` by the aggregate's op (`None`: `v` alone): what a document keeps
/// when it adds an item's value, and what a summary read adds a bucket's value to. Refuses a
/// `v` that is not a number, and a sum that overflows ([`store::Error::Overflow`](crate::store::Error::Overflow) naming the bucket
/// field).
pub(crate) fn combine(
    coll: &str,
    agg: &SummaryField<'_>,
    acc: Option<Bson>,
    v: &Bson,
) -> Result<Bson> {
    let Some(acc) = acc else {
        return match number::compare(v, v) {
            Some(_) => Ok(v.clone()),
            None => Err(not_a_number(coll, agg, v)),
        };
    };
    match agg.op {
        SummaryOp::Sum => number::add(&acc, v).map_err(|e| match e {
            NumberError::Overflow => Error::Store(StoreError::Overflow {
                collection: coll.to_owned(),
                field: agg.field.to_owned(),
                message: format!("the sum of `{}` overflows", agg.item_field),
            }),
            NumberError::NotANumber(_) => not_a_number(coll, agg, v),
        }),
        SummaryOp::Min | SummaryOp::Max => {
            let o = number::compare(v, &acc).ok_or_else(|| not_a_number(coll, agg, v))?;
            let take = if agg.op == SummaryOp::Min {
                o.is_lt()
            } else {
                o.is_gt()
            };
            Ok(if take { v.clone() } else { acc })
        }
    }
}

fn not_a_number(coll: &str, agg: &SummaryField<'_>, v: &Bson) -> Error {
    let field = agg.item_field;
    Error::invalid(format!(
        "summary {}({field}) of collection `{coll}`: `{field}` is not a number but {:?}",
        agg.op.name(),
        v.element_type()
    ))
}

#[cfg(test)]
mod tests {
    use super::{bucket_id, Kept};
    use crate::spec::{SeriesOrder, SeriesSpec};

    /// Exactly one of the series' indexes is its open-document index, the one the in-memory
    /// store's native push reads: a change to the indexes that loses it fails here, not
    /// silently on the slow path.
    #[test]
    fn one_index_is_the_open_index() {
        for order in [SeriesOrder::TimeId("page"), SeriesOrder::Seq("seq")] {
            let spec = SeriesSpec {
                collection: "c",
                key_field: "k",
                items_field: "items",
                count_field: "count",
                size: 10,
                order,
                keeps: crate::spec::Keeps::NONE,
            };
            let (key, id, marks) = (bson::Bson::Int32(1), || bson::Bson::Null, Vec::new);
            let push = spec.open_push(&key, &Kept::NONE, 0, &id, &marks);
            let open: Vec<_> = spec
                .indexes()
                .into_iter()
                .filter(|i| push.is_open_index(i))
                .collect();
            assert_eq!(open.len(), 1);
            assert_eq!(open[0].name, spec.open_index_name());
            let other = SeriesSpec { size: 11, ..spec };
            let push = other.open_push(&key, &Kept::NONE, 0, &id, &marks);
            assert!(!push.is_open_index(&open[0]));
        }
    }

    #[test]
    pub(crate) fn bucket_id_is_the_formatted_id() {
        let seconds = [
            0,
            1,
            9,
            10,
            1_698_335_223,
            -1,
            -1_698_335_223,
            i64::MAX,
            i64::MIN,
        ];
        let suffixes = [0, 1, 42, 999_999, 1_000_000, u32::MAX];
        for prefix in ["", "123", "a_b"] {
            for s in seconds {
                for x in suffixes {
                    let want = if x == 0 {
                        format!("{prefix}_{s}")
                    } else {
                        format!("{prefix}_{s}_{x:06}")
                    };
                    assert_eq!(bucket_id(prefix, s, x), want);
                }
            }
        }
    }
}
