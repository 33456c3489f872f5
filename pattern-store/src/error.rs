//! What a store can say went wrong: [`Error`]. It knows no pattern. pattern-core's own `Error`
//! adds the patterns' meanings and wraps this one; [`FromStore`] is what the transaction helpers
//! and an operation's span need of such a wrapping error.

use std::fmt;

/// A boxed error from a lower layer (the driver, BSON), kept as the `source()`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Every error a store returns: what the server, the in-memory store or the codec can say
/// (unreachable, a duplicate key, a write conflict, a validator's refusal, a document too
/// large...). Match on the variant; the messages are for people.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server could not be reached, or did not answer in time. Nothing is known to have
    /// been written by the call that returned this (it may have been, if the connection broke
    /// after the server applied it).
    #[error("MongoDB server unreachable or timed out: {message}")]
    Unavailable {
        /// What the driver said.
        message: String,
        #[source]
        /// The driver's error.
        source: Option<BoxError>,
    },

    /// A stored document does not have the shape the pattern expects (written by another tool,
    /// or by another version of the struct). Names the collection and the document's `_id`.
    #[error("document {id} in collection `{collection}` does not decode: {reason}")]
    Decode {
        /// The collection.
        collection: String,
        /// The `_id` of the document, as relaxed Extended JSON.
        id: String,
        /// What does not decode, and why.
        reason: String,
    },

    /// An argument was rejected before anything was sent (page 0, an item that does not
    /// serialize, a document over the 16 MiB limit...).
    #[error("invalid input: {0}")]
    InvalidInput(String),

    /// A document would exceed MongoDB's 16 MiB limit ([`MAX_DOCUMENT_BYTES`]): an item too
    /// large by itself (refused before anything is sent), or one that does not fit in the
    /// document it would go to. Nothing was written.
    #[error("document in collection `{collection}` would exceed 16 MiB: {message}")]
    TooLarge {
        /// The collection.
        collection: String,
        /// Which item or document, and its size.
        message: String,
    },

    /// A unique index rejected a write. The patterns retry these internally; callers see it only
    /// from their own writes (e.g. inserting a parent that already exists).
    #[error("duplicate key in collection `{collection}`: {message}")]
    DuplicateKey {
        /// The collection.
        collection: String,
        /// The store's message (the index and the key).
        message: String,
    },

    /// The collection's validator refused the document a write would leave (MongoDB's
    /// DocumentValidationFailure, code 121; the in-memory store enforces the same validators):
    /// nothing was written by that write. `message` says which rule failed where the store
    /// tells.
    #[error("document refused by the validator of collection `{collection}`: {message}")]
    SchemaViolation {
        /// The collection.
        collection: String,
        /// The store's message (the rule that failed, where it says).
        message: String,
    },

    /// A retry loop gave up (a pathological number of concurrent conflicts): what it ran kept
    /// conflicting with other writers `attempts` times. Nothing of the last attempt was kept;
    /// running it again later may succeed.
    #[error("gave up after {attempts} attempts: {what}")]
    Contention {
        /// How many times it was tried.
        attempts: u32,
        /// What kept conflicting.
        what: String,
    },

    /// A transaction was aborted by a conflict with another writer (MongoDB's
    /// `TransientTransactionError`: a write conflict, or a transaction the server gave up).
    /// Nothing it wrote is kept; running it again may succeed. [`run_transaction`](crate::run_transaction)
    /// retries these itself.
    #[error("transaction aborted by a conflict, retry it: {message}")]
    WriteConflict {
        /// What the store said.
        message: String,
        #[source]
        /// The driver's error.
        source: Option<BoxError>,
    },

    /// A summary's sum would overflow its integer type (an Int64 past 2^63-1): the write that
    /// would overflow it was refused whole, nothing written.
    #[error("sum overflow in collection `{collection}`, field `{field}`: {message}")]
    Overflow {
        /// The collection.
        collection: String,
        /// The summary field(s) the sum would overflow.
        field: String,
        /// The store's message.
        message: String,
    },

    /// An update's required condition ([`Update::require`](crate::query::Update::require)) did
    /// not hold on the document it matched, or no document matched and the update upserts:
    /// nothing was written. The caller learns the document as it is and decides again (an
    /// ingest's fill: the key's items take the ordinary push).
    #[error("an update's required condition does not hold on its document in collection `{collection}` (or there is no such document): nothing was written")]
    Unmet {
        /// The collection.
        collection: String,
    },

    /// The store cannot do what was asked, by its nature: the in-memory store has no change
    /// feed to follow, for instance. Nothing was written.
    #[error("not supported by the {store} store: {reason}")]
    Unsupported {
        /// The store's system (`"memory"`, `"mongodb"`...).
        store: &'static str,
        /// What it cannot do, and why.
        reason: String,
    },

    /// A change feed cannot resume where it was asked to: the resume token is not valid, or
    /// the events after it are gone from the server's history (MongoDB's
    /// `ChangeStreamHistoryLost`, the oplog having rolled past them). A follower then starts
    /// a new feed and checks everything ([`pattern_core::follow`](https://docs.rs/pattern-core)).
    #[error("change history lost: {message}")]
    HistoryLost {
        /// What the server said.
        message: String,
    },

    /// Any other error the server returned (authorization, invalid index options...).
    #[error("MongoDB server error: {message}")]
    Server {
        /// What the server said.
        message: String,
        #[source]
        /// The driver's error.
        source: Option<BoxError>,
    },
}

#[cfg(test)]
#[test]
fn errors_stay_small() {
    // Every call returns a `Result<_, Error>`: its size is copied on every return.
    assert!(
        std::mem::size_of::<Error>() <= 80,
        "{}",
        std::mem::size_of::<Error>()
    );
}

/// MongoDB's maximum document size, which both stores enforce.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// `Result` with the store's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error type that wraps the store's [`Error`] (pattern-core's does): what the transaction
/// helper ([`run_transaction`](crate::run_transaction)) and an operation's span
/// ([`observe::traced_in`](crate::observe::traced_in)) need of the errors the work they run
/// returns.
pub trait FromStore: From<Error> + Send + 'static {
    /// The store's error this one holds, when it is one.
    fn store_error(&self) -> Option<&Error>;
    /// A low-cardinality kind for logs and metrics: the variant's name.
    fn kind_name(&self) -> &'static str;
}

impl FromStore for Error {
    fn store_error(&self) -> Option<&Error> {
        Some(self)
    }
    fn kind_name(&self) -> &'static str {
        Error::kind_name(self)
    }
}

impl Error {
    /// The variant's name (`"DuplicateKey"`, `"WriteConflict"`...): a low-cardinality kind
    /// for logs and metrics (the `error.type` of an operation's span, see
    /// [`observe`](crate::observe)).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Error::Unavailable { .. } => "Unavailable",
            Error::Decode { .. } => "Decode",
            Error::InvalidInput(_) => "InvalidInput",
            Error::TooLarge { .. } => "TooLarge",
            Error::DuplicateKey { .. } => "DuplicateKey",
            Error::SchemaViolation { .. } => "SchemaViolation",
            Error::Contention { .. } => "Contention",
            Error::WriteConflict { .. } => "WriteConflict",
            Error::Overflow { .. } => "Overflow",
            Error::Unmet { .. } => "Unmet",
            Error::Unsupported { .. } => "Unsupported",
            Error::HistoryLost { .. } => "HistoryLost",
            Error::Server { .. } => "Server",
        }
    }
    /// A document of `collection` (`_id` `id`) that does not decode: [`Error::Decode`].
    pub fn decode(collection: &str, id: Option<&bson::Bson>, reason: impl fmt::Display) -> Self {
        Error::Decode {
            collection: collection.to_owned(),
            id: id
                .map(display_bson)
                .unwrap_or_else(|| "(no _id)".to_owned()),
            reason: reason.to_string(),
        }
    }

    /// Input the operation refuses: [`Error::InvalidInput`].
    pub fn invalid(msg: impl fmt::Display) -> Self {
        Error::InvalidInput(msg.to_string())
    }

    /// True for a conflict that a retry of the whole transaction may resolve
    /// ([`Error::WriteConflict`]).
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::WriteConflict { .. })
    }

    /// True when the server could not be reached or timed out.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable { .. })
    }
}

/// Relaxed Extended JSON of a value, for messages.
pub fn display_bson(b: &bson::Bson) -> String {
    b.clone().into_relaxed_extjson().to_string()
}
