//! `pattern indexes outlier|bucket`.

use clap::{Args, Subcommand};

use super::layout::{BucketFields, OutlierArgs};

#[derive(Subcommand, Debug)]
pub(crate) enum Indexes {
    /// The main collection (the layout needs no index there) and the overflow collection.
    Outlier(OutlierArgs),
    /// The bucket collection.
    Bucket(IndexesBucket),
}

#[derive(Args, Debug)]
pub(crate) struct IndexesBucket {
    /// The bucket collection.
    #[arg(long)]
    pub collection: String,
    #[command(flatten)]
    pub fields: BucketFields,
    /// The item's time field, when the buckets keep time bounds (`<time>_min`/`<time>_max`):
    /// they need one more index.
    #[arg(long)]
    pub time: Option<String>,
}
