//! The arguments several subcommands share: the layouts (the derives' attributes, with their
//! defaults), the money fields, and how a migration runs.

use clap::builder::TypedValueParser;
use clap::Args;
use pattern_core::adopt::DEFAULT_BATCH_ITEMS;

/// The outlier layout (the derive's attributes, with its defaults).
#[derive(Args, Debug)]
pub(crate) struct OutlierLayout {
    /// The main collection.
    #[arg(long)]
    pub collection: String,
    /// The array field.
    #[arg(long)]
    pub array: String,
    /// The field flagging a document that has overflow.
    #[arg(long, default_value = "has_extras")]
    pub flag: String,
    /// The field of an overflow chunk holding its main document's `_id` [default:
    /// <collection>_id].
    #[arg(long, alias = "reference")]
    pub owner: Option<String>,
    /// The array field of an overflow chunk [default: <array>_extra].
    #[arg(long)]
    pub extra: Option<String>,
    /// Items per overflow chunk.
    #[arg(long, default_value_t = pattern_core::outlier::DEFAULT_CHUNK, value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub chunk: u32,
    /// The field counting a chunk's items.
    #[arg(long = "chunk-count", default_value = "count")]
    pub chunk_count: String,
    /// The field numbering a parent's chunks.
    #[arg(long, default_value = "seq")]
    pub seq: String,
}

// The outlier layout with its threshold and overflow collection: `verify outlier`'s and
// `indexes outlier`'s arguments, and `migrate outlier`'s before how it runs. A plain comment:
// a doc comment would be clap's `about`.
#[derive(Args, Debug)]
pub(crate) struct OutlierArgs {
    #[command(flatten)]
    pub layout: OutlierLayout,
    /// Items kept in the main document at most.
    #[arg(long, value_parser = threshold_parser())]
    pub threshold: u32,
    /// The overflow collection.
    #[arg(long)]
    pub overflow: String,
}

/// The bucket layout's fields (the derive's attributes, with its defaults).
#[derive(Args, Debug)]
pub(crate) struct BucketFields {
    /// The key field (in the buckets, and in a flat source).
    #[arg(long)]
    pub key: String,
    /// The array field of a bucket.
    #[arg(long, default_value = "history")]
    pub items: String,
    /// Items per bucket.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub size: u32,
    /// The field counting a bucket's items.
    #[arg(long, default_value = "count")]
    pub count: String,
    /// The field numbering a key's buckets 1, 2, 3...
    #[arg(long, default_value = "page")]
    pub page: String,
}

/// A money field and its old form.
#[derive(Args, Debug)]
pub(crate) struct MoneyFields {
    /// The collection, converted in place.
    #[arg(long)]
    pub collection: String,
    /// The old field (top level).
    #[arg(long)]
    pub from: String,
    /// The old field holds integers scaled by 10^SCALE (1999 at scale 2 = 19.99).
    #[arg(long, value_name = "SCALE", required_unless_present = "text", conflicts_with = "text",
          value_parser = clap::value_parser!(u32).range(0..=28))]
    pub scaled: Option<u32>,
    /// The old field holds display strings ("24.95").
    #[arg(long)]
    pub text: bool,
    /// The new field, a Decimal128 (top level).
    #[arg(long)]
    pub to: String,
}

/// How a migration runs.
#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// Items written per transaction at most (one checkpoint each).
    #[arg(long, default_value_t = DEFAULT_BATCH_ITEMS, value_parser = clap::value_parser!(u64).range(1..).map(|n| n as usize))]
    pub batch: usize,
    /// Read everything, write nothing (no checkpoint, no index), report what would change.
    #[arg(long)]
    pub dry_run: bool,
    /// Skip the verification at the end.
    #[arg(long)]
    pub no_verify: bool,
}

/// An outlier threshold: at least 1, at most what a BSON int holds.
pub(super) fn threshold_parser() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=i32::MAX as i64)
}
