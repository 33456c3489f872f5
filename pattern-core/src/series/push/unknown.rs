//! [`push_one`](super::push_one)'s rarer path, kept out of the common push's future (it is
//! boxed): the key's next number unknown, or taken by another writer.

use bson::Bson;

use super::super::ids::{is_id_taken, IdPrefix, NewIds};
use super::{name_foreign, newest_doc, next_number, number_held_by_foreign, overflowed, remember};
use crate::codec::as_int;
use crate::series::rollup::roll_up;
use crate::spec::SeriesSpec;
use crate::store::shape::Kept;
use crate::store::Store;
use crate::{Error, Result};

/// [`push_one`](super::push_one) with the key's next number unknown (or taken by another
/// writer): the push into the open document that returns its number, or the read of the newest
/// and the insert of the next (the caller boxes this whole future). `None` once the item is pushed; else the number to try next (`Some(None)`: still
/// unknown), the item back in `items`.
pub(super) async fn push_unknown<S: Store, P: IdPrefix + Sync + ?Sized>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    kept: &Kept,
    ids: &mut NewIds<'_, P>,
    items: &mut Vec<Bson>,
) -> Result<Option<Option<i64>>> {
    let coll = spec.collection;
    let spanned = spec.span_bounds().is_some();
    let window = spec.window(kept);
    // The open document's `_id` comes back too: the next document's `_id` must differ from it.
    let fields = [spec.count_field, spec.order.field(), "_id"];
    // The next number unknown: push into the open document returning its number
    // (`findAndModify`), which gives the next one. No hint: the open-document index both
    // filters and sorts, so the planner picks it.
    let open = spec.open_for(key, window);
    let mut update = spec.push_update(std::mem::take(items), kept);
    let pushed = store
        .update_first(
            coll,
            &open,
            &spec.open_order(),
            "",
            &mut update,
            false,
            &fields,
        )
        .await;
    let pushed = match overflowed(spec, kept, pushed) {
        Ok(pushed) => pushed,
        Err(e) => return Err(name_foreign(store, coll, &open, spec.items_field, e).await),
    };
    if let Some(before) = pushed {
        if spanned {
            // Its window's document, not necessarily the newest: the next number is not
            // learned here (it is when a push opens a document).
            return roll_up(store, spec, key, kept, 1, None)
                .await
                .map(|()| None);
        }
        let seq = before.get(spec.order.field()).and_then(as_int);
        let newest = ids.parse(before.get("_id"));
        let count = (before.get(spec.count_field).and_then(as_int))
            .and_then(|c| u32::try_from(c.checked_add(1)?).ok());
        remember(
            store,
            spec,
            key,
            seq.and_then(|n| n.checked_add(1)),
            newest,
            count,
        );
        return roll_up(store, spec, key, kept, 1, None)
            .await
            .map(|()| None);
    }
    // Nothing matched, so nothing moved: the items are back. No open document: read the
    // newest, open the next.
    *items = std::mem::take(&mut update.push[0].1);
    let seq = match newest_doc(store, spec, key).await? {
        Some(doc) if open.matches(&doc) => return Ok(Some(None)), // opened meanwhile: push into it
        Some(doc) => {
            ids.after(ids.parse(doc.get("_id")));
            next_number(store, spec, key, &doc).await?
        }
        None => 1,
    };
    let id = ids.next(store, seq).await?;
    match store
        .insert_one(coll, spec.new_doc(key, id, seq, items, kept))
        .await
    {
        Ok(()) => {
            remember(store, spec, key, seq.checked_add(1), ids.opened(), Some(1));
            roll_up(store, spec, key, kept, 1, None)
                .await
                .map(|()| None)
        }
        // The number is still free: open it under the next free suffix (one upsert).
        Err(e) if is_id_taken(&e) => {
            ids.id_taken();
            Ok(Some(Some(seq)))
        }
        Err(Error::DuplicateKey { .. }) => {
            number_held_by_foreign(store, spec, key, seq).await?;
            ids.collided(seq);
            Ok(Some(None))
        }
        Err(e) => Err(e),
    }
}
