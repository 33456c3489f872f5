//! One migration batch's writes in its transaction: the parts' items, after them the buckets
//! the application wrote meanwhile, cut into buckets again.

use std::collections::HashMap;

use bson::{Bson, Document};

use super::{millis_of, Part};
use crate::codec::as_int;
use crate::codec::order::{value_key, values_equal};
use crate::series::bucket_id;
use crate::series::{parse_bucket_id, TimeId};
use crate::spec::SeriesSpec;
use crate::store::query::{Filter, FindOptions, Path, Update};
use crate::store::Store;
use crate::{Error, Result};

/// The key's open bucket among those the application wrote meanwhile: its number and `_id`.
/// The transaction writes the bucket of that number over it, under its own `_id`, instead of
/// deleting it and inserting another: a push waiting on it then finds the bucket that replaced
/// it (on SecantusDB, a write that waited on a document a transaction deleted does not look
/// again for the one the transaction inserted: `TEST-SERVER.md`, T17).
struct Reuse {
    number: i64,
    id: Bson,
    parts: TimeId,
}

fn open_bucket(series: &SeriesSpec<'_>, prefix: &str, docs: &[Document]) -> Option<Reuse> {
    if series.span_bounds().is_some() {
        // Cut by span, an `_id` names its window: never carried to other items.
        return None;
    }
    let d = docs.iter().rev().find(|d| {
        d.get(series.count_field)
            .and_then(as_int)
            .is_some_and(|c| c < i64::from(series.size))
    })?;
    let id = d.get("_id")?;
    Some(Reuse {
        number: d.get(series.order.field()).and_then(as_int)?,
        parts: parse_bucket_id(prefix, id.as_str()?)?,
        id: id.clone(),
    })
}

/// The transaction's writes: per part, the key's buckets after those migrated before (written
/// by the application meanwhile) are read, deleted, and written again after the part's items
/// (the open one of them written over: [`Reuse`]).
pub(super) async fn write_parts<T: Store>(
    tx: &T,
    series: &SeriesSpec<'_>,
    parts: &[Part],
    time_field: &str,
    remove_from: Option<&str>,
) -> Result<(u64, Option<(i64, u32)>)> {
    let coll = series.collection;
    let page = series.order.field();
    let by_key = FindOptions {
        sort: series.sort_by_key(),
        ..FindOptions::default()
    };
    // By the key's value: an Int32 5 and an Int64 5 are one key, as the reads and deletes have them.
    let mut tails: HashMap<Vec<u8>, Vec<Document>> = HashMap::new();
    let fresh: Vec<Bson> = parts
        .iter()
        .filter(|p| p.state.pages == 0)
        .map(|p| p.key.clone())
        .collect();
    let mut found = Vec::new();
    if !fresh.is_empty() {
        found.extend(
            tx.find(
                coll,
                &Filter::In(Path::from(series.key_field), fresh),
                &by_key,
            )
            .await?,
        );
    }
    for p in parts.iter().filter(|p| p.state.pages > 0) {
        let after = Filter::and([
            series.by_key(&p.key),
            Filter::Gt(Path::from(page), Bson::Int64(p.state.pages)),
        ]);
        found.extend(tx.find(coll, &after, &by_key).await?);
    }
    let mut stale_keys = Vec::new();
    let mut found_ids = Vec::new();
    for d in found {
        found_ids.push(d.get("_id").cloned().unwrap_or(Bson::Null));
        let key = d.get(series.key_field).cloned().unwrap_or(Bson::Null);
        if !stale_keys.iter().any(|k| values_equal(k, &key)) {
            stale_keys.push(key.clone());
        }
        tails.entry(value_key(&key)).or_default().push(d);
    }
    // Each part's items (the key's buckets written meanwhile after its own) cut into buckets,
    // each with its number and `_id`; the documents are built only as they are written.
    struct Cut {
        key: Bson,
        items: Vec<Bson>,
        millis: Vec<i64>,
        /// Per bucket: its range of items, number, `_id`, and whether it is written over the
        /// open bucket of the same number ([`Reuse`]).
        buckets: Vec<(std::ops::Range<usize>, i64, Bson, bool)>,
    }
    // The first writes, right after the reads: the open buckets, closed (written over below),
    // so that a push into one waits for this transaction rather than making it conflict again
    // (the in-memory store's commit check, MongoDB's write conflict) while it builds the rest.
    let mut reused = Vec::with_capacity(parts.len());
    for p in parts {
        let tail = tails.remove(&value_key(&p.key)).unwrap_or_default();
        let reuse = open_bucket(series, &p.prefix, &tail);
        if let Some(o) = &reuse {
            let by_id = Filter::and([series.by_key(&p.key), Filter::eq("_id", o.id.clone())]);
            let mut close = Update {
                set: vec![(series.count_field.into(), Bson::Int64(series.size.into()))],
                ..Update::default()
            };
            tx.update_one(coll, &by_id, &mut close, false).await?;
        }
        reused.push((tail, reuse));
    }
    let mut cuts = Vec::with_capacity(parts.len());
    let mut last_full = None;
    for (p, (tail, mut reuse)) in parts.iter().zip(reused) {
        let mut items = p.items.clone();
        let mut millis = p.millis.clone();
        let source_items = items.len();
        for d in tail {
            for item in crate::series::take_items(coll, series.items_field, d)? {
                let t = match &item {
                    Bson::Document(i) => millis_of(i.get(time_field)),
                    _ => None,
                };
                millis.push(t.or(millis.last().copied()).unwrap_or(0));
                items.push(item);
            }
        }
        let mut last = p.state.last_id;
        let mut buckets = Vec::new();
        for (i, r) in series.cut(&millis).into_iter().enumerate() {
            let number = p.state.pages + 1 + i as i64;
            // Over the open bucket of the same number when its `_id` keeps the key's `_id`s
            // increasing; otherwise that one is deleted, and this one named after its first
            // item.
            let after_last = |t: &TimeId| last.is_none_or(|(s, x)| (t.seconds, t.suffix) > (s, x));
            let (id, over) = match reuse.take_if(|o| o.number == number && after_last(&o.parts)) {
                Some(o) => {
                    last = Some((o.parts.seconds, o.parts.suffix));
                    (o.id, true)
                }
                None => {
                    let secs = millis[r.start].div_euclid(1000);
                    let (secs, suffix) = match last {
                        Some((s, x)) if secs <= s => (s, x + 1),
                        _ => (secs, 0),
                    };
                    last = Some((secs, suffix));
                    (Bson::String(bucket_id(&p.prefix, secs, suffix)), false)
                }
            };
            if r.end <= source_items {
                last_full = last;
            }
            buckets.push((r, number, id, over));
        }
        cuts.push(Cut {
            key: p.key.clone(),
            items,
            millis,
            buckets,
        });
    }
    let doc_of = |c: &Cut, r: &std::ops::Range<usize>, number: i64, id: &Bson| {
        let (chunk, times) = (&c.items[r.clone()], &c.millis[r.clone()]);
        let kept = series.kept(chunk, times)?;
        Ok::<_, Error>(series.new_doc(&c.key, id.clone(), number, chunk.to_vec(), &kept))
    };
    let written: u64 = cuts.iter().map(|c| c.buckets.len() as u64).sum();
    // The open buckets first (the documents pushes go to), then the rest.
    let mut kept_ids = Vec::new();
    for c in &cuts {
        for (r, number, id, _) in c.buckets.iter().filter(|b| b.3) {
            let by_id = Filter::and([series.by_key(&c.key), Filter::eq("_id", id.clone())]);
            let d = doc_of(c, r, *number, id)?;
            tx.replace_one(coll, &by_id, d, false).await?;
            kept_ids.push(id.clone());
        }
    }
    let stale: Vec<Bson> = (found_ids.into_iter())
        .filter(|id| !kept_ids.iter().any(|k| values_equal(k, id)))
        .collect();
    if !stale.is_empty() {
        // By key too: on a collection sharded by it, only those keys' shards.
        let of_keys = Filter::and([
            Filter::In(Path::from(series.key_field), stale_keys),
            Filter::In("_id".into(), stale),
        ]);
        tx.delete_many(coll, &of_keys).await?;
    }
    let mut new_docs = Vec::new();
    for c in &cuts {
        for (r, number, id, _) in c.buckets.iter().filter(|b| !b.3) {
            new_docs.push(doc_of(c, r, *number, id)?);
        }
    }
    if !new_docs.is_empty() {
        tx.insert_many(coll, new_docs).await?;
    }
    if let Some(source) = remove_from {
        let ids: Vec<Bson> = parts
            .iter()
            .flat_map(|p| p.source_ids.iter().cloned())
            .collect();
        tx.delete_many(source, &Filter::In("_id".into(), ids))
            .await?;
    }
    Ok((written, last_full))
}
