//! The subset pattern (`#[document(subset(parent = Film, key = film_id, into = recent, keep =
//! 10, order = date))]` on a child type): the parent document embeds the first `keep` of its
//! children by a declared order (newest first: `order` descending, then `_id` descending), all
//! of them stay in the child collection.
//!
//! Every write of a child through the library keeps its parents' subsets in the same
//! transaction. A child new to a parent (inserted, or moved to it) enters by one update of the
//! parent, a `$push` that sorts the subset and cuts it to `keep` (`$sort: {order: -1, _id:
//! -1}, $slice: keep`): the first `keep` of the children and the new one are the first `keep`
//! of them all. A child deleted, changed, or moved away from a parent has its parent's subset
//! rewritten from the children as that transaction sees them (one `find` of the first `keep`
//! through the index `{key: 1, order: -1, _id: -1}`, one `update` of the parent): it leaves
//! the subset and the next one is read back in. [`resubset`] rewrites one parent; [`verify_subsets`] lists the parents
//! whose subset differs from their children's first `keep` (after writes by other tools, or a
//! change of `keep` or `order`: run [`resubset`] over them).

use std::collections::BTreeMap;

use bson::{Bson, Document as BsonDocument};
use futures::StreamExt;
use serde::Serialize;

use crate::codec::order::{value_key, values_equal};
use crate::document::scope::Scope;
use crate::document::{declares, find_by_id, id_bson, set_each, Document, Field};
use crate::error::display_bson;
use crate::store::query::{Filter, FindOptions, IndexSpec, PushSort, Update};
use crate::store::{transaction_with, Store};
use crate::{Error, Result};

/// What a child type's `subset(...)` declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subset {
    /// The parent's collection.
    pub parent: &'static str,
    /// The child's field holding the parent's `_id`.
    pub key: &'static str,
    /// The parent's array field holding the subset (whole child documents).
    pub into: &'static str,
    /// How many children the subset keeps.
    pub keep: u32,
    /// The child's field ordering them, descending (newest or best first); ties by `_id`,
    /// descending.
    pub order: &'static str,
    /// The children: on a variant's type, the documents of its variant only (`None`: every
    /// document of the child collection).
    pub children: Option<Scope>,
}

/// The parent's subset field, typed: a `Vec` of the child type.
pub const fn subset_field<C, P>(f: Field<P, Vec<C>>) -> &'static str {
    f.name()
}

/// The child's order field (any type: BSON order).
pub const fn order_field<C, T>(f: Field<C, T>) -> &'static str {
    f.name()
}

/// The index of the child collection serving the subset's read.
pub(crate) fn indexes(s: &Subset) -> Vec<IndexSpec> {
    vec![IndexSpec {
        name: format!("pattern_subset_{}_1_{}_-1__id_-1", s.key, s.order),
        keys: vec![
            (s.key.to_owned(), 1),
            (s.order.to_owned(), -1),
            ("_id".to_owned(), -1),
        ],
        unique: false,
        partial: None,
    }]
}

/// The `comment` of the subset's read of a parent's children (by the parent's key: on a child
/// collection sharded by `_id`, every shard answers it).
pub const SUBSET_READ: &str = "pattern scatter: subset refill";
/// The `comment` of [`verify_subsets`]'s scans.
pub const SUBSET_VERIFY: &str = "pattern scatter: subset verify";

/// The first `keep` children of each parent in `keys` by the declared order, by the parent
/// key's value (an Int32 and an Int64 name one parent): one `find`, of `keep` children for one
/// parent, of every child of several (cut to `keep` each here).
async fn firsts<S: Store>(
    store: &S,
    children: &str,
    s: &Subset,
    keys: &[Bson],
) -> Result<BTreeMap<Vec<u8>, Vec<Bson>>> {
    let (filter, limit) = match keys {
        [one] => (
            Filter::Eq(s.key.into(), one.clone()),
            Some(i64::from(s.keep)),
        ),
        _ => (Filter::In(s.key.into(), keys.to_vec()), None),
    };
    let opts = FindOptions {
        sort: vec![(s.key.into(), 1), (s.order.into(), -1), ("_id".into(), -1)],
        limit,
        comment: Some(SUBSET_READ),
        ..FindOptions::default()
    };
    let mut out: BTreeMap<Vec<u8>, Vec<Bson>> = BTreeMap::new();
    let filter = Scope::narrow(s.children, filter);
    for kid in store.find(children, &filter, &opts).await? {
        let Some(key) = kid.get(s.key).map(value_key) else {
            continue;
        };
        let first = out.entry(key).or_default();
        if first.len() < s.keep as usize {
            first.push(Bson::Document(kid));
        }
    }
    Ok(out)
}

/// In a child write's transaction: the subsets of the parents of `before` and `after`
/// rewritten from the children the transaction sees.
pub(crate) async fn adjust<D: Document, T: Store>(
    tx: &T,
    s: &Subset,
    before: Option<&BsonDocument>,
    after: Option<&BsonDocument>,
) -> Result<()> {
    let (kb, ka) = super::parent_keys(s.key, before, after);
    if let Some(key) = &kb {
        rewrite::<D, T>(tx, s, key, false).await?;
    }
    // A child that stays with its parent (the key equal by value, whatever its number type) is
    // in the subset rewritten above.
    let moved = |k: &Bson| !kb.as_ref().is_some_and(|b| values_equal(b, k));
    if let (Some(key), Some(child)) = (ka.filter(moved), after) {
        enter(tx, s, &key, child).await?;
    }
    Ok(())
}

/// A child new to the parent `key` put into its subset: pushed, the subset sorted by the
/// declared order and cut to `keep`, in one update. A parent that does not exist is
/// [`Error::NotFound`] (a child is never attached to a missing parent).
async fn enter<T: Store>(tx: &T, s: &Subset, key: &Bson, child: &BsonDocument) -> Result<()> {
    let mut update = Update {
        push: vec![(s.into.into(), vec![Bson::Document(child.clone())])],
        push_sort: vec![PushSort {
            field: s.into.into(),
            by: vec![(s.order.into(), -1), ("_id".into(), -1)],
            keep: s.keep,
        }],
        ..Update::default()
    };
    let parent = Filter::Eq("_id".into(), key.clone());
    let done = tx.update_one(s.parent, &parent, &mut update, false).await?;
    if !done.matched {
        return Err(Error::NotFound {
            collection: s.parent.to_owned(),
            id: display_bson(key),
        });
    }
    Ok(())
}

/// The subset of the parent `key` rewritten from its children. A parent that does not exist
/// is [`Error::NotFound`] when `required` (a write attaching a child to it: an insert, a move
/// to it; [`resubset`]); a child that stays with, or leaves, a parent deleted since (an
/// orphan) has no subset to rewrite.
async fn rewrite<D: Document, T: Store>(
    tx: &T,
    s: &Subset,
    key: &Bson,
    required: bool,
) -> Result<()> {
    let items = (firsts(tx, D::COLLECTION, s, std::slice::from_ref(key)).await?)
        .into_values()
        .next()
        .unwrap_or_default();
    let mut update = Update {
        set: vec![(s.into.into(), Bson::Array(items))],
        ..Update::default()
    };
    let done = tx
        .update_one(
            s.parent,
            &Filter::Eq("_id".into(), key.clone()),
            &mut update,
            false,
        )
        .await?;
    if !done.matched && required {
        return Err(Error::NotFound {
            collection: s.parent.to_owned(),
            id: display_bson(key),
        });
    }
    Ok(())
}

fn subset_of<D: Document>() -> Result<Subset> {
    let attribute =
        "#[document(subset(parent = ..., key = ..., into = ..., keep = N, order = ...))]";
    declares::<D, _>(D::SUBSET, "subset", attribute)
}

#[doc = crate::__document_doc!(resubset)]
pub async fn resubset<D, S, Q>(store: &S, id: &Q) -> Result<()>
where
    D: Document,
    S: Store,
    Q: Serialize + ?Sized,
{
    crate::observe::traced_op!(document.resubset, store, D::COLLECTION, async {
        let s = subset_of::<D>()?;
        let mut ctx = id_bson(id)?;
        transaction_with(store, &mut ctx, |tx, id| {
            Box::pin(async move { rewrite::<D, _>(tx, &s, id, true).await })
        })
        .await
    })
}

#[doc = crate::__document_doc!(verify_subsets)]
pub async fn verify_subsets<D: Document, S: Store>(store: &S) -> Result<Vec<String>> {
    crate::observe::traced_op!(document.verify_subsets, store, D::COLLECTION, async {
        let s = subset_of::<D>()?;
        Ok((drifted(store, D::COLLECTION, &s).await?.iter())
            .map(display_bson)
            .collect())
    })
}

/// [`verify_subsets`] over `children`: the parents' `_id`s as stored.
pub(crate) async fn drifted<S: Store>(store: &S, children: &str, s: &Subset) -> Result<Vec<Bson>> {
    let opts = FindOptions {
        comment: Some(SUBSET_VERIFY),
        ..FindOptions::default()
    };
    let all = Filter::And(vec![]);
    let mut parents = store.scan(s.parent, &all, &opts, 1_000);
    let mut ids = Vec::new();
    while let Some(raw) = parents.next().await {
        let p = raw?
            .to_document()
            .map_err(|e| Error::decode(s.parent, None, e))?;
        ids.push((
            p.get("_id").cloned().unwrap_or(Bson::Null),
            p.get(s.into).cloned(),
        ));
    }
    drop(parents);
    let mut drifted = Vec::new();
    for (id, stored) in ids {
        if !holds(store, children, s, &id, stored).await?.0 {
            drifted.push(id);
        }
    }
    Ok(drifted)
}

/// Whether the subset `stored` of the parent `id` is its first children, and those children.
async fn holds<S: Store>(
    store: &S,
    children: &str,
    s: &Subset,
    id: &Bson,
    stored: Option<Bson>,
) -> Result<(bool, Vec<Bson>)> {
    let want = (firsts(store, children, s, std::slice::from_ref(id)).await?)
        .into_values()
        .next()
        .unwrap_or_default();
    Ok((same_subset(stored.as_ref(), &want), want))
}

/// Whether a stored subset holds `want`, as MongoDB compares them: numbers by value.
fn same_subset(stored: Option<&Bson>, want: &[Bson]) -> bool {
    match stored {
        Some(Bson::Array(have)) => {
            have.len() == want.len() && have.iter().zip(want).all(|(a, b)| values_equal(a, b))
        }
        None => want.is_empty(),
        Some(_) => false,
    }
}

/// In the caller's transaction: the subset of each parent in `keys` rewritten from its children
/// in `children` where it is not their first ones: one `find` of the parents, one of their
/// children ([`firsts`]), and one batch of `update`s of those that differ. Per key, whether its
/// parent was written; a parent that does not exist has no subset.
pub(crate) async fn subsets_in_line<T: Store>(
    tx: &T,
    children: &str,
    s: &Subset,
    keys: &[Bson],
) -> Result<Vec<bool>> {
    let opts = FindOptions {
        projection: vec!["_id".into(), s.into.into()],
        ..FindOptions::default()
    };
    let by_ids = Filter::In("_id".into(), keys.to_vec());
    let parents = tx.find(s.parent, &by_ids, &opts).await?;
    let ids: Vec<Bson> = (parents.iter())
        .filter_map(|p| p.get("_id").cloned())
        .collect();
    let mut firsts = if ids.is_empty() {
        BTreeMap::new()
    } else {
        firsts(tx, children, s, &ids).await?
    };
    let mut sets = Vec::new();
    for parent in &parents {
        let id = parent.get("_id").cloned().unwrap_or(Bson::Null);
        let want = firsts.remove(&value_key(&id)).unwrap_or_default();
        if !same_subset(parent.get(s.into), &want) {
            sets.push((id, vec![(s.into.into(), Bson::Array(want))]));
        }
    }
    set_each(tx, s.parent, sets, keys).await
}

#[doc = crate::__document_doc!(subset)]
pub async fn subset<D, S, Q>(store: &S, id: &Q) -> Result<Option<Vec<D>>>
where
    D: Document,
    S: Store,
    Q: Serialize + ?Sized,
{
    crate::observe::traced_op!(document.subset, store, D::COLLECTION, async {
        let s = subset_of::<D>()?;
        let Some(parent) = find_by_id(store, s.parent, &id_bson(id)?).await? else {
            return Ok(None);
        };
        let items = match parent.get(s.into) {
            Some(Bson::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        items
            .into_iter()
            .map(|b| match b {
                Bson::Document(d) => crate::document::decode_stored::<D>(d).map(|(x, _)| x),
                other => Err(Error::decode(
                    s.parent,
                    parent.get("_id"),
                    format!(
                        "subset `{}` holds {}, not a document",
                        s.into,
                        display_bson(&other)
                    ),
                )),
            })
            .collect::<Result<Vec<D>>>()
            .map(Some)
    })
}
