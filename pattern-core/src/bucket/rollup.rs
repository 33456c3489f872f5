//! Reading and recomputing the roll-ups of `#[bucket(rollup)]` (the layout and the writes:
//! `series/rollup.rs`): a whole-history [`summary`](super::summary) reads the key's roll-up,
//! one document, when the collection's roll-ups are trusted for the spec's aggregates and the
//! key's is not stale; [`backfill`](super::backfill) recomputes every key's from its buckets,
//! the archived ones included (a roll-up counts the key's whole history).

use std::cmp::Ordering;

use bson::{Bson, RawBsonRef, RawDocument, RawDocumentBuf};
use futures::stream::BoxStream;

use super::totals::{Number, Totals};
use crate::codec::order::{compare_values, values_equal};
use crate::codec::raw::raw_value;
use crate::series::{self, ROLLUP_ITEMS, ROLLUP_STALE, ROLLUP_SUMMARIZED};
use crate::spec::{SeriesSpec, BOUNDED_COLLECTIONS};
use crate::store::query::{Filter, FindOptions, Path, Update};
use crate::store::Store;
use crate::{Error, Result};

/// Whether a whole-history summary may read the key's roll-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rollup {
    /// The live collection's items only: not once buckets were archived (the roll-up counts
    /// them too).
    LiveOnly,
    /// The whole history, archived buckets included.
    Whole,
    /// Never (an archive collection).
    Never,
}

/// The key's whole-history totals from its roll-up; `None` when they must be counted from
/// its buckets (no roll-up kept, not trusted, stale, none for the key, or an ingest batch's
/// pending mark lists the key). One round trip where the store can
/// ([`Store::find_raw_then`]).
pub(super) async fn rolled_up<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    rollup: Rollup,
) -> Result<Option<Totals>> {
    if spec.keeps.rollup.is_none() || rollup == Rollup::Never {
        return Ok(None);
    }
    let mark = spec.bounds_mark(store).await?;
    // Archived buckets are counted by the roll-up too: not a read of the live ones alone.
    if mark.rollup != spec.rollup_print() || (mark.archived && rollup == Rollup::LiveOnly) {
        return Ok(None);
    }
    let mut wanted = vec![
        Path::from(ROLLUP_ITEMS),
        Path::from(ROLLUP_SUMMARIZED),
        Path::from(ROLLUP_STALE),
    ];
    wanted.extend(spec.keeps.summary.iter().map(|a| Path::from(a.field)));
    let opts = FindOptions {
        projection: wanted,
        limit: Some(1),
        ..FindOptions::default()
    };
    // The roll-up, then any pending mark of an ingest batch that lists the key
    // (`series::pending`), in one round trip where the store can (on MongoDB one `aggregate`;
    // two `find`s sent at once took longer on the test server: BENCHMARKS section 8).
    let pending = series::pending::of_key(spec, key);
    let (found, then) = (store.find_raw_then(
        spec.rollups(),
        &spec.rollup_of(key),
        &opts,
        BOUNDED_COLLECTIONS,
        &pending,
    ))
    .await?;
    let Some(r) = found.first().filter(|_| then.is_none()) else {
        return Ok(None);
    };
    if matches!(r.get(ROLLUP_STALE), Ok(Some(RawBsonRef::Boolean(true)))) {
        return Ok(None);
    }
    // Created by a writer of the same aggregates.
    let same = match r.get(ROLLUP_SUMMARIZED) {
        Ok(Some(RawBsonRef::Array(a))) => {
            let fields: Vec<&str> = a.into_iter().filter_map(|v| v.ok()?.as_str()).collect();
            fields.len() == spec.keeps.summary.len()
                && (spec.keeps.summary.iter()).all(|agg| fields.contains(&agg.field))
        }
        _ => false,
    };
    if !same {
        return Ok(None);
    }
    totals_of(spec, r).map(Some)
}

fn totals_of(spec: &SeriesSpec<'_>, r: &RawDocument) -> Result<Totals> {
    let coll = spec.collection;
    let id = match r.get("_id") {
        Ok(Some(v)) => Some(raw_value(coll, v)?),
        _ => None,
    };
    let number = |field: &str| -> Result<Option<Number>> {
        match r.get(field) {
            Ok(None) | Ok(Some(RawBsonRef::Null)) | Err(_) => Ok(None),
            Ok(Some(v)) => {
                let v = raw_value(coll, v)?;
                match Number::from_bson(&v) {
                    Some(n) => Ok(Some(n)),
                    None => Err(Error::decode(
                        coll,
                        id.as_ref(),
                        format!(
                            "roll-up field `{field}` is not a number but {:?}",
                            v.element_type()
                        ),
                    )),
                }
            }
        }
    };
    let items = number(ROLLUP_ITEMS)?
        .and_then(|n| n.as_i64())
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0);
    let mut values = Vec::with_capacity(spec.keeps.summary.len());
    for agg in spec.keeps.summary {
        values.push(number(agg.field)?);
    }
    Ok(Totals { items, values })
}

/// The archives whose buckets the roll-ups of `spec`'s collection count besides its own
/// buckets, as its mark records them: the collections on the live store to read. `other`:
/// the archive a [`History`](super::History) reads through its own store, counted apart (an archive of that
/// name, or one no mark recorded, is that one). Refused before anything is written when an
/// archive is on another store, and is not `other`: a `backfill` of the live store alone
/// cannot count it (`History::backfill` can).
pub(super) async fn archives_counted<S: Store>(
    live: &S,
    spec: &SeriesSpec<'_>,
    other: Option<&str>,
) -> Result<Vec<String>> {
    let marks = series::read_marks(live, &[spec.collection]).await?;
    let mut here = Vec::new();
    for record in series::archives_in(marks.first()) {
        match (&record.collection, other) {
            (Some(c), Some(o)) if c == o => {}
            (None, Some(_)) => {}
            (Some(c), _) if record.here => {
                if !here.contains(c) {
                    here.push(c.clone());
                }
            }
            (c, _) => {
                let which = c.as_ref().map_or_else(
                    || "an archive no mark recorded (an older version moved them)".to_owned(),
                    |c| format!("`{c}` on another store"),
                );
                return Err(Error::invalid(format!(
                    "the roll-ups of `{}` count the buckets archived to {which}: \
                     recompute them with `History::backfill`, which reads that archive",
                    spec.collection
                )));
            }
        }
    }
    Ok(here)
}

/// Recomputes every key's roll-up from its buckets' kept summaries (which `backfill`
/// completed first) in the live collection and in its archives (`here`: archive collections on
/// the live store; `other`: one on another store), then marks the collection's roll-ups
/// trusted. One pass over each collection's buckets in key order, merged by key, and one write
/// per key (a key whose buckets are all archived included); then deletes the collection's
/// pending marks (`series::pending`). Not exact beside pushes to the
/// same collection (a push between the pass and the write counts twice, or not at all), nor
/// beside an archive run (a bucket moved during the pass likewise): run it with writers
/// stopped, then `verify`.
pub(super) async fn recompute_all<S: Store, A: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    here: &[&str],
    other: Option<(&A, &str)>,
) -> Result<u64> {
    let mut wanted: Vec<Path> = vec![Path::from(spec.key_field), Path::from(spec.count_field)];
    wanted.extend(spec.keeps.summary.iter().map(|a| Path::from(a.field)));
    let opts = FindOptions {
        sort: spec.sort_by_key(),
        projection: wanted,
        comment: Some("pattern scatter: bucket roll-up backfill"),
        ..FindOptions::default()
    };
    let filter = Filter::and([
        spec.in_series(),
        Filter::Exists(spec.key_field.into(), true),
    ]);
    let batch = series::STREAM_BATCH as u32;
    let mut sides = vec![Side::new(
        store.scan(spec.collection, &filter, &opts, batch),
        spec.collection,
    )];
    for coll in here {
        sides.push(Side::new(store.scan(coll, &filter, &opts, batch), coll));
    }
    if let Some((a, coll)) = other {
        sides.push(Side::new(a.scan(coll, &filter, &opts, batch), coll));
    }
    for side in &mut sides {
        side.advance(spec).await?;
    }
    let mut written = 0u64;
    let mut done: Vec<Bson> = Vec::new();
    // The least key at the head of a side, each time: its buckets on every side, then its
    // roll-up.
    while let Some(key) = least(&sides) {
        let mut totals = Totals::new(spec.keeps.summary.len());
        for side in &mut sides {
            while let Some(head) = side.head.take() {
                if compare_values(&head.key, &key) != Ordering::Equal {
                    side.head = Some(head);
                    break;
                }
                let on = SeriesSpec {
                    collection: side.collection,
                    ..*spec
                };
                add_bucket(&on, &head.doc, &mut totals)?;
                side.last = Some(head.key);
                side.advance(spec).await?;
            }
        }
        write(store, spec, &key, &totals).await?;
        written += 1;
        done.push(key);
        if done.len() == 1_000 {
            delete_old(store, spec, &std::mem::take(&mut done)).await?;
        }
    }
    drop(sides);
    delete_old(store, spec, &done).await?;
    series::mark_rollup(store, spec, true).await?;
    // Every roll-up is now what the buckets say: no batch's mark still stands for them.
    series::pending::clear(store, spec).await?;
    Ok(written)
}

/// Deletes the roll-ups an older version kept among the buckets of `keys` (replaced by those
/// [`recompute_all`] wrote in their collection): by key, as the buckets are found (by the
/// order field alone, the test server finds none: T15).
async fn delete_old<S: Store>(store: &S, spec: &SeriesSpec<'_>, keys: &[Bson]) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let old = Filter::and([
        Filter::In(Path::from(spec.key_field), keys.to_vec()),
        Filter::Eq(
            Path::from(spec.order.field()),
            Bson::String(series::ROLLUP.into()),
        ),
    ]);
    store.delete_many(spec.collection, &old).await?;
    Ok(())
}

/// One collection's buckets in key order, as [`recompute_all`] merges them.
struct Side<'a> {
    docs: BoxStream<'a, pattern_store::Result<RawDocumentBuf>>,
    collection: &'a str,
    /// The next bucket, not yet counted.
    head: Option<Head>,
    /// The key of the last bucket counted.
    last: Option<Bson>,
}

/// A bucket and its key.
struct Head {
    key: Bson,
    doc: RawDocumentBuf,
}

impl<'a> Side<'a> {
    fn new(
        docs: BoxStream<'a, pattern_store::Result<RawDocumentBuf>>,
        collection: &'a str,
    ) -> Self {
        Side {
            docs,
            collection,
            head: None,
            last: None,
        }
    }

    /// Reads the next bucket that has a key into `head`. The collection's keys must come in
    /// the order [`compare_values`] gives (MongoDB's, for the types keys are), or the merge
    /// would split a key: a key that does not is refused rather than counted apart.
    async fn advance(&mut self, spec: &SeriesSpec<'_>) -> Result<()> {
        use futures::StreamExt;
        while let Some(doc) = self.docs.next().await {
            let doc = doc?;
            let key = match doc.get(spec.key_field) {
                Ok(Some(v)) => raw_value(self.collection, v)?,
                _ => continue,
            };
            if let Some(last) = &self.last {
                if compare_values(&key, last) == Ordering::Less {
                    return Err(unordered(self.collection, last, &key));
                }
            }
            self.head = Some(Head { key, doc });
            return Ok(());
        }
        self.head = None;
        Ok(())
    }
}

/// The least key at the head of a side (keys equal by value are one); `None` when every side
/// is done.
fn least(sides: &[Side<'_>]) -> Option<Bson> {
    (sides.iter().filter_map(|s| s.head.as_ref()))
        .min_by(|a, b| compare_values(&a.key, &b.key))
        .map(|h| h.key.clone())
}

fn unordered(collection: &str, a: &Bson, b: &Bson) -> Error {
    Error::invalid(format!(
        "the roll-ups of `{collection}` cannot be recomputed: keys {a} and {b} do not compare \
         as the store sorts them"
    ))
}

/// Adds a bucket's count and kept values (complete: `backfill` made them so).
fn add_bucket(spec: &SeriesSpec<'_>, doc: &RawDocumentBuf, totals: &mut Totals) -> Result<()> {
    let id = match doc.get("_id") {
        Ok(Some(v)) => Some(raw_value(spec.collection, v)?),
        _ => None,
    };
    if let Ok(Some(v)) = doc.get(spec.count_field) {
        let n = crate::codec::as_int(&raw_value(spec.collection, v)?).unwrap_or(0);
        totals.items += u64::try_from(n).unwrap_or(0);
    }
    for (i, agg) in spec.keeps.summary.iter().enumerate() {
        match doc.get(agg.field) {
            Ok(None) | Ok(Some(RawBsonRef::Null)) | Err(_) => {}
            Ok(Some(v)) => totals.add(spec, i, &raw_value(spec.collection, v)?, id.as_ref())?,
        }
    }
    Ok(())
}

/// Sets the key's roll-up to `totals` (creating it), not stale.
async fn write<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    totals: &Totals,
) -> Result<()> {
    let items = Bson::Int64(i64::try_from(totals.items).unwrap_or(i64::MAX));
    let mut set = Update {
        set: vec![
            (Path::from(ROLLUP_ITEMS), items),
            (Path::from(ROLLUP_SUMMARIZED), spec.rollup_fields()),
        ],
        unset: vec![Path::from(ROLLUP_STALE)],
        ..Update::default()
    };
    for (agg, v) in spec.keeps.summary.iter().zip(&totals.values) {
        match v {
            Some(v) => set.set.push((Path::from(agg.field), v.to_bson())),
            None => set.unset.push(Path::from(agg.field)),
        }
    }
    store
        .update_one(spec.rollups(), &spec.rollup_of(key), &mut set, true)
        .await?;
    Ok(())
}

/// In the caller's transaction: the roll-up of `key` recomputed from its buckets' counts and
/// kept summaries (the live collection's and the archives' its mark records on this store),
/// and written when the stored one differs, is stale or is missing; whether it was written.
/// After writes by other programs (a follower: `crate::follow`). A bucket edited without its
/// count or summary is counted as it says (`verify` reports such a bucket). Nothing is written
/// while an ingest batch's pending mark lists the key.
pub(crate) async fn rollup_in_line<T: Store>(
    tx: &T,
    spec: &SeriesSpec<'_>,
    key: &Bson,
) -> Result<bool> {
    // An ingest batch in flight that lists the key writes its roll-up after its buckets: left
    // to it (its roll-up's change comes next). One that a dead writer left: reads count the
    // key's buckets until `backfill`.
    let one = FindOptions {
        projection: vec![Path::from("_id")],
        limit: Some(1),
        ..FindOptions::default()
    };
    let listing = series::pending::of_key(spec, key);
    if !(tx.find_raw(BOUNDED_COLLECTIONS, &listing, &one).await?).is_empty() {
        return Ok(false);
    }
    let mut wanted: Vec<Path> = vec![Path::from(spec.count_field)];
    wanted.extend(spec.keeps.summary.iter().map(|a| Path::from(a.field)));
    let opts = FindOptions {
        projection: wanted,
        ..FindOptions::default()
    };
    let mut totals = Totals::new(spec.keeps.summary.len());
    let mut sides = vec![spec.collection.to_owned()];
    sides.extend(archives_counted(tx, spec, None).await?);
    let mut buckets = 0;
    for coll in &sides {
        let on = SeriesSpec {
            collection: coll,
            ..*spec
        };
        for doc in tx.find_raw(coll, &spec.docs_of(key, []), &opts).await? {
            add_bucket(&on, &doc, &mut totals)?;
            buckets += 1;
        }
    }
    let stored = (tx.find_raw(
        spec.rollups(),
        &spec.rollup_of(key),
        &FindOptions::default(),
    ))
    .await?
    .into_iter()
    .next();
    let Some(stored) = stored else {
        if buckets == 0 {
            return Ok(false);
        }
        write(tx, spec, key, &totals).await?;
        return Ok(true);
    };
    let stale = matches!(
        stored.get(ROLLUP_STALE),
        Ok(Some(RawBsonRef::Boolean(true)))
    );
    let same = !stale
        && matches!(totals_of(spec, &stored), Ok(have) if have.same_as(&totals))
        && (stored.get(ROLLUP_SUMMARIZED).ok().flatten())
            .and_then(|v| raw_value(spec.collection, v).ok())
            == Some(spec.rollup_fields());
    if same {
        return Ok(false);
    }
    write(tx, spec, key, &totals).await?;
    Ok(true)
}

/// Every key of `spec`'s collection that has buckets or a roll-up, each once, in key order
/// (one scan of the buckets' key field, one of the roll-ups' `_id`s).
pub(crate) async fn keys<S: Store>(store: &S, spec: &SeriesSpec<'_>) -> Result<Vec<Bson>> {
    let mut keys = sorted_keys(store, spec.collection, spec.key_field).await?;
    if let Some(rollups) = spec.keeps.rollup {
        keys.extend(sorted_keys(store, rollups, "_id").await?);
        keys.sort_by(compare_values);
        keys.dedup_by(|a, b| values_equal(a, b));
    }
    Ok(keys)
}

/// The values of `field` in `coll`, sorted, each once (equal by value: once).
async fn sorted_keys<S: Store>(store: &S, coll: &str, field: &str) -> Result<Vec<Bson>> {
    use futures::StreamExt;
    let opts = FindOptions {
        sort: vec![(Path::from(field), 1)],
        projection: vec![Path::from(field)],
        comment: Some("pattern scatter: bucket roll-up keys"),
        ..FindOptions::default()
    };
    let all = Filter::Exists(field.into(), true);
    let mut scan = store.scan(coll, &all, &opts, series::STREAM_BATCH as u32);
    let mut keys: Vec<Bson> = Vec::new();
    while let Some(doc) = scan.next().await {
        let doc = doc?;
        let Ok(Some(v)) = doc.get(field) else {
            continue;
        };
        let key = raw_value(coll, v)?;
        // The scan is sorted: a key equal by value to the last one is the same key.
        if !keys.last().is_some_and(|last| values_equal(last, &key)) {
            keys.push(key);
        }
    }
    Ok(keys)
}
