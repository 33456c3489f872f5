//! The `$jsonSchema` a series' documents pass: what its validator installs.

use super::{ROLLUP, ROLLUP_ITEMS, ROLLUP_STALE, ROLLUP_SUMMARIZED};
use crate::codec::BsonType;
use crate::spec::{SeriesSpec, BOUNDED_FIELD, SUMMARIZED_FIELD};
use crate::store::query::Schema;

impl SeriesSpec<'_> {
    /// The schema every document the series writes passes, and the seed's buckets too: the
    /// key (required; of `key_types`, any type when empty), the count (required, an `int` or
    /// `long` in `0..=size`), the items (required, an array of at most `size`), the number
    /// (optional: unnumbered documents come first; an `int` or `long` from 1), and what the
    /// series keeps beside its items: the time bounds (`date`s) and their mark (`bool`), the
    /// summary's values (numbers) and mark (an array of strings), each optional (documents
    /// written before they were kept lack them). With roll-ups, one of that and a key's
    /// roll-up (`oneOf`).
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
        if !self.keeps.rollup {
            return s;
        }
        // A key's roll-up lives among its buckets: its order field holds "rollup" (no bucket's
        // does: a bucket's is a number), it counts the items and keeps the aggregates.
        let mut rollup = Schema::object()
            .require(self.key_field)
            .require(self.order.field())
            .require(ROLLUP_ITEMS)
            .property(
                self.order.field(),
                Schema::of(&[BsonType::String]).values(&[ROLLUP]),
            )
            .property(
                ROLLUP_ITEMS,
                Schema::of(BsonType::INTEGERS).range(Some(0), None),
            )
            .property(ROLLUP_SUMMARIZED, names())
            .property(ROLLUP_STALE, Schema::of(&[BsonType::Bool]));
        if !key_types.is_empty() {
            rollup = rollup.property(self.key_field, Schema::of(key_types));
        }
        for agg in self.keeps.summary {
            rollup = rollup.property(agg.field, Schema::of(&[BsonType::Number]));
        }
        Schema::object().one_of(vec![s, rollup])
    }
}
