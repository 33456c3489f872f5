//! The engine both patterns share: a series of items kept `size` at a time in documents of one
//! collection, keyed by a field (a customer's trade buckets; an outlier's overflow chunks).
//!
//! Invariants, on every store and under any number of concurrent writers:
//! - a document never holds more than `size` items (every write is conditional on `count`);
//! - nothing is lost or duplicated: a write either applies whole or not at all, and the retry
//!   loops only retry writes that did not apply;
//! - the documents of a key are numbered 1, 2, 3... in a `seq` field (`page` for buckets), and
//!   at most one is open (`count < size`): the newest. A push goes to the open document in one
//!   atomic conditional upsert ([`Store::push_open`](crate::store::Store::push_open)); the first push of a process to a key
//!   returns the document's number, and from then on the process knows the next one. The
//!   upsert inserts document `n + 1` only when no document is open, and a unique index on
//!   `{key, seq}` lets one of two concurrent openers win (or refuses a number another process
//!   already used); the other retries into the winner's document. So each writer's items are
//!   read back in the order it pushed them, and page `n` is found by its number, however deep.
//! - Documents without a number (the seed's single overflow document, buckets written before
//!   numbering, or by other tools) come first, in `_id` order; numbering continues after them.

mod ids;
mod indexes;
pub(crate) mod lease;
mod memo;
pub(crate) mod pending;
pub(crate) use ids::{parse_bucket_id, PrefixOf};
pub(crate) use indexes::{
    archives_in, mark_archived, mark_bounded, mark_bounded_probed, mark_rollup, read_marks,
    ArchiveRecord, PROBE_FIELD,
};
pub(crate) use memo::{memo, BoundsMark, Next, TimeId};
mod ingest;
mod push;
mod read;
mod rollup;
mod schema;
mod shape;
pub(crate) mod width;

pub(crate) use ingest::{ingest, Entry};
pub(crate) use push::{name_foreign, push, push_fresh};
pub use read::STREAM_BATCH;
pub(crate) use read::{
    all_docs, decode_raw_items, decode_values, doc_stream, nth_doc, stats, take_array, take_items,
};
pub(crate) use rollup::{ROLLUP, ROLLUP_ITEMS, ROLLUP_STALE, ROLLUP_SUMMARIZED};
pub(crate) use shape::{bucket_id, combine, Kept};

/// Bytes of documents one batched write of a series sends at most (an ingest's bulk write,
/// `push_many`'s new documents): under the 16 MiB a command may take, with room for the
/// command's own fields.
const BATCH_BYTES: usize = 8 * 1024 * 1024;
