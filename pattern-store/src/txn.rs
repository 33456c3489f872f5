//! Transactions: the contract's [`Transaction`] and the retrying [`run_transaction`].

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::Store;
use crate::{Error, FromStore, Result};

/// A boxed, sendable future: what the closure given to [`run_transaction`] returns
/// (`Box::pin(async move { ... })`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How many times a transaction's work runs before it returns [`Error::Contention`] (the
/// `attempts` pattern-core's `store::transaction` gives [`run_transaction`]): with
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
/// most `attempts` times, then returns [`Error::Contention`] (with `attempts` in it). Any other
/// error aborts the transaction and is returned as it is. When `store` is a transaction
/// already, `work` runs once inside it (the outer transaction commits and retries).
///
/// `work(tx, context)` may hold on to references into `context`, e.g. a slice of items to
/// write or a `&mut` counter, as the mongodb driver's `and_run` does. It may run more than
/// once: it should only read and write through the transaction it is given, and keep no other
/// effects. Its error is any [`FromStore`] type: the store's [`Error`], or pattern-core's,
/// whose `store::transaction` and `transaction_with` call this one.
pub async fn run_transaction<S, C, T, E, F>(
    store: &S,
    attempts: u32,
    context: &mut C,
    mut work: F,
) -> Result<T, E>
where
    S: Store,
    C: Send + ?Sized,
    F: for<'t> FnMut(&'t S::Txn, &'t mut C) -> BoxFuture<'t, Result<T, E>> + Send,
    T: Send,
    E: FromStore,
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
            Ok(value) => tx.commit().await.map(|()| value).map_err(E::from),
            Err(e) => {
                // The error that ended the work is the one to report; an abort that fails
                // (the server already dropped the transaction) changes nothing.
                let _ = tx.abort().await;
                Err(e)
            }
        };
        match result {
            Err(e) => match e.store_error() {
                Some(Error::WriteConflict { message, .. }) => last = message.clone(),
                _ => return Err(e),
            },
            done => return done,
        }
    }
    Err(Error::Contention {
        attempts: attempts.max(1),
        what: format!("a transaction kept conflicting with other writers (last: {last})"),
    }
    .into())
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
