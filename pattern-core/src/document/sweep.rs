//! The sweep of a versioned document type: every stored document of an older schema version
//! upgraded to the current one, in batches, each a transaction that also moves the checkpoint
//! (`upgrade:<collection>:v<version>` in [`CHECKPOINTS`](crate::adopt::CHECKPOINTS)).
//!
//! Exactly once: inside its transaction a batch reads its documents again and upgrades each from
//! what it holds then, only if it is still at an older version; a live write to one of them
//! makes the transaction conflict and retry; two sweeps at once conflict on the checkpoint (the
//! second stops with [`store::Error::Contention`](crate::store::Error::Contention), its batch undone). The scan walks `_id` upwards
//! from the last batch; when it runs out it looks once more from the start, so a document an
//! older build wrote behind it (or an `_id` of another BSON type) is swept too.

use bson::{doc, Bson, Document as BsonDocument};
use serde::Serialize;

use super::versions::Versioning;
use super::write;
use super::{declares, decode_stored, indexes_ready, polymorphic, to_document, Document, Scope};
use crate::error::display_bson;
use crate::pass::checkpoint::Checkpoint;
use crate::pass::Options;
use crate::store::query::{Filter, FindOptions};
use crate::store::Store;
use crate::{Error, Result};

/// Documents per transaction at most, whatever [`Options::batch_items`] says (each is one
/// replacement round trip inside the transaction on MongoDB).
pub const SWEEP_BATCH_MAX: usize = 1_000;

/// The `comment` of the sweep's reads of older documents (collection-wide: on a sharded
/// collection every shard answers them).
pub const SWEEP_SCAN: &str = "pattern scatter: schema sweep";

/// Documents that fail to upgrade, listed in the report at most.
const FAILURES_LISTED: usize = 100;

/// What a sweep ([`migrate`]) did, or would do (`dry_run`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sweep {
    /// The collection.
    pub collection: String,
    /// The version documents were upgraded to.
    pub version: u32,
    /// Nothing was written: the counts say what a run would do.
    pub dry_run: bool,
    /// This run went on from a checkpoint a killed run left.
    pub resumed: bool,
    /// Documents of an older version found, by version (ascending).
    pub found: Vec<(u32, u64)>,
    /// Documents this run upgraded (each once: a second run upgrades none of them again).
    pub upgraded: u64,
    /// Documents whose upgrade failed (a conversion refused them, or they do not decode as
    /// their version's type): left as they were.
    pub failed: u64,
    /// The first 100 of them: their `_id` (relaxed Extended JSON) and why.
    pub failures: Vec<(String, String)>,
    /// Batches retried after a conflict with a live writer.
    pub retries: u64,
}

impl Sweep {
    fn count(&mut self, version: u32) {
        match self.found.iter_mut().find(|(v, _)| *v == version) {
            Some((_, n)) => *n += 1,
            None => {
                self.found.push((version, 1));
                self.found.sort();
            }
        }
    }

    fn fail(&mut self, id: Option<&Bson>, e: &Error) {
        self.failed += 1;
        if self.failures.len() < FAILURES_LISTED {
            let id = id.map_or_else(|| "(no _id)".to_owned(), display_bson);
            self.failures.push((id, e.to_string()));
        }
    }
}

/// The documents of `D` stored at an older version (on a variant's type, of its variant).
fn older<D: Document>(v: &Versioning) -> Filter {
    polymorphic::scope::<D>(v.older())
}

fn versioning<D: Document>() -> Result<Versioning> {
    let attribute = "#[document(version = N, previous(...))]";
    declares::<D, _>(D::VERSIONING, "schema version", attribute)
}

#[doc = crate::__document_doc!(migrate)]
pub async fn migrate<D: Document, S: Store>(store: &S, options: &Options<'_>) -> Result<Sweep> {
    crate::observe::traced_op!(document.migrate, store, D::COLLECTION, async {
        let v = versioning::<D>()?;
        let mut report = Sweep {
            collection: D::COLLECTION.to_owned(),
            version: v.current,
            dry_run: options.dry_run,
            ..Sweep::default()
        };
        let batch = options.batch_items.clamp(1, SWEEP_BATCH_MAX);
        if options.dry_run {
            return dry_run::<D, S>(store, v, batch, options, report).await;
        }
        indexes_ready::<D, S>(store).await?;
        // A variant's sweep is its own: its versions are its own.
        let variant = Scope::of(D::POLYMORPHIC)
            .map_or_else(String::new, |s| format!("[{}={}]", s.field, s.value));
        let name = format!("upgrade:{}{variant}:v{}", D::COLLECTION, v.current);
        let mut cp = Checkpoint::load(store, name).await?;
        cp.end_earlier_sessions(store).await?;
        cp.pin(
            doc! {"field": v.field, "version": v.current as i64},
            &[],
            "run the sweep again",
        )?;
        report.resumed = cp.state() == Some("running");
        let mut after: Option<Bson> = match cp.state() {
            Some("running") => cp.get("position").cloned(),
            _ => None,
        };
        let mut failed: Vec<Bson> = Vec::new();
        let mut read = 0u64;
        // A pass from the start that upgrades nothing ends the sweep.
        let (mut from_start, mut pass_upgraded) = (after.is_none(), 0u64);
        loop {
            let page = next_page::<D, S>(store, v, after.as_ref(), batch).await?;
            let Some(last) = page.last().cloned() else {
                if from_start && pass_upgraded == 0 {
                    break;
                }
                (after, from_start, pass_upgraded) = (None, true, 0);
                continue;
            };
            let ids: Vec<Bson> = (page.into_iter())
                .filter(|id| {
                    !failed
                        .iter()
                        .any(|f| crate::codec::order::values_equal(f, id))
                })
                .collect();
            if ids.is_empty() {
                after = Some(last);
                continue;
            }
            let mut ctx = (ids, Sweep::default(), Vec::new());
            let ((), retries) = cp
                .batch(store, &mut ctx, |tx, (ids, part, bad)| {
                    Box::pin(async move {
                        *part = Sweep::default();
                        bad.clear();
                        let filter = Filter::And(vec![
                            Filter::In("_id".into(), ids.clone()),
                            older::<D>(&v),
                        ]);
                        let opts = FindOptions {
                            sort: vec![("_id".into(), 1)],
                            ..FindOptions::default()
                        };
                        for cur in tx.find(D::COLLECTION, &filter, &opts).await? {
                            let from = v.of(D::COLLECTION, &cur)?;
                            part.count(from);
                            let new = match decode_stored::<D>(cur.clone())
                                .and_then(|(d, _)| to_document(&d))
                            {
                                Ok(new) => new,
                                Err(e) => {
                                    part.fail(cur.get("_id"), &e);
                                    bad.push(cur.get("_id").cloned().unwrap_or(Bson::Null));
                                    continue;
                                }
                            };
                            upgrade_one::<D, _>(tx, v, &cur, from, new).await?;
                            part.upgraded += 1;
                        }
                        let position = ids.last().cloned().unwrap_or(Bson::Null);
                        Ok(((), doc! {"state": "running", "position": position}))
                    })
                })
                .await?;
            let (ids, part, bad) = ctx;
            read += ids.len() as u64;
            report.retries += retries;
            report.upgraded += part.upgraded;
            pass_upgraded += part.upgraded;
            report.failed += part.failed;
            report.failures.extend(part.failures);
            report.failures.truncate(FAILURES_LISTED);
            for (version, n) in part.found {
                for _ in 0..n {
                    report.count(version);
                }
            }
            failed.extend(bad);
            after = Some(last);
            options.report("upgrade", read, None);
        }
        cp.set(store, doc! {"state": "finished", "position": Bson::Null})
            .await?;
        Ok(report)
    })
}

/// The `_id`s of the next batch of older documents after `after` (from the start: `None`).
async fn next_page<D: Document, S: Store>(
    store: &S,
    v: Versioning,
    after: Option<&Bson>,
    batch: usize,
) -> Result<Vec<Bson>> {
    let mut filter = vec![older::<D>(&v)];
    if let Some(a) = after {
        filter.push(Filter::Gt("_id".into(), a.clone()));
    }
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        limit: Some(batch as i64),
        projection: vec!["_id".into()],
        comment: Some(SWEEP_SCAN),
        ..FindOptions::default()
    };
    let found = store
        .find(D::COLLECTION, &Filter::And(filter), &opts)
        .await?;
    Ok(found
        .into_iter()
        .filter_map(|d| d.get("_id").cloned())
        .collect())
}

/// In the caller's transaction: the document `id` of `D` read, and when it is stored at an
/// older schema version, upgraded as the sweep does it if `write_back`: the version it was
/// stored at (`None`: current, newer or gone). A document that does not decode is left as it
/// is (the sweep reports it).
pub(crate) async fn older_in_line<D: Document, T: Store>(
    tx: &T,
    id: &Bson,
    write_back: bool,
) -> Result<Option<u32>> {
    let v = versioning::<D>()?;
    let by_id = Filter::And(vec![Filter::Eq("_id".into(), id.clone()), older::<D>(&v)]);
    let Some(cur) = (tx
        .find(D::COLLECTION, &by_id, &FindOptions::default())
        .await?)
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    let from = v.of(D::COLLECTION, &cur)?;
    if write_back {
        if let Ok(new) = decode_stored::<D>(cur.clone()).and_then(|(d, _)| to_document(&d)) {
            upgrade_one::<D, _>(tx, v, &cur, from, new).await?;
        }
    }
    Ok(Some(from))
}

/// In the batch's transaction: `new` over `cur` (still at version `from`).
async fn upgrade_one<D: Document, T: Store>(
    tx: &T,
    v: Versioning,
    cur: &BsonDocument,
    from: u32,
    new: BsonDocument,
) -> Result<()> {
    let id = cur.get("_id").cloned().unwrap_or(Bson::Null);
    let cas = polymorphic::scope::<D>(Filter::And(vec![Filter::Eq("_id".into(), id), v.at(from)]));
    write::upgrade_in::<D, T>(tx, cur, new, &cas).await?;
    Ok(())
}

/// The counts a sweep would make, nothing written.
async fn dry_run<D: Document, S: Store>(
    store: &S,
    v: Versioning,
    batch: usize,
    options: &Options<'_>,
    mut report: Sweep,
) -> Result<Sweep> {
    use futures::StreamExt;
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        comment: Some(SWEEP_SCAN),
        ..FindOptions::default()
    };
    let older = older::<D>(&v);
    let mut docs = store.scan(D::COLLECTION, &older, &opts, batch as u32);
    let mut read = 0u64;
    while let Some(raw) = docs.next().await {
        let cur: BsonDocument = raw?.to_document().map_err(|e| {
            Error::decode(
                D::COLLECTION,
                None,
                format!("a document that is not BSON: {e}"),
            )
        })?;
        report.count(v.of(D::COLLECTION, &cur)?);
        match decode_stored::<D>(cur.clone()) {
            Ok(_) => report.upgraded += 1,
            Err(e) => report.fail(cur.get("_id"), &e),
        }
        read += 1;
        if read.is_multiple_of(batch as u64) {
            options.report("upgrade (dry run)", read, None);
        }
    }
    options.report("upgrade (dry run)", read, Some(read));
    Ok(report)
}
