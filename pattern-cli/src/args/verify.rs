//! `pattern verify outlier|bucket|money`.

use clap::{Args, Subcommand};

use super::layout::{BucketFields, MoneyFields, OutlierArgs};

#[derive(Subcommand, Debug)]
pub(crate) enum Verify {
    /// Main arrays within the threshold, flags exactly on documents with overflow, chunks
    /// numbered 1, 2, 3... with counts matching, no orphans.
    Outlier(OutlierArgs),
    /// Counts matching the arrays, at most `size` items, pages 1, 2, 3..., one open bucket per key.
    Bucket(VerifyBucket),
    /// Every amount a Decimal128 exactly equal to the old field's value (where it remains).
    Money(MoneyFields),
}

#[derive(Args, Debug)]
pub(crate) struct VerifyBucket {
    /// The bucket collection.
    #[arg(long)]
    pub collection: String,
    #[command(flatten)]
    pub fields: BucketFields,
}
