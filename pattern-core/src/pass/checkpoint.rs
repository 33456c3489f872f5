//! The checkpoint of a migration: one document in [`CHECKPOINTS`], moved by each batch's
//! transaction (compare-and-set on its `version`, so two runs of one migration at once cannot
//! both advance it), and the list of server sessions its runs used.

use crate::store::Error as StoreError;
use bson::{doc, Bson, Document};

use crate::store::query::{Filter, Update};
use crate::store::{find_one, transaction_with, BoxFuture, Store, Transaction};
use crate::{Error, Result};

/// The collection of migration checkpoints: `{_id: "<kind>:<collection>", version, state:
/// "running" | "finished", position..., counters...}`, and `{_id: "<...>:sessions", ids: [...]}`.
pub const CHECKPOINTS: &str = "pattern_migrations";

/// Distinct sessions recorded per migration at most (the driver reuses a few pooled ones).
const MAX_SESSIONS: usize = 64;

/// A migration's checkpoint as this run knows it.
pub(crate) struct Checkpoint {
    pub(crate) name: String,
    /// The stored document (`None`: no run has committed a batch).
    pub(crate) doc: Option<Document>,
    version: i64,
    recorded: Vec<Document>,
    /// The settings this run pinned ([`Checkpoint::pin`]): written with every batch.
    settings: Option<Document>,
}

/// The checkpoint's field holding the settings that shape the result.
const SETTINGS: &str = "spec";

impl Checkpoint {
    /// Reads the checkpoint `name`.
    pub(crate) async fn load<S: Store>(store: &S, name: String) -> Result<Self> {
        let doc = find_one(store, CHECKPOINTS, &Filter::eq("_id", name.as_str())).await?;
        let version = doc
            .as_ref()
            .and_then(|d| crate::codec::as_int(d.get("version")?))
            .unwrap_or(0);
        Ok(Checkpoint {
            name,
            doc,
            version,
            recorded: Vec::new(),
            settings: None,
        })
    }

    /// Whether a run has committed a batch (the checkpoint exists).
    pub(crate) fn exists(&self) -> bool {
        self.doc.is_some()
    }

    /// Pins `given`, the settings that shape the operation's result: a checkpoint written with
    /// other values of them refuses this run ([`Error::SettingsChanged`], nothing written),
    /// part-way or finished; those named in `free` may change now (a step that has not begun,
    /// or one that has ended). Every batch of this run records `given`. Settings the checkpoint
    /// did not record (written before they were pinned) are taken from this run. `restart`:
    /// how to start over, for the error.
    pub(crate) fn pin(&mut self, given: Document, free: &[&str], restart: &str) -> Result<()> {
        let finished = self.state() == Some("finished");
        if let Some(Bson::Document(stored)) = self.get(SETTINGS) {
            let (mut was, mut now) = (Document::new(), Document::new());
            for (k, v) in stored {
                if free.contains(&k.as_str()) {
                    continue;
                }
                if let Some(g) = given
                    .get(k)
                    .filter(|g| !crate::codec::order::values_equal(g, v))
                {
                    was.insert(k.clone(), v.clone());
                    now.insert(k.clone(), g.clone());
                }
            }
            if !was.is_empty() {
                return Err(Error::SettingsChanged {
                    checkpoint: self.name.clone(),
                    finished,
                    stored: Box::new(was),
                    given: Box::new(now),
                    restart: format!(
                        "delete the checkpoint (mongosh: db.{CHECKPOINTS}.deleteOne({{_id: \"{}\"}})), then {restart}",
                        self.name
                    ),
                });
            }
        }
        self.settings = Some(given);
        Ok(())
    }

    pub(crate) fn state(&self) -> Option<&str> {
        self.doc.as_ref()?.get_str("state").ok()
    }

    pub(crate) fn get(&self, field: &str) -> Option<&Bson> {
        self.doc.as_ref()?.get(field)
    }

    fn sessions_id(&self) -> String {
        format!("{}:sessions", self.name)
    }

    /// Ends the sessions an earlier run recorded (its transaction, if it died in one, would
    /// hold its documents until it expires). Returns how many.
    pub(crate) async fn end_earlier_sessions<S: Store>(&self, store: &S) -> Result<u64> {
        let id = self.sessions_id();
        let Some(doc) = find_one(store, CHECKPOINTS, &Filter::eq("_id", id.as_str())).await? else {
            return Ok(0);
        };
        let ids: Vec<Document> = match doc.get("ids") {
            Some(Bson::Array(a)) => a.iter().filter_map(|b| b.as_document().cloned()).collect(),
            _ => Vec::new(),
        };
        store.kill_sessions(&ids).await?;
        store
            .delete_many(CHECKPOINTS, &Filter::eq("_id", id.as_str()))
            .await?;
        Ok(ids.len() as u64)
    }

    /// Records `lsid` (outside any transaction) unless this run did already: call it before
    /// the transaction's first write, so that the next run can end it should this one die
    /// in it ([`end_earlier_sessions`](Self::end_earlier_sessions)).
    pub(crate) async fn record_session<S: Store>(
        &mut self,
        store: &S,
        lsid: Document,
    ) -> Result<()> {
        if self.recorded.contains(&lsid) || self.recorded.len() >= MAX_SESSIONS {
            return Ok(());
        }
        let mut add = Update {
            push: vec![("ids".into(), vec![Bson::Document(lsid.clone())])],
            ..Update::default()
        };
        let id = self.sessions_id();
        store
            .update_one(CHECKPOINTS, &Filter::eq("_id", id.as_str()), &mut add, true)
            .await?;
        self.recorded.push(lsid);
        Ok(())
    }

    /// Runs one batch: `work` in a transaction that also sets `position` (and `state`) in the
    /// checkpoint, committed together. Retries conflicts (returned as the second value: how
    /// many); a checkpoint another run advanced meanwhile is [`store::Error::Contention`](crate::store::Error::Contention).
    pub(crate) async fn batch<S, C, T, F>(
        &mut self,
        store: &S,
        context: &mut C,
        work: F,
    ) -> Result<(T, u64)>
    where
        S: Store,
        C: Send + ?Sized,
        T: Send,
        F: for<'t> FnMut(&'t S::Txn, &'t mut C) -> BoxFuture<'t, Result<(T, Document)>> + Send,
    {
        struct Ctx<'a, S, C: ?Sized, F> {
            me: &'a mut Checkpoint,
            store: &'a S,
            context: &'a mut C,
            work: F,
            attempts: u64,
            name: String,
            version: i64,
        }
        let mut ctx = Ctx {
            name: self.name.clone(),
            version: self.version,
            me: &mut *self,
            store,
            context,
            work,
            attempts: 0,
        };
        let (value, set) = transaction_with(store, &mut ctx, |tx, c| {
            Box::pin(async move {
                c.attempts += 1;
                if let Some(lsid) = tx.session_id().await {
                    c.me.record_session(c.store, lsid).await?;
                }
                let (value, mut set) = (c.work)(tx, &mut *c.context).await?;
                if let Some(settings) = &c.me.settings {
                    set.insert(SETTINGS, settings.clone());
                }
                set.insert("version", c.version + 1);
                set.insert("updated", bson::DateTime::now());
                advance(tx, &c.name, c.version, set.clone()).await?;
                Ok((value, set))
            })
        })
        .await?;
        let retries = ctx.attempts.saturating_sub(1);
        self.advanced(set);
        Ok((value, retries))
    }

    /// Sets `fields` (and the settings pinned) by one compare-and-set update outside any
    /// transaction, as [`batch`](Self::batch) does inside one: for an operation whose own
    /// writes are not in the checkpoint's transaction (the archives), so the checkpoint moves
    /// after them. Another run that moved the checkpoint since is [`store::Error::Contention`](crate::store::Error::Contention).
    pub(crate) async fn record<S: Store>(&mut self, store: &S, mut set: Document) -> Result<()> {
        if let Some(settings) = &self.settings {
            set.insert(SETTINGS, settings.clone());
        }
        set.insert("version", self.version + 1);
        set.insert("updated", bson::DateTime::now());
        advance(store, &self.name, self.version, set.clone()).await?;
        self.advanced(set);
        Ok(())
    }

    /// The checkpoint moved to the values in `set`.
    fn advanced(&mut self, set: Document) {
        self.version += 1;
        match &mut self.doc {
            Some(d) => d.extend(set),
            None => {
                let mut d = doc! {"_id": self.name.as_str()};
                d.extend(set);
                self.doc = Some(d);
            }
        }
    }

    /// Sets `fields` in the checkpoint outside a batch (compare-and-set as in one).
    pub(crate) async fn set<S: Store>(&mut self, store: &S, fields: Document) -> Result<()> {
        self.batch(store, &mut (), |_, _| {
            let f = fields.clone();
            Box::pin(async move { Ok(((), f)) })
        })
        .await
        .map(|_| ())
    }
}

/// Moves checkpoint `name` from `version` (0: none yet) to the values in `set` (in a
/// transaction, or alone: one update is atomic on its own).
async fn advance<T: Store>(tx: &T, name: &str, version: i64, set: Document) -> Result<()> {
    let filter = Filter::and([Filter::eq("_id", name), Filter::eq("version", version)]);
    let mut update = Update {
        set: set.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        ..Update::default()
    };
    let moved = tx
        .update_one(CHECKPOINTS, &filter, &mut update, version == 0)
        .await;
    let another = || {
        Error::Store(StoreError::Contention {
        attempts: 1,
        what: format!(
            "another run of migration `{name}` moved its checkpoint (in `{CHECKPOINTS}`) since this run read it: \
             run one migration at a time"
        ),
    })
    };
    match moved {
        Ok(o) if o.matched || o.upserted => Ok(()),
        Ok(_) => Err(another()),
        Err(StoreError::DuplicateKey { .. }) => Err(another()),
        Err(e) => Err(e.into()),
    }
}
