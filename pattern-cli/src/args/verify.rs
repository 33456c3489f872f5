//! `pattern verify outlier|bucket|money`.

use clap::{Args, Subcommand};

use super::layout::{threshold_parser, BucketFields, MoneyFields, OutlierLayout};

#[derive(Subcommand, Debug)]
pub(crate) enum Verify {
    /// Main arrays within the threshold, flags exactly on documents with overflow, chunks
    /// numbered 1, 2, 3... with counts matching, no orphans.
    Outlier(VerifyOutlier),
    /// Counts matching the arrays, at most `size` items, pages 1, 2, 3..., one open bucket per key.
    Bucket(VerifyBucket),
    /// Every amount a Decimal128 exactly equal to the old field's value (where it remains).
    Money(MoneyFields),
}

// The outlier layout with its threshold and overflow collection (also `indexes outlier`'s
// arguments). A plain comment: a doc comment would be clap's `about`.
#[derive(Args, Debug)]
pub(crate) struct VerifyOutlier {
    #[command(flatten)]
    pub layout: OutlierLayout,
    /// Items kept in the main document at most.
    #[arg(long, value_parser = threshold_parser())]
    pub threshold: u32,
    /// The overflow collection.
    #[arg(long)]
    pub overflow: String,
}

#[derive(Args, Debug)]
pub(crate) struct VerifyBucket {
    /// The bucket collection.
    #[arg(long)]
    pub collection: String,
    #[command(flatten)]
    pub fields: BucketFields,
}
