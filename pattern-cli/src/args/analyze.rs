//! `pattern analyze outlier|bucket|versions|shapes`.

use clap::{Args, Subcommand};

use super::layout::{threshold_parser, OutlierLayout};

#[derive(Subcommand, Debug)]
pub(crate) enum Analyze {
    /// The arrays of a collection: items per document, sizes, a suggested threshold.
    Outlier(AnalyzeOutlier),
    /// A flat collection (one document per item), or with --buckets a bucket collection:
    /// items per key, sizes, a suggested bucket size.
    Bucket(AnalyzeBucket),
    /// Any collection: how many documents store each schema version (`#[document(version =
    /// N)]`), how many have no version field, how many hold no number there.
    Versions(AnalyzeVersions),
    /// Any collection: its documents' shapes: the discriminator (given, or the string field
    /// that best tells the shapes apart), each value's count and field set, and the keys of
    /// attribute arrays (`[{k, v}, ...]`) with their counts.
    Shapes(AnalyzeShapes),
}

#[derive(Args, Debug)]
pub(crate) struct AnalyzeShapes {
    /// The collection.
    #[arg(long)]
    pub collection: String,
    /// The discriminator field (without it, the one found is reported).
    #[arg(long)]
    pub field: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct AnalyzeOutlier {
    #[command(flatten)]
    pub layout: OutlierLayout,
    /// The threshold to count the documents over.
    #[arg(long, default_value_t = 50, value_parser = threshold_parser())]
    pub threshold: u32,
    /// The overflow collection, to count the overflow of documents flagged already (without
    /// it, only the main arrays are counted).
    #[arg(long)]
    pub overflow: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct AnalyzeBucket {
    /// The collection: flat (one document per item) unless --buckets.
    #[arg(long)]
    pub collection: String,
    /// The key field.
    #[arg(long)]
    pub key: String,
    /// The collection is in the bucket layout already: count each document's array.
    #[arg(long)]
    pub buckets: bool,
    /// The array field of a bucket (with --buckets).
    #[arg(long, default_value = "history")]
    pub items: String,
    /// The bucket size to count the buckets at.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub size: u32,
}

#[derive(Args, Debug)]
pub(crate) struct AnalyzeVersions {
    /// The collection.
    #[arg(long)]
    pub collection: String,
    /// The field holding the schema version (the derive's `version_field`).
    #[arg(long, default_value = "schema_version")]
    pub field: String,
}
