//! `pattern migrate outlier|bucket|attributes`.

use clap::{Args, Subcommand};

use super::attributes::MigrateAttributes;
use super::layout::{BucketFields, OutlierArgs, RunArgs};

#[derive(Subcommand, Debug)]
pub(crate) enum Migrate {
    /// Move each array's items beyond the threshold into numbered overflow chunks, in place.
    Outlier(MigrateOutlier),
    /// Move a flat collection (one document per item) into buckets of `size` items per key.
    Bucket(MigrateBucket),
    /// Move sparse top-level fields into an array of `{k, v}` pairs (the attribute pattern),
    /// in place, one document at a time.
    Attributes(MigrateAttributes),
}

#[derive(Args, Debug)]
pub(crate) struct MigrateOutlier {
    #[command(flatten)]
    pub outlier: OutlierArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub(crate) struct MigrateBucket {
    /// The flat source collection (one document per item).
    #[arg(long)]
    pub from: String,
    /// The bucket collection to write.
    #[arg(long)]
    pub to: String,
    /// The field holding each item's time (a date, or epoch seconds): the items' order, and
    /// the prefix of the buckets' time bounds (`<time>_min`, `<time>_max`).
    #[arg(long)]
    pub time: String,
    #[command(flatten)]
    pub fields: BucketFields,
    /// Cut buckets by window of time as well as by size, as `#[bucket(span = "...")]` does: a
    /// whole number of s, m, h or d (`1d`, `15m`), from 1s to 366d.
    #[arg(long, value_parser = span_parser)]
    pub span: Option<i64>,
    /// Keep the sum of this item field in each bucket (`<field>_sum`). Repeatable.
    #[arg(long, value_name = "FIELD")]
    pub sum: Vec<String>,
    /// Keep the smallest value of this item field in each bucket (`<field>_min`). Repeatable.
    #[arg(long, value_name = "FIELD")]
    pub min: Vec<String>,
    /// Keep the largest value of this item field in each bucket (`<field>_max`). Repeatable.
    #[arg(long, value_name = "FIELD")]
    pub max: Vec<String>,
    /// Delete the migrated source documents, in the transaction that writes their buckets.
    #[arg(long)]
    pub remove_source: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `--span 1d`: its milliseconds.
fn span_parser(text: &str) -> Result<i64, String> {
    pattern_core::spec::parse_span(text).ok_or_else(|| {
        format!("`{text}` is not a span: a whole number of s, m, h or d from 1s to 366d, like `1d`")
    })
}
