//! MongoDB schema design patterns as derive macros.
//!
//! - [`Bucket`](macro@Bucket): the bucket pattern, a long series stored `size` items per
//!   document, pushed with one conditional upsert and read page by page ([`bucket`]).
//! - [`Outlier`](macro@Outlier): the outlier pattern, an array capped at a threshold in the
//!   main document with the rest in a chunked overflow collection ([`outlier`]).
//! - [`Tree`](macro@Tree): the tree models of the data-modeling article ([`tree`]).
//! - [`Document`](macro@Document): plain documents with typed field paths, conditional
//!   updates and keyword arrays ([`document`]).
//!
//! All run over any [`Store`](store::Store): the embedded [`MemoryStore`] (the default, feature
//! `memory`, nothing to install) or `MongoStore` on the official `mongodb` driver (feature
//! `mongodb`). The two keep the same documents and behave the same; one conformance suite runs
//! against both. The store contract and each store are crates of their own (`pattern-store`,
//! `pattern-memory`, `pattern-mongo`), re-exported here: a store of your own needs
//! `pattern-store` alone.
//!
//! Beside them, the article's other recipes as typed values: [`money`] (`Decimal` stored
//! exactly as Decimal128, the older scaled and string forms read exactly, and their
//! conversion, [`adopt::money::convert_money`]) and [`LocalTime`](document::LocalTime) (a UTC date with the client's
//! offset beside it).
//!
//! Each derive's documentation is its pattern's reference; the [`guide`] lists every chapter,
//! in reading order, starting with [getting started](guide::getting_started).
//!
//! # Which pattern for which problem
//!
#![doc = include_str!("../docs/which-pattern.md")]

pub mod adopt;
pub mod bucket;
mod codec;
pub mod document;
mod error;
pub mod follow;
pub mod guide;
mod key;
mod layout;
mod local_time;
pub mod money;
pub mod observe;
pub mod outlier;
mod pass;
mod series;
pub mod spec;
pub mod store;
pub mod testing;
pub mod tree;
mod validator;

// The root holds what nearly every program names: the patterns' traits (and, below, their
// derives), the one error, and the default store. Everything else is in the module of its
// concept: the other stores and transactions in [`store`], what reads return in the pattern's
// module, the layouts as data in [`spec`].
pub use bucket::Bucket;
pub use document::{Document, Reference};
/// What each variant means, whether to retry it and what each operation can return:
/// [`guide::errors`].
#[doc(inline)]
pub use error::Error;
pub use error::Result;
pub use outlier::Outlier;
#[cfg(feature = "memory")]
pub use store::MemoryStore;
pub use tree::Tree;

#[doc = include_str!("../docs/bucket.md")]
#[cfg(feature = "derive")]
pub use pattern_derive::Bucket;
#[doc = include_str!("../docs/document.md")]
#[cfg(feature = "derive")]
pub use pattern_derive::Document;
#[doc = include_str!("../docs/outlier.md")]
#[cfg(feature = "derive")]
pub use pattern_derive::Outlier;
#[doc = include_str!("../docs/reference.md")]
#[cfg(feature = "derive")]
pub use pattern_derive::Reference;
#[doc = include_str!("../docs/tree.md")]
#[cfg(feature = "derive")]
pub use pattern_derive::Tree;

/// What the derives' generated code refers to. Not a public API.
#[doc(hidden)]
pub mod __private {
    /// Reads an item's time field (`#[bucket(time = "...")]`), in epoch milliseconds.
    pub fn __epoch_millis<T: crate::spec::EpochSeconds + ?Sized>(t: &T) -> Option<i64> {
        t.epoch_millis()
    }
    /// The collections of the trees `store` served in this process (the tests' targeting
    /// check takes them as unsharded).
    pub fn __trees_served<S: crate::store::Store>(store: &S) -> Vec<&'static str> {
        crate::tree::model::served(store)
    }
    pub use core::option::Option;
    pub use core::result::Result;
    pub use futures::Stream;
    pub use {bson, serde};
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
