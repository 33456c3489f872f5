//! The write paths of the types whose writes change other documents: a child with a computed
//! parent or a subset, a type holding extended references, a type others hold copies of. Each
//! write is one transaction that writes the document and what depends on it: the parents'
//! aggregates and subsets, the copies it holds (filled from their sources), the copies others
//! hold of it (or, past the fan-out, the propagation recorded and run after the commit).

use bson::{Bson, Document as BsonDocument};

use super::reference::{self, REFERENCES};
use super::{computed, find_by_id, subset, Document};
use crate::adopt::Options;
use crate::store::query::{Filter, FindOptions, Update};
use crate::store::{transaction_with, BoxFuture, Store};
use crate::{Error, Result};

/// Whether `D`'s writes take these paths.
pub(super) fn applies<D: Document>() -> bool {
    D::COMPUTED.is_some()
        || D::SUBSET.is_some()
        || !D::REFERENCES.is_empty()
        || !D::REFERENCED_BY.is_empty()
}

/// How many times a write is run again when two first references to one source created its
/// entry at once (the loser's upsert is a duplicate key).
const ENTRY_RACES: u32 = 3;

/// [`transaction_with`], run again when it lost the race to create a source's entry in
/// [`REFERENCES`].
async fn run<S, C, T, F>(store: &S, ctx: &mut C, mut work: F) -> Result<T>
where
    S: Store,
    C: Send,
    T: Send,
    F: for<'t> FnMut(&'t S::Txn, &'t mut C) -> BoxFuture<'t, Result<T>> + Send,
{
    let mut attempt = 0;
    loop {
        match transaction_with(store, ctx, &mut work).await {
            Err(Error::DuplicateKey { collection, .. })
                if collection == REFERENCES && attempt + 1 < ENTRY_RACES =>
            {
                attempt += 1;
            }
            done => return done,
        }
    }
}

/// In a write's transaction, after it: the parents' aggregates and subsets adjusted, the
/// copies of this document brought in line; whether a propagation was left for after the
/// commit.
async fn after_write<D: Document, T: Store>(
    tx: &T,
    id: &Bson,
    before: Option<&BsonDocument>,
    after: Option<&BsonDocument>,
) -> Result<bool> {
    if let Some(c) = D::COMPUTED {
        computed::adjust::<D, T>(tx, &c, before, after).await?;
    }
    if let Some(s) = D::SUBSET {
        subset::adjust::<D, T>(tx, &s, before, after).await?;
    }
    reference::propagate_in::<D, T>(tx, id, before, after).await
}

/// After a commit that recorded a propagation: run it now, unless the type defers it.
async fn finish<D: Document, S: Store>(store: &S, id: &Bson, recorded: bool) -> Result<()> {
    if recorded && !D::PROPAGATION.deferred {
        reference::propagate::<D, S>(store, Some(id), &Options::default()).await?;
    }
    Ok(())
}

pub(super) async fn insert<D: Document, S: Store>(store: &S, doc: BsonDocument) -> Result<()> {
    let mut ctx = doc;
    run(store, &mut ctx, |tx, doc| {
        Box::pin(async move {
            let mut doc = doc.clone();
            reference::fill::<D, _>(tx, None, &mut doc).await?;
            tx.insert_one(D::COLLECTION, doc.clone()).await?;
            let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
            after_write::<D, _>(tx, &id, None, Some(&doc)).await
        })
    })
    .await
    .map(|_| ())
}

pub(super) async fn save<D: Document, S: Store>(
    store: &S,
    id: Bson,
    doc: BsonDocument,
) -> Result<()> {
    let mut ctx = (id, doc);
    let recorded = run(store, &mut ctx, |tx, (id, doc)| {
        Box::pin(async move {
            let before = find_by_id(tx, D::COLLECTION, id).await?;
            let mut doc = doc.clone();
            reference::fill::<D, _>(tx, before.as_ref(), &mut doc).await?;
            let by_id = Filter::Eq("_id".into(), id.clone());
            tx.replace_one(D::COLLECTION, &by_id, doc.clone(), true)
                .await?;
            after_write::<D, _>(tx, id, before.as_ref(), Some(&doc)).await
        })
    })
    .await?;
    finish::<D, S>(store, &ctx.0, recorded).await
}

pub(super) async fn update<D: Document, S: Store>(
    store: &S,
    filter: Filter,
    update: Update,
) -> Result<bool> {
    let mut ctx = (filter, update);
    let done = run(store, &mut ctx, |tx, (filter, update)| {
        Box::pin(async move {
            let one = FindOptions {
                limit: Some(1),
                ..FindOptions::default()
            };
            let Some(before) = tx.find(D::COLLECTION, filter, &one).await?.pop() else {
                return Ok(None);
            };
            let id = before.get("_id").cloned().unwrap_or(Bson::Null);
            let by_id = Filter::Eq("_id".into(), id.clone());
            let mut u = update.clone();
            tx.update_one(D::COLLECTION, &by_id, &mut u, false).await?;
            let mut after = find_by_id(tx, D::COLLECTION, &id).await?;
            if let Some(a) = after.as_mut() {
                if reference::fill::<D, _>(tx, Some(&before), a).await? {
                    tx.replace_one(D::COLLECTION, &by_id, a.clone(), false)
                        .await?;
                }
            }
            let recorded = after_write::<D, _>(tx, &id, Some(&before), after.as_ref()).await?;
            Ok(Some((id, recorded)))
        })
    })
    .await?;
    match done {
        None => Ok(false),
        Some((id, recorded)) => finish::<D, S>(store, &id, recorded).await.map(|()| true),
    }
}

pub(super) async fn delete<D: Document, S: Store>(store: &S, id: Bson) -> Result<bool> {
    let mut ctx = id;
    let done = run(store, &mut ctx, |tx, id| {
        Box::pin(async move {
            let Some(before) = find_by_id(tx, D::COLLECTION, id).await? else {
                return Ok(None);
            };
            tx.delete_many(D::COLLECTION, &Filter::Eq("_id".into(), id.clone()))
                .await?;
            after_write::<D, _>(tx, id, Some(&before), None)
                .await
                .map(Some)
        })
    })
    .await?;
    match done {
        None => Ok(false),
        Some(recorded) => finish::<D, S>(store, &ctx, recorded).await.map(|()| true),
    }
}
