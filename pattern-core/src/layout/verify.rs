//! `verify`: every promise of the bucket and outlier layouts checked over the stored
//! documents, the defects returned as data.

use std::collections::HashMap;

use bson::{Bson, RawDocumentBuf};

use crate::codec::as_int;
use crate::codec::order::{value_key, values_equal};
use crate::layout::LayoutDefect;
use crate::layout::Verified;
use crate::pass::scan::{array_len, field, id, scan, sorted, VERIFY};
use crate::pass::Options;
use crate::spec::{BucketSpec, OutlierSpec, SeriesSpec};
use crate::store::query::Filter;
use crate::store::Store;
use crate::Result;

/// The documents of one key of a series, checked as they stream by in key and number order.
struct SeriesCheck<'s> {
    spec: &'s SeriesSpec<'s>,
    /// The key being checked (an Int32 and an Int64 5 are one key, as the sort has them).
    key: Option<Bson>,
    expected: i64,
    /// The key's open documents so far: their window (cut by span) and number.
    open: Vec<(Option<i64>, i64)>,
    defects: Vec<LayoutDefect>,
    /// Keys with at least one document (to find parents and orphans).
    keys: HashMap<Vec<u8>, Bson>,
    /// The key's items in its documents so far.
    items: u64,
    /// With roll-ups: each key's items in its documents, to compare with its roll-up.
    items_of: HashMap<Vec<u8>, u64>,
    /// Buckets were archived from the collection: its numbers have gaps (`verify_archive`
    /// checks them across both).
    archived: bool,
    /// The collection's width (`series::width`), when it keeps one.
    width: Option<crate::series::width::Width>,
}

impl<'s> SeriesCheck<'s> {
    fn new(spec: &'s SeriesSpec) -> Self {
        SeriesCheck {
            spec,
            key: None,
            expected: 1,
            open: Vec::new(),
            defects: Vec::new(),
            keys: HashMap::new(),
            items: 0,
            items_of: HashMap::new(),
            archived: false,
            width: None,
        }
    }

    fn coll(&self) -> String {
        self.spec.collection.to_owned()
    }

    fn end_key(&mut self) {
        if let Some(key) = self.key.take() {
            if self.spec.keeps.rollup.is_some() {
                self.items_of.insert(value_key(&key), self.items);
            }
            // At most one open document per key; cut by span, per window of the key.
            self.open.sort_unstable();
            for run in self.open.chunk_by(|a, b| a.0 == b.0) {
                if run.len() > 1 {
                    self.defects.push(LayoutDefect::SeveralOpen {
                        collection: self.coll(),
                        key: key.clone(),
                        numbers: run.iter().map(|(_, n)| *n).collect(),
                    });
                }
            }
        }
        self.open.clear();
        self.expected = 1;
        self.items = 0;
    }

    fn see(&mut self, doc: RawDocumentBuf) -> Result<()> {
        let spec = self.spec;
        let coll = spec.collection;
        let id = id(coll, &doc)?;
        let malformed = |reason: String| LayoutDefect::Malformed {
            collection: coll.to_owned(),
            id: id.clone(),
            reason,
        };
        let Some(key) = field(coll, &doc, spec.key_field)? else {
            self.defects
                .push(malformed(format!("no key field `{}`", spec.key_field)));
            return Ok(());
        };
        if !self.key.as_ref().is_some_and(|k| values_equal(k, &key)) {
            self.end_key();
            self.keys.insert(value_key(&key), key.clone());
            self.key = Some(key);
        }
        let number_field = spec.order.field();
        let number = field(coll, &doc, number_field)?;
        if number == Some(Bson::String(crate::series::ROLLUP.into())) {
            // A roll-up an older version kept among the buckets: not part of the series.
            return Ok(());
        }
        let Some((items, _)) = array_len(&doc, spec.items_field) else {
            if number.is_none() && doc.get(spec.items_field).ok().flatten().is_some() {
                self.defects
                    .push(malformed(format!("`{}` is not an array", spec.items_field)));
            } else if number.is_some() {
                self.defects
                    .push(malformed(format!("no array `{}`", spec.items_field)));
            }
            return Ok(());
        };
        let Some(number) = number else {
            // A document in the seed's overflow layout (no count, no number): read first,
            // never written to.
            return Ok(());
        };
        let Some(number) = as_int(&number) else {
            self.defects.push(malformed(format!(
                "`{number_field}` is not an integer: {number}"
            )));
            return Ok(());
        };
        match field(coll, &doc, spec.count_field)?
            .as_ref()
            .and_then(as_int)
        {
            Some(count) if count as u64 != items || count < 0 => {
                self.defects.push(LayoutDefect::CountMismatch {
                    collection: coll.to_owned(),
                    id: id.clone(),
                    count,
                    items,
                })
            }
            Some(_) => {}
            None => self.defects.push(malformed(format!(
                "`{}` is missing or not an integer",
                spec.count_field
            ))),
        }
        self.items += items;
        if items > u64::from(spec.size) {
            self.defects.push(LayoutDefect::OverSize {
                collection: coll.to_owned(),
                id: id.clone(),
                items,
                size: spec.size,
            });
        }
        let window = match spec.span_bounds() {
            Some((min, max, span)) => self.window(&doc, &id, min, max, span)?,
            None => None,
        };
        if let Some(width) = self.width {
            self.within_width(&doc, &id, width)?;
        }
        if items < u64::from(spec.size) {
            self.open.push((window, number));
        }
        if self.archived {
            // Gaps are archived buckets.
        } else if number != self.expected {
            // Reported once per key: the numbers after it are then off too.
            if self.expected > 0 {
                self.defects.push(LayoutDefect::NotDense {
                    collection: coll.to_owned(),
                    key: self.key.clone().unwrap_or(Bson::Null),
                    expected: self.expected,
                    found: number,
                });
            }
            self.expected = -1;
        } else {
            self.expected += 1;
        }
        Ok(())
    }
}

impl SeriesCheck<'_> {
    /// In a collection that keeps its width: the bucket's times lie within it of the second
    /// its `_id` names (otherwise a range read may miss them: a defect).
    fn within_width(
        &mut self,
        doc: &RawDocumentBuf,
        id: &Bson,
        width: crate::series::width::Width,
    ) -> Result<()> {
        let coll = self.spec.collection;
        let Some((min_field, max_field)) = self.spec.keeps.bounds else {
            return Ok(());
        };
        let time = |f: &str| -> Result<Option<i64>> {
            Ok(match field(coll, doc, f)? {
                Some(Bson::DateTime(d)) => Some(d.timestamp_millis()),
                _ => None,
            })
        };
        let (Some(min), Some(max), Some(key), Bson::String(text)) =
            (time(min_field)?, time(max_field)?, self.key.clone(), id)
        else {
            return Ok(());
        };
        let prefix = crate::key::id_prefix(coll, &key)?;
        let Some(named) = crate::series::parse_bucket_id(&prefix, text) else {
            return Ok(());
        };
        let far = crate::series::width::from_start(named.start_ms(), (min, max));
        if !width.covers(far) {
            self.defects.push(LayoutDefect::WrongBounds {
                collection: coll.to_owned(),
                id: id.clone(),
                reason: format!(
                    "its times lie up to {} ms after and {} ms before the second its `_id` \
                     names, past the collection's width ({} and {} ms): range reads may miss \
                     them",
                    far.after, far.before, width.after, width.before
                ),
            });
        }
        Ok(())
    }

    /// Cut by span: the window of a bucket's time bounds, both in one window of `span`
    /// (otherwise a defect; `None` for a bucket without bounds, which no span read trusts).
    fn window(
        &mut self,
        doc: &RawDocumentBuf,
        id: &Bson,
        min: &str,
        max: &str,
        span: i64,
    ) -> Result<Option<i64>> {
        let coll = self.spec.collection;
        let time = |f: &str| -> Result<Option<i64>> {
            Ok(match field(coll, doc, f)? {
                Some(Bson::DateTime(d)) => Some(d.timestamp_millis()),
                _ => None,
            })
        };
        let (Some(lo), Some(hi)) = (time(min)?, time(max)?) else {
            return Ok(None);
        };
        let window = |t: i64| t.div_euclid(span) * span;
        if window(lo) != window(hi) {
            self.defects.push(LayoutDefect::WrongBounds {
                collection: coll.to_owned(),
                id: id.clone(),
                reason: format!(
                    "`{min}` {} and `{max}` {} are not in one window of the span ({span} ms): \
                     range reads would miss its items",
                    bson::DateTime::from_millis(lo),
                    bson::DateTime::from_millis(hi)
                ),
            });
        }
        Ok(Some(window(lo)))
    }
}

/// Scans a series in key and number order (its read index serves the sort).
async fn check_series<'s, S: Store>(
    store: &S,
    spec: &'s SeriesSpec<'s>,
    opts: &Options<'_>,
    phase: &str,
) -> Result<(u64, SeriesCheck<'s>)> {
    let mut check = SeriesCheck::new(spec);
    // Archived from (bounded buckets only move): its gaps are in the archive.
    check.archived = spec.keeps.bounds.is_some() && spec.bounds_mark(store).await?.archived;
    if crate::series::width::kept_for(spec) {
        // The mark as it is now (a follower raises it without this process knowing).
        check.width = crate::series::width::read(store, spec).await?;
    }
    let mut n = scan(
        store,
        spec.collection,
        &Filter::and([]),
        sorted(VERIFY, spec.sort_by_key(), vec![]),
        opts,
        phase,
        |doc| check.see(doc),
    )
    .await?;
    check.end_key();
    // Archived from: the roll-ups count the archive too (`verify_archive` checks them).
    if let Some(rollups) = spec.keeps.rollup.filter(|_| !check.archived) {
        n += check_rollups(store, spec, rollups, opts, phase, &mut check).await?;
    }
    Ok((n, check))
}

/// Each roll-up against its key's items in the buckets ([`LayoutDefect::RollupDrift`]): one
/// pass over the roll-ups' collection. A stale roll-up, or one an ingest batch's pending mark
/// lists (reads count the buckets), is not compared; a key without one has nothing to drift. A
/// pending mark a writer left ([`LayoutDefect::RollupPending`]) is reported.
async fn check_rollups<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    rollups: &str,
    opts: &Options<'_>,
    phase: &str,
    check: &mut SeriesCheck<'_>,
) -> Result<u64> {
    let coll = spec.collection;
    // The keys an ingest batch's pending mark lists: reads count their buckets, not compared.
    // A mark older than a batch takes was left by a writer that died: reported.
    let marks = crate::series::pending::read(store, spec).await?;
    for (since, keys) in &marks.left {
        check.defects.push(LayoutDefect::RollupPending {
            collection: coll.to_owned(),
            since: *since,
            keys: *keys,
        });
    }
    let pending = marks.keys;
    scan(
        store,
        rollups,
        &Filter::and([]),
        sorted(VERIFY, vec![("_id".into(), 1)], vec![]),
        opts,
        phase,
        |doc| {
            let Some(key) = field(rollups, &doc, "_id")? else {
                return Ok(());
            };
            let stale =
                field(rollups, &doc, crate::series::ROLLUP_STALE)? == Some(Bson::Boolean(true));
            let n = field(rollups, &doc, crate::series::ROLLUP_ITEMS)?
                .as_ref()
                .and_then(as_int);
            let trusted = !stale && !pending.contains(&value_key(&key));
            let Some(rollup) = n.filter(|_| trusted).map(|n| u64::try_from(n).unwrap_or(0)) else {
                return Ok(());
            };
            let buckets = check.items_of.get(&value_key(&key)).copied().unwrap_or(0);
            if rollup != buckets {
                check.defects.push(LayoutDefect::RollupDrift {
                    collection: coll.to_owned(),
                    key,
                    rollup,
                    buckets,
                });
            }
            Ok(())
        },
    )
    .await
}

/// Checks every bucket of `spec`'s collection: its count is the length of its array, it
/// holds at most `size` items, each key has at most one open bucket, and a key's buckets are
/// numbered 1, 2, 3... One pass in key and page order.
pub async fn verify_bucket<S: Store>(
    store: &S,
    spec: &BucketSpec<'_>,
    opts: &Options<'_>,
) -> Result<Verified> {
    crate::observe::traced_op!(bucket.verify, store, spec.collection, async {
        let series = spec.series();
        let (documents, check) = check_series(store, &series, opts, "verify").await?;
        Ok(Verified {
            documents,
            defects: check.defects,
        })
    })
}

/// Checks an outlier collection and its overflow: every main array holds at most `threshold`
/// items; a document is flagged exactly when it has overflow documents; every overflow
/// document has its parent; chunks hold at most `chunk` items, their counts are their
/// lengths, and each parent's chunks are numbered 1, 2, 3... with at most one not full.
/// Memory: one entry per parent that has overflow.
pub async fn verify_outlier<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
    opts: &Options<'_>,
) -> Result<Verified> {
    crate::observe::traced_op!(outlier.verify, store, spec.collection, async {
        let ov = &spec.overflow;
        let (chunks, check) = check_series(store, ov, opts, "verify overflow").await?;
        let mut defects = check.defects;
        let mut parents = check.keys;
        let coll = spec.collection;
        let mut flagged_without = Vec::new();
        let mains = scan(
            store,
            coll,
            &Filter::and([]),
            sorted(VERIFY, vec![("_id".into(), 1)], vec![]),
            opts,
            "verify",
            |doc| {
                let id = id(coll, &doc)?;
                let has_overflow = parents.remove(&value_key(&id)).is_some();
                let flag = match doc.get(spec.flag_field) {
                    Ok(None)
                    | Ok(Some(bson::RawBsonRef::Null))
                    | Ok(Some(bson::RawBsonRef::Boolean(false))) => false,
                    Ok(Some(bson::RawBsonRef::Boolean(true))) => true,
                    _ => {
                        defects.push(LayoutDefect::Malformed {
                            collection: coll.to_owned(),
                            id: id.clone(),
                            reason: format!("`{}` is not a boolean", spec.flag_field),
                        });
                        return Ok(());
                    }
                };
                match array_len(&doc, spec.items_field) {
                    Some((n, _)) if n > u64::from(spec.threshold) => {
                        defects.push(LayoutDefect::OverThreshold {
                            collection: coll.to_owned(),
                            id: id.clone(),
                            items: n,
                            threshold: spec.threshold,
                        })
                    }
                    Some(_) => {}
                    None if doc.get(spec.items_field).ok().flatten().is_some() => {
                        defects.push(LayoutDefect::Malformed {
                            collection: coll.to_owned(),
                            id: id.clone(),
                            reason: format!("`{}` is not an array", spec.items_field),
                        })
                    }
                    None => {}
                }
                match (flag, has_overflow) {
                    (true, false) => flagged_without.push(id),
                    (false, true) => defects.push(LayoutDefect::OverflowWithoutFlag {
                        collection: coll.to_owned(),
                        id,
                    }),
                    _ => {}
                }
                Ok(())
            },
        )
        .await?;
        defects.extend(
            flagged_without
                .into_iter()
                .map(|id| LayoutDefect::FlagWithoutOverflow {
                    collection: coll.to_owned(),
                    id,
                }),
        );
        let mut orphans: Vec<Bson> = parents.into_values().collect();
        orphans.sort_by(crate::codec::order::compare_values);
        defects.extend(
            orphans
                .into_iter()
                .map(|parent| LayoutDefect::OrphanOverflow {
                    collection: ov.collection.to_owned(),
                    parent,
                }),
        );
        Ok(Verified {
            documents: mains + chunks,
            defects,
        })
    })
}
