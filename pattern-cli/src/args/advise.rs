//! `pattern advise`.

use clap::Args;
use pattern_core::adopt::advise::{DEFAULT_SAMPLE, MAX_SAMPLE};

#[derive(Args, Debug)]
pub(crate) struct Advise {
    /// A collection to read (repeatable); without it, every collection of the database but the
    /// library's own (`pattern_*`).
    #[arg(long = "collection", value_name = "NAME")]
    pub collections: Vec<String>,
    /// Documents sampled per collection at most (`$sample`; the whole collection when it holds
    /// no more).
    #[arg(long, default_value_t = DEFAULT_SAMPLE,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_SAMPLE)))]
    pub sample: u32,
}
