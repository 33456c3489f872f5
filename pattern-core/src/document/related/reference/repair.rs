//! Copies after writes by other tools: [`verify_copies`] lists those that differ from their
//! source, [`repair_copies`] brings them in line.

use bson::{Bson, Document as BsonDocument};
use futures::StreamExt;
use serde::Serialize;

use super::{bring_in_line, CopiesOf, ReferenceField, REFERENCE_VERIFY};
use crate::codec::order::{value_key as id_key, values_equal};
use crate::document::{Document, Scope};
use crate::error::display_bson;
use crate::pass::Options;
use crate::store::query::{Filter, FindOptions};
use crate::store::{transaction_with, Store};
use crate::{Error, Result};

/// A copy that differs from its source.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StaleCopy {
    /// The referencing document's `_id` (relaxed Extended JSON).
    pub document: String,
    /// Its reference field (the document's field: a copy inside it is at
    /// `<field>.<within>`).
    pub field: &'static str,
    /// The source's `_id`.
    pub source: String,
    /// The copied fields that differ (empty when the source is gone).
    pub differs: Vec<&'static str>,
    /// The source no longer exists (deleted by another tool).
    pub source_missing: bool,
}

#[doc = crate::__document_doc!(verify_copies)]
pub async fn verify_copies<D: Document, S: Store>(store: &S) -> Result<Vec<StaleCopy>> {
    crate::observe::traced_op!(document.verify_copies, store, D::COLLECTION, async {
        Ok(stale_copies::<D, S>(store)
            .await?
            .into_iter()
            .map(|(s, _, _)| s)
            .collect())
    })
}

/// [`verify_copies`], each with its source's `_id` as stored.
async fn stale_copies<D: Document, S: Store>(
    store: &S,
) -> Result<Vec<(StaleCopy, Bson, &'static ReferenceField)>> {
    let refs: Vec<&'static ReferenceField> = D::REFERENCES.iter().collect();
    stale_copies_in(store, D::COLLECTION, &refs).await
}

/// The stale copies of `refs`, fields of `coll`'s documents, each with its source's `_id` as
/// stored and its field.
async fn stale_copies_in<S: Store>(
    store: &S,
    coll: &str,
    refs: &[&'static ReferenceField],
) -> Result<Vec<(StaleCopy, Bson, &'static ReferenceField)>> {
    let mut out = Vec::new();
    for &r in refs {
        let opts = FindOptions {
            projection: vec![r.path.into()],
            comment: Some(REFERENCE_VERIFY),
            ..FindOptions::default()
        };
        let all = Scope::narrow(
            r.holders,
            Filter::Exists(format!("{}._id", r.at()).into(), true),
        );
        let mut scan = store.scan(coll, &all, &opts, 1_000);
        let mut chunk = Vec::new();
        while let Some(raw) = scan.next().await {
            let d = raw?
                .to_document()
                .map_err(|e| Error::decode(coll, None, e))?;
            chunk.push(d);
            if chunk.len() == 1_000 {
                compare(store, r, std::mem::take(&mut chunk), &mut out).await?;
            }
        }
        drop(scan);
        compare(store, r, chunk, &mut out).await?;
    }
    Ok(out)
}

async fn compare<S: Store>(
    store: &S,
    r: &'static ReferenceField,
    docs: Vec<BsonDocument>,
    out: &mut Vec<(StaleCopy, Bson, &'static ReferenceField)>,
) -> Result<()> {
    if docs.is_empty() {
        return Ok(());
    }
    let mut ids: Vec<Bson> = Vec::new();
    for d in &docs {
        ids.extend(r.source_ids(d));
    }
    // The copied fields alone; all of them for a versioned source (read at its current version).
    let opts = FindOptions {
        projection: match r.upgrade {
            Some(_) => Vec::new(),
            None => r.fields.iter().map(|f| f.from.into()).collect(),
        },
        ..FindOptions::default()
    };
    let sources = (store
        .find(
            r.source,
            &Scope::narrow(r.sources, Filter::In("_id".into(), ids)),
            &opts,
        )
        .await?)
        .into_iter()
        .map(|s| r.current(s))
        .collect::<Result<Vec<_>>>()?;
    // By value: a copy of `5` names the source whose `_id` is an Int32, Int64 or Double 5.
    let by_id: std::collections::HashMap<Vec<u8>, BsonDocument> = (sources.into_iter())
        .map(|s| (id_key(s.get("_id").unwrap_or(&Bson::Null)), s))
        .collect();
    for d in &docs {
        for copy in r.copies(d) {
            let Some(id) = copy.get("_id") else { continue };
            let stale = |differs, source_missing| {
                let s = StaleCopy {
                    document: display_bson(d.get("_id").unwrap_or(&Bson::Null)),
                    field: r.path,
                    source: display_bson(id),
                    differs,
                    source_missing,
                };
                (s, id.clone(), r)
            };
            match by_id.get(&id_key(id)) {
                None => out.push(stale(Vec::new(), true)),
                Some(s) => {
                    let differs: Vec<&'static str> = (r.fields.iter())
                        .filter(|f| {
                            let want = s.get(f.from).unwrap_or(&Bson::Null);
                            !values_equal(copy.get(f.to).unwrap_or(&Bson::Null), want)
                        })
                        .map(|f| f.to)
                        .collect();
                    if !differs.is_empty() {
                        out.push(stale(differs, false));
                    }
                }
            }
        }
    }
    Ok(())
}

/// What [`repair_copies`] did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Repaired {
    /// Copies written.
    pub copies: u64,
    /// Copies whose source is gone: left as they are (an optional reference is set to `null`
    /// and counted in `copies`).
    pub orphans: Vec<StaleCopy>,
}

#[doc = crate::__document_doc!(repair_copies)]
pub async fn repair_copies<D: Document, S: Store>(
    store: &S,
    opts: &Options<'_>,
) -> Result<Repaired> {
    let span = crate::observe::op_span!(document.repair_copies, store, D::COLLECTION);
    let refs: Vec<&'static ReferenceField> = D::REFERENCES.iter().collect();
    crate::observe::traced!(span, repair_copies_of(store, D::COLLECTION, &refs, opts))
}

/// [`repair_copies`] of the fields `refs` of `coll`'s documents (a follower's rule knows the
/// field, not the type).
pub(crate) async fn repair_copies_of<S: Store>(
    store: &S,
    coll: &'static str,
    refs: &[&'static ReferenceField],
    opts: &Options<'_>,
) -> Result<Repaired> {
    let batch = opts.batch_items.clamp(1, 1_000);
    let mut out = Repaired::default();
    let mut seen = std::collections::HashSet::new();
    for (s, id, r) in stale_copies_in(store, coll, refs).await? {
        if s.source_missing && !r.follows_delete() {
            out.orphans.push(s);
            continue;
        }
        if !seen.insert((r.at(), id_key(&id))) {
            continue;
        }
        loop {
            let mut ctx = ();
            let (n, more) = transaction_with(store, &mut ctx, |tx, ()| {
                let id = id.clone();
                Box::pin(async move {
                    let source = r.read_source(tx, &id).await?;
                    let source = source.map(|s| r.current(s)).transpose()?;
                    let source = source.as_ref();
                    bring_in_line(
                        tx,
                        CopiesOf {
                            coll,
                            r,
                            id: &id,
                            source,
                        },
                        batch,
                    )
                    .await
                })
            })
            .await?;
            out.copies += n as u64;
            opts.report("repair", out.copies, None);
            if !more {
                break;
            }
        }
    }
    Ok(out)
}

/// In the caller's transaction: every copy in `coll`'s field `r` of the source `id` brought
/// in line with the source as the transaction sees it (nulled, for an optional reference,
/// when the source is gone), the source's entry bumped when any is written (as a source
/// update does: a concurrent one then conflicts); how many were written. The copies of a
/// source that is gone under a required reference are left (orphans: [`verify_copies`]
/// lists them).
pub(crate) async fn source_in_line<T: Store>(
    tx: &T,
    coll: &str,
    r: &ReferenceField,
    id: &Bson,
) -> Result<usize> {
    let source = r.read_source(tx, id).await?;
    let source = source.map(|s| r.current(s)).transpose()?;
    if source.is_none() && !r.follows_delete() {
        return Ok(0);
    }
    let mut written = 0;
    loop {
        let source = source.as_ref();
        let (n, more) = bring_in_line(
            tx,
            CopiesOf {
                coll,
                r,
                id,
                source,
            },
            1_000,
        )
        .await?;
        if n > 0 && written == 0 {
            super::touch(tx, r.source, id).await?;
        }
        written += n;
        if !more {
            return Ok(written);
        }
    }
}
