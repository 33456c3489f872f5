//! The operations, each written once over an optional session ([`Session`]): the store's
//! own calls pass `None`, a [`MongoTxn`](super::MongoTxn) its session.

use bson::{doc, Bson, Document};
use futures::TryStreamExt;
use mongodb::options::UpdateModifications;

use super::{map_err, MongoStore, Session, DEPTH_FIELD, READ_ALL_BATCH};
use pattern_store::query::{Filter, FindOptions, Graph, GraphLookup, Path, Update};
use pattern_store::{ArrayStats, UpdateOutcome};
use pattern_store::{Error, Result};

/// The field [`MongoStore::find_raw_then_in`] wraps the second read's document in.
const THEN_FIELD: &str = "__pattern_then";

/// Every document of a find or an aggregation's cursor (`$action`), in `$session` when there is
/// one (the driver's two cursor types read alike), counted as the command's documents; an
/// error mapped for collection `$coll`.
macro_rules! read_all {
    ($action:expr, $session:expr, $coll:expr) => {{
        let read: std::result::Result<Vec<_>, mongodb::error::Error> = match $session {
            None => match $action.await {
                Ok(cursor) => cursor.try_collect().await,
                Err(e) => Err(e),
            },
            Some(s) => match $action.session(&mut *s).await {
                Ok(mut cursor) => cursor.stream(s).try_collect().await,
                Err(e) => Err(e),
            },
        };
        match read {
            Ok(docs) => {
                pattern_store::observe::command(docs.len() as u64);
                Ok(docs)
            }
            Err(e) => Err(map_err($coll, e)),
        }
    }};
}

impl MongoStore {
    pub(crate) async fn insert_one_in(
        &self,
        session: Session<'_>,
        coll: &str,
        doc: Document,
    ) -> Result<()> {
        pattern_store::codec::size::check_document_size(coll, &doc)?;
        let collection = self.coll(coll);
        pattern_store::observe::command(1);
        in_session!(collection.insert_one(doc), session)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(())
    }

    /// `insert` of many documents, in order (the driver splits the batch past its limits).
    pub(crate) async fn insert_many_in(
        &self,
        session: Session<'_>,
        coll: &str,
        docs: Vec<Document>,
    ) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        for doc in &docs {
            pattern_store::codec::size::check_document_size(coll, doc)?;
        }
        let collection = self.coll(coll);
        pattern_store::observe::command(docs.len() as u64);
        in_session!(collection.insert_many(docs), session)
            .await
            .map_err(|e| map_err(coll, e))?;
        Ok(())
    }

    pub(crate) async fn update_one_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        update: &Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        update.check()?;
        let collection = self.coll(coll);
        let action = collection
            .update_one(filter.to_document(), modifications(update))
            .upsert(upsert);
        let r = in_session!(action, session)
            .await
            .map_err(|e| map_err(coll, e))?;
        pattern_store::observe::command(r.modified_count + u64::from(r.upserted_id.is_some()));
        Ok(UpdateOutcome {
            matched: r.matched_count > 0,
            upserted: r.upserted_id.is_some(),
            modified: r.modified_count > 0,
        })
    }

    /// [`Store::update_first`] in `session`.
    #[allow(clippy::too_many_arguments)] // the contract's parameters, and the session
    pub(crate) async fn update_first_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        sort: &[(pattern_store::query::Path, i32)],
        hint: &str,
        update: &Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        update.check()?;
        let collection = self.coll(coll);
        if fields.is_empty() {
            // Nothing to return: `update`, the seed's own command (see the trait's note on
            // `sort`).
            let mut action = collection
                .update_one(filter.to_document(), modifications(update))
                .upsert(upsert);
            if !hint.is_empty() {
                action = action.hint(mongodb::options::Hint::Name(hint.to_owned()));
            }
            let r = in_session!(action, session)
                .await
                .map_err(|e| map_err(coll, e))?;
            pattern_store::observe::command(r.modified_count + u64::from(r.upserted_id.is_some()));
            return Ok((r.matched_count > 0).then(Document::new));
        }
        let sort: Document = sort
            .iter()
            .map(|(k, d)| (k.to_string(), Bson::Int32(*d)))
            .collect();
        // `_id` only when asked for (a projection includes it unless excluded).
        let mut projection = doc! {"_id": fields.contains(&"_id")};
        for f in fields.iter().filter(|f| **f != "_id") {
            projection.insert(*f, 1);
        }
        // The pre-image: present when a document matched; absent when none did (and one was
        // inserted, with `upsert`).
        let mut action = collection
            .find_one_and_update(filter.to_document(), modifications(update))
            .sort(sort)
            .projection(projection)
            .upsert(upsert);
        if !hint.is_empty() {
            action = action.hint(mongodb::options::Hint::Name(hint.to_owned()));
        }
        let found = in_session!(action, session)
            .await
            .map_err(|e| map_err(coll, e))?;
        pattern_store::observe::command(1);
        Ok(found)
    }

    /// [`Store::update_returning`](pattern_store::Store::update_returning) in `session`: one
    /// `findAndModify` returning the document after the update, projected.
    pub(crate) async fn update_returning_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        update: &Update,
        fields: &[&str],
    ) -> Result<Option<Document>> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        update.check()?;
        let mut projection = doc! {"_id": 1};
        for f in fields.iter().filter(|f| **f != "_id") {
            projection.insert(*f, 1);
        }
        let collection = self.coll(coll);
        let action = collection
            .find_one_and_update(filter.to_document(), modifications(update))
            .return_document(mongodb::options::ReturnDocument::After)
            .projection(projection);
        let found = in_session!(action, session)
            .await
            .map_err(|e| map_err(coll, e))?;
        pattern_store::observe::command(u64::from(found.is_some()));
        Ok(found)
    }

    pub(crate) async fn replace_one_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        pattern_store::codec::size::check_document_size(coll, &doc)?;
        let collection = self.coll(coll);
        let action = collection
            .replace_one(filter.to_document(), doc)
            .upsert(upsert);
        let r = in_session!(action, session)
            .await
            .map_err(|e| map_err(coll, e))?;
        pattern_store::observe::command(1);
        Ok(UpdateOutcome {
            matched: r.matched_count > 0,
            upserted: r.upserted_id.is_some(),
            modified: r.modified_count > 0,
        })
    }

    /// `find` with the store's options, each document decoded as `T` by the driver.
    pub(crate) async fn find_in<T>(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<T>>
    where
        T: serde::de::DeserializeOwned + Send + Sync,
    {
        pattern_store::observe::query(coll, "find", || filter.to_document());
        opts.check()?;
        let collection = self.db.collection::<T>(coll);
        let mut action = collection
            .find(filter.to_document())
            .with_options(driver_find_options(opts));
        match opts.limit {
            // The whole limit in the first batch where it fits (one round trip: the cursor is
            // closed once the limit is reached). Not a negative limit: that returns a single
            // batch, which a server may cut short (at 16 MiB, or 101 documents: test server, T7),
            // silently dropping the rest. A negative limit counts as its absolute value, as the
            // in-memory store takes it.
            Some(n) if n != 0 => {
                let n = n.checked_abs().unwrap_or(i64::MAX);
                action = action
                    .limit(n)
                    .batch_size(u32::try_from(n).unwrap_or(u32::MAX))
            }
            _ => action = action.batch_size(READ_ALL_BATCH),
        }
        read_all!(action, session, coll)
    }

    /// [`Store::find_raw_then`](pattern_store::Store::find_raw_then): one `aggregate`, the
    /// find as stages (`$match`, `$sort`, `$skip`, `$limit`, `$project`), then `$unionWith`
    /// the first document of `then_coll` matching `then_filter`, wrapped in a field of its own
    /// ([`THEN_FIELD`]) so that it is told apart from the find's (which all have an `_id`).
    pub(crate) async fn find_raw_then_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
        then_coll: &str,
        then_filter: &Filter,
    ) -> Result<(Vec<bson::RawDocumentBuf>, Option<Document>)> {
        pattern_store::observe::query(coll, "aggregate", || filter.to_document());
        opts.check()?;
        let o = driver_find_options(opts);
        let mut pipeline = vec![doc! {"$match": filter.to_document()}];
        if let Some(sort) = o.sort {
            pipeline.push(doc! {"$sort": sort});
        }
        if let Some(skip) = o.skip {
            pipeline.push(doc! {"$skip": skip as i64});
        }
        if let Some(n) = opts.limit.filter(|n| *n != 0) {
            pipeline.push(doc! {"$limit": n.checked_abs().unwrap_or(i64::MAX)});
        }
        if let Some(fields) = o.projection {
            pipeline.push(doc! {"$project": fields});
        }
        pipeline.push(doc! {"$unionWith": {"coll": then_coll, "pipeline": [
            {"$match": then_filter.to_document()},
            {"$limit": 1},
            {"$replaceWith": {THEN_FIELD: "$$ROOT"}},
        ]}});
        let collection = self.db.collection::<bson::RawDocumentBuf>(coll);
        let mut action = collection
            .aggregate(pipeline)
            .with_type::<bson::RawDocumentBuf>()
            .batch_size(READ_ALL_BATCH);
        if let Some(c) = opts.comment {
            action = action.comment(c);
        }
        let mut docs: Vec<bson::RawDocumentBuf> = read_all!(action, session, coll)?;
        // Last, where a server sends the union's documents after the pipeline's; looked for
        // anywhere, should one not.
        let wrapped = |d: &bson::RawDocumentBuf| {
            d.get("_id").ok().flatten().is_none() && d.get_document(THEN_FIELD).is_ok()
        };
        let then = match docs.iter().rposition(wrapped) {
            Some(at) => {
                let wrapper = docs.remove(at);
                let then = wrapper.get_document(THEN_FIELD).expect("checked above");
                Some(Document::try_from(then).map_err(|e| Error::Decode {
                    collection: then_coll.to_owned(),
                    id: String::new(),
                    reason: e.to_string(),
                })?)
            }
            None => None,
        };
        Ok((docs, then))
    }

    /// Every document an aggregation returns: all in the first reply unless they pass 16 MiB
    /// (so no `getMore`).
    async fn aggregate_in(
        &self,
        session: Session<'_>,
        coll: &str,
        pipeline: Vec<Document>,
    ) -> Result<Vec<Document>> {
        let collection = self.coll(coll);
        let action = collection.aggregate(pipeline).batch_size(READ_ALL_BATCH);
        read_all!(action, session, coll)
    }

    /// [`Store::first_per`](pattern_store::Store::first_per): one `aggregate`, `$match`,
    /// `$sort` by `by` then `sort`, `$group` by `by` with `$first`, then the wanted fields.
    /// `by` is sorted in the direction of `sort`'s first key, so that the whole sort is an
    /// index's order or its reverse (`{key: -1, n: -1, _id: -1}` walks `{key, n, _id}`
    /// backwards): a server then needs no blocking sort, and MongoDB answers a `$sort` and
    /// `$group` with `$first` by jumping from one key to the next in the index.
    pub(crate) async fn first_per_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        by: &str,
        sort: &[(Path, i32)],
        projection: &[Path],
    ) -> Result<Vec<Document>> {
        let mut order = doc! {by: sort.first().map_or(1, |(_, dir)| *dir)};
        for (path, dir) in sort {
            order.insert(path.as_str(), *dir);
        }
        let mut pipeline = vec![
            doc! {"$match": filter.to_document()},
            doc! {"$sort": order},
            doc! {"$group": {"_id": format!("${by}"), "first": {"$first": "$$ROOT"}}},
            doc! {"$replaceRoot": {"newRoot": "$first"}},
        ];
        if !projection.is_empty() {
            let fields = std::iter::once(by).chain(projection.iter().map(|p| p.as_str()));
            let mut wanted = Document::new();
            for f in fields {
                wanted.insert(f, 1);
            }
            pipeline.push(doc! {"$project": wanted});
        }
        self.aggregate_in(session, coll, pipeline).await
    }

    pub(crate) async fn array_stats_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        array_field: &str,
    ) -> Result<ArrayStats> {
        let field = format!("${array_field}");
        let pipeline = vec![
            doc! {"$match": filter.to_document()},
            doc! {"$group": {
                "_id": Bson::Null,
                "documents": {"$sum": 1},
                "items": {"$sum": {"$cond": [{"$isArray": [&field]}, {"$size": [&field]}, 0]}},
                "not_arrays": {"$sum": {"$cond": [
                    {"$or": [{"$isArray": [&field]}, {"$eq": [{"$type": [&field]}, "missing"]}, {"$eq": [{"$type": [&field]}, "null"]}]},
                    0, 1]}},
            }},
        ];
        let docs = self.aggregate_in(session, coll, pipeline).await?;
        let Some(d) = docs.first() else {
            return Ok(ArrayStats::default());
        };
        let n = |k: &str| match d.get(k).and_then(pattern_store::codec::as_int) {
            Some(x) => u64::try_from(x).unwrap_or(0),
            None => 0,
        };
        Ok(ArrayStats {
            documents: n("documents"),
            items: n("items"),
            not_arrays: n("not_arrays"),
        })
    }

    pub(crate) async fn update_many_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
        update: &Update,
    ) -> Result<u64> {
        pattern_store::observe::query(coll, "update", || filter.to_document());
        update.check()?;
        let collection = self.coll(coll);
        let action = collection.update_many(filter.to_document(), modifications(update));
        let r = in_session!(action, session)
            .await
            .map_err(|e| map_err(coll, e))?;
        pattern_store::observe::command(r.modified_count);
        Ok(r.matched_count)
    }

    /// One `aggregate`: the start document, wrapped (`{s: <start>}`) so that the lookup's
    /// array sits beside it rather than in it; `$graphLookup`; then the start document and the
    /// found ones concatenated and unwound, so that each comes back as a document of its own
    /// (the start first), not as one document that could pass 16 MiB.
    ///
    /// Null and missing values connect nothing: the start's values are sent without their
    /// nulls (`startWith` as an expression), and `restrictSearchWithMatch` leaves out the
    /// documents whose `connect_to` is null, missing, or an array of nulls only, which a null
    /// value of a found document's `connect_from` would otherwise match. (A document whose
    /// `connect_to` array holds a null beside other values stays reachable by those values, so
    /// such a null value still reaches it: the one case where this differs from the contract.)
    pub(crate) async fn graph_lookup_in(
        &self,
        session: Session<'_>,
        coll: &str,
        q: &GraphLookup,
    ) -> Result<Option<Graph>> {
        let start = format!("$s.{}", q.start_with);
        let start_values = doc! {"$filter": {
            "input": {"$cond": [{"$isArray": [&start]}, &start, [&start]]},
            "cond": {"$ne": ["$$this", Bson::Null]},
        }};
        let to = q.connect_to.as_str();
        let not_null = doc! {"$or": [
            {to: {"$ne": Bson::Null}},
            {to: {"$elemMatch": {"$ne": Bson::Null}}},
        ]};
        let mut lookup = doc! {
            "from": coll,
            "startWith": start_values,
            "connectFromField": q.connect_from.as_str(),
            "connectToField": to,
            "as": "found",
            "depthField": DEPTH_FIELD,
            "restrictSearchWithMatch": not_null,
        };
        // Always a `maxDepth`: without one, the test server stops at depth 100 (T8; MongoDB
        // has no limit); `u32::MAX` is the contract's own unlimited.
        lookup.insert("maxDepth", i64::from(q.max_depth.unwrap_or(u32::MAX)));
        let pipeline = vec![
            doc! {"$match": Filter::eq("_id", q.start.clone()).to_document()},
            doc! {"$replaceRoot": {"newRoot": {"s": "$$ROOT"}}},
            doc! {"$graphLookup": lookup},
            doc! {"$project": {"_id": 0, "all": {"$concatArrays": [["$s"], "$found"]}}},
            doc! {"$unwind": "$all"},
            doc! {"$replaceRoot": {"newRoot": "$all"}},
        ];
        let docs = self.aggregate_in(session, coll, pipeline).await?;
        let mut docs = docs.into_iter();
        let Some(start) = docs.next() else {
            return Ok(None);
        };
        let found = docs
            .map(|mut d| {
                let depth = d.remove(DEPTH_FIELD);
                let depth = depth
                    .as_ref()
                    .and_then(pattern_store::codec::as_int)
                    .and_then(|x| u32::try_from(x).ok())
                    .ok_or_else(|| {
                        Error::decode(coll, d.get("_id"), "$graphLookup returned no depth")
                    })?;
                Ok((d, depth))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(Graph { start, found }))
    }

    pub(crate) async fn delete_many_in(
        &self,
        session: Session<'_>,
        coll: &str,
        filter: &Filter,
    ) -> Result<u64> {
        pattern_store::observe::query(coll, "delete", || filter.to_document());
        let collection = self.coll(coll);
        let r = in_session!(collection.delete_many(filter.to_document()), session)
            .await
            .map_err(|e| map_err(coll, e))?;
        pattern_store::observe::command(r.deleted_count);
        Ok(r.deleted_count)
    }
}

/// The server's error code, if the server answered with one.
/// The driver's options for `opts`' sort, skip and projection (the limit and batch size are
/// set by each caller).
pub(super) fn driver_find_options(opts: &FindOptions) -> mongodb::options::FindOptions {
    let mut o = mongodb::options::FindOptions::default();
    if !opts.sort.is_empty() {
        let sort = opts
            .sort
            .iter()
            .map(|(k, d)| (k.to_string(), Bson::Int32(*d)));
        o.sort = Some(sort.collect());
    }
    if opts.skip > 0 {
        o.skip = Some(opts.skip);
    }
    if !opts.projection.is_empty() {
        let fields = opts
            .projection
            .iter()
            .map(|k| (k.to_string(), Bson::Int32(1)));
        o.projection = Some(fields.collect());
    }
    o.comment = opts.comment.map(Bson::from);
    o
}

/// The update as a raw command carries it (its values moved): an update pipeline when it has
/// rewrites ([`Update::into_pipeline`]), else the operators' document.
pub(super) fn modifications_bson(update: Update) -> Bson {
    match update.is_pipeline() {
        true => Bson::from(update.into_pipeline().expect("a pipeline")),
        false => Bson::Document(update.into_document()),
    }
}

/// The update as the driver sends it: an update pipeline when it has rewrites
/// ([`Update::to_pipeline`]), else the operators' document.
pub(super) fn modifications(update: &Update) -> UpdateModifications {
    match update.to_pipeline() {
        Some(pipeline) => UpdateModifications::Pipeline(pipeline),
        None => UpdateModifications::Document(update.to_document()),
    }
}
