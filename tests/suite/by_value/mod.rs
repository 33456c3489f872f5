//! Numbers by value, at every place the library groups, keys or compares a stored value: the
//! same key written by other programs as an Int32 (pymongo's small integers), an Int64 (a Rust
//! `i64`), a Double (`mongosh`) and a Decimal128 is one key, as MongoDB holds it (`$eq`, a
//! unique index, `$group`). Each test writes its keys in the four forms by raw writes, beside
//! the library's own, and checks what a user reads: `verify*` clean, repairs that converge,
//! counts per key, one series per key, one tree node per `_id`. On both stores. The follower's
//! rules are in `follow.rs` (they need a change stream).

use bson::{doc, Bson, Decimal128, Document as BsonDocument};
use pattern_core::store::query::{Filter, Update};
use pattern_core::store::AnyStore;
use pattern_core::{store::Store, Document};
use pattern_tests::on_both_stores;
use serde::{Deserialize, Serialize};

mod documents;
mod series;
mod tree;

/// The integer `n` as each kind of program stores it: an Int32 (pymongo, for a small integer),
/// an Int64 (a Rust `i64`), a Double (`mongosh`) and a Decimal128.
pub(crate) fn forms(n: i64) -> [Bson; 4] {
    [
        Bson::Int32(i32::try_from(n).expect("small")),
        Bson::Int64(n),
        Bson::Double(n as f64),
        Bson::Decimal128(n.to_string().parse::<Decimal128>().expect("a decimal")),
    ]
}

/// Sets `field` of the documents of `coll` matching `filter` to `value` (another program's
/// write, as the server matches it: by value).
pub(crate) async fn raw_set(
    store: &AnyStore,
    coll: &str,
    filter: Filter,
    field: &str,
    value: Bson,
) {
    let update = Update {
        set: vec![(field.into(), value)],
        ..Update::default()
    };
    store.update_many(coll, &filter, &update).await.unwrap();
}

/// A raw insert.
pub(crate) async fn raw_insert(store: &AnyStore, coll: &str, doc: BsonDocument) {
    store.insert_one(coll, doc).await.unwrap();
}
