//! The propagations past a source's fan-out: recorded in the source's entry by its write's
//! transaction, run in batches ([`propagate`]), listed while they last ([`pending_propagations`]).

use bson::{Bson, Document as BsonDocument};
use serde::Serialize;

use super::{entry_id, is_job, jobs_of, set_copies, stale, CopiesOf, Referrer, REFERENCES};
use crate::document::{find_by_id, parts, Document, Scope};
use crate::error::display_bson;
use crate::pass::Options;
use crate::store::query::{Filter, FindOptions, Update};
use crate::store::{find_one, transaction_with, Store};
use crate::{Error, Result};

/// The propagations recorded for `D`'s documents and not finished.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pending {
    /// The source document's `_id` (relaxed Extended JSON).
    pub source: String,
    /// The referencing collection and field.
    pub copies: String,
    /// When the write that began it committed (milliseconds since the epoch): copies not yet
    /// reached have been stale since.
    pub since_ms: i64,
}

#[doc = crate::__document_doc!(pending_propagations)]
pub async fn pending_propagations<D: Document, S: Store>(store: &S) -> Result<Vec<Pending>> {
    crate::observe::traced_op!(document.pending_propagations, store, D::COLLECTION, async {
        let mut out = Vec::new();
        for entry in entries::<D, S>(store, None).await? {
            let source = entry
                .get_document("_id")
                .ok()
                .and_then(|i| i.get("id"))
                .map_or_else(String::new, display_bson);
            for j in jobs_of(Some(&entry)) {
                if let Bson::Document(j) = j {
                    out.push(Pending {
                        source: source.clone(),
                        copies: format!(
                            "{}.{}",
                            j.get_str("c").unwrap_or(""),
                            j.get_str("p").unwrap_or("")
                        ),
                        since_ms: j
                            .get_datetime("since")
                            .map(|d| d.timestamp_millis())
                            .unwrap_or(0),
                    });
                }
            }
        }
        Ok(out)
    })
}

async fn entries<D: Document, S: Store>(
    store: &S,
    only: Option<&Bson>,
) -> Result<Vec<BsonDocument>> {
    let mut filter = vec![
        Filter::Eq("_id.c".into(), Bson::String(D::COLLECTION.to_owned())),
        Filter::Exists("pending.0".into(), true),
    ];
    if let Some(id) = only {
        filter.push(Filter::Eq("_id".into(), entry_id(D::COLLECTION, id)));
    }
    Ok(store
        .find(REFERENCES, &Filter::And(filter), &FindOptions::default())
        .await?)
}

/// What [`propagate`] did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Propagated {
    /// Propagations finished.
    pub finished: u64,
    /// Copies set to their source's values: those listed stale, and any copy already in line
    /// between two of them by `_id` (sent the value it holds, which MongoDB does not write).
    pub copies: u64,
    /// Batches (transactions).
    pub batches: u64,
}

#[doc = crate::__document_doc!(propagate)]
///
/// `only`: the document whose propagations alone to finish; `None`: every one.
pub async fn propagate<D: Document, S: Store>(
    store: &S,
    only: Option<&Bson>,
    opts: &Options<'_>,
) -> Result<Propagated> {
    crate::observe::traced_op!(document.propagate, store, D::COLLECTION, async {
        // The copies of `D`, or on an enum of each variant that is a source.
        let parts = parts::<D>();
        let sources = (parts.iter()).filter(|p| !p.referenced_by.is_empty());
        let fan_out = sources.map(|p| p.propagation.fan_out).max().unwrap_or(1);
        let batch = if opts.batch_items == crate::pass::DEFAULT_BATCH_ITEMS {
            fan_out.max(1) as usize
        } else {
            opts.batch_items.max(1)
        };
        let mut done = Propagated::default();
        for entry in entries::<D, S>(store, only).await? {
            let Some(id) = entry.get_document("_id").ok().and_then(|i| i.get("id")) else {
                continue;
            };
            for job in jobs_of(Some(&entry)) {
                let listed = (parts.iter())
                    .flat_map(|p| p.referenced_by)
                    .find(|r| is_job(&job, r));
                // On a variant's type, a job of a sibling variant's copies is the sibling's.
                if listed.is_none() && Scope::of(D::POLYMORPHIC).is_some() {
                    continue;
                }
                let r = listed.ok_or_else(|| {
                    Error::invalid(format!(
                        "a propagation of `{}` to {} is recorded, which this build's \
                             referenced_by(...) does not list",
                        D::COLLECTION,
                        display_bson(&job)
                    ))
                })?;
                loop {
                    // The entry's counter before the source is read: unchanged at the end,
                    // no write of the library made a copy stale since (see `finish`).
                    let seq = seq_of::<D, S>(store, id).await?;
                    let round = batch * ROUND_BATCHES;
                    let ids = stale_ids::<D, S>(store, r, id, round).await?;
                    let listed_all = ids.len() < round;
                    for chunk in ids.chunks(batch) {
                        done.copies += batch_of::<D, S>(store, r, id, chunk).await?;
                        done.batches += 1;
                        opts.report("propagate", done.copies, None);
                    }
                    if listed_all && finish::<D, S>(store, r, id, seq).await? {
                        done.finished += 1;
                        break;
                    }
                }
            }
        }
        Ok(done)
    })
}

/// How many batches' worth of stale copies one read of a propagation lists (their `_id`s
/// only), before the batches update them.
const ROUND_BATCHES: usize = 100;

/// The source `id` as it is now, or why its copies cannot follow it.
async fn source_of<D: Document, T: Store>(
    t: &T,
    r: &Referrer,
    id: &Bson,
) -> Result<Option<BsonDocument>> {
    let by_id = Scope::narrow_to::<D>(Filter::Eq("_id".into(), id.clone()));
    let source = find_one(t, D::COLLECTION, &by_id).await?;
    let source = source.map(|s| r.field.current(s)).transpose()?;
    if source.is_none() && !r.field.follows_delete() {
        return Err(Error::invalid(format!(
            "the copies of `{}` {} in `{}.{}` cannot follow it: it was deleted by another tool \
             and the reference is required (verify_copies lists them)",
            D::COLLECTION,
            display_bson(id),
            r.collection,
            r.field.at()
        )));
    }
    Ok(source)
}

/// Up to `limit` copies of the source `id` that differ from it now, by `_id` (one read, no
/// transaction: each batch checks its copies again against the source as it is then).
async fn stale_ids<D: Document, S: Store>(
    store: &S,
    r: &Referrer,
    id: &Bson,
    limit: usize,
) -> Result<Vec<Bson>> {
    let source = source_of::<D, S>(store, r, id).await?;
    let opts = FindOptions {
        limit: Some(limit as i64),
        sort: vec![("_id".into(), 1)],
        projection: vec!["_id".into()],
        comment: Some(super::REFERENCE_COPIES),
        ..FindOptions::default()
    };
    let found = (store.find(r.collection, &stale(&r.field, id, source.as_ref()), &opts)).await?;
    Ok(found
        .into_iter()
        .filter_map(|d| d.get("_id").cloned())
        .collect())
}

/// One batch of a propagation, in a transaction: the copies `ids` (and any between them) set to
/// the source as it is now (one update of their `_id` range, marked as the propagation's by its
/// comment; see `set_copies`); how many.
async fn batch_of<D: Document, S: Store>(
    store: &S,
    r: &Referrer,
    id: &Bson,
    ids: &[Bson],
) -> Result<u64> {
    let mut ctx = (*r, id.clone(), ids.to_vec());
    transaction_with(store, &mut ctx, |tx, (r, id, ids)| {
        Box::pin(async move {
            let (r, id) = (&*r, &*id);
            let source = source_of::<D, _>(tx, r, id).await?;
            let copies = CopiesOf {
                coll: r.collection,
                r: &r.field,
                id,
                source: source.as_ref(),
            };
            set_copies(tx, copies, ids.clone()).await
        })
    })
    .await
}

/// The counter of the source `id`'s entry (bumped by every write of the library that changes
/// its copies or points a document at it), `Null` without an entry.
async fn seq_of<D: Document, T: Store>(t: &T, id: &Bson) -> Result<Bson> {
    let entry = find_by_id(t, REFERENCES, &entry_id(D::COLLECTION, id)).await?;
    Ok(entry
        .and_then(|mut e| e.remove("seq"))
        .unwrap_or(Bson::Null))
}

/// The job of the copies `r` of the source `id` removed, in a transaction, once no copy differs
/// from the source; whether it was (otherwise the propagation goes on). The caller listed
/// every stale copy after reading the entry's counter as `seq` and brought them in line: if
/// the counter is still `seq`, no write of the library changed the source or pointed a copy
/// at it since, so none is stale and none is read; otherwise one stale copy is looked for.
async fn finish<D: Document, S: Store>(
    store: &S,
    r: &Referrer,
    id: &Bson,
    seq: Bson,
) -> Result<bool> {
    let mut ctx = (*r, id.clone(), seq);
    transaction_with(store, &mut ctx, |tx, (r, id, seq)| {
        Box::pin(async move {
            let (r, id) = (&*r, &*id);
            let key = entry_id(D::COLLECTION, id);
            let entry = find_by_id(tx, REFERENCES, &key).await?;
            let now = (entry.as_ref())
                .and_then(|e| e.get("seq"))
                .unwrap_or(&Bson::Null);
            if now != seq {
                let source = source_of::<D, _>(tx, r, id).await?;
                let one = FindOptions {
                    limit: Some(1),
                    projection: vec!["_id".into()],
                    comment: Some(super::REFERENCE_COPIES),
                    ..FindOptions::default()
                };
                let stale = stale(&r.field, id, source.as_ref());
                if !tx.find(r.collection, &stale, &one).await?.is_empty() {
                    return Ok(false);
                }
            }
            let jobs: Vec<Bson> = (jobs_of(entry.as_ref()).into_iter())
                .filter(|j| !is_job(j, r))
                .collect();
            let mut update = if jobs.is_empty() {
                Update {
                    unset: vec!["pending".into()],
                    ..Update::default()
                }
            } else {
                Update {
                    set: vec![("pending".into(), Bson::Array(jobs))],
                    ..Update::default()
                }
            };
            tx.update_one(
                REFERENCES,
                &Filter::Eq("_id".into(), key),
                &mut update,
                false,
            )
            .await?;
            Ok(true)
        })
    })
    .await
}
