//! What a pattern's collection must look like, checked over the whole of it: every promise of
//! the bucket and outlier layouts ([`verify_bucket`], [`verify_outlier`]: the defects as data),
//! and the indexes each pattern needs against those the collection has ([`IndexReport`]).
//!
//! The patterns' `verify` and `index_report` functions call these; the adoption tooling
//! ([`adopt`](crate::adopt)) re-exports them, which are their public paths.

use bson::Bson;
use serde::Serialize;

mod indexes;
mod verify;

pub use indexes::{index_report_bucket, index_report_outlier, index_report_tree, IndexReport};
pub use verify::{verify_bucket, verify_outlier};

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
    /// An ingest batch's pending mark (`#[bucket(rollup)]`) that has stood longer than a
    /// batch takes (a minute): its writer died, or lost its connection, between the batch's
    /// buckets and their roll-ups. Reads of the keys it lists count their buckets, exact, until
    /// `backfill` recomputes the roll-ups and deletes the mark.
    RollupPending {
        /// The collection.
        collection: String,
        /// When the batch began (its writer's clock).
        since: bson::DateTime,
        /// How many keys it lists.
        keys: usize,
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
    /// A bucket marked `bounded` whose time bounds do not cover exactly its items, cross a
    /// window of its span, or lie past the collection's width from the second its `_id` names
    /// (a writer that does not keep the width: range reads may miss its items).
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
