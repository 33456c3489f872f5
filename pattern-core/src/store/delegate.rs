//! The [`Store`](crate::Store) methods [`AnyStore`](crate::store::AnyStore) and
//! [`AnyTxn`](crate::AnyTxn) pass to the store they hold: one list, each method's signature
//! written once. Each enum's impl holds `delegated!(Enum)` and what is its own (its
//! transaction type, how it starts one).

/// `match` on an `AnyStore` or `AnyTxn`: `$call` with `$s` bound to the store it holds.
macro_rules! delegate {
    ($any:ident, $self:ident, $s:ident => $call:expr) => {
        match $self {
            #[cfg(feature = "memory")]
            $any::Memory($s) => $call,
            #[cfg(feature = "mongodb")]
            $any::Mongo($s) => $call,
        }
    };
}

/// Every `Store` method that `$any` passes on as it is.
macro_rules! delegated {
    ($any:ident) => {
        async fn insert_one(&self, coll: &str, doc: bson::Document) -> ::pattern_store::Result<()> {
            delegate!($any, self, s => s.insert_one(coll, doc).await)
        }
        async fn insert_many(&self, coll: &str, docs: Vec<bson::Document>) -> ::pattern_store::Result<()> {
            delegate!($any, self, s => s.insert_many(coll, docs).await)
        }
        fn scan<'a>(
            &'a self,
            coll: &'a str,
            filter: &'a $crate::store::query::Filter,
            opts: &'a $crate::store::query::FindOptions,
            batch: u32,
        ) -> futures::stream::BoxStream<'a, ::pattern_store::Result<bson::RawDocumentBuf>> {
            delegate!($any, self, s => s.scan(coll, filter, opts, batch))
        }
        fn sample<'a>(
            &'a self,
            coll: &'a str,
            size: u32,
            batch: u32,
            comment: &'static str,
        ) -> futures::stream::BoxStream<'a, ::pattern_store::Result<bson::RawDocumentBuf>> {
            delegate!($any, self, s => s.sample(coll, size, batch, comment))
        }
        async fn kill_sessions(&self, ids: &[bson::Document]) -> ::pattern_store::Result<()> {
            delegate!($any, self, s => s.kill_sessions(ids).await)
        }
        async fn write_batch(
            &self,
            coll: &str,
            ops: Vec<$crate::store::WriteOp>,
        ) -> $crate::store::BatchOutcome {
            delegate!($any, self, s => s.write_batch(coll, ops).await)
        }
        async fn write_batch_over(
            &self,
            colls: &[&str],
            ops: Vec<(usize, $crate::store::WriteOp)>,
        ) -> $crate::store::BatchOutcome {
            delegate!($any, self, s => s.write_batch_over(colls, ops).await)
        }
        async fn update_one(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            update: &mut $crate::store::query::Update,
            upsert: bool,
        ) -> ::pattern_store::Result<$crate::store::UpdateOutcome> {
            delegate!($any, self, s => s.update_one(coll, filter, update, upsert).await)
        }
        async fn update_returning(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            update: &mut $crate::store::query::Update,
            fields: &[&str],
        ) -> ::pattern_store::Result<Option<bson::Document>> {
            delegate!($any, self, s => s.update_returning(coll, filter, update, fields).await)
        }
        async fn write_across(
            &self,
            writes: Vec<(&str, $crate::store::WriteOp)>,
            comment: Option<&str>,
        ) -> ::pattern_store::Result<Vec<u64>> {
            delegate!($any, self, s => s.write_across(writes, comment).await)
        }
        async fn update_first(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            sort: &[($crate::store::query::Path, i32)],
            hint: &str,
            update: &mut $crate::store::query::Update,
            upsert: bool,
            fields: &[&str],
        ) -> ::pattern_store::Result<Option<bson::Document>> {
            delegate!($any, self, s => {
                s.update_first(coll, filter, sort, hint, update, upsert, fields).await
            })
        }
        async fn push_open(
            &self,
            push: &$crate::store::OpenPush<'_>,
            items: &mut Vec<bson::Bson>,
        ) -> ::pattern_store::Result<bool> {
            delegate!($any, self, s => s.push_open(push, items).await)
        }
        async fn push_open_then(
            &self,
            push: &$crate::store::OpenPush<'_>,
            items: &mut Vec<bson::Bson>,
            then_coll: &str,
            then_filter: &$crate::store::query::Filter,
            then: &mut $crate::store::query::Update,
        ) -> ::pattern_store::Result<(bool, ::pattern_store::Result<()>)> {
            delegate!($any, self, s => s.push_open_then(push, items, then_coll, then_filter, then).await)
        }
        async fn replace_one(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            doc: bson::Document,
            upsert: bool,
        ) -> ::pattern_store::Result<$crate::store::UpdateOutcome> {
            delegate!($any, self, s => s.replace_one(coll, filter, doc, upsert).await)
        }
        async fn find(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            opts: &$crate::store::query::FindOptions,
        ) -> ::pattern_store::Result<Vec<bson::Document>> {
            delegate!($any, self, s => s.find(coll, filter, opts).await)
        }
        async fn find_raw(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            opts: &$crate::store::query::FindOptions,
        ) -> ::pattern_store::Result<Vec<bson::RawDocumentBuf>> {
            delegate!($any, self, s => s.find_raw(coll, filter, opts).await)
        }
        async fn find_raw_then(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            opts: &$crate::store::query::FindOptions,
            then_coll: &str,
            then_filter: &$crate::store::query::Filter,
        ) -> ::pattern_store::Result<(Vec<bson::RawDocumentBuf>, Option<bson::Document>)> {
            delegate!($any, self, s => {
                s.find_raw_then(coll, filter, opts, then_coll, then_filter).await
            })
        }
        async fn array_stats(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            array_field: &str,
        ) -> ::pattern_store::Result<$crate::store::ArrayStats> {
            delegate!($any, self, s => s.array_stats(coll, filter, array_field).await)
        }
        async fn first_per(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            by: &str,
            sort: &[($crate::store::query::Path, i32)],
            projection: &[$crate::store::query::Path],
        ) -> ::pattern_store::Result<Vec<bson::Document>> {
            delegate!($any, self, s => s.first_per(coll, filter, by, sort, projection).await)
        }
        async fn count_matching(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            comment: &'static str,
        ) -> ::pattern_store::Result<u64> {
            delegate!($any, self, s => s.count_matching(coll, filter, comment).await)
        }
        async fn update_many(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
            update: &$crate::store::query::Update,
        ) -> ::pattern_store::Result<u64> {
            delegate!($any, self, s => s.update_many(coll, filter, update).await)
        }
        async fn graph_lookup(
            &self,
            coll: &str,
            q: &$crate::store::query::GraphLookup,
        ) -> ::pattern_store::Result<Option<$crate::store::query::Graph>> {
            delegate!($any, self, s => s.graph_lookup(coll, q).await)
        }
        async fn delete_many(
            &self,
            coll: &str,
            filter: &$crate::store::query::Filter,
        ) -> ::pattern_store::Result<u64> {
            delegate!($any, self, s => s.delete_many(coll, filter).await)
        }
        async fn create_index(
            &self,
            coll: &str,
            index: &$crate::store::query::IndexSpec,
        ) -> ::pattern_store::Result<()> {
            delegate!($any, self, s => s.create_index(coll, index).await)
        }
        async fn index_names(&self, coll: &str) -> ::pattern_store::Result<Vec<String>> {
            delegate!($any, self, s => s.index_names(coll).await)
        }
        async fn drop_index(&self, coll: &str, name: &str) -> ::pattern_store::Result<()> {
            delegate!($any, self, s => s.drop_index(coll, name).await)
        }
        async fn collection_names(&self) -> ::pattern_store::Result<Vec<String>> {
            delegate!($any, self, s => s.collection_names().await)
        }
        async fn set_validator(
            &self,
            coll: &str,
            schema: &$crate::store::query::Schema,
        ) -> ::pattern_store::Result<()> {
            delegate!($any, self, s => s.set_validator(coll, schema).await)
        }
        async fn watch(
            &self,
            watch: &$crate::store::Watch,
        ) -> ::pattern_store::Result<Box<dyn $crate::store::ChangeFeed>> {
            delegate!($any, self, s => s.watch(watch).await)
        }
        async fn keep_before_images(&self, coll: &str) -> ::pattern_store::Result<()> {
            delegate!($any, self, s => s.keep_before_images(coll).await)
        }
        fn system_name(&self) -> &'static str {
            delegate!($any, self, s => s.system_name())
        }
        fn database_name(&self) -> Option<&str> {
            delegate!($any, self, s => s.database_name())
        }
        async fn routes_by_shard_key(&self) -> ::pattern_store::Result<bool> {
            delegate!($any, self, s => s.routes_by_shard_key().await)
        }
        fn extensions(&self) -> &$crate::store::Extensions {
            delegate!($any, self, s => s.extensions())
        }
    };
}
