//! Transactions: the contract's [`Transaction`] and the retrying [`transaction`] helper.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::Store;
use crate::{Error, Result};

/// A boxed, sendable future: what the closure given to [`transaction`] returns
/// (`Box::pin(async move { ... })`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How many times [`transaction`] runs its work before it returns [`Error::Contention`]: with
/// the backoff, about 5 s of conflicts. (The MongoDB driver's `withTransaction` keeps trying
/// for 120 s; 50 attempts, about 2.5 s, gave up under load on a 2-core machine, 16 tasks
/// inserting under one tree node.)
pub const TRANSACTION_ATTEMPTS: u32 = 100;

/// A snapshot transaction, itself a [`Store`]: its reads see the data as it was when it
/// started plus its own writes, and its writes become visible to others all at once when it
/// commits, or never.
///
/// Both stores detect conflicts as MongoDB does: a transaction that writes a document another
/// transaction has written and not yet committed, or that another writer changed after this
/// transaction started, fails at once with [`Error::WriteConflict`] (the first writer wins).
/// Two transactions that read overlapping data and write different documents both commit
/// (snapshot isolation allows write skew): make them conflict by writing a common document.
pub trait Transaction: Store<Txn = Self> + Sized {
    /// Commits every write of the transaction. An [`Error::WriteConflict`] means nothing was
    /// kept.
    fn commit(&self) -> impl Future<Output = Result<()>> + Send;

    /// Discards every write of the transaction.
    fn abort(&self) -> impl Future<Output = Result<()>> + Send;

    /// The server session the transaction runs in (MongoDB's `lsid`), for
    /// [`Store::kill_sessions`] from another process should this one die mid-transaction;
    /// `None` for a store without server sessions.
    fn session_id(&self) -> impl Future<Output = Option<bson::Document>> + Send {
        async { None }
    }
}

/// Runs `work` in a transaction on `store` and commits it; retries the whole of it when it
/// conflicts with another writer ([`Error::WriteConflict`]), with a randomized backoff, at
/// most [`TRANSACTION_ATTEMPTS`] times, then returns [`Error::Contention`]. Any other error
/// aborts the transaction and is returned as it is. When `store` is a transaction already,
/// `work` runs once inside it (the outer transaction commits and retries).
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

/// [`transaction_with`] that gives up after `attempts` conflicts ([`Error::Contention`], with
/// `attempts` in it), for a caller that has something better to do than wait: a batch of
/// independent writes that conflicts again and again can be split and each part retried.
pub async fn transaction_tries<S, C, T, F>(
    store: &S,
    attempts: u32,
    context: &mut C,
    mut work: F,
) -> Result<T>
where
    S: Store,
    C: Send + ?Sized,
    F: for<'t> FnMut(&'t S::Txn, &'t mut C) -> BoxFuture<'t, Result<T>> + Send,
    T: Send,
{
    if let Some(tx) = store.current_transaction() {
        return work(tx, context).await;
    }
    let mut last = String::new();
    for attempt in 0..attempts.max(1) {
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt)).await;
        }
        let tx = store.start_transaction().await?;
        let result = match work(&tx, &mut *context).await {
            Ok(value) => tx.commit().await.map(|()| value),
            Err(e) => {
                // The error that ended the work is the one to report; an abort that fails
                // (the server already dropped the transaction) changes nothing.
                let _ = tx.abort().await;
                Err(e)
            }
        };
        match result {
            Err(Error::WriteConflict { message, .. }) => last = message,
            done => return done,
        }
    }
    Err(Error::Contention {
        attempts: attempts.max(1),
        what: format!("a transaction kept conflicting with other writers (last: {last})"),
    })
}

/// Full jitter over an exponential ceiling: 1 ms after the first conflict, doubling to 100 ms.
fn backoff(attempt: u32) -> Duration {
    let ceiling_us = (1_000u64 << attempt.min(7)).min(100_000);
    Duration::from_micros(jitter(ceiling_us))
}

/// A number in `0..=ceiling`, from the clock and a per-thread counter (no RNG dependency).
fn jitter(ceiling: u64) -> u64 {
    use std::cell::Cell;
    use std::hash::{BuildHasher, Hasher};
    thread_local!(static SEED: Cell<u64> = const { Cell::new(0) });
    let n = SEED.with(|s| {
        s.set(s.get().wrapping_add(1));
        s.get()
    });
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish() % (ceiling + 1)
}
