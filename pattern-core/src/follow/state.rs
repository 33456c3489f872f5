//! A follower's document in `pattern_follow`: where its change feed resumes (the token of the
//! last change whose derived writes committed, written in the same transaction as them) and
//! who holds it (a lease, renewed by every commit).

use crate::store::Error as StoreError;
use std::time::Duration;

use bson::{Bson, DateTime, Document, Timestamp};

use crate::store::query::{Filter, FindOptions, Update};
use crate::store::Store;
use crate::{Error, Result};

/// The collection of the followers' documents, one per follower (`_id`: its name).
pub const FOLLOW: &str = "pattern_follow";

/// Who runs a follower, and for how long its lease holds without a renewal.
#[derive(Clone, Debug)]
pub(crate) struct Lease {
    /// The follower's name (its document's `_id`).
    pub name: String,
    /// This process's claim: unique per [`Follower`](super::Follower).
    pub owner: String,
    /// How long the lease holds after each renewal.
    pub ttl: Duration,
}

impl Lease {
    fn until(&self) -> DateTime {
        let ms = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX / 2);
        DateTime::from_millis(DateTime::now().timestamp_millis().saturating_add(ms))
    }

    fn by_id(&self) -> Filter {
        Filter::Eq("_id".into(), Bson::String(self.name.clone()))
    }

    fn mine(&self) -> Filter {
        Filter::And(vec![
            self.by_id(),
            Filter::Eq("owner".into(), Bson::String(self.owner.clone())),
        ])
    }

    /// Takes the lease (free, expired or already this follower's) and reads where to resume
    /// (`None`: never ran, or its last run found history lost and had not finished its pass);
    /// [`Error::LeaseHeld`] while another follower of the same name holds it.
    ///
    /// An owner whose lease expired may have died mid-batch (a SIGKILL): its transaction stays
    /// open, holding what it wrote (this document among them), until the server expires it a
    /// minute later. Its recorded sessions are killed first, which aborts it, so that taking
    /// the lease does not wait behind it.
    pub(crate) async fn acquire<S: Store>(&self, store: &S) -> Result<Option<Document>> {
        let now = DateTime::now();
        let free = Filter::And(vec![
            self.by_id(),
            Filter::Or(vec![
                Filter::Eq("owner".into(), Bson::String(self.owner.clone())),
                Filter::Eq("owner".into(), Bson::Null),
                Filter::Lt("until".into(), Bson::DateTime(now)),
            ]),
        ]);
        let before = (store
            .find(FOLLOW, &self.by_id(), &FindOptions::default())
            .await?)
            .into_iter()
            .next();
        let dead = before.as_ref().filter(|b| {
            b.get_str("owner").is_ok_and(|o| o != self.owner)
                && b.get_datetime("until").is_ok_and(|u| *u < now)
        });
        let sessions: Vec<Document> = (dead.and_then(|d| d.get_array("sessions").ok()))
            .map(|a| a.iter().filter_map(|s| s.as_document().cloned()).collect())
            .unwrap_or_default();
        store.kill_sessions(&sessions).await?;
        let mut take = Update {
            set: vec![
                ("owner".into(), Bson::String(self.owner.clone())),
                ("until".into(), Bson::DateTime(self.until())),
                // This owner records its own as it uses them.
                ("sessions".into(), Bson::Array(Vec::new())),
            ],
            ..Update::default()
        };
        match store.update_one(FOLLOW, &free, &mut take, true).await {
            Ok(_) => {}
            // The document exists and its lease is another's (the upsert's insert refused).
            Err(StoreError::DuplicateKey { .. }) => {
                let held = (store
                    .find(FOLLOW, &self.by_id(), &FindOptions::default())
                    .await?)
                    .into_iter()
                    .next()
                    .unwrap_or_default();
                let until = held.get_datetime("until").ok().copied();
                return Err(Error::LeaseHeld {
                    what: format!(
                        "the follower `{}` runs elsewhere: {} holds its lease until {} (it is renewed \
                         while that follower runs; a stopped one releases it, a dead one's expires)",
                        self.name,
                        held.get_str("owner").unwrap_or("another process"),
                        until
                            .map(|d| d.try_to_rfc3339_string().unwrap_or_default())
                            .unwrap_or_default(),
                    ),
                    until,
                });
            }
            Err(e) => return Err(e.into()),
        }
        let found = store
            .find(FOLLOW, &self.by_id(), &FindOptions::default())
            .await?;
        Ok((found.first())
            .and_then(|d| d.get_document("token").ok())
            .cloned())
    }

    /// Inserts a mark (a document never written before, its `_id` not a follower's name) in
    /// the followers' collection: `catch_up` stops once the change feed reports its insert.
    /// An insert, because the feed's copy of an updated document is looked up when the feed
    /// reads the change: an earlier update of the follower's document would show a mark
    /// written after it.
    pub(crate) async fn mark<S: Store>(&self, store: &S) -> Result<Bson> {
        static MARKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = MARKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = Bson::Document(bson::doc! {
            "follower": self.name.as_str(),
            "mark": format!("{}:{n}", self.owner),
        });
        store
            .insert_one(FOLLOW, bson::doc! {"_id": id.clone()})
            .await?;
        Ok(id)
    }

    /// A mark of [`Lease::mark`] removed, once reported.
    pub(crate) async fn unmark<S: Store>(&self, store: &S, mark: &Bson) -> Result<()> {
        store
            .delete_many(FOLLOW, &Filter::Eq("_id".into(), mark.clone()))
            .await?;
        Ok(())
    }

    /// Records the rules the follower keeps, as data (see `stored.rs`).
    pub(crate) async fn describe<S: Store>(&self, store: &S, rules: Vec<Document>) -> Result<()> {
        let rules = rules.into_iter().map(Bson::Document).collect();
        let mut update = Update {
            set: vec![("rules".into(), Bson::Array(rules))],
            ..Update::default()
        };
        let _ = self.write_mine_if(store, &mut update).await?;
        Ok(())
    }

    /// Records `lsid`, the server session a transaction of this follower runs in, outside
    /// the transaction (so that the next owner can end it should this process die with it
    /// open).
    pub(crate) async fn record_session<S: Store>(&self, store: &S, lsid: Document) -> Result<()> {
        let mut update = Update {
            push: vec![("sessions".into(), vec![Bson::Document(lsid)])],
            ..Update::default()
        };
        let _ = self.write_mine_if(store, &mut update).await?;
        Ok(())
    }

    /// In the transaction of the derived writes it covers: the token moved to `token`, the
    /// lease renewed and the counters added; [`Error::LeaseHeld`] when the lease is no longer
    /// this follower's (nothing of the transaction then commits).
    pub(crate) async fn advance<T: Store>(&self, tx: &T, step: &Step) -> Result<()> {
        let mut set = vec![
            ("until".into(), Bson::DateTime(self.until())),
            ("token".into(), Bson::Document(step.token.clone())),
        ];
        if let Some(at) = step.at {
            set.push(("at".into(), Bson::Timestamp(at)));
        }
        let mut update = Update {
            set,
            sum: vec![
                ("applied".into(), Bson::Int64(step.applied as i64)),
                ("skipped".into(), Bson::Int64(step.skipped as i64)),
                ("passes".into(), Bson::Int64(step.passes as i64)),
            ],
            ..Update::default()
        };
        self.write_mine(tx, &mut update).await?;
        Ok(())
    }

    /// The lease renewed, outside any change (while the feed is idle); [`Error::LeaseHeld`]
    /// when it is another's.
    pub(crate) async fn renew<S: Store>(&self, store: &S) -> Result<()> {
        let mut update = Update {
            set: vec![("until".into(), Bson::DateTime(self.until()))],
            ..Update::default()
        };
        self.write_mine(store, &mut update).await?;
        Ok(())
    }

    /// The lease given up (a stopped follower), if still this follower's.
    pub(crate) async fn release<S: Store>(&self, store: &S) -> Result<()> {
        // Its sessions go back to the driver's pool, for the application's other work: nobody
        // may kill them now.
        let mut update = Update {
            set: vec![
                ("owner".into(), Bson::Null),
                ("sessions".into(), Bson::Array(Vec::new())),
            ],
            ..Update::default()
        };
        let _ = self.write_mine_if(store, &mut update).await?;
        Ok(())
    }

    /// `update` to the follower's document while its lease is this follower's; whether it
    /// still was.
    async fn write_mine_if<T: Store>(&self, t: &T, update: &mut Update) -> Result<bool> {
        let done = t.update_one(FOLLOW, &self.mine(), update, false).await?;
        Ok(done.matched)
    }

    /// [`Lease::write_mine_if`], [`Error::LeaseHeld`] when the lease is another's.
    async fn write_mine<T: Store>(&self, t: &T, update: &mut Update) -> Result<()> {
        if !self.write_mine_if(t, update).await? {
            return Err(self.lost());
        }
        Ok(())
    }

    fn lost(&self) -> Error {
        Error::LeaseHeld {
            what: format!(
                "the follower `{}` lost its lease to another process (it was not renewed in time): \
                 this one stops, the other goes on from the last committed change",
                self.name
            ),
            until: None,
        }
    }
}

/// What one commit of the follower records.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// Where the feed resumes after it.
    pub token: Document,
    /// The cluster time of the last change it covers.
    pub at: Option<Timestamp>,
    /// Changes whose derived data it wrote.
    pub applied: u64,
    /// Changes whose derived data was in line already.
    pub skipped: u64,
    /// Whole passes it closes (after lost history, or a batch that checked a rule whole).
    pub passes: u64,
}
