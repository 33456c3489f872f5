//! [`AnyStore`]: either store, chosen at run time.

use super::any_txn::AnyTxn;
use super::Store;
#[cfg(feature = "memory")]
use pattern_memory::MemoryStore;
#[cfg(feature = "mongodb")]
use pattern_mongo::MongoStore;
use pattern_store::Result;

/// Either store, chosen at run time (e.g. MongoDB when `MONGODB_URI` is set).
#[derive(Clone, Debug)]
pub enum AnyStore {
    /// The embedded store.
    #[cfg(feature = "memory")]
    Memory(MemoryStore),
    /// A MongoDB database.
    #[cfg(feature = "mongodb")]
    Mongo(MongoStore),
}

impl AnyStore {
    /// MongoDB database `db` at `$MONGODB_URI` when that variable is set (and the `mongodb`
    /// feature is on), else a new in-memory store (feature `memory`; without it,
    /// [`Error::InvalidInput`](crate::store::Error::InvalidInput) saying so).
    pub async fn from_env(db: &str) -> Result<Self> {
        #[cfg(feature = "mongodb")]
        if let Ok(uri) = std::env::var("MONGODB_URI") {
            return Ok(AnyStore::Mongo(MongoStore::connect(&uri, db).await?));
        }
        let _ = db;
        #[cfg(feature = "memory")]
        return Ok(AnyStore::Memory(MemoryStore::new()));
        #[cfg(not(feature = "memory"))]
        Err(pattern_store::Error::invalid(
            "MONGODB_URI is not set, and pattern-core was built without the in-memory store \
             (feature `memory`)",
        ))
    }

    /// Drops a collection and its indexes (to start an example or a test afresh).
    pub async fn drop_collection(&self, name: &str) -> Result<()> {
        match self {
            #[cfg(feature = "memory")]
            AnyStore::Memory(m) => {
                m.drop_collection(name);
                Ok(())
            }
            #[cfg(feature = "mongodb")]
            AnyStore::Mongo(m) => m.drop_collection(name).await,
        }
    }

    /// A short name of the store, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            #[cfg(feature = "memory")]
            AnyStore::Memory(_) => "in-memory",
            #[cfg(feature = "mongodb")]
            AnyStore::Mongo(_) => "MongoDB",
        }
    }
}

impl Store for AnyStore {
    delegated!(AnyStore);

    type Txn = AnyTxn;
    /// A transaction of the same kind as the store.
    async fn start_transaction(&self) -> Result<AnyTxn> {
        Ok(match self {
            #[cfg(feature = "memory")]
            AnyStore::Memory(s) => AnyTxn::Memory(s.start_transaction().await?),
            #[cfg(feature = "mongodb")]
            AnyStore::Mongo(s) => AnyTxn::Mongo(s.start_transaction().await?),
        })
    }
}
