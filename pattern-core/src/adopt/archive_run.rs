//! The checkpoint of an archive ([`bucket::archive`](crate::bucket::archive),
//! [`document::archive`](crate::document::archive)): `archive:<live>:<archive>` in
//! [`CHECKPOINTS`](super::CHECKPOINTS) on the live store, `{state: "running" | "finished",
//! spec: {before, ...}, position, <counters>...}`.
//!
//! A pass runs from a first run (no checkpoint, or a finished one) to the run that finishes
//! it; a run killed part-way leaves `running` and the last `_id` of the last batch it recorded
//! (`position`), and the next run goes on after it with the counters so far. The settings that
//! choose what moves (the cut-off, the fields) are pinned while a pass is part-way
//! ([`Error::SettingsChanged`](crate::Error::SettingsChanged)); a finished pass pins nothing:
//! the next run, with any cut-off, starts a new pass from the start. The checkpoint moves by
//! one compare-and-set update after each batch's moves are done (the moves are exactly once on
//! their own: a batch done again moves only what is still live), so two runs at once of the
//! same archive stop the second ([`Error::Contention`](crate::Error::Contention)). A dry run
//! reads the checkpoint, is refused as a run would be, and writes nothing.

use bson::{doc, Bson, Document};

use super::checkpoint::Checkpoint;
use crate::codec::as_int;
use crate::store::Store;
use crate::Result;

/// How to start an archive over with other settings, for the error.
const RESTART: &str =
    "run the archive with the new cut-off (what the part-way run moved stays moved)";

/// One archive run's checkpoint, with `N` counters (`moved`, ...).
pub(crate) struct ArchiveRun<const N: usize> {
    cp: Checkpoint,
    dry_run: bool,
    /// Where this run starts: after the position a run part-way left (`None`: the start).
    pub(crate) resumed_from: Option<Bson>,
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
        let (mut totals, mut resumed_from) = ([0; N], None);
        if running {
            for (t, name) in totals.iter_mut().zip(names) {
                let n = cp.get(name).and_then(as_int).unwrap_or(0);
                *t = u64::try_from(n).unwrap_or(0);
            }
            resumed_from = cp.get("position").filter(|p| **p != Bson::Null).cloned();
        }
        Ok(ArchiveRun {
            cp,
            dry_run,
            resumed_from,
            names,
            totals,
        })
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
        self.record(store, "running", position.clone()).await
    }

    /// The scan ran out: the pass is finished (nothing recorded in a dry run).
    pub(crate) async fn finish<S: Store>(&mut self, store: &S) -> Result<()> {
        self.record(store, "finished", Bson::Null).await
    }

    /// The pass's counters, this run's included.
    pub(crate) fn totals(&self) -> [u64; N] {
        self.totals
    }

    async fn record<S: Store>(&mut self, store: &S, state: &str, position: Bson) -> Result<()> {
        if self.dry_run {
            return Ok(());
        }
        let mut set = doc! {"state": state, "position": position};
        for (name, n) in self.names.iter().zip(self.totals) {
            set.insert(*name, i64::try_from(n).unwrap_or(i64::MAX));
        }
        self.cp.record(store, set).await
    }
}
