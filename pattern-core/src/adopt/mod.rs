//! Adopting the patterns on existing data: [`analyze`](analyze_outlier) a collection, migrate it
//! into the outlier or bucket layout ([`migrate_outlier`], [`migrate_bucket`]), and
//! [`verify`](verify_bucket) what the library promises of the result.
//!
//! Every function here takes the pattern's spec as data ([`OutlierSpec`](crate::spec::OutlierSpec), [`BucketSpec`](crate::spec::BucketSpec)): the
//! derives' generated `analyze`, `verify` and `migrate` methods pass their own, and the
//! `pattern` command line builds one from its arguments.
//!
//! - Reads stream ([`Store::scan`](crate::store::Store::scan): one cursor on MongoDB): memory stays
//!   flat in the collection's size (the bucket analysis keeps one counter per key, the outlier
//!   verification one entry per parent that has overflow).
//! - Migrations write in batches, each one transaction that also moves the checkpoint
//!   (collection [`CHECKPOINTS`]): a run killed at any moment leaves either the batch and its
//!   checkpoint, or neither, and the next run resumes after the last committed batch. The
//!   transaction of a killed run would hold its documents on the server until it expires (60
//!   s): each run records its sessions beside the checkpoint, and the next run ends them
//!   (`killSessions`) before it starts.
//! - Beside live traffic: a migrated document or key is rewritten inside the transaction from
//!   what it holds then, so items pushed by the application before, during or after keep their
//!   order after the migrated ones; a push that races a batch makes the batch retry.
//! - `dry_run` reads everything and writes nothing, reporting what would change.
//!
//! The same machinery converts a money field to Decimal128 ([`convert_money`], checked by
//! [`verify_money`]): the article's "add a decimal field, verify, then drop the old one".

use bson::Bson;
use serde::Serialize;

pub mod advise;
mod analyze;
pub(crate) mod archive_run;
mod attributes;
mod bucket;
pub(crate) mod checkpoint;
pub mod histogram;
mod indexes;
mod money;
mod outlier;
mod preflight;
mod scan;
mod shapes;
mod verify;
mod versions;

pub use advise::{advise, Advice, CollectionAdvice, Confidence, Evidence, Finding, Pattern};
pub use analyze::{analyze_bucket, analyze_outlier};
pub use attributes::{migrate_attributes, verify_attributes, AttributeMigration, AttributesReport};
pub use bucket::migrate_bucket;
pub use checkpoint::CHECKPOINTS;
pub use histogram::{Bar, Distribution, Histogram};
pub use indexes::{index_report_bucket, index_report_outlier, index_report_tree, IndexReport};
pub use money::{
    convert_money, verify_money, Finish, MoneyConversion, MoneyDefect, MoneyReport, MoneyVerified,
};
pub use outlier::migrate_outlier;
pub use shapes::{
    analyze_shapes, AttributeArray, Discriminator, ShapesAnalysis, ValueShape, SHAPES_MAX_KEYS,
    SHAPES_MAX_VALUES, SHAPES_SCAN,
};
pub use verify::{verify_bucket, verify_outlier};
pub use versions::{analyze_versions, VersionsAnalysis, VERSIONS_EXAMPLES, VERSIONS_SCAN};

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
    /// [`migrate_bucket`]: delete the migrated source documents, in the same transaction as
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

/// A flat source collection: one document per item (the bucket page's "before" layout,
/// `{_id, ticker, customerId, type, qty, date}`). An item is the document without its `_id`
/// and its key field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source<'a> {
    /// The collection read.
    pub collection: &'a str,
    /// The field holding the key (`customerId`).
    pub key_field: &'a str,
    /// The field holding the item's time (`date`): each key's items are migrated in its order
    /// (then by `_id`). A BSON date, or a number of epoch seconds.
    pub time_field: &'a str,
}

/// A suggested setting, with why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Suggestion {
    /// The suggested threshold or bucket size.
    pub value: u32,
    /// Why, in a sentence.
    pub reason: String,
}

/// The largest document seen.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Largest {
    /// Its `_id`.
    pub id: Bson,
    /// Its BSON size in bytes.
    pub bytes: u64,
    /// `bytes` over the 16 MiB document limit.
    pub share_of_limit: f64,
}

/// What [`analyze_outlier`] found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutlierAnalysis {
    /// The main collection read.
    pub collection: String,
    /// The array field measured.
    pub array: String,
    /// Documents read.
    pub documents: u64,
    /// Items per document: the array, plus the overflow of a document already flagged.
    pub lengths: Distribution,
    /// Document sizes in bytes (the main documents as stored).
    pub sizes: Distribution,
    /// The largest main document (none in an empty collection).
    pub largest: Option<Largest>,
    /// The threshold of the spec analyzed with.
    pub threshold: u32,
    /// Documents with more items than `threshold`.
    pub over_threshold: u64,
    /// Documents flagged already (in the outlier layout).
    pub flagged: u64,
    /// Documents whose array field is missing or not an array (skipped).
    pub without_array: u64,
    /// A threshold that keeps most documents whole, with why.
    pub suggestion: Suggestion,
}

/// What [`analyze_bucket`] found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BucketAnalysis {
    /// The collection read.
    pub collection: String,
    /// The field keying the items.
    pub key: String,
    /// Documents read.
    pub documents: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Items (a flat source: one per document; buckets: the arrays' lengths).
    pub items: u64,
    /// Items per key.
    pub per_key: Distribution,
    /// Item sizes in bytes.
    pub item_sizes: Distribution,
    /// Document sizes in bytes.
    pub sizes: Distribution,
    /// The largest document (none in an empty collection).
    pub largest: Option<Largest>,
    /// The bucket size of the spec analyzed with.
    pub size: u32,
    /// Buckets the items take at that size.
    pub buckets_at_size: u64,
    /// Documents skipped: no key field.
    pub without_key: u64,
    /// A bucket size for these items, with why.
    pub suggestion: Suggestion,
}

/// A broken promise of the layout, found by [`verify_bucket`] or [`verify_outlier`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "defect", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LayoutDefect {
    /// A field of the document does not have the layout's type (a count that is not an
    /// integer, an array that is not one, a missing key or number...).
    Malformed {
        /// The collection.
        collection: String,
        /// The document's `_id`.
        id: Bson,
        /// What is wrong with it.
        reason: String,
    },
    /// The document's count is not the length of its array.
    CountMismatch {
        /// The collection.
        collection: String,
        /// The document's `_id`.
        id: Bson,
        /// The count it holds.
        count: i64,
        /// The items its array holds.
        items: u64,
    },
    /// A bucket or overflow chunk holds more items than its size.
    OverSize {
        /// The collection.
        collection: String,
        /// The document's `_id`.
        id: Bson,
        /// The items its array holds.
        items: u64,
        /// The layout's size.
        size: u32,
    },
    /// A key has more than one open (not full) bucket or chunk: their numbers.
    SeveralOpen {
        /// The collection.
        collection: String,
        /// The key.
        key: Bson,
        /// The numbers of its open documents.
        numbers: Vec<i64>,
    },
    /// A bucket is both in the live collection and in its archive: a move of
    /// [`archive`](crate::bucket::archive) in flight (running it again completes it).
    InBoth {
        /// The live collection.
        collection: String,
        /// The archive's collection.
        archive: String,
        /// The bucket's `_id`.
        id: Bson,
    },
    /// A key's roll-up (`#[bucket(rollup)]`) counts another number of items than its
    /// buckets hold (a write whose roll-up failed, or a writer that keeps none): `backfill`
    /// recomputes it. A roll-up marked stale is not reported (reads already count the buckets).
    RollupDrift {
        /// The collection.
        collection: String,
        /// The key.
        key: Bson,
        /// Items the roll-up counts.
        rollup: u64,
        /// Items the key's buckets hold.
        buckets: u64,
    },
    /// A key's documents are not numbered 1, 2, 3...: the first number out of place.
    NotDense {
        /// The collection.
        collection: String,
        /// The key.
        key: Bson,
        /// The number expected at that place.
        expected: i64,
        /// The number found there.
        found: i64,
    },
    /// A bucket marked `bounded` whose time bounds do not cover exactly its items.
    WrongBounds {
        /// The collection.
        collection: String,
        /// The bucket's `_id`.
        id: Bson,
        /// How the bounds and the items disagree.
        reason: String,
    },
    /// A main document's array holds more items than the threshold.
    OverThreshold {
        /// The main collection.
        collection: String,
        /// The document's `_id`.
        id: Bson,
        /// The items its array holds.
        items: u64,
        /// The layout's threshold.
        threshold: u32,
    },
    /// A main document flagged, with no overflow document.
    FlagWithoutOverflow {
        /// The main collection.
        collection: String,
        /// The document's `_id`.
        id: Bson,
    },
    /// Overflow documents of a parent that is not flagged (its reads miss them).
    OverflowWithoutFlag {
        /// The main collection.
        collection: String,
        /// The parent's `_id`.
        id: Bson,
    },
    /// Overflow documents whose parent does not exist.
    OrphanOverflow {
        /// The overflow collection.
        collection: String,
        /// The parent `_id` the overflow documents reference.
        parent: Bson,
    },
}

/// What a verification found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Verified {
    /// Documents read.
    pub documents: u64,
    /// Defects found (all of them: `defects.len()` is their number).
    pub defects: Vec<LayoutDefect>,
}

impl Verified {
    /// No defect: every promise of the layout holds.
    pub fn is_clean(&self) -> bool {
        self.defects.is_empty()
    }
}

/// What a migration did (or, with [`Options::dry_run`], would do).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MigrateReport {
    /// `"outlier"` or `"bucket"`.
    pub kind: String,
    /// The collection migrated in place (outlier) or read (bucket).
    pub source: String,
    /// The collection written (the same for outlier).
    pub target: String,
    /// Nothing was written ([`Options::dry_run`]).
    pub dry_run: bool,
    /// Where this run started: `None` from the start, else the checkpoint it resumed from.
    pub resumed_from: Option<Bson>,
    /// The migration had finished before this run (nothing to do).
    pub already_finished: bool,
    /// Documents read from the source by this run.
    pub scanned: u64,
    /// Documents (outlier) or keys (bucket) rewritten by this run.
    pub changed: u64,
    /// Items moved: into overflow chunks (outlier), into buckets (bucket).
    pub moved_items: u64,
    /// Documents written (overflow chunks or buckets inserted).
    pub written: u64,
    /// Transactions committed.
    pub batches: u64,
    /// Transactions retried after a conflict with another writer.
    pub retries: u64,
    /// Sessions of an interrupted run ended before starting.
    pub ended_sessions: u64,
    /// The verification that ended the migration (not with `dry_run`).
    pub verified: Option<Verified>,
}

/// The canonical text of a key, for counting keys whose BSON types differ but which the
/// server holds equal (`5`, `5i64`, `5.0`).
pub(crate) fn key_text(b: &Bson) -> String {
    match b {
        Bson::Int32(n) => format!("n{n}"),
        Bson::Int64(n) => format!("n{n}"),
        Bson::Double(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => format!("n{}", *f as i64),
        Bson::String(s) => format!("s{s}"),
        Bson::ObjectId(o) => format!("o{o}"),
        other => format!("x{other:?}"),
    }
}
