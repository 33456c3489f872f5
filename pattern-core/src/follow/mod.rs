//! Derived data kept exact under writes by other programs: a follower of the database's change
//! feed (the guide's chapter: [`guide::follow`](crate::guide::follow)).
//!
//! Every write made through this library keeps what the patterns derive (extended-reference
//! copies, computed aggregates, subsets) exact in its own transaction. A write by anything
//! else (a service in another language, `mongosh`, a bulk import) does not. A [`Follower`]
//! reads the database's change stream and, for each change to a collection that feeds derived
//! data, brings the derived data it concerns in line, as the library's own write would have:
//!
//! - the copies of a source whose copied fields changed are refreshed (nulled, for an
//!   optional reference, when it is deleted), and a referencing document written with a copy
//!   that is not its source's gets the source's;
//! - a parent's computed aggregates and its subset are rebuilt from its children when a child
//!   is inserted, deleted, changed or moved, or the parent itself is written;
//! - a document written at an older schema version is counted, and upgraded when the type says
//!   `write_back`;
//! - a key's roll-up is recomputed from its buckets when one of them is written.
//!
//! **Exactly once.** The position in the change stream (its resume token) is written in the
//! same transaction as the derived writes it covers, in the follower's document of
//! `pattern_follow`. A follower killed anywhere starts again after the last change whose
//! derived writes committed: nothing is skipped, and nothing committed is applied twice.
//!
//! **The library's own writes** are recognised by comparing: the follower reads what the
//! change concerns in its transaction and writes only what differs. A change this library
//! made (in line already) is counted as skipped and writes nothing. This needs no marker in
//! the documents, and holds whoever wrote: a foreign tool that happens to keep a copy right
//! is not overwritten either. Two writers at once conflict on the derived document they both
//! write, and the loser's transaction runs again on what the winner committed.
//!
//! **One at a time.** A follower holds a lease on its document, renewed by every commit and
//! every idle second; a second follower of the same name stops with [`Error::LeaseHeld`]
//! while the lease holds, and every commit checks it, so two never both apply.
//!
//! **History lost.** When the stream cannot resume from the stored token (the token is not
//! valid, or the oplog has rolled past it: `ChangeStreamHistoryLost`), and on the first run,
//! the follower opens a new stream, takes its position *before* anything else, runs the
//! whole verify-and-repair pass of every rule, records that position, and goes on from it.
//! Changes made during the pass are applied again after it (in line by then: skipped).
//!
//! It needs a change stream: MongoDB as a replica set or a sharded cluster. On the in-memory
//! store [`Follower::run`] is [`store::Error::Unsupported`](crate::store::Error::Unsupported): only its own process writes there,
//! through the library.

use crate::store::Error as StoreError;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{Bson, Timestamp};
use futures::FutureExt;
use serde::Serialize;

use crate::document::Document;
use crate::store::{
    transaction_tries, Change, ChangeFeed, ChangeOp, Store, Watch, TRANSACTION_ATTEMPTS,
};
use crate::{Error, Result};

mod computed;
mod copies;
mod parents;
mod rollups;
mod rule;
mod state;
mod stored;
mod subset;
mod versions;

use rule::{Applied, Keys, Rule};
pub use state::FOLLOW;
use state::{Lease, Step};

/// Changes applied in one transaction at most, while the follower keeps up.
const DEFAULT_BATCH: usize = 500;
/// Behind (each batch full), a batch grows to this many times the batch size at most.
const BEHIND: usize = 64;
/// Attempts of a batch's transaction before it is split in two.
const BATCH_ATTEMPTS: u32 = 3;
/// Keys a rule brings in line in one call (one read of each collection it derives from).
const KEYS_AT_ONCE: usize = 500;
/// How long a batch waits for more changes after its first.
const GATHER: Duration = Duration::from_millis(20);
/// A change committed longer ago than this is a backlog's: a batch reads on past [`GATHER`].
const OLD: Duration = Duration::from_millis(100);
/// How long a lease holds without a renewal.
const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// What a follower has done since it started (in this process), and how far behind it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Status {
    /// The follower's name (its document's `_id` in `pattern_follow`).
    pub name: String,
    /// Whether it is running now.
    pub running: bool,
    /// The cluster time of the last change whose derived writes committed.
    pub last_applied: Option<Timestamp>,
    /// Changes whose derived data it wrote.
    pub applied: u64,
    /// Changes whose derived data was in line already: the library's own writes, and others'
    /// that change nothing derived.
    pub skipped: u64,
    /// Documents of an older schema version that changes wrote (upgraded when the type says
    /// `write_back`).
    pub older: u64,
    /// Whole verify-and-repair passes: the first run, each time history was lost, and each
    /// batch that checked a rule's whole data set (a followed collection dropped or renamed, a
    /// change whose keys it does not tell, such as a delete without its before-image).
    pub passes: u64,
    /// Derived values the passes wrote.
    pub repaired: u64,
    /// Why the last whole pass ran (its first run, or what the server said of the lost
    /// history).
    pub history_lost: Option<String>,
    /// From the commit of the last change applied to the commit of its derived writes.
    pub lag: Option<Duration>,
}

/// A follower of one database's change stream, keeping the derived data of the types it
/// follows exact (see the [module](self)).
///
/// ```no_run
/// # use pattern_core::{follow::Follower, store::Store};
/// # #[derive(serde::Serialize, serde::Deserialize, pattern_core::Document)]
/// # #[document(collection = "films")]
/// # struct Film { #[serde(rename = "_id")] id: i64 }
/// // `store`: a `MongoStore` on a replica set or a sharded cluster.
/// async fn follow<S: Store>(store: S, shutdown: tokio::sync::oneshot::Receiver<()>)
///     -> pattern_core::Result<()> {
///     let follower = Follower::new(store, "films").follow::<Film>();
///     // Until the application shuts down.
///     follower.run(async { let _ = shutdown.await; }).await
/// }
/// ```
pub struct Follower<S: Store> {
    store: S,
    lease: Lease,
    rules: Vec<Box<dyn Rule<S>>>,
    batch: usize,
    status: Arc<Mutex<Status>>,
    /// The server sessions recorded in the follower's document ([`Lease::record_session`]).
    sessions: Mutex<std::collections::HashSet<Vec<u8>>>,
}

impl<S: Store> std::fmt::Debug for Follower<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("name", &self.lease.name)
            .field("rules", &self.rules())
            .finish()
    }
}

impl<S: Store> Follower<S> {
    /// A follower named `name` (its document in `pattern_follow`; one per database is usual)
    /// on `store`, following nothing yet: add types with [`Follower::follow`].
    pub fn new(store: S, name: impl Into<String>) -> Self {
        let name = name.into();
        static FOLLOWERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
            .map_or(0, |d| d.as_nanos());
        let owner = format!(
            "{}:{}:{nanos:x}:{}",
            hostname(),
            std::process::id(),
            FOLLOWERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        Follower {
            store,
            lease: Lease {
                name: name.clone(),
                owner,
                ttl: DEFAULT_LEASE,
            },
            rules: Vec::new(),
            batch: DEFAULT_BATCH,
            status: Arc::new(Mutex::new(Status {
                name,
                ..Status::default()
            })),
            sessions: Mutex::default(),
        }
    }

    /// Follows what `D` derives or is derived from: the copies in `D`'s reference fields, the
    /// copies of `D` in the types that name it in `referenced_by`, the aggregates and the
    /// subset `D` keeps in its parents. Following a type twice, or both sides of a reference,
    /// keeps each rule once.
    pub fn follow<D: Document + 'static>(mut self) -> Self {
        // Its own copies, and on an enum each variant's.
        for part in crate::document::parts::<D>() {
            for r in part.references {
                self.add(Box::new(copies::Copies {
                    collection: D::COLLECTION,
                    field: r,
                }));
            }
        }
        for part in crate::document::parts::<D>() {
            for r in part.referenced_by {
                self.add(Box::new(copies::Copies {
                    collection: r.collection,
                    field: &r.field,
                }));
            }
        }
        // Its own parents, and on an enum each variant's.
        for part in crate::document::parts::<D>() {
            if let Some(c) = part.computed {
                self.add(Box::new(computed::Aggregates {
                    children: D::COLLECTION,
                    kept: c,
                }));
            }
            if let Some(s) = part.subset {
                self.add(Box::new(subset::Subsets {
                    children: D::COLLECTION,
                    kept: s,
                }));
            }
        }
        if D::VERSIONING.is_some() {
            self.add(Box::new(versions::Versions::<D>::new()));
        }
        self
    }

    /// The follower `name` as the application's last run of it recorded it in `pattern_follow`
    /// (its rules as data), without the types: what the `pattern follow` command runs. The
    /// rules that need their type (schema versions) are not among them.
    /// [`store::Error::InvalidInput`](crate::store::Error::InvalidInput) when no follower of that name ever ran there.
    pub async fn from_stored(store: S, name: impl Into<String>) -> Result<Self> {
        let mut follower = Follower::new(store, name);
        let by_id = crate::store::query::Filter::Eq(
            "_id".into(),
            Bson::String(follower.lease.name.clone()),
        );
        let found = (follower.store)
            .find(FOLLOW, &by_id, &Default::default())
            .await?;
        let Some(rules) = found.first().and_then(|d| d.get_array("rules").ok()) else {
            return Err(Error::invalid(format!(
                "no follower `{}` has run on this database (`{FOLLOW}` has no document of that \
                 name with its rules): run the application's follower once, which records what \
                 it keeps",
                follower.lease.name
            )));
        };
        for rule in stored::rules::<S>(rules)? {
            follower.add(rule);
        }
        Ok(follower)
    }

    /// The names of the followers that ran on `store` (their documents in `pattern_follow`).
    pub async fn names(store: &S) -> Result<Vec<String>> {
        let all = crate::store::query::Filter::And(Vec::new());
        let found = store.find(FOLLOW, &all, &Default::default()).await?;
        Ok((found.iter())
            .filter_map(|d| d.get_str("_id").ok().map(str::to_owned))
            .collect())
    }

    /// Follows the roll-ups `B` keeps (`#[bucket(rollup)]`): a key's roll-up recomputed from its
    /// buckets when another program writes one of them (a bucket whose count or summary it
    /// left as they were is counted as it says: `verify` reports it). Nothing for a type
    /// without roll-ups.
    pub fn follow_buckets<B: crate::bucket::Bucket + ?Sized + 'static>(mut self) -> Self {
        if B::SPEC.series().keeps.rollup.is_some() {
            self.add(Box::new(rollups::Rollups::<B>::new()));
        }
        self
    }

    fn add(&mut self, rule: Box<dyn Rule<S>>) {
        if !self.rules.iter().any(|r| r.name() == rule.name()) {
            self.rules.push(rule);
        }
    }

    /// Changes applied in one transaction at most while the follower keeps up (500 by
    /// default). Behind (every batch full), each batch may be twice the one before, up to 64
    /// times this: a batch reads each parent its changes concern once, whatever their number.
    pub fn batch(mut self, changes: usize) -> Self {
        self.batch = changes.max(1);
        self
    }

    /// How long the lease holds without a renewal (30 s by default): how long a second
    /// follower waits after this one dies before it can take over.
    pub fn lease(mut self, ttl: Duration) -> Self {
        self.lease.ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// What it keeps, one line per rule (`"copies films.director"`).
    pub fn rules(&self) -> Vec<String> {
        self.rules.iter().map(|r| r.name()).collect()
    }

    /// What it has done since it started, and its lag.
    pub fn status(&self) -> Status {
        self.status.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Follows the changes until `stop` resolves (checked between batches), then gives up its
    /// lease. [`Error::LeaseHeld`] when another follower of the same name holds the lease, or
    /// takes it over; [`store::Error::Contention`](crate::store::Error::Contention) when a single change's derived writes kept
    /// conflicting with other writers past every retry (a batch that conflicts is first split,
    /// see the guide's chapter); [`store::Error::Unsupported`](crate::store::Error::Unsupported) on a store without a change feed.
    pub async fn run(&self, stop: impl Future<Output = ()> + Send) -> Result<()> {
        self.follow_until(stop, false).await
    }

    /// Applies every change made before it was called, and returns (for tests, and for a job
    /// run now and then): it inserts a mark in `pattern_follow` and stops once the feed has
    /// reported that insert, every change committed before it applied.
    pub async fn catch_up(&self) -> Result<()> {
        self.follow_until(futures::future::pending(), true).await
    }

    async fn follow_until(
        &self,
        stop: impl Future<Output = ()> + Send,
        idle_stops: bool,
    ) -> Result<()> {
        if self.rules.is_empty() {
            return Err(Error::invalid(
                "the follower follows nothing: add the types whose derived data it keeps, `.follow::<T>()`",
            ));
        }
        // A feed from now, opened first: refused at once on a store without one, before
        // anything is written; a position to start from should the stored one be lost.
        let mut watch = Watch {
            collections: self.collections(),
            resume_after: None,
        };
        let now = self.store.watch(&watch).await?;
        let token = self.lease.acquire(&self.store).await?;
        // The document's list starts empty with each lease: this run records its sessions anew.
        if let Ok(mut s) = self.sessions.lock() {
            s.clear();
        }
        self.set(|s| s.running = true);
        let out: Result<()> = async {
            let rules = self.rules.iter().filter_map(|r| r.stored()).collect();
            self.lease.describe(&self.store, rules).await?;
            for (coll, before) in self.watched() {
                if before {
                    self.store.keep_before_images(coll).await?;
                }
            }
            let feed = match token {
                None => self.fresh("its first run", Some(now)).await?,
                Some(token) => {
                    drop(now);
                    watch.resume_after = Some(token);
                    match self.store.watch(&watch).await {
                        Ok(feed) => feed,
                        Err(StoreError::HistoryLost { message }) => {
                            self.fresh(&message, None).await?
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
            };
            // Caught up means past a write made now: the feed reports it after every change
            // committed before it (a feed's empty answer says nothing of changes not yet
            // visible to it).
            let mark = match idle_stops {
                true => Some(self.lease.mark(&self.store).await?),
                false => None,
            };
            self.follow_from(feed, stop, mark.as_ref()).await?;
            match mark {
                Some(mark) => self.lease.unmark(&self.store, &mark).await,
                None => Ok(()),
            }
        }
        .await;
        self.set(|s| s.running = false);
        let released = self.lease.release(&self.store).await;
        out.and(released)
    }

    async fn follow_from(
        &self,
        mut feed: Box<dyn ChangeFeed>,
        stop: impl Future<Output = ()> + Send,
        mark: Option<&Bson>,
    ) -> Result<()> {
        let mut stop = std::pin::pin!(stop);
        let mut renewed = Instant::now();
        let mut limit = self.batch;
        loop {
            if stop.as_mut().now_or_never().is_some() {
                return Ok(());
            }
            let (batch, behind) = match self.gather(feed.as_mut(), limit).await {
                Ok(gathered) => gathered,
                Err(Error::Store(StoreError::HistoryLost { message })) => {
                    feed = self.fresh(&message, None).await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            // Behind (a backlog filled the batch): the next may be twice as large, up to
            // `BEHIND` times the batch size, so that what a batch costs per parent is shared by
            // more changes.
            limit = match behind {
                true => (limit * 2).min(self.batch.saturating_mul(BEHIND)),
                false => self.batch,
            };
            // Where to resume after this batch: its last change's own token. Not the feed's
            // position past it (a `postBatchResumeToken`), which the test server may move past
            // changes not yet visible to the feed: resuming there would skip them.
            let last = batch.last().map(|c| c.token.clone());
            // The followers' own documents: only the mark of `catch_up` matters.
            let (ours, batch): (Vec<Change>, Vec<Change>) =
                batch.into_iter().partition(|c| c.collection == FOLLOW);
            let marked = mark.is_some_and(|m| {
                (ours.iter()).any(|c| c.op == ChangeOp::Insert && c.id.as_ref() == Some(m))
            });
            if batch.is_empty() {
                if marked {
                    return Ok(());
                }
                if renewed.elapsed() >= self.lease.ttl / 3 {
                    self.idle(last).await?;
                    renewed = Instant::now();
                }
                continue;
            }
            self.apply(&batch, last).await?;
            renewed = Instant::now();
            if marked {
                return Ok(());
            }
        }
    }

    /// The changes available now, up to `limit`: waits for the first (the feed's wait at
    /// most), then takes more until the feed has none, or [`GATHER`] has passed since the first
    /// and the last one read is recent (committed less than [`OLD`] ago: a backlog is read
    /// whole, up to `limit`); and whether `limit` ended it (the follower is behind).
    async fn gather(&self, feed: &mut dyn ChangeFeed, limit: usize) -> Result<(Vec<Change>, bool)> {
        let mut batch: Vec<Change> = Vec::new();
        let Some(first) = feed.next_change().await? else {
            return Ok((batch, false));
        };
        batch.push(first);
        let started = Instant::now();
        let old = |c: &Change| {
            let now = bson::DateTime::now().timestamp_millis();
            c.committed_millis()
                .is_some_and(|at| now - at > OLD.as_millis() as i64)
        };
        while batch.len() < limit {
            if started.elapsed() >= GATHER && !batch.last().is_some_and(old) {
                return Ok((batch, false));
            }
            match feed.next_change().await? {
                Some(c) => batch.push(c),
                None => return Ok((batch, false)),
            }
        }
        Ok((batch, true))
    }

    /// While the feed is idle: the lease renewed, and the token moved past the followers' own
    /// changes it read (`position`), if any.
    async fn idle(&self, position: Option<bson::Document>) -> Result<()> {
        match position {
            Some(token) => {
                let step = Step {
                    token,
                    at: None,
                    applied: 0,
                    skipped: 0,
                    passes: 0,
                };
                self.lease.advance(&self.store, &step).await
            }
            None => self.lease.renew(&self.store).await,
        }
    }

    /// A new feed from now (`opened`, or one opened here), after history was lost or on the
    /// first run: its position taken first, every rule's whole pass, then the position
    /// recorded.
    async fn fresh(
        &self,
        why: &str,
        opened: Option<Box<dyn ChangeFeed>>,
    ) -> Result<Box<dyn ChangeFeed>> {
        #[cfg(feature = "tracing")]
        tracing::warn!(
            target: "pattern_core::follow",
            follower = %self.lease.name,
            reason = why,
            "no change history to resume from: checking every rule's whole data set"
        );
        let feed = match opened {
            Some(feed) => feed,
            None => {
                let watch = Watch {
                    collections: self.collections(),
                    resume_after: None,
                };
                self.store.watch(&watch).await?
            }
        };
        let mut feed = feed;
        // A stream whose opening batch held changes has no position until one is read: those
        // changes are before the pass, which covers them.
        let mut tries = 0;
        let token = loop {
            if let Some(token) = feed.position() {
                break token;
            }
            tries += 1;
            if tries > 100 {
                return Err(Error::Store(StoreError::Server {
                    message: "a new change stream gave no position to resume from".into(),
                    source: None,
                }));
            }
            let _ = feed.next_change().await?;
        };
        let mut repaired = 0;
        for rule in &self.rules {
            repaired += rule.repair(&self.store).await?;
        }
        let step = Step {
            token,
            at: None,
            applied: 0,
            skipped: 0,
            passes: 1,
        };
        self.lease.advance(&self.store, &step).await?;
        self.set(|s| {
            s.passes += 1;
            s.repaired += repaired;
            s.history_lost = Some(why.to_owned());
        });
        Ok(feed)
    }

    /// One batch of changes. The rules over a dropped or renamed collection, or whose keys a
    /// change does not tell, are checked whole first (a pass, counted in [`Status::passes`]).
    /// Then, in one transaction, the keys the changes concern are brought in line rule by rule
    /// (a rule covers many keys in a few round trips) and the feed's position is recorded.
    /// A transaction that keeps conflicting with other writers is split ([`Follower::commit`]).
    async fn apply(&self, batch: &[Change], position: Option<bson::Document>) -> Result<()> {
        let (plan, whole) = self.plan(batch);
        let passes = u64::from(!whole.is_empty());
        if !whole.is_empty() {
            let mut repaired = 0;
            for &i in &whole {
                repaired += self.rules[i].repair(&self.store).await?;
            }
            self.set(|s| {
                s.passes += 1;
                s.repaired += repaired;
            });
        }
        let token = position
            .or_else(|| batch.last().map(|c| c.token.clone()))
            .unwrap_or_default();
        self.commit(batch, plan, token, passes).await
    }

    /// `changes` applied and the position `token` (after them) recorded, in one transaction
    /// tried [`BATCH_ATTEMPTS`] times; when it keeps conflicting with other writers (whose
    /// writes to the same parents land while it runs), split in two halves, each applied and
    /// its position recorded on its own, so that a batch never waits on a conflict a smaller
    /// one avoids; one change is tried as any transaction is ([`TRANSACTION_ATTEMPTS`], then
    /// [`store::Error::Contention`](crate::store::Error::Contention)).
    fn commit<'a>(
        &'a self,
        changes: &'a [Change],
        plan: Plan,
        token: bson::Document,
        passes: u64,
    ) -> crate::store::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let attempts = match changes.len() {
                1 => TRANSACTION_ATTEMPTS,
                _ => BATCH_ATTEMPTS,
            };
            match self
                .commit_once(changes, &plan, &token, passes, attempts)
                .await
            {
                Err(Error::Store(StoreError::Contention { .. })) if changes.len() > 1 => {
                    let (first, rest) = changes.split_at(changes.len() / 2);
                    let mid = first[first.len() - 1].token.clone();
                    let (first_plan, rest_plan) = (self.plan(first).0, self.plan(rest).0);
                    self.commit(first, first_plan, mid, passes).await?;
                    self.commit(rest, rest_plan, token, 0).await
                }
                done => done,
            }
        })
    }

    /// [`Follower::commit`] of `changes` (the keys they concern: `plan`) in one transaction, at
    /// most `attempts` times.
    async fn commit_once(
        &self,
        changes: &[Change],
        plan: &Plan,
        token: &bson::Document,
        passes: u64,
        attempts: u32,
    ) -> Result<()> {
        #[cfg(feature = "tracing")]
        let span = tracing::info_span!(
            target: "pattern_core::follow",
            "follow",
            follower = %self.lease.name,
            changes = changes.len() as i64,
        );
        let at = changes.iter().rev().find_map(|c| c.cluster_time);
        let mut ctx = (plan, token, at);
        let wrote = transaction_tries(&self.store, attempts, &mut ctx, |tx, (plan, token, at)| {
            Box::pin(async move {
                if let Some(lsid) = crate::store::Transaction::session_id(tx).await {
                    self.record(lsid).await?;
                }
                let mut wrote = vec![Applied::default(); plan.targets.len()];
                for (rule, targets) in plan.by_rule() {
                    for part in targets.chunks(KEYS_AT_ONCE) {
                        let keys: Vec<Bson> =
                            part.iter().map(|t| plan.targets[*t].1.clone()).collect();
                        let applied = self.rules[rule].apply(tx, &keys).await?;
                        for (t, a) in part.iter().zip(applied) {
                            wrote[*t] = a;
                        }
                    }
                }
                let applied = (0..changes.len())
                    .filter(|n| plan.of_change(*n).any(|t| wrote[t].wrote))
                    .count() as u64;
                let step = Step {
                    token: (*token).clone(),
                    at: *at,
                    applied,
                    skipped: changes.len() as u64 - applied,
                    passes,
                };
                self.lease.advance(tx, &step).await?;
                Ok(wrote)
            })
        })
        .await?;
        let committed = bson::DateTime::now().timestamp_millis();
        let mut applied = 0;
        for (n, change) in changes.iter().enumerate() {
            let yes = plan.of_change(n).any(|t| wrote[t].wrote);
            applied += u64::from(yes);
            let lag = change.committed_millis().map(|c| (committed - c).max(0));
            #[cfg(feature = "tracing")]
            {
                let op = match &change.op {
                    ChangeOp::Insert => "insert",
                    ChangeOp::Update => "update",
                    ChangeOp::Replace => "replace",
                    ChangeOp::Delete => "delete",
                    ChangeOp::Other(o) => o.as_str(),
                };
                let _ = tracing::info_span!(
                    target: "pattern_core::follow",
                    parent: &span,
                    "follow.change",
                    "db.collection.name" = change.collection.as_str(),
                    "db.operation.name" = op,
                    "pattern.lag_ms" = lag,
                    "pattern.applied" = yes,
                );
            }
            let _ = lag;
        }
        let lag = (changes.last())
            .and_then(|c| c.committed_millis())
            .map(|c| Duration::from_millis((committed - c).max(0) as u64));
        let older = wrote.iter().filter(|a| a.older).count() as u64;
        self.set(|s| {
            s.applied += applied;
            s.older += older;
            s.skipped += changes.len() as u64 - applied;
            s.last_applied = at.or(s.last_applied);
            s.lag = lag;
        });
        Ok(())
    }

    /// The keys `changes` concern, rule by rule, each once; and the rules to check whole (a
    /// change to a dropped or renamed collection, or whose keys it does not tell).
    fn plan(&self, changes: &[Change]) -> (Plan, Vec<usize>) {
        let mut plan = Plan::new(changes.len());
        let mut whole: Vec<usize> = Vec::new();
        for (n, change) in changes.iter().enumerate() {
            if let ChangeOp::Other(_) = change.op {
                // A drop, a rename: every rule over the collection is checked whole.
                whole.extend(self.rules_over(&change.collection));
                if change.collection.is_empty() {
                    whole.extend(0..self.rules.len());
                }
                continue;
            }
            for i in self.rules_over(&change.collection) {
                match self.rules[i].keys(change) {
                    Keys::Some(keys) => keys.into_iter().for_each(|k| plan.add(n, i, k)),
                    Keys::Unknown => whole.push(i),
                }
            }
        }
        whole.sort_unstable();
        whole.dedup();
        (plan, whole)
    }

    /// Records a transaction's server session the first time this follower uses it.
    async fn record(&self, lsid: bson::Document) -> Result<()> {
        let key = crate::codec::order::value_key(&Bson::Document(lsid.clone()));
        let new = (self.sessions.lock()).is_ok_and(|mut s| s.insert(key));
        if new {
            self.lease.record_session(&self.store, lsid).await?;
        }
        Ok(())
    }

    fn rules_over<'a>(&'a self, coll: &'a str) -> impl Iterator<Item = usize> + 'a {
        (self.rules.iter().enumerate())
            .filter(move |(_, r)| r.watches().iter().any(|(c, _)| *c == coll))
            .map(|(i, _)| i)
    }

    /// Every watched collection, with whether some rule needs its before-images.
    fn watched(&self) -> Vec<(&'static str, bool)> {
        let mut out: Vec<(&'static str, bool)> = Vec::new();
        for (coll, before) in self.rules.iter().flat_map(|r| r.watches()) {
            match out.iter_mut().find(|(c, _)| *c == coll) {
                Some(seen) => seen.1 |= before,
                None => out.push((coll, before)),
            }
        }
        out
    }

    /// The watched collections, and the followers' own (for the mark of `catch_up`).
    fn collections(&self) -> Vec<String> {
        let mut all: Vec<String> = (self.watched().into_iter())
            .map(|(c, _)| c.to_owned())
            .collect();
        all.push(FOLLOW.to_owned());
        all
    }

    fn set(&self, f: impl FnOnce(&mut Status)) {
        if let Ok(mut s) = self.status.lock() {
            f(&mut s);
        }
    }
}

/// The keys a batch concerns, each once, and which change concerns which.
struct Plan {
    /// (rule, key), each once.
    targets: Vec<(usize, Bson)>,
    seen: std::collections::HashMap<(usize, Vec<u8>), usize>,
    /// Per change, its targets.
    of: Vec<Vec<usize>>,
}

impl Plan {
    fn new(changes: usize) -> Self {
        Plan {
            targets: Vec::new(),
            seen: std::collections::HashMap::new(),
            of: vec![Vec::new(); changes],
        }
    }

    fn add(&mut self, change: usize, rule: usize, key: Bson) {
        // By value: a parent named by an Int32 child key and by its own Int64 `_id` is one.
        let id = (rule, crate::codec::order::value_key(&key));
        let next = self.targets.len();
        let t = *self.seen.entry(id).or_insert(next);
        if t == next {
            self.targets.push((rule, key));
        }
        self.of[change].push(t);
    }

    fn of_change(&self, change: usize) -> impl Iterator<Item = usize> + '_ {
        self.of[change].iter().copied()
    }

    /// The targets of each rule, in the order the rules first appear.
    fn by_rule(&self) -> Vec<(usize, Vec<usize>)> {
        let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
        for (t, (rule, _)) in self.targets.iter().enumerate() {
            match out.iter_mut().find(|(r, _)| r == rule) {
                Some((_, ts)) => ts.push(t),
                None => out.push((*rule, vec![t])),
            }
        }
        out
    }
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
}
