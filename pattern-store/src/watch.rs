//! A store's change feed: the writes made to some of its collections, by anyone, in the order
//! they committed ([`Store::watch`](crate::Store::watch)). On MongoDB it is a change stream of
//! the database; the in-memory store has none (every write to it is made by its own process,
//! through the library).

use bson::{Bson, DateTime, Document, Timestamp};

use crate::txn::BoxFuture;
use crate::Result;

/// What a change did to its document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeOp {
    /// A document was inserted (`after` is it).
    Insert,
    /// A document was updated in place (`after` is the document as it was when the feed
    /// looked it up, which may be later than this change: `None` when it is gone since).
    Update,
    /// A document was replaced (`after` is the replacement).
    Replace,
    /// A document was deleted.
    Delete,
    /// Anything else the feed reports about a watched collection (`drop`, `rename`,
    /// `invalidate`, ...): its documents changed in ways no single event says.
    Other(String),
}

/// One change to one document of a watched collection.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// Where the feed resumes after this change ([`Watch::resume_after`]).
    pub token: Document,
    /// What happened.
    pub op: ChangeOp,
    /// The collection.
    pub collection: String,
    /// The document's `_id` (`None` for [`ChangeOp::Other`]).
    pub id: Option<Bson>,
    /// The document after the change (see [`ChangeOp`] for what each operation gives).
    pub after: Option<Document>,
    /// The document before the change, when the collection keeps them
    /// ([`Store::keep_before_images`](crate::Store::keep_before_images)) and the server still
    /// has it; `None` for an insert.
    pub before: Option<Document>,
    /// When the change committed, in the cluster's logical time.
    pub cluster_time: Option<Timestamp>,
    /// When the change committed, by the server's clock (MongoDB 6.0 and later).
    pub wall_time: Option<DateTime>,
}

impl Change {
    /// The change's commit time in milliseconds since the epoch: its wall time, or its cluster
    /// time's seconds.
    pub fn committed_millis(&self) -> Option<i64> {
        (self.wall_time.map(|t| t.timestamp_millis()))
            .or_else(|| self.cluster_time.map(|t| i64::from(t.time) * 1_000))
    }
}

/// What to follow.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Watch {
    /// The collections whose changes the feed reports (the others are filtered out on the
    /// server).
    pub collections: Vec<String>,
    /// Resume after this change's token ([`Change::token`], [`ChangeFeed::position`]);
    /// `None`: from now. A token the server no longer has history for is
    /// [`Error::HistoryLost`](crate::Error::HistoryLost).
    pub resume_after: Option<Document>,
}

/// An open change feed ([`Store::watch`](crate::Store::watch)).
pub trait ChangeFeed: Send {
    /// The next change, or `None` when none came within the feed's wait (25 ms on MongoDB; a
    /// feed's first answer may be `None` at once, before it asked the server): the caller may
    /// then do other work and ask again. Not to be cancelled midway: a change the server sent
    /// would be lost.
    fn next_change(&mut self) -> BoxFuture<'_, Result<Option<Change>>>;

    /// The token to resume from to see every change after those returned so far: after a
    /// change, its own token; before any, the feed's starting point (the server's position
    /// when it opened, when it opened from now).
    fn position(&self) -> Option<Document>;
}
