//! The [`Store`](pattern_store::Store) methods that [`MongoStore`](crate::MongoStore) and
//! [`MongoTxn`](crate::MongoTxn) both run as an operation of `ops.rs` in their session: one
//! list, each method's signature written once. Each impl holds `session_ops!(run)` and what is
//! its own.

/// Every `Store` method that is the store's `<method>_in` run in a session. `$run!(self,
/// |store, s| call)` runs `call` with `store` the [`MongoStore`](crate::MongoStore) and `s`
/// the session, and returns its result.
macro_rules! session_ops {
    ($run:ident) => {
        async fn insert_one(&self, coll: &str, doc: bson::Document) -> pattern_store::Result<()> {
            $run!(self, |store, s| store.insert_one_in(s, coll, doc))
        }

        async fn insert_many(
            &self,
            coll: &str,
            docs: Vec<bson::Document>,
        ) -> pattern_store::Result<()> {
            $run!(self, |store, s| store.insert_many_in(s, coll, docs))
        }

        async fn update_one(
            &self,
            coll: &str,
            filter: &pattern_store::query::Filter,
            update: &mut pattern_store::query::Update,
            upsert: bool,
        ) -> pattern_store::Result<pattern_store::UpdateOutcome> {
            $run!(self, |store, s| store
                .update_one_in(s, coll, filter, update, upsert))
        }

        async fn update_first(
            &self,
            coll: &str,
            filter: &pattern_store::query::Filter,
            sort: &[(pattern_store::query::Path, i32)],
            hint: &str,
            update: &mut pattern_store::query::Update,
            upsert: bool,
            fields: &[&str],
        ) -> pattern_store::Result<Option<bson::Document>> {
            $run!(self, |store, s| store.update_first_in(
                s, coll, filter, sort, hint, update, upsert, fields
            ))
        }

        async fn update_returning(
            &self,
            coll: &str,
            filter: &pattern_store::query::Filter,
            update: &mut pattern_store::query::Update,
            fields: &[&str],
        ) -> pattern_store::Result<Option<bson::Document>> {
            $run!(self, |store, s| store
                .update_returning_in(s, coll, filter, update, fields))
        }

        async fn replace_one(
            &self,
            coll: &str,
            filter: &pattern_store::query::Filter,
            doc: bson::Document,
            upsert: bool,
        ) -> pattern_store::Result<pattern_store::UpdateOutcome> {
            $run!(self, |store, s| store
                .replace_one_in(s, coll, filter, doc, upsert))
        }

        async fn find(
            &self,
            coll: &str,
            filter: &pattern_store::query::Filter,
            opts: &pattern_store::query::FindOptions,
        ) -> pattern_store::Result<Vec<bson::Document>> {
            $run!(self, |store, s| store.find_in(s, coll, filter, opts))
        }

        /// The reply's documents as the driver received them (no `Document` built).
        async fn find_raw(
            &self,
            coll: &str,
            filter: &pattern_store::query::Filter,
            opts: &pattern_store::query::FindOptions,
        ) -> pattern_store::Result<Vec<bson::RawDocumentBuf>> {
            $run!(self, |store, s| store.find_in(s, coll, filter, opts))
        }

        async fn array_stats(
            &self,
            coll: &str,
            filter: &pattern_store::query::Filter,
            array_field: &str,
        ) -> pattern_store::Result<pattern_store::ArrayStats> {
            $run!(self, |store, s| store.array_stats_in(
                s,
                coll,
                filter,
                array_field
            ))
        }

        async fn update_many(
            &self,
            coll: &str,
            filter: &pattern_store::query::Filter,
            update: &pattern_store::query::Update,
        ) -> pattern_store::Result<u64> {
            $run!(self, |store, s| store
                .update_many_in(s, coll, filter, update))
        }

        async fn graph_lookup(
            &self,
            coll: &str,
            q: &pattern_store::query::GraphLookup,
        ) -> pattern_store::Result<Option<pattern_store::query::Graph>> {
            $run!(self, |store, s| store.graph_lookup_in(s, coll, q))
        }

        async fn delete_many(
            &self,
            coll: &str,
            filter: &pattern_store::query::Filter,
        ) -> pattern_store::Result<u64> {
            $run!(self, |store, s| store.delete_many_in(s, coll, filter))
        }
    };
}
