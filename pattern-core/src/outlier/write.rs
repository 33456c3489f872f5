//! Writes of the outlier pattern: the conditional push to the main document, the flag, and the
//! overflow's chunks through the series engine.

use bson::Bson;

use super::{by_id, existing_main, main_parts, not_found, validated, Outlier};
use crate::key::KeyRef;
use crate::series;
use crate::spec::OutlierSpec;
use crate::store::query::{Filter, Path, Update};
use crate::store::Store;
use crate::{Error, Result};

#[doc = crate::__outlier_doc!(save)]
pub async fn save<T: Outlier, S: Store>(store: &S, value: &T) -> Result<()> {
    crate::observe::traced_op!(outlier.save, store, T::SPEC.collection, async move {
        let spec = T::SPEC;
        spec.check()?;
        validated::<T, S>(store).await?;
        spec.overflow.ensure_indexes(store).await?;
        let mut doc = bson::to_document(value)
            .map_err(|e| Error::invalid(format!("document does not serialize to BSON: {e}")))?;
        let id = doc
            .get("_id")
            .cloned()
            .ok_or_else(|| Error::invalid("the id field must serialize as `_id`"))?;
        let all = match doc.get_mut(spec.items_field) {
            Some(Bson::Array(a)) => std::mem::take(a),
            None => Vec::new(),
            Some(_) => {
                return Err(Error::invalid(format!(
                    "`{}` must serialize to an array",
                    spec.items_field
                )))
            }
        };
        let t = spec.threshold as usize;
        let (main, rest) = all.split_at(all.len().min(t));
        doc.insert(spec.items_field, main.to_vec());
        doc.remove(spec.flag_field);
        if !rest.is_empty() {
            doc.insert(spec.flag_field, true);
        }
        // Everything that can refuse the new document is checked before the old overflow goes.
        crate::codec::size::check_size(spec.collection, crate::codec::size::document_bytes(&doc))?;
        for item in rest {
            crate::codec::size::check_item_size(spec.overflow.collection, item)?;
        }
        store
            .delete_many(
                spec.overflow.collection,
                &Filter::Eq(spec.overflow.key_field.into(), id.clone()),
            )
            .await?;
        store
            .replace_one(spec.collection, &by_id(&id), doc, true)
            .await?;
        // The overflow was just deleted: its chunks are inserted numbered from 1, without a read.
        series::push_fresh(store, &spec.overflow, &id, rest.to_vec()).await
    })
}

/// Sets the flag on the parent (before any overflow write). `NotFound` when there is none.
async fn flag<S: Store>(store: &S, spec: &OutlierSpec<'_>, id: &Bson) -> Result<()> {
    let mut set = Update {
        set: vec![(Path::from(spec.flag_field), Bson::Boolean(true))],
        ..Update::default()
    };
    if store
        .update_one(spec.collection, &by_id(id), &mut set, false)
        .await?
        .matched
    {
        Ok(())
    } else {
        Err(not_found(spec, id))
    }
}

/// The array holds exactly `len` items (at most `len` and at least `len`) and is not flagged:
/// a compare-and-set on its length.
fn main_has_len(spec: &OutlierSpec<'_>, id: &Bson, len: usize) -> Filter {
    let mut conds = vec![
        by_id(id),
        Filter::Exists(format!("{}.{}", spec.items_field, len).into(), false),
        Filter::Ne(Path::from(spec.flag_field), Bson::Boolean(true)),
    ];
    if len > 0 {
        conds.push(Filter::Exists(
            format!("{}.{}", spec.items_field, len - 1).into(),
            true,
        ));
    }
    Filter::And(conds)
}

#[doc = crate::__outlier_doc!(push)]
pub async fn push<T: Outlier, S: Store, Q: KeyRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
    item: &T::Item,
) -> Result<()> {
    crate::observe::traced_op!(outlier.push, store, T::SPEC.collection, async move {
        let spec = T::SPEC;
        spec.check()?;
        let id = id.to_key_bson();
        let x = crate::codec::ser::item(item)?;
        crate::codec::size::check_item_size(spec.collection, &x)?;
        validated::<T, S>(store).await?;
        spec.overflow.ensure_indexes(store).await?;
        let room = Filter::and([
            by_id(&id),
            Filter::Exists(
                format!("{}.{}", spec.items_field, spec.threshold - 1).into(),
                false,
            ),
            Filter::Ne(spec.flag_field.into(), Bson::Boolean(true)),
        ]);
        let Some(x) = push_where(store, &spec, &room, &by_id(&id), vec![x]).await? else {
            return Ok(());
        };
        flag(store, &spec, &id).await?;
        series::push(store, &spec.overflow, &id, "", x, &[]).await
    })
}

#[doc = crate::__outlier_doc!(push_many)]
pub async fn push_many<T: Outlier, S: Store, Q: KeyRef<T::Id> + ?Sized>(
    store: &S,
    id: &Q,
    items: &[T::Item],
) -> Result<()> {
    crate::observe::traced_op!(outlier.push_many, store, T::SPEC.collection, async move {
        let spec = T::SPEC;
        spec.check()?;
        let id = id.to_key_bson();
        let mut xs = items
            .iter()
            .map(crate::codec::ser::item)
            .collect::<Result<Vec<_>>>()?;
        for x in &xs {
            crate::codec::size::check_item_size(spec.collection, x)?;
        }
        if xs.is_empty() {
            return Ok(());
        }
        validated::<T, S>(store).await?;
        spec.overflow.ensure_indexes(store).await?;
        let t = spec.threshold as usize;
        let mut done = 0;
        for _ in 0..10_000 {
            let mut doc = existing_main(store, &spec, &id).await?;
            let (main, flagged) = main_parts(&spec, &mut doc)?;
            if flagged || main.len() >= t {
                break;
            }
            let take = (t - main.len()).min(xs.len() - done);
            let cas = main_has_len(&spec, &id, main.len());
            let these = xs[done..done + take].to_vec();
            if push_where(store, &spec, &cas, &cas, these).await?.is_none() {
                done += take;
                if done == xs.len() {
                    return Ok(());
                }
            }
        }
        flag(store, &spec, &id).await?;
        series::push(store, &spec.overflow, &id, "", xs.split_off(done), &[]).await
    })
}

/// `items` pushed to the main document's array where `filter` matches (one `update`): `None`
/// when it matched, else `items` back. A refusal of the server is named by
/// [`series::name_foreign`], which reads the document `named` by.
async fn push_where<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
    filter: &Filter,
    named: &Filter,
    items: Vec<Bson>,
) -> Result<Option<Vec<Bson>>> {
    let mut update = Update {
        push: vec![(spec.items_field.into(), items)],
        ..Update::default()
    };
    match (store.update_one(spec.collection, filter, &mut update, false)).await {
        Ok(outcome) if outcome.matched => Ok(None),
        // Not applied: the update still holds the items.
        Ok(_) => Ok(Some(std::mem::take(&mut update.push[0].1))),
        Err(e) => {
            let (coll, field) = (spec.collection, spec.items_field);
            Err(series::name_foreign(store, coll, named, field, e.into()).await)
        }
    }
}
