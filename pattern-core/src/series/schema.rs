//! The `$jsonSchema` a series' documents pass: what its validator installs.

use super::{ROLLUP_ITEMS, ROLLUP_STALE, ROLLUP_SUMMARIZED};
use crate::codec::BsonType;
use crate::spec::{SeriesSpec, BOUNDED_FIELD, SUMMARIZED_FIELD};
use crate::store::query::Schema;

impl<'a> SeriesSpec<'a> {
    /// The schema every document the series writes passes, and the seed's buckets too: the
    /// key (required; of `key_types`, any type when empty), the count (required, an `int` or
    /// `long` in `0..=size`), the items (required, an array of at most `size`), the number
    /// (optional: unnumbered documents come first; an `int` or `long` from 1), and what the
    /// series keeps beside its items: the time bounds (`date`s) and their mark (`bool`), the
    /// summary's values (numbers) and mark (an array of strings), each optional (documents
    /// written before they were kept lack them). The roll-ups are not among them: they have a
    /// collection of their own.
    pub(crate) fn schema(&self, key_types: &[BsonType]) -> Schema {
        let size = i64::from(self.size);
        let mut s = Schema::object()
            .require(self.key_field)
            .require(self.count_field)
            .require(self.items_field);
        if !key_types.is_empty() {
            s = s.property(self.key_field, Schema::of(key_types));
        }
        s = s
            .property(
                self.count_field,
                Schema::of(BsonType::INTEGERS).range(Some(0), Some(size)),
            )
            .property(
                self.items_field,
                Schema::of(&[BsonType::Array]).max_items(u64::from(self.size)),
            )
            .property(
                self.order.field(),
                Schema::of(BsonType::INTEGERS).range(Some(1), None),
            );
        if let Some((min, max)) = self.keeps.bounds {
            s = s
                .property(BOUNDED_FIELD, Schema::of(&[BsonType::Bool]))
                .property(min, Schema::of(&[BsonType::Date]))
                .property(max, Schema::of(&[BsonType::Date]));
        }
        let names = || Schema::of(&[BsonType::Array]).items(Schema::of(&[BsonType::String]));
        if !self.keeps.summary.is_empty() {
            s = s.property(SUMMARIZED_FIELD, names());
            for agg in self.keeps.summary {
                s = s.property(agg.field, Schema::of(&[BsonType::Number]));
            }
        }
        s
    }

    /// The roll-ups' collection and the schema its documents pass (`None`: no roll-ups): the
    /// key as `_id` (of `key_types`, any type when empty), the item count (an `int` or `long`
    /// from 0), the aggregates' names (strings), the stale mark (`bool`) and the aggregates
    /// (numbers), each but the `_id` optional (a stale mark may be written before the rest).
    pub(crate) fn rollup_schema(&self, key_types: &[BsonType]) -> Option<(&'a str, Schema)> {
        let rollups = self.keeps.rollup?;
        let names = Schema::of(&[BsonType::Array]).items(Schema::of(&[BsonType::String]));
        let mut s = Schema::object()
            .require("_id")
            .property(
                ROLLUP_ITEMS,
                Schema::of(BsonType::INTEGERS).range(Some(0), None),
            )
            .property(ROLLUP_SUMMARIZED, names)
            .property(ROLLUP_STALE, Schema::of(&[BsonType::Bool]));
        if !key_types.is_empty() {
            s = s.property("_id", Schema::of(key_types));
        }
        for agg in self.keeps.summary {
            s = s.property(agg.field, Schema::of(&[BsonType::Number]));
        }
        Some((rollups, s))
    }
}
