//! The checkpoint of an archive ([`bucket::archive`](crate::bucket::archive),
//! [`document::archive`](crate::document::archive)): `archive:<live>:<archive>` in
//! [`CHECKPOINTS`](super::CHECKPOINTS) on the live store, `{state: "running" | "finished",
//! spec: {before, ...}, position, moving, <counters>...}`.
//!
//! A pass runs from a first run (no checkpoint, or a finished one) to the run that finishes
//! it; a run killed part-way leaves `running` and the last `_id` of the last batch it recorded
//! (`position`), and the next run goes on after it with the counters so far. The settings that
//! choose what moves (the cut-off, the fields) are pinned while a pass is part-way
//! ([`Error::SettingsChanged`](crate::Error::SettingsChanged)); a finished pass pins nothing:
//! the next run, with any cut-off, starts a new pass from the start. The checkpoint moves by
//! compare-and-set updates outside the moves' transactions (the moves are exactly once on
//! their own: a batch done again moves only what is still live), two a batch: before its
//! moves, the `_id`s it is about to move (`moving`); after them, its last `_id` and the
//! counters. So two runs at once of the same archive stop the second
//! ([`store::Error::Contention`](crate::store::Error::Contention)), and a run that finds `moving` knows which
//! `_id`s the run killed part-way may have moved in the batch it died in: its caller counts
//! those now in the archive and no longer live ([`ArchiveRun::moving`],
//! [`ArchiveRun::counted`]), so that the pass's counters include the moves no checkpoint
//! recorded. A dry run reads the checkpoint, is refused as a run would be, counts as a run
//! would, and writes nothing.
//!
//! The document archive's moves are transactions: each records its server session in the
//! checkpoint's list before its first write ([`ArchiveRun::record_session`]), and a run ends
//! those an earlier run recorded before anything else ([`ArchiveRun::end_earlier_sessions`]),
//! as the migrations do: a run killed inside a move's transaction would otherwise hold that
//! document (a write conflict for every other writer, the next run's move included) until the
//! server expires the transaction (60 s by default).

use bson::{doc, Bson, Document};

use super::checkpoint::Checkpoint;
use crate::codec::as_int;
use crate::store::query::Filter;
use crate::store::{Store, Transaction};
use crate::Result;

/// How to start an archive over with other settings, for the error.
const RESTART: &str =
    "run the archive with the new cut-off (what the part-way run moved stays moved)";

/// The checkpoint's field listing the `_id`s of the batch being moved (null between batches).
const MOVING: &str = "moving";

/// One archive run's checkpoint, with `N` counters (`moved`, ...).
pub(crate) struct ArchiveRun<const N: usize> {
    cp: Checkpoint,
    dry_run: bool,
    /// Where this run starts: after the position a run part-way left (`None`: the start).
    pub(crate) resumed_from: Option<Bson>,
    /// The position recorded last (null: the start).
    position: Bson,
    /// The `_id`s of the batch a run killed part-way was moving (recorded before its moves,
    /// never after them): what of them is in the archive and no longer live it moved.
    moving: Vec<Bson>,
    names: [&'static str; N],
    /// The pass's counters: those a run part-way recorded, then this run's batches.
    totals: [u64; N],
}

impl<const N: usize> ArchiveRun<N> {
    /// Reads the checkpoint of the archive of `live` into `archive` and pins `settings`
    /// (refused when a pass part-way has others), before anything is written.
    pub(crate) async fn start<S: Store>(
        store: &S,
        (live, archive): (&str, &str),
        settings: Document,
        names: [&'static str; N],
        dry_run: bool,
    ) -> Result<Self> {
        let mut cp = Checkpoint::load(store, format!("archive:{live}:{archive}")).await?;
        let running = cp.state() == Some("running");
        let all: Vec<&str> = settings.keys().map(String::as_str).collect();
        let free: &[&str] = if running { &[] } else { &all };
        cp.pin(settings.clone(), free, RESTART)?;
        let (mut totals, mut resumed_from, mut moving) = ([0; N], None, Vec::new());
        if running {
            for (t, name) in totals.iter_mut().zip(names) {
                let n = cp.get(name).and_then(as_int).unwrap_or(0);
                *t = u64::try_from(n).unwrap_or(0);
            }
            resumed_from = cp.get("position").filter(|p| **p != Bson::Null).cloned();
            if let Some(Bson::Array(ids)) = cp.get(MOVING) {
                moving.clone_from(ids);
            }
        }
        Ok(ArchiveRun {
            cp,
            dry_run,
            position: resumed_from.clone().unwrap_or(Bson::Null),
            resumed_from,
            moving,
            names,
            totals,
        })
    }

    /// Ends the server sessions the moves' transactions of an earlier run recorded (a run
    /// killed in one would hold its document until the server expires it): before this run
    /// reads or moves anything. Returns how many (none in a dry run, which ends nothing).
    pub(crate) async fn end_earlier_sessions<S: Store>(&self, store: &S) -> Result<u64> {
        if self.dry_run {
            return Ok(0);
        }
        self.cp.end_earlier_sessions(store).await
    }

    /// Records the server session of `tx`, a move's transaction on the live store `store`,
    /// before its first write (once a session per run).
    pub(crate) async fn record_session<S: Store>(&mut self, store: &S, tx: &S::Txn) -> Result<()> {
        match tx.session_id().await {
            Some(lsid) if !self.dry_run => self.cp.record_session(store, lsid).await,
            _ => Ok(()),
        }
    }

    /// The `_id`s of the batch the run killed part-way was moving when it died: the caller
    /// counts those it moved (in the archive, no longer live) and passes the counts to
    /// [`counted`](Self::counted), before this run moves anything.
    pub(crate) fn moving(&self) -> &[Bson] {
        &self.moving
    }

    /// What the killed run moved of [`moving`](Self::moving): added to the pass's counters.
    /// Written with the next batch (or the finish): a run killed before then counts them
    /// again from the same list.
    pub(crate) fn counted(&mut self, counts: [u64; N]) {
        for (t, n) in self.totals.iter_mut().zip(counts) {
            *t += n;
        }
        self.moving.clear();
    }

    /// A batch is about to move `ids`: records them (nothing in a dry run, nor for no `_id`).
    pub(crate) async fn batch_begins<S: Store>(&mut self, store: &S, ids: &[Bson]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let position = self.position.clone();
        self.record(store, "running", position, Bson::Array(ids.to_vec()))
            .await
    }

    /// A batch's moves are done, the last `_id` it read `position`: adds `counts` to the totals
    /// and records both (nothing in a dry run).
    pub(crate) async fn batch_done<S: Store>(
        &mut self,
        store: &S,
        position: &Bson,
        counts: [u64; N],
    ) -> Result<()> {
        for (t, n) in self.totals.iter_mut().zip(counts) {
            *t += n;
        }
        self.position = position.clone();
        self.record(store, "running", position.clone(), Bson::Null)
            .await
    }

    /// The scan ran out: the pass is finished (nothing recorded in a dry run).
    pub(crate) async fn finish<S: Store>(&mut self, store: &S) -> Result<()> {
        self.record(store, "finished", Bson::Null, Bson::Null).await
    }

    /// The pass's counters, this run's included.
    pub(crate) fn totals(&self) -> [u64; N] {
        self.totals
    }

    async fn record<S: Store>(
        &mut self,
        store: &S,
        state: &str,
        position: Bson,
        moving: Bson,
    ) -> Result<()> {
        if self.dry_run {
            return Ok(());
        }
        let mut set = doc! {"state": state, "position": position, MOVING: moving};
        for (name, n) in self.names.iter().zip(self.totals) {
            set.insert(*name, i64::try_from(n).unwrap_or(i64::MAX));
        }
        self.cp.record(store, set).await
    }
}

/// The `_id`s an archive scans, upwards a batch at a time, one BSON type bracket after
/// another: `{_id: {$gt: last}}` matches only `_id`s of the last one's bracket (numbers,
/// strings, objects, ObjectIds...), so each bracket is entered by its least value (`$gte`),
/// and a collection whose `_id`s are of several types is scanned whole. `_id`s of the
/// brackets no ordinary `_id` is of (null, NaN, MinKey, MaxKey) are not scanned.
pub(crate) struct IdScan {
    /// The bracket the scan is in (an index into [`bracket_floors`]).
    bracket: usize,
    /// The last `_id` read in it (`None`: the bracket's start).
    after: Option<Bson>,
}

/// The least value of each type bracket an `_id` may be of, in MongoDB's sort order.
fn bracket_floors() -> [Bson; 7] {
    use bson::oid::ObjectId;
    use bson::spec::BinarySubtype;
    [
        Bson::Double(f64::NEG_INFINITY),
        Bson::String(String::new()),
        Bson::Document(Document::new()),
        Bson::Binary(bson::Binary {
            subtype: BinarySubtype::Generic,
            bytes: Vec::new(),
        }),
        Bson::ObjectId(ObjectId::from_bytes([0; 12])),
        Bson::Boolean(false),
        Bson::DateTime(bson::DateTime::MIN),
    ]
}

/// The bracket of `id` among [`bracket_floors`] (`None`: none of them).
fn bracket_of(id: &Bson) -> Option<usize> {
    Some(match id {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 0,
        Bson::String(_) | Bson::Symbol(_) => 1,
        Bson::Document(_) => 2,
        Bson::Binary(_) => 3,
        Bson::ObjectId(_) => 4,
        Bson::Boolean(_) => 5,
        Bson::DateTime(_) => 6,
        _ => return None,
    })
}

impl IdScan {
    /// From the start, or after `position` (a run part-way).
    pub(crate) fn after(position: Option<Bson>) -> Self {
        match position.as_ref().and_then(bracket_of) {
            Some(bracket) => IdScan {
                bracket,
                after: position,
            },
            None => IdScan {
                bracket: 0,
                after: None,
            },
        }
    }

    /// The condition on `_id` of the next batch; `None`: the scan is done.
    pub(crate) fn filter(&self) -> Option<Filter> {
        let floors = bracket_floors();
        let floor = floors.get(self.bracket)?;
        Some(match &self.after {
            Some(last) => Filter::Gt("_id".into(), last.clone()),
            None => Filter::Gte("_id".into(), floor.clone()),
        })
    }

    /// A batch was read, its last `_id` `last` (`None`: it was empty); `full`: it held as
    /// many as asked, so its bracket may hold more.
    pub(crate) fn read(&mut self, last: Option<&Bson>, full: bool) {
        if let Some(last) = last {
            self.after = Some(last.clone());
        }
        if !full {
            self.bracket += 1;
            self.after = None;
        }
    }
}
