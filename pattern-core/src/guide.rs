//! The guide: the chapters, in reading order. Each pattern's reference is on its derive (its
//! attributes, generated methods and the commands each sends, layout, indexes); the other
//! chapters are the modules here. Every code example in them runs as a doctest, on the
//! in-memory store.
//!
#![doc = include_str!("../docs/chapters.md")]

pub mod getting_started {
    #![doc = include_str!("../docs/getting-started.md")]
}

pub mod time_series {
    #![doc = include_str!("../docs/time-series.md")]
}

pub mod archive {
    #![doc = include_str!("../docs/archive.md")]
}

pub mod stores {
    #![doc = include_str!("../docs/stores.md")]
}

pub mod errors {
    #![doc = include_str!("../docs/errors.md")]
}

pub mod observability {
    #![doc = include_str!("../docs/observability.md")]
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

pub mod advise_run {
    #![doc = include_str!("../docs/advise-run.md")]
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
