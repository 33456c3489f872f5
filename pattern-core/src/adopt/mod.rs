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
//! The same machinery converts a money field to Decimal128 ([`money::convert_money`], checked by
//! [`money::verify_money`]): the article's "add a decimal field, verify, then drop the old one".
//!
//! The layouts' steps are here, by pattern ([`bucket`], [`outlier`]). Each other adoption is a
//! module of its own: [`money`] (a money field to Decimal128), [`attributes`] (sparse fields into
//! an attribute array), [`shapes`] and [`versions`] (what a collection holds, for a polymorphic
//! or versioned type), and [`advise`](mod@advise) (which pattern a collection needs).

use bson::Bson;
use serde::Serialize;

pub mod advise;
mod analyze;
pub mod attributes;
pub mod bucket;
pub mod histogram;
pub mod money;
pub mod outlier;
mod preflight;
pub mod shapes;
pub mod versions;

pub use crate::error::Missing;
pub use crate::layout::{
    index_report_bucket, index_report_outlier, index_report_tree, verify_bucket, verify_outlier,
    IndexReport, LayoutDefect, Verified,
};
pub use crate::pass::{OnProgress, Options, Progress, CHECKPOINTS, DEFAULT_BATCH_ITEMS};
pub use advise::{advise, Advice, CollectionAdvice, Confidence, Evidence, Finding, Pattern};
pub use analyze::{analyze_bucket, analyze_outlier};
pub use bucket::migrate_bucket;
pub use histogram::{Bar, Distribution, Histogram};
pub use outlier::migrate_outlier;

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
