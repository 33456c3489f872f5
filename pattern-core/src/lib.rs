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
//! conversion, [`adopt::convert_money`]) and [`LocalTime`] (a UTC date with the client's
//! offset beside it).
//!
//! Each derive's documentation is its pattern's reference; the [`guide`] has the chapters on
//! stores and errors, transactions, sharding, validators, adopting existing data, money and time,
//! and naming.
//!
//! # Which pattern for which problem
//!
//! MongoDB's twelve schema design patterns, and the archive, with what implements each here.
//! `pattern advise` ([`guide::advise`]) finds the first six in a live database and writes their
//! code.
//!
//! | problem | pattern | derive | chapter |
//! |---|---|---|---|
//! | an array small in most documents and huge in a few (a best-seller's buyers), documents near 16 MiB | outlier | [`#[derive(Outlier)]`](macro@Outlier) | [`Outlier`](macro@Outlier) |
//! | one document per event (trades, readings): millions of small documents, a key's history in as many reads | bucket | [`#[derive(Bucket)]`](macro@Bucket) | [`Bucket`](macro@Bucket) |
//! | many similar fields, each in few documents and each wanting its own index (a product's specifications) | attribute | `#[document(attributes)]` on a field of [`#[derive(Document)]`](macro@Document) | [`guide::polymorphic`] |
//! | documents of several shapes in one collection (books, shirts, cables) | polymorphic | [`#[derive(Document)]`](macro@Document) on a serde internally tagged enum | [`guide::polymorphic`] |
//! | a document's shape changes from one release to the next, old and new builds side by side | schema versioning | `#[document(version = N, previous(...))]` | [`guide::evolving`] |
//! | categories, folders, org charts: parents, children, subtrees moved | tree | [`#[derive(Tree)]`](macro@Tree) | [`Tree`](macro@Tree) |
//! | every change kept with its revision (audit, undo, a write that must not overwrite another) | document versioning | `#[document(history = "...")]` | [`guide::evolving`] |
//! | the same totals recomputed on every read (a film's review count and average) | computed | `#[document(computed(...))]` on the child type | [`guide::computed`] |
//! | a parent embedding all its children (every review of a film) | subset | `#[document(subset(...))]` on the child type | [`guide::subset`] |
//! | a join on every read for a few fields of another document (the director's name) | extended reference | [`#[derive(Reference)]`](macro@Reference) and `#[document(reference)]` | [`Reference`](macro@Reference) |
//! | a counter written on every event (page views) | approximation | `#[document(approximate(every = N))]` | [`guide::approximation`] |
//! | a structure known in advance (a seat map, a month of daily slots) | preallocation | no derive of its own: a [`Document`](macro@Document) type holding the slots, inserted whole | [`Document`](macro@Document) |
//! | old data in the working set | archive | `#[document(archive(...))]`, [`bucket::archive`] | [`Document`](macro@Document), [`Bucket`](macro@Bucket) |
//! | which of these a database needs, and where | | `pattern advise` | [`guide::advise`] |

pub mod adopt;
pub mod bucket;
mod codec;
pub mod document;
pub mod follow;
use pattern_store::error;
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

// What an application uses: the patterns' traits (and, below, their derives), the stores, the
// one error, and the values reads return. What a custom store implements is in [`store`],
// the layouts as data in [`spec`].
pub use bucket::{Bucket, Counts, Page};
pub use document::{Document, Reference};
/// What each variant means, whether to retry it and what each operation can return:
/// [`guide::errors`].
#[doc(inline)]
pub use error::Error;
pub use error::{Missing, ReferencedBy, Result, StoredVariant, VariantChange};
pub use local_time::{LocalTime, LocalTimeError};
pub use outlier::{Outlier, Typical};
#[cfg(any(feature = "memory", feature = "mongodb"))]
pub use store::AnyStore;
#[cfg(feature = "memory")]
pub use store::MemoryStore;
#[cfg(feature = "mongodb")]
pub use store::MongoStore;
pub use store::{transaction, transaction_with};
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
    pub use core::borrow::Borrow;
    pub use core::option::Option;
    pub use core::result::Result;
    pub use futures::Stream;
    pub use {bson, serde};
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
