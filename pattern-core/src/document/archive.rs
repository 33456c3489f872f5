//! The archive pattern for documents (`#[document(archive(age = created, keep = pinned))]`):
//! [`archive`] moves the documents older than a cut-off, unless flagged to keep forever, into
//! an archive collection of the same store, each in one transaction (the document as the
//! transaction reads it is inserted there and deleted here: it is in exactly one of the two at
//! every moment, and a concurrent write to it makes the transaction retry).
//! [`get_with_archive`] reads a document from either; [`verify_archive`] reports any in both.

use std::borrow::Borrow;

use bson::{Bson, DateTime};
use serde::Serialize;

use super::{id_bson, read_stored, Document, Field};
use crate::adopt::{LayoutDefect, Options, Progress};
use crate::store::query::{Filter, FindOptions, Path};
use crate::store::{transaction_with, BoxFuture, Store};
use crate::{Error, Result};

/// What `#[document(archive(age = created, keep = pinned))]` declares: the field holding a
/// document's age (a BSON date) and the optional flag that keeps it live forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Archive {
    /// The date field: a document whose date is before the cut-off moves.
    pub age: &'static str,
    /// A `bool` field: `true` keeps the document live whatever its age.
    pub keep: Option<&'static str>,
}

/// A field type an archive's `age` may have: stored as a BSON date.
#[diagnostic::on_unimplemented(
    message = "`archive(age = ...)` names a `{Self}` field: it must be a `bson::DateTime` (or an `Option` of one), stored as a BSON date",
    label = "not a date field"
)]
pub trait AgeValue {}
impl AgeValue for DateTime {}
impl AgeValue for Option<DateTime> {}

/// A field type an archive's `keep` flag may have.
#[diagnostic::on_unimplemented(
    message = "`archive(keep = ...)` names a `{Self}` field: it must be a `bool` (or an `Option` of one)",
    label = "not a flag"
)]
pub trait KeepFlag {}
impl KeepFlag for bool {}
impl KeepFlag for Option<bool> {}

/// The `age` field, typed: a BSON date (or an `Option` of one).
pub const fn age_field<D, T: AgeValue>(f: Field<D, T>) -> &'static str {
    f.name()
}

/// The `keep` field, typed: a `bool` (or an `Option` of one).
pub const fn keep_field<D, T: KeepFlag>(f: Field<D, T>) -> &'static str {
    f.name()
}

/// What [`archive`] did (or, in a dry run, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ArchiveReport {
    /// Documents older than the cut-off and not flagged to keep.
    pub read: u64,
    /// Documents moved.
    pub moved: u64,
}

/// Documents' `_id`s read per round trip.
const BATCH: i64 = 100;

fn spec_of<D: Document>() -> Result<Archive> {
    D::ARCHIVE.ok_or_else(|| {
        Error::invalid(format!(
            "`{}` declares no archive: #[document(archive(age = ...))]",
            D::COLLECTION
        ))
    })
}

/// The documents older than `before` and not flagged to keep.
fn old(age: &str, keep: Option<&str>, before: DateTime) -> Filter {
    let mut all = vec![Filter::Lt(Path::from(age), Bson::DateTime(before))];
    if let Some(keep) = keep {
        all.push(Filter::Ne(Path::from(keep), Bson::Boolean(true)));
    }
    Filter::and(all)
}

/// Moves every document of `D` older than `before` (its `age` field) and not flagged `keep`
/// into collection `to` of the same store, each in one transaction: exactly once, beside live
/// writes (a write to the document meanwhile makes its transaction retry), and a run killed
/// anywhere leaves every document in one place (run it again for the rest). Reads 100
/// documents' `_id`s a round trip, then 4 round trips a document (read, insert, delete,
/// commit). With
/// `opts.dry_run`, counts and writes nothing; `opts.progress` is called after each batch
/// (phase `"archive"`).
pub async fn archive<D: Document, S: Store>(
    store: &S,
    to: &str,
    before: DateTime,
    opts: &Options<'_>,
) -> Result<ArchiveReport> {
    let a = spec_of::<D>()?;
    archive_layout(store, D::COLLECTION, (a.age, a.keep), to, before, opts).await
}

/// [`archive`] of collection `coll` with its `(age, keep)` fields given as data (what the
/// `pattern archive document` command builds): the same moves.
pub async fn archive_layout<S: Store>(
    store: &S,
    coll: &str,
    (age, keep): (&str, Option<&str>),
    to: &str,
    before: DateTime,
    opts: &Options<'_>,
) -> Result<ArchiveReport> {
    if to == coll {
        return Err(Error::invalid(format!(
            "the archive of `{coll}` must be another collection"
        )));
    }
    let mut report = ArchiveReport::default();
    let mut after: Option<Bson> = None;
    loop {
        let mut filter = vec![old(age, keep, before)];
        if let Some(id) = &after {
            filter.push(Filter::Gt("_id".into(), id.clone()));
        }
        let ids_only = FindOptions {
            sort: vec![("_id".into(), 1)],
            limit: Some(BATCH),
            projection: vec![Path::from("_id")],
            comment: Some("pattern scatter: document archive"),
            ..FindOptions::default()
        };
        let found = store.find(coll, &Filter::and(filter), &ids_only).await?;
        let ids: Vec<Bson> = found.iter().filter_map(|d| d.get("_id").cloned()).collect();
        after = ids.last().cloned();
        report.read += ids.len() as u64;
        if !opts.dry_run && !ids.is_empty() {
            report.moved += move_batch(store, coll, to, (age, keep), before, &ids).await?;
        } else if opts.dry_run {
            report.moved += ids.len() as u64;
        }
        if let Some(progress) = opts.progress {
            progress(&Progress {
                phase: "archive",
                done: report.read,
                total: None,
            });
        }
        if (ids.len() as i64) < BATCH {
            return Ok(report);
        }
    }
}

/// The comment of the read that starts a move's transaction: the transaction touches one
/// `_id` in two collections, the live one and the archive (`docs/sharding.md`).
pub const ARCHIVE_MOVE: &str = "pattern archive: move";

/// The batch's documents, each in its own transaction (one `_id`: on a cluster sharded by
/// `_id`, two shards at most): read as it is, still old and not kept, inserted into the
/// archive and deleted here. Returns how many moved.
async fn move_batch<S: Store>(
    store: &S,
    coll: &str,
    to: &str,
    (age, keep): (&str, Option<&str>),
    before: DateTime,
    ids: &[Bson],
) -> Result<u64> {
    let mut moved = 0;
    for id in ids {
        let filter = Filter::and([Filter::Eq("_id".into(), id.clone()), old(age, keep, before)]);
        let mut ctx = (filter, coll.to_owned(), to.to_owned());
        let one = transaction_with(
            store,
            &mut ctx,
            |tx, (filter, coll, to)| -> BoxFuture<'_, Result<u64>> {
                Box::pin(async move {
                    let opts = FindOptions {
                        limit: Some(1),
                        comment: Some(ARCHIVE_MOVE),
                        ..FindOptions::default()
                    };
                    let Some(doc) = tx.find(coll, filter, &opts).await?.pop() else {
                        return Ok(0);
                    };
                    let by_id =
                        Filter::Eq("_id".into(), doc.get("_id").cloned().unwrap_or(Bson::Null));
                    tx.insert_one(to, doc).await?;
                    tx.delete_many(coll, &by_id).await
                })
            },
        )
        .await?;
        moved += one;
    }
    Ok(moved)
}

/// The document `id` of `D`, live or archived in `to`: live first (one `find`), then the
/// archive (one more when it is not live).
pub async fn get_with_archive<D, S, Q>(store: &S, to: &str, id: &Q) -> Result<Option<D>>
where
    D: Document,
    S: Store,
    Q: Serialize + ?Sized,
    D::Id: Borrow<Q>,
{
    if let Some(d) = super::get::<D, S, Q>(store, id).await? {
        return Ok(Some(d));
    }
    let one = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    let by_id = Filter::Eq("_id".into(), id_bson(id)?);
    match store.find(to, &by_id, &one).await?.pop() {
        Some(d) => read_stored::<D, S>(store, d).await.map(Some),
        None => Ok(None),
    }
}

/// The documents in both the live collection and the archive `to` (by `_id`): none after
/// [`archive`], whose moves are transactions. Reads the archive's `_id`s, then looks them up
/// here a batch at a time.
pub async fn verify_archive<D: Document, S: Store>(
    store: &S,
    to: &str,
) -> Result<Vec<LayoutDefect>> {
    verify_archive_layout(store, D::COLLECTION, to).await
}

/// [`verify_archive`] of collection `coll`.
pub async fn verify_archive_layout<S: Store>(
    store: &S,
    coll: &str,
    to: &str,
) -> Result<Vec<LayoutDefect>> {
    let ids_only = FindOptions {
        sort: vec![("_id".into(), 1)],
        projection: vec![Path::from("_id")],
        comment: Some("pattern scatter: document archive verify"),
        ..FindOptions::default()
    };
    let archived = store.find(to, &Filter::and([]), &ids_only).await?;
    let ids: Vec<Bson> = archived
        .iter()
        .filter_map(|d| d.get("_id").cloned())
        .collect();
    let mut defects = Vec::new();
    for chunk in ids.chunks(1_000) {
        let opts = FindOptions {
            projection: vec![Path::from("_id")],
            ..FindOptions::default()
        };
        let both = store
            .find(coll, &Filter::In("_id".into(), chunk.to_vec()), &opts)
            .await?;
        defects.extend(both.into_iter().filter_map(|d| {
            Some(LayoutDefect::InBoth {
                collection: coll.to_owned(),
                archive: to.to_owned(),
                id: d.get("_id")?.clone(),
            })
        }));
    }
    Ok(defects)
}
