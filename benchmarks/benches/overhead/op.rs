//! The operations compared, and the two sides.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    BucketPush,
    /// The bucket push again, the driver side on a collection with the library's indexes.
    BucketPushSameIndexes,
    /// The bucket push again, the driver side on the library's indexes sending what the
    /// library sends: the same guard on the page number, the time bounds kept (`$min`/`$max`),
    /// the page number and the mark set on insert.
    BucketPushKept,
    /// The same with a summary kept too (the total quantity, `$inc` in the same update).
    BucketPushTotals,
    /// The same with the key's roll-up (`#[bucket(rollup)]`): the driver side sends both
    /// updates in one client `bulkWrite`, as the library does.
    BucketPushRollup,
    BucketPage,
    OutlierPush,
    TypicalRead,
    OutlierRead,
}

pub(crate) const OPS: [Op; 9] = [
    Op::BucketPush,
    Op::BucketPushSameIndexes,
    Op::BucketPushKept,
    Op::BucketPushTotals,
    Op::BucketPushRollup,
    Op::BucketPage,
    Op::OutlierPush,
    Op::TypicalRead,
    Op::OutlierRead,
];

impl Op {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::BucketPush => "bucket_push",
            Op::BucketPushSameIndexes => "bucket_push_ix",
            Op::BucketPushKept => "bucket_push_kept",
            Op::BucketPushTotals => "bucket_push_totals",
            Op::BucketPushRollup => "bucket_push_rollup",
            Op::BucketPage => "bucket_page",
            Op::OutlierPush => "outlier_push",
            Op::TypicalRead => "typical_read",
            Op::OutlierRead => "outlier_read",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Library,
    Driver,
}

impl Side {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Side::Library => "library",
            Side::Driver => "driver",
        }
    }
}
