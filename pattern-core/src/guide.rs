//! The guide: chapters on what the crate does beyond one derive's reference.
//!
//! Each pattern's reference is on its derive: [`Bucket`](macro@crate::Bucket),
//! [`Outlier`](macro@crate::Outlier), [`Tree`](macro@crate::Tree) and
//! [`Document`](macro@crate::Document) (attributes, generated methods and the commands each
//! sends, layout, indexes). Testing an application on the in-memory store is
//! [`testing`](crate::testing). The chapters here:
//!
//! - [`getting_started`]: from an empty crate to a bucket and an outlier on the in-memory
//!   store, the same on MongoDB, then `pattern advise` on your own database.
//! - [`stores`]: [`MemoryStore`](crate::MemoryStore), `MongoStore`, [`AnyStore`](crate::AnyStore),
//!   what each guarantees, a store of your own, and the one [`Error`](crate::Error).
//! - [`errors`]: every variant of the one [`Error`](crate::Error): when it happens, whether to
//!   retry, what to do; what each family of operations can return.
//! - [`transactions`]: [`transaction`](crate::transaction) and
//!   [`transaction_with`](crate::transaction_with), and what both stores guarantee of them.
//! - [`sharding`]: each layout's shard keys, and what each operation reaches.
//! - [`validators`]: the layouts' `$jsonSchema` validators, enforced by both stores.
//! - [`evolving`]: documents that change shape: schema versioning (reads of every version, the
//!   sweep) and document history (revisions, optimistic concurrency), on `#[derive(Document)]`.
//! - [`polymorphic`]: documents of many shapes: one collection, a discriminator and a Rust enum
//!   (`#[derive(Document)]` on a serde internally tagged enum), and the attribute pattern.
//! - [`computed`]: a parent's aggregates of its children (count, sum, min, max, average),
//!   adjusted by every child write in the same transaction.
//! - [`subset`]: a parent embedding its first few children by a declared order, every child in
//!   its own collection, rewritten by every child write.
//! - [`approximation`]: counters written once every `N` increments, and what a crash loses.
//! - [`follow`]: derived data (copies, computed values, subsets) kept exact under writes by
//!   other programs, from the change stream ([`follow`](crate::follow)).
//! - [`advise`]: which pattern a live database needs, and where: a sample of each collection
//!   read, each finding with its evidence, its code and its commands (`pattern advise`).
//! - [`adoption`]: existing data: analyze, migrate, verify ([`adopt`](crate::adopt), and the
//!   `pattern` command line).
//! - [`money_and_time`]: [`money`](crate::money) (Decimal128, the scaled and string forms, their
//!   conversion) and [`LocalTime`](crate::LocalTime).
//! - [`naming`]: the one naming convention of every derive and free function.
//!
//! Every code example in these chapters runs as a doctest, on the in-memory store.

pub mod getting_started {
    #![doc = include_str!("../docs/getting-started.md")]
}

pub mod stores {
    #![doc = include_str!("../docs/stores.md")]
}

pub mod errors {
    #![doc = include_str!("../docs/errors.md")]
}

pub mod transactions {
    #![doc = include_str!("../docs/transactions.md")]
}

pub mod sharding {
    #![doc = include_str!("../docs/sharding.md")]
}

pub mod validators {
    #![doc = include_str!("../docs/validators.md")]
}

pub mod evolving {
    #![doc = include_str!("../docs/evolving.md")]
}

pub mod polymorphic {
    #![doc = include_str!("../docs/polymorphic.md")]
}

pub mod computed {
    #![doc = include_str!("../docs/computed.md")]
}

pub mod subset {
    #![doc = include_str!("../docs/subset.md")]
}

pub mod approximation {
    #![doc = include_str!("../docs/approximation.md")]
}

pub mod follow {
    #![doc = include_str!("../docs/follow.md")]
}

pub mod advise {
    #![doc = include_str!("../docs/advise.md")]
}

pub mod adoption {
    #![doc = include_str!("../docs/adoption.md")]
}

pub mod money_and_time {
    #![doc = include_str!("../docs/money-and-time.md")]
}

pub mod naming {
    #![doc = include_str!("../docs/naming.md")]
}
