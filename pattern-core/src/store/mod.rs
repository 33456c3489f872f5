//! The store contract, and the stores that implement it.
//!
//! The contract is its own crate, `pattern-store`, re-exported here: the few primitive
//! operations the patterns are written against ([`Store`], [`Transaction`]), the query
//! language ([`query`]), the prepared series push ([`push`]), and what a store can say went
//! wrong ([`Error`], which the library's [`crate::Error`] wraps as `Error::Store`). A store written against it
//! alone runs every pattern (the conformance suite has one: `tests/suite/third_party.rs`).
//!
//! The stores are crates too, each behind a feature: [`MemoryStore`] (`pattern-memory`,
//! embedded; feature `memory`, on by default) and `MongoStore` (`pattern-mongo`, feature
//! `mongodb`). Both keep the same collections and the same documents, and apply each
//! single-document write atomically. The conformance suite in `tests/` runs unchanged against
//! both. [`AnyStore`] is either, chosen at run time.

pub use pattern_store::{
    push, push_open_upsert, push_then_apart, query, ArrayStats, BatchOutcome, BoxError, BoxFuture,
    Change, ChangeFeed, ChangeOp, Error, Extension, ExtensionKey, Extensions, FromStore, KeptOps,
    OpenPush, Store, Transaction, UpdateOutcome, Watch, Window, WriteOp, TRANSACTION_ATTEMPTS,
};

mod transaction;
pub use transaction::{transaction, transaction_tries, transaction_with};

mod archive_at;
pub use archive_at::ArchiveAt;

mod one;
pub(crate) use one::find_one;

#[cfg(any(feature = "memory", feature = "mongodb"))]
#[macro_use]
mod delegate;
#[cfg(any(feature = "memory", feature = "mongodb"))]
mod any;
#[cfg(any(feature = "memory", feature = "mongodb"))]
mod any_txn;

#[cfg(any(feature = "memory", feature = "mongodb"))]
pub use any::AnyStore;
#[cfg(any(feature = "memory", feature = "mongodb"))]
pub use any_txn::AnyTxn;
#[cfg(feature = "memory")]
pub use pattern_memory::{MemoryPlan, MemoryStore, MemoryTxn};
#[cfg(feature = "mongodb")]
pub use pattern_mongo::{MongoStore, MongoTxn, DEFAULT_SERVER_SELECTION_TIMEOUT};
