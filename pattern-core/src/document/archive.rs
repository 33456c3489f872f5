//! The archive pattern for documents (`#[document(archive(age = created, pin = pinned))]`):
//! [`archive`] moves the documents older than a cut-off, unless pinned live, into
//! an archive collection ([`ArchiveAt`]), on the same store or another, exactly once beside
//! live writes. [`get_with_archive`] reads a document from either; [`verify_archive`] reports
//! any in both.
//!
//! - **On the same store** each document moves in one transaction: the document as the
//!   transaction reads it is inserted there and deleted here, so it is in exactly one of the
//!   two at every moment, and a concurrent write to it makes the transaction retry.
//! - **On another store** a move is a copy (a replace by `_id`, upserting: the same document
//!   however often it is sent), then a transaction of the live store that deletes the
//!   document only if it is still the one copied. A write that reached it meanwhile makes
//!   that delete decline (or retry, as a write conflict), and the document is copied again,
//!   or its copy removed when it is no longer old or is now pinned. A run killed
//!   between the copy and the delete leaves the document in both, live one first for
//!   [`get_with_archive`], reported by [`verify_archive`], and moved by the next run.
//!
//! Resumable: the scan walks `_id` upwards a batch at a time (one BSON type bracket after
//! another: `_id`s of several types are all scanned), and the batch's checkpoint
//! (`archive:<live>:<archive>` in [`CHECKPOINTS`](crate::adopt::CHECKPOINTS) on the live
//! store) records, before its moves, the `_id`s it is about to move, and after them its last
//! `_id` and the documents moved so far: compare-and-set updates outside the moves'
//! transactions. Each move is its own transaction (one `_id`, so a live write conflicts with
//! one move, not with a batch of them) and exactly once on its own, so a batch done again
//! moves only what is still live. A run killed part-way is resumed by the next after the last
//! batch recorded, with the same cut-off and fields only ([`Error::SettingsChanged`]
//! otherwise). That run first ends the server sessions the killed run's moves recorded in the
//! checkpoint (a run killed inside a move's transaction would hold the document until the
//! server expires it, 60 s by default: every move of it a write conflict until then), then
//! counts the documents of the batch the killed run died in that are now in the archive and
//! no longer live: the killed run moved them, and the pass's total includes them. A document
//! behind the position that became a candidate meanwhile (its flag cleared) waits for the next
//! pass: once finished, a run with any cut-off starts from the start.

use std::collections::HashSet;
use std::marker::PhantomData;

use bson::{doc, Bson, DateTime, Document as BsonDocument};
use serde::Serialize;

use super::polymorphic::{self, Polymorphic};
use super::write::{leave_in, left, Left};
use super::{id_bson, read_stored, Document, Field};
use crate::codec::order::value_key;
use crate::key::IdRef;
use crate::layout::LayoutDefect;
use crate::pass::archive_run::{ArchiveRun, IdScan};
use crate::pass::Options;
use crate::store::query::{Filter, FindOptions, Path};
pub use crate::store::ArchiveAt;
use crate::store::{find_one, transaction_with, BoxFuture, Store};
use crate::{Error, Result};

/// What `#[document(archive(age = created, pin = pinned))]` declares: the field holding a
/// document's age (a BSON date) and the optional flag that pins it live forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Archive {
    /// The date field: a document whose date is before the cut-off moves.
    pub age: &'static str,
    /// A `bool` field: `true` pins the document live whatever its age.
    pub pin: Option<&'static str>,
}

/// A field type an archive's `age` may have: stored as a BSON date.
#[diagnostic::on_unimplemented(
    message = "`archive(age = ...)` names a `{Self}` field: it must be a `bson::DateTime` (or an `Option` of one), stored as a BSON date",
    label = "not a date field"
)]
pub trait AgeValue {}
impl AgeValue for DateTime {}
impl AgeValue for Option<DateTime> {}

/// A field type an archive's `pin` flag may have.
#[diagnostic::on_unimplemented(
    message = "`archive(pin = ...)` names a `{Self}` field: it must be a `bool` (or an `Option` of one)",
    label = "not a flag"
)]
pub trait PinFlag {}
impl PinFlag for bool {}
impl PinFlag for Option<bool> {}

/// The `age` field, typed: a BSON date (or an `Option` of one).
pub const fn age_field<D, T: AgeValue>(f: Field<D, T>) -> &'static str {
    f.name()
}

/// The `pin` field, typed: a `bool` (or an `Option` of one).
pub const fn pin_field<D, T: PinFlag>(f: Field<D, T>) -> &'static str {
    f.name()
}

/// What [`archive`] did (or, in a dry run, would do).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ArchiveReport {
    /// Documents this run read: older than the cut-off and not pinned.
    pub read: u64,
    /// Documents this run moved.
    pub moved: u64,
    /// Documents old enough that stayed live: sources of extended references whose copies
    /// other documents still hold (each moves once nothing copies it).
    pub still_copied: u64,
    /// This run went on from the checkpoint of a run killed part-way: after this `_id` (the
    /// last of the last batch it recorded).
    pub resumed_from: Option<Bson>,
    /// Server sessions of an earlier run's moves this run ended before it began (a run killed
    /// inside a move's transaction leaves one open).
    pub ended_sessions: u64,
    /// Documents moved by the pass this run finished (or, killed, left part-way): every
    /// document the runs before it in the pass moved, those of the batch a killed run died
    /// in included (counted from the archive side by the run after it), and this run's.
    pub total_moved: u64,
}

/// Documents' `_id`s read per round trip at most (fewer when [`Options::batch_items`] says so).
const BATCH: usize = 100;

fn spec_of<D: Document>() -> Result<Archive> {
    D::ARCHIVE.ok_or_else(|| {
        Error::invalid(format!(
            "`{}` declares no archive: #[document(archive(age = ...))]",
            D::COLLECTION
        ))
    })
}

/// The documents older than `before` and not pinned.
fn old(age: &str, pin: Option<&str>, before: DateTime) -> Filter {
    let mut all = vec![Filter::Lt(Path::from(age), Bson::DateTime(before))];
    if let Some(pin) = pin {
        all.push(Filter::Ne(Path::from(pin), Bson::Boolean(true)));
    }
    Filter::and(all)
}

/// Moves every document of `D` older than `before` (its `age` field) and not flagged `pin`
/// into the archive `to` (a collection of the same store or of another): exactly once, beside
/// live writes, and a run killed anywhere is finished by running it again (see the module's
/// documentation for how). Reads 100 documents' `_id`s a round trip, then, on the same store,
/// 4 round trips a document (read, insert, delete, commit); on another, 5 (read, copy, and
/// the read, delete and commit of the delete's transaction); two updates of its checkpoint
/// a batch (before and after its moves), and one a run for each server session its moves use
/// (one or two). `opts.batch_items` makes the batches smaller (at most 100). With
/// `opts.dry_run`, counts and writes nothing (no checkpoint either); `opts.progress` is called
/// after each batch (phase `"archive"`). A run after one killed part-way resumes after its
/// last recorded batch; refused before anything is written ([`Error::SettingsChanged`]):
/// another cut-off (or `age`, `pin` fields) while a run is part-way. Two runs of one archive
/// at once stop the second ([`store::Error::Contention`](crate::store::Error::Contention)).
///
/// Each move is a delete through the type's write pipeline (its stages around the delete, in
/// the move's transaction): with `history`, the state moved is recorded as a delete records
/// it; a child of `computed` values or of a `subset` leaves its parent's aggregates and
/// subset; a source of extended references (`referenced_by`) moves once no document holds a
/// copy of it (until then it stays live: the report's `still_copied`); a variant's type
/// moves the documents of its variant only.
pub async fn archive<D: Document, S: Store, A: Store>(
    live: &S,
    to: ArchiveAt<'_, A>,
    before: DateTime,
    opts: &Options<'_>,
) -> Result<ArchiveReport> {
    let a = spec_of::<D>()?;
    let span = crate::observe::op_span!(document.archive, live, D::COLLECTION);
    let mover = Typed::<D>(PhantomData);
    let inner = archive_layout_in::<S, A, _>(
        live,
        D::COLLECTION,
        (a.age, a.pin),
        to,
        before,
        opts,
        &mover,
    );
    crate::observe::traced!(span, inner)
}

/// What a move does to the live collection beside its copy: the document deleted, and, for a
/// type's archive, the delete's stages of the type's write pipeline around it.
trait Mover: Sync {
    /// The documents moved among those `filter` matches (a variant's, of a polymorphic
    /// collection).
    fn scope(&self, filter: Filter) -> Filter;
    /// The variant moved (its checkpoint is its own).
    fn variant(&self) -> Option<&'static str>;
    /// In the move's transaction: `doc` (read in it) deleted, or kept ([`Left::Copied`]).
    fn leave<'t, T: Store>(
        &'t self,
        tx: &'t T,
        doc: &'t BsonDocument,
    ) -> BoxFuture<'t, Result<Left>>;
    /// After the move's commit.
    fn left<'s, S: Store>(
        &'s self,
        store: &'s S,
        id: &'s Bson,
        propagate: Option<&'s Bson>,
    ) -> BoxFuture<'s, Result<()>>;
}

/// A collection's archive given as data (`pattern archive document`): the document deleted.
struct AsData<'a>(&'a str);

impl Mover for AsData<'_> {
    fn scope(&self, filter: Filter) -> Filter {
        filter
    }

    fn variant(&self) -> Option<&'static str> {
        None
    }

    fn leave<'t, T: Store>(
        &'t self,
        tx: &'t T,
        doc: &'t BsonDocument,
    ) -> BoxFuture<'t, Result<Left>> {
        Box::pin(async move {
            let by_id = Filter::Eq("_id".into(), doc.get("_id").cloned().unwrap_or(Bson::Null));
            tx.delete_many(self.0, &by_id).await?;
            Ok(Left::Gone(None))
        })
    }

    fn left<'s, S: Store>(
        &'s self,
        _: &'s S,
        _: &'s Bson,
        _: Option<&'s Bson>,
    ) -> BoxFuture<'s, Result<()>> {
        Box::pin(async { Ok(()) })
    }
}

/// `D`'s archive: each move a delete through `D`'s write pipeline.
struct Typed<D>(PhantomData<fn() -> D>);

impl<D: Document> Mover for Typed<D> {
    fn scope(&self, filter: Filter) -> Filter {
        polymorphic::scope::<D>(filter)
    }

    fn variant(&self) -> Option<&'static str> {
        match D::POLYMORPHIC {
            Some(Polymorphic::Variant { value, .. }) => Some(value),
            _ => None,
        }
    }

    fn leave<'t, T: Store>(
        &'t self,
        tx: &'t T,
        doc: &'t BsonDocument,
    ) -> BoxFuture<'t, Result<Left>> {
        Box::pin(leave_in::<D, T>(tx, doc))
    }

    fn left<'s, S: Store>(
        &'s self,
        store: &'s S,
        id: &'s Bson,
        propagate: Option<&'s Bson>,
    ) -> BoxFuture<'s, Result<()>> {
        Box::pin(left::<D, S>(store, id, propagate))
    }
}

/// [`archive`] of collection `coll` with its `(age, pin)` fields given as data (what the
/// `pattern archive document` command builds): the same moves.
pub async fn archive_layout<S: Store, A: Store>(
    live: &S,
    coll: &str,
    (age, pin): (&str, Option<&str>),
    to: ArchiveAt<'_, A>,
    before: DateTime,
    opts: &Options<'_>,
) -> Result<ArchiveReport> {
    let span = crate::observe::op_span!(document.archive, live, coll);
    let mover = AsData(coll);
    let inner = archive_layout_in::<S, A, _>(live, coll, (age, pin), to, before, opts, &mover);
    crate::observe::traced!(span, inner)
}

async fn archive_layout_in<S: Store, A: Store, M: Mover>(
    live: &S,
    coll: &str,
    (age, pin): (&str, Option<&str>),
    to: ArchiveAt<'_, A>,
    before: DateTime,
    opts: &Options<'_>,
    mover: &M,
) -> Result<ArchiveReport> {
    if to.collection == coll && to.is_on(live) {
        return Err(Error::invalid(format!(
            "the archive of `{coll}` must be another collection"
        )));
    }
    // Pinned while a pass is part-way: what moves (the flag stored as `keep`, its name before
    // 0.1, so that a checkpoint written then still matches).
    let settings = doc! {"before": before, "age": age, "keep": pin};
    // A variant's pass is its own: `archive:<live>/<variant>:<archive>`.
    let pass = match mover.variant() {
        Some(v) => format!("{coll}/{v}"),
        None => coll.to_owned(),
    };
    let mut run = ArchiveRun::start(
        live,
        (&pass, to.collection),
        settings,
        ["moved"],
        opts.dry_run,
    )
    .await?;
    let mut report = ArchiveReport {
        resumed_from: run.resumed_from.clone(),
        ended_sessions: run.end_earlier_sessions(live).await?,
        ..ArchiveReport::default()
    };
    if !run.moving().is_empty() {
        let moved = moved_of(live, coll, to, run.moving()).await?;
        run.counted([moved]);
    }
    let batch = opts.batch_items.clamp(1, BATCH) as i64;
    let mut scan = IdScan::after(run.resumed_from.clone());
    while let Some(after) = scan.filter() {
        let filter = vec![mover.scope(old(age, pin, before)), after];
        let ids_only = FindOptions {
            sort: vec![("_id".into(), 1)],
            limit: Some(batch),
            projection: vec![Path::from("_id")],
            comment: Some("pattern scatter: document archive"),
            ..FindOptions::default()
        };
        let found = live.find(coll, &Filter::and(filter), &ids_only).await?;
        let ids: Vec<Bson> = found.iter().filter_map(|d| d.get("_id").cloned()).collect();
        report.read += ids.len() as u64;
        if let Some(last) = ids.last() {
            let layout = (coll, (age, pin), before);
            run.batch_begins(live, &ids).await?;
            let (moved, copied) = if opts.dry_run {
                (ids.len() as u64, 0)
            } else if to.is_on(live) {
                move_batch(live, &mut run, (layout, mover), to.collection, &ids).await?
            } else {
                copy_batch(live, &mut run, (layout, mover), to, &ids).await?
            };
            report.moved += moved;
            report.still_copied += copied;
            run.batch_done(live, last, [moved]).await?;
        }
        opts.report("archive", report.read, None);
        scan.read(ids.last(), ids.len() as i64 == batch);
    }
    run.finish(live).await?;
    [report.total_moved] = run.totals();
    Ok(report)
}

/// The live collection, its `(age, pin)` fields and the cut-off.
type Layout<'a> = (&'a str, (&'a str, Option<&'a str>), DateTime);

/// Of `ids`, the batch a run killed part-way was moving, how many it moved: those in the
/// archive and no longer live (a document in both is a move in flight, which this run
/// finishes and counts). Two reads by `_id`.
async fn moved_of<S: Store, A: Store>(
    live: &S,
    coll: &str,
    to: ArchiveAt<'_, A>,
    ids: &[Bson],
) -> Result<u64> {
    let opts = FindOptions {
        projection: vec![Path::from("_id")],
        ..FindOptions::default()
    };
    let listed = Filter::In("_id".into(), ids.to_vec());
    let archived = to.store.find(to.collection, &listed, &opts).await?;
    let still = live.find(coll, &listed, &opts).await?;
    let live_ids: HashSet<Vec<u8>> = (still.iter())
        .filter_map(|d| Some(value_key(d.get("_id")?)))
        .collect();
    let moved = (archived.iter())
        .filter_map(|d| d.get("_id"))
        .filter(|id| !live_ids.contains(&value_key(id)))
        .count();
    Ok(moved as u64)
}

/// Document `id` when it is still to move: older than the cut-off and not pinned.
fn still_old<M: Mover>(id: &Bson, ((_, (age, pin), before), mover): (Layout<'_>, &M)) -> Filter {
    mover.scope(Filter::and([
        Filter::Eq("_id".into(), id.clone()),
        old(age, pin, before),
    ]))
}

/// The comment of the read that starts a move's transaction: the transaction touches one
/// `_id` in two collections, the live one and the archive (`docs/sharding.md`).
pub const ARCHIVE_MOVE: &str = "pattern archive: move";

/// The batch's documents, each in its own transaction (one `_id`: on a cluster sharded by
/// `_id`, two shards at most; its session recorded in `run`'s checkpoint before its first
/// write): read as it is, still old and not kept, inserted into the archive and deleted here
/// (the mover's stages around the delete). Returns how many moved, and how many stayed
/// because copies of them are held.
async fn move_batch<S: Store, M: Mover>(
    store: &S,
    run: &mut ArchiveRun<1>,
    (layout, mover): (Layout<'_>, &M),
    to: &str,
    ids: &[Bson],
) -> Result<(u64, u64)> {
    let (mut moved, mut copied) = (0, 0);
    for id in ids {
        let filter = still_old(id, (layout, mover));
        let how = Move::Within(to);
        match move_one(store, run, (layout.0, mover), (id, filter), how).await? {
            Some(Left::Gone(_)) => moved += 1,
            Some(Left::Copied) => copied += 1,
            None => {}
        }
    }
    Ok((moved, copied))
}

/// Where a move's transaction finds the archived document.
enum Move<'a> {
    /// Nowhere yet: the transaction inserts it into this collection of the same store.
    Within(&'a str),
    /// Copied to another store already, as this document: the transaction deletes the live
    /// one only when it is still the same.
    Copied(&'a BsonDocument),
}

/// One move's transaction of `live` (its session recorded in `run`'s checkpoint before its
/// first write): the document `filter` matches in `coll` read (document `id`), then deleted
/// (the mover's stages around the delete) as `how` says; after the commit, the mover's work
/// of a document gone. `None`: nothing to move (no such document, or not the one copied).
async fn move_one<S: Store, M: Mover>(
    live: &S,
    run: &mut ArchiveRun<1>,
    (coll, mover): (&str, &M),
    (id, filter): (&Bson, Filter),
    how: Move<'_>,
) -> Result<Option<Left>> {
    let mut ctx = ((filter, coll.to_owned(), how), (live, &mut *run, mover));
    let left = transaction_with(
        live,
        &mut ctx,
        |tx, ((filter, coll, how), (live, run, mover))| -> BoxFuture<'_, Result<Option<Left>>> {
            Box::pin(async move {
                run.record_session(*live, tx).await?;
                let opts = FindOptions {
                    limit: Some(1),
                    comment: matches!(how, Move::Within(_)).then_some(ARCHIVE_MOVE),
                    ..FindOptions::default()
                };
                let Some(doc) = tx.find(coll, filter, &opts).await?.pop() else {
                    return Ok(None);
                };
                if let Move::Copied(copy) = how {
                    if doc != **copy {
                        return Ok(None);
                    }
                }
                let left = mover.leave(tx, &doc).await?;
                if let (Left::Gone(_), Move::Within(to)) = (&left, how) {
                    let by_id = Filter::Eq("_id".into(), id_of(&doc));
                    // Over an archived document with its `_id` (archived, then a new one
                    // inserted with it): the newer, as the move to another store does.
                    tx.replace_one(to, &by_id, doc, true).await?;
                }
                Ok(Some(left))
            })
        },
    )
    .await?;
    if let Some(Left::Gone(propagate)) = &left {
        mover.left(live, id, propagate.as_ref()).await?;
    }
    Ok(left)
}

fn id_of(doc: &BsonDocument) -> Bson {
    doc.get("_id").cloned().unwrap_or(Bson::Null)
}

/// The batch's documents moved to another store: each copied as read (still old and not
/// kept), then deleted here in a transaction (its session recorded in `run`'s checkpoint
/// before its first write; the mover's stages around the delete) that first reads it again
/// and deletes it only when it is still the document copied; when it is not (a write reached
/// it), copied again, or its copy removed when it no longer is to move or stays because
/// copies of it are held. Returns how many moved, and how many stayed for their copies.
async fn copy_batch<S: Store, A: Store, M: Mover>(
    live: &S,
    run: &mut ArchiveRun<1>,
    (layout, mover): (Layout<'_>, &M),
    to: ArchiveAt<'_, A>,
    ids: &[Bson],
) -> Result<(u64, u64)> {
    let coll = layout.0;
    let (mut moved, mut copied) = (0, 0);
    for id in ids {
        let by_id = Filter::Eq("_id".into(), id.clone());
        let mut written = false;
        loop {
            let found = find_one(live, coll, &still_old(id, (layout, mover))).await?;
            let Some(doc) = found else {
                // Gone, younger or kept now: no copy of it stays in the archive.
                if written {
                    to.store.delete_many(to.collection, &by_id).await?;
                }
                break;
            };
            (to.store
                .replace_one(to.collection, &by_id, doc.clone(), true))
            .await?;
            written = true;
            let how = Move::Copied(&doc);
            match move_one(live, run, (coll, mover), (id, by_id.clone()), how).await? {
                Some(Left::Gone(_)) => {
                    moved += 1;
                    break;
                }
                Some(Left::Copied) => {
                    to.store.delete_many(to.collection, &by_id).await?;
                    copied += 1;
                    break;
                }
                None => {}
            }
        }
    }
    Ok((moved, copied))
}

/// The document `id` of `D`, live or archived in `to`: live first (one `find`), then the
/// archive (one more when it is not live).
pub async fn get_with_archive<D: Document, S: Store, A: Store, Q: IdRef<D::Id> + ?Sized>(
    live: &S,
    to: ArchiveAt<'_, A>,
    id: &Q,
) -> Result<Option<D>> {
    crate::observe::traced_op!(document.get_with_archive, live, D::COLLECTION, async {
        if let Some(d) = super::get::<D, S, Q>(live, id).await? {
            return Ok(Some(d));
        }
        let by_id = polymorphic::scope::<D>(Filter::Eq("_id".into(), id_bson(id)?));
        match find_one(to.store, to.collection, &by_id).await? {
            Some(d) => read_stored::<D, S>(live, d).await.map(Some),
            None => Ok(None),
        }
    })
}

/// The documents in both the live collection and the archive `to` (by `_id`): after
/// [`archive`], none but those of a move killed between its copy and its delete (another
/// store only; the next run moves them). Reads the archive's `_id`s, then looks them up here
/// a batch at a time.
pub async fn verify_archive<D: Document, S: Store, A: Store>(
    live: &S,
    to: ArchiveAt<'_, A>,
) -> Result<Vec<LayoutDefect>> {
    verify_archive_layout(live, D::COLLECTION, to).await
}

/// [`verify_archive`] of collection `coll`.
pub async fn verify_archive_layout<S: Store, A: Store>(
    live: &S,
    coll: &str,
    to: ArchiveAt<'_, A>,
) -> Result<Vec<LayoutDefect>> {
    crate::observe::traced_op!(document.verify_archive, live, coll, async {
        let ids_only = FindOptions {
            sort: vec![("_id".into(), 1)],
            projection: vec![Path::from("_id")],
            comment: Some("pattern scatter: document archive verify"),
            ..FindOptions::default()
        };
        let archived = (to.store.find(to.collection, &Filter::and([]), &ids_only)).await?;
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
            let both = live
                .find(coll, &Filter::In("_id".into(), chunk.to_vec()), &opts)
                .await?;
            defects.extend(both.into_iter().filter_map(|d| {
                Some(LayoutDefect::InBoth {
                    collection: coll.to_owned(),
                    archive: to.collection.to_owned(),
                    id: d.get("_id")?.clone(),
                })
            }));
        }
        Ok(defects)
    })
}
