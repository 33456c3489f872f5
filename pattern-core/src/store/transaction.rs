//! Transactions with the library's error: [`transaction`], [`transaction_with`] and
//! [`transaction_tries`], each a call of the store crate's one retrying loop
//! ([`pattern_store::run_transaction`]).

use super::{BoxFuture, Store, TRANSACTION_ATTEMPTS};
use crate::Result;

/// Runs `work` in a transaction on `store` and commits it; retries the whole of it when it
/// conflicts with another writer (the store error
/// [`WriteConflict`](crate::store::Error::WriteConflict)), with a randomized backoff, at most
/// [`TRANSACTION_ATTEMPTS`] times, then returns the store error
/// [`Contention`](crate::store::Error::Contention). Any other error aborts the transaction and
/// is returned as it is. When `store` is a transaction already, `work` runs once inside it
/// (the outer transaction commits and retries).
///
/// `work` may run more than once: it should only read and write through the transaction it
/// is given, and keep no other effects.
///
/// ```
/// use pattern_core::{MemoryStore, store::Store};
/// use pattern_core::store::transaction;
/// use pattern_core::store::query::{Filter, Update};
/// # tokio_test_run(async {
/// let store = MemoryStore::new();
/// store.insert_one("accounts", bson::doc! {"_id": "a", "balance": 10}).await?;
/// store.insert_one("accounts", bson::doc! {"_id": "b", "balance": 0}).await?;
/// // Both updates commit together, or neither does.
/// transaction(&store, |tx| {
///     Box::pin(async move {
///         let mut take = Update { inc: vec![("balance".into(), -5)], ..Update::default() };
///         tx.update_one("accounts", &Filter::eq("_id", "a"), &mut take, false).await?;
///         let mut give = Update { inc: vec![("balance".into(), 5)], ..Update::default() };
///         tx.update_one("accounts", &Filter::eq("_id", "b"), &mut give, false).await?;
///         Ok(())
///     })
/// })
/// .await?;
/// # Ok::<(), pattern_core::Error>(())
/// # });
/// # fn tokio_test_run<F: std::future::Future<Output = pattern_core::Result<()>>>(f: F) {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f).unwrap()
/// # }
/// ```
pub async fn transaction<S, T, F>(store: &S, mut work: F) -> Result<T>
where
    S: Store,
    F: for<'t> FnMut(&'t S::Txn) -> BoxFuture<'t, Result<T>> + Send,
    T: Send,
{
    transaction_with(store, &mut (), |tx, _| work(tx)).await
}

/// [`transaction`] with a context the work borrows: `work(tx, context)` may hold on to
/// references into `context` (which [`transaction`]'s `'static` closure cannot), e.g. a slice of
/// items to write or a `&mut` counter, as the mongodb driver's `and_run` does.
///
/// ```
/// use pattern_core::{MemoryStore, store::Store};
/// use pattern_core::store::transaction_with;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let orders = vec![bson::doc! {"_id": 1}, bson::doc! {"_id": 2}];
/// let mut attempts = 0;
/// transaction_with(&store, &mut (&orders, &mut attempts), |tx, (orders, attempts)| {
///     Box::pin(async move {
///         **attempts += 1;
///         for o in orders.iter() {
///             tx.insert_one("orders", o.clone()).await?;
///         }
///         Ok(())
///     })
/// })
/// .await?;
/// assert_eq!(attempts, 1);
/// # Ok::<(), pattern_core::Error>(())
/// # }).unwrap();
/// ```
pub async fn transaction_with<S, C, T, F>(store: &S, context: &mut C, work: F) -> Result<T>
where
    S: Store,
    C: Send + ?Sized,
    F: for<'t> FnMut(&'t S::Txn, &'t mut C) -> BoxFuture<'t, Result<T>> + Send,
    T: Send,
{
    transaction_tries(store, TRANSACTION_ATTEMPTS, context, work).await
}

/// [`transaction_with`] that gives up after `attempts` conflicts (the store error
/// [`Contention`](crate::store::Error::Contention), with `attempts` in it), for a caller that
/// has something better to do than wait: a batch of independent writes that conflicts again
/// and again can be split and each part retried.
pub async fn transaction_tries<S, C, T, F>(
    store: &S,
    attempts: u32,
    context: &mut C,
    work: F,
) -> Result<T>
where
    S: Store,
    C: Send + ?Sized,
    F: for<'t> FnMut(&'t S::Txn, &'t mut C) -> BoxFuture<'t, Result<T>> + Send,
    T: Send,
{
    pattern_store::run_transaction(store, attempts, context, work).await
}
