//! Reading and recomputing the roll-ups of `#[bucket(rollup)]` (the layout and the writes:
//! `series/rollup.rs`): a whole-history [`summary`](super::summary) reads the key's roll-up,
//! one document, when the collection's roll-ups are trusted for the spec's aggregates and the
//! key's is not stale; [`backfill`](super::backfill) recomputes every key's from its buckets.

use bson::{Bson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::totals::{Number, Totals};
use crate::codec::raw::raw_value;
use crate::series::{self, ROLLUP_ITEMS, ROLLUP_STALE, ROLLUP_SUMMARIZED};
use crate::spec::SeriesSpec;
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
/// its buckets (no roll-up kept, not trusted, stale, or none for the key). One `find`.
pub(super) async fn rolled_up<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    rollup: Rollup,
) -> Result<Option<Totals>> {
    if !spec.keeps.rollup || rollup == Rollup::Never {
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
    let found = store
        .find_raw(spec.collection, &spec.rollup_of(key), &opts)
        .await?;
    let Some(r) = found.first() else {
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

/// Recomputes every key's roll-up from its buckets' kept summaries (which `backfill`
/// completed first), then marks the collection's roll-ups trusted. One pass over the buckets
/// in key order and one write per key. Not exact beside pushes to the same collection (a push
/// between the pass and the write counts twice, or not at all): run it with writers stopped,
/// then `verify`.
pub(super) async fn recompute_all<S: Store>(store: &S, spec: &SeriesSpec<'_>) -> Result<u64> {
    use futures::StreamExt;
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
    let mut docs = store.scan(spec.collection, &filter, &opts, series::STREAM_BATCH as u32);
    let mut current: Option<(Bson, Totals)> = None;
    let mut written = 0u64;
    while let Some(doc) = docs.next().await {
        let doc = doc?;
        let key = match doc.get(spec.key_field) {
            Ok(Some(v)) => raw_value(spec.collection, v)?,
            _ => continue,
        };
        if current.as_ref().is_some_and(|(k, _)| k != &key) {
            let (k, t) = current.take().expect("a key");
            write(store, spec, &k, &t).await?;
            written += 1;
        }
        let totals = &mut current
            .get_or_insert_with(|| (key, Totals::new(spec.keeps.summary.len())))
            .1;
        add_bucket(spec, &doc, totals)?;
    }
    drop(docs);
    if let Some((k, t)) = current {
        write(store, spec, &k, &t).await?;
        written += 1;
    }
    series::mark_rollup(store, spec, true).await?;
    Ok(written)
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
        .update_one(spec.collection, &spec.rollup_of(key), &mut set, true)
        .await?;
    Ok(())
}
