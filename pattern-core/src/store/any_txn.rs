//! [`AnyTxn`]: a transaction of either store, what [`AnyStore`](crate::store::AnyStore) starts.

use bson::Document;

use crate::store::{Store, Transaction};
use pattern_store::Result;

/// A transaction on an [`AnyStore`](crate::store::AnyStore), of the same kind as the store.
#[derive(Debug)]
pub enum AnyTxn {
    /// A transaction of the embedded store.
    #[cfg(feature = "memory")]
    Memory(pattern_memory::MemoryTxn),
    /// A MongoDB transaction.
    #[cfg(feature = "mongodb")]
    Mongo(pattern_mongo::MongoTxn),
}

impl Store for AnyTxn {
    delegated!(AnyTxn);

    type Txn = AnyTxn;

    /// What the underlying transaction answers (transactions do not nest: an error).
    async fn start_transaction(&self) -> Result<AnyTxn> {
        Ok(match self {
            #[cfg(feature = "memory")]
            AnyTxn::Memory(t) => AnyTxn::Memory(t.start_transaction().await?),
            #[cfg(feature = "mongodb")]
            AnyTxn::Mongo(t) => AnyTxn::Mongo(t.start_transaction().await?),
        })
    }

    fn current_transaction(&self) -> Option<&AnyTxn> {
        Some(self)
    }
}

impl Transaction for AnyTxn {
    async fn commit(&self) -> Result<()> {
        delegate!(AnyTxn, self, t => t.commit().await)
    }
    async fn abort(&self) -> Result<()> {
        delegate!(AnyTxn, self, t => t.abort().await)
    }
    async fn session_id(&self) -> Option<Document> {
        delegate!(AnyTxn, self, t => t.session_id().await)
    }
}
