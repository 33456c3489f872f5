//! Long passes over a collection: the batches, progress and checkpoints that the migrations,
//! the archives, the versioning sweep and the reference repairs share.
//!
//! - [`Options`]: what a pass is asked to do (dry run, items per batch, progress callback).
//! - [`scan`]: reading a collection once, as a stream.
//! - [`checkpoint`]: a migration's checkpoint, moved by each batch's transaction.
//! - [`archive_run`]: an archive's checkpoint, moved around each batch's moves.
//!
//! The adoption tooling ([`adopt`](crate::adopt)) re-exports [`Options`], [`Progress`],
//! [`OnProgress`], [`DEFAULT_BATCH_ITEMS`] and [`CHECKPOINTS`]: those are their public paths.

pub(crate) mod archive_run;
pub(crate) mod checkpoint;
pub(crate) mod scan;

pub use checkpoint::CHECKPOINTS;

/// How far a long operation is: what [`Options::progress`] is called with, after each batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress<'a> {
    /// `"analyze"`, `"migrate"`, `"verify"`, `"scan overflow"`...
    pub phase: &'a str,
    /// Documents read so far in this phase.
    pub done: u64,
    /// Documents this phase will read, when known (counted before it starts).
    pub total: Option<u64>,
}

/// A progress callback.
pub type OnProgress<'a> = &'a (dyn Fn(&Progress<'_>) + Send + Sync);

/// Options of the analyses, migrations and verifications.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// Read everything, write nothing (no checkpoint, no index), report what would change.
    pub dry_run: bool,
    /// Items written per transaction at most (default [`DEFAULT_BATCH_ITEMS`]); a key or
    /// document holding more is written in several, each resumable. The archives read this
    /// many buckets or documents a batch at most (each batch one checkpoint; at most 1,000
    /// buckets, 100 documents).
    pub batch_items: usize,
    /// [`migrate_bucket`](crate::adopt::migrate_bucket): delete the migrated source documents, in the same transaction as
    /// the buckets they went into. Off by default: the source is left as it was.
    pub remove_source: bool,
    /// Run the verification at the end of a migration (on by default).
    pub verify: bool,
    /// Called after each batch of documents read.
    pub progress: Option<OnProgress<'a>>,
}

/// Items per migration transaction unless [`Options::batch_items`] says otherwise.
pub const DEFAULT_BATCH_ITEMS: usize = 10_000;

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            dry_run: false,
            batch_items: DEFAULT_BATCH_ITEMS,
            remove_source: false,
            verify: true,
            progress: None,
        }
    }
}

impl std::fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("dry_run", &self.dry_run)
            .field("batch_items", &self.batch_items)
            .field("remove_source", &self.remove_source)
            .field("verify", &self.verify)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl Options<'_> {
    /// Calls the progress callback, if any, and emits the progress event
    /// ([`observe`](crate::observe)).
    pub(crate) fn report(&self, phase: &str, done: u64, total: Option<u64>) {
        crate::observe::progress(phase, done);
        if let Some(p) = self.progress {
            p(&Progress { phase, done, total });
        }
    }
}
