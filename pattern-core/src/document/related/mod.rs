//! The related patterns: what one document keeps of others, kept exact by every write of
//! theirs in the same transaction. A parent's aggregates of its children (`computed`), a
//! parent's first children embedded (`subset`), and extended references: copies of a source's
//! fields in the documents that point to it (`reference`). Each is a stage of the write
//! pipeline (`write/`): a child's or a source's write adjusts what others keep of it.

use bson::Bson;

use crate::store::Store;
use crate::Result;

pub(crate) mod computed;
pub(crate) mod reference;
pub(crate) mod subset;

/// The parent keys of a child write: the child's `key` field before and after it, each `None`
/// where the document or the field is absent or `null` (no parent).
pub(crate) fn parent_keys(
    key: &str,
    before: Option<&bson::Document>,
    after: Option<&bson::Document>,
) -> (Option<Bson>, Option<Bson>) {
    let key_of = |d: Option<&bson::Document>| {
        (d.and_then(|d| d.get(key)))
            .filter(|k| **k != Bson::Null)
            .cloned()
    };
    (key_of(before), key_of(after))
}

/// Parents brought in line by a batch (a follower's keys): `sets` (each parent's `_id` and the
/// fields to set) written to `coll` in one round trip (`write_across`: one `bulkWrite` in a
/// MongoDB transaction); per key of `keys`, whether its parent was among them (by value).
pub(crate) async fn set_each<T: Store>(
    tx: &T,
    coll: &str,
    sets: Vec<(Bson, Vec<(crate::store::query::Path, Bson)>)>,
    keys: &[Bson],
) -> Result<Vec<bool>> {
    use crate::codec::order::value_key;
    let written: std::collections::BTreeSet<Vec<u8>> =
        sets.iter().map(|(id, _)| value_key(id)).collect();
    let writes: Vec<(&str, crate::store::WriteOp)> = (sets.into_iter())
        .map(|(id, set)| {
            let op = crate::store::WriteOp::Update {
                filter: crate::store::query::Filter::Eq("_id".into(), id),
                update: Box::new(crate::store::query::Update {
                    set,
                    ..Default::default()
                }),
                upsert: false,
            };
            (coll, op)
        })
        .collect();
    if !writes.is_empty() {
        tx.write_across(writes, None).await?;
    }
    Ok(keys
        .iter()
        .map(|k| written.contains(&value_key(k)))
        .collect())
}
