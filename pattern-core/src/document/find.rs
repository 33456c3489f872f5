//! Typed finds: a filter, the fields wanted, an order and a limit, decoded as the document
//! type or any type the caller chooses (the fields of a projection).

use bson::Document as BsonDocument;
use serde::de::DeserializeOwned;

use super::versions::{self, Stored};
use super::{
    decode, indexes_ready, read_stored, strip_kept, Document, Field, Filter, DOCUMENT_FIND,
    KEYWORD_SEARCH,
};
use crate::store::query::{FindOptions, Path};
use crate::store::Store;
use crate::Result;

/// A find of documents of type `D`: `Book::find(filter).project(Book::TITLE).limit(1)`, then
/// [`Find::all`] (the documents as `D`) or [`Find::all_as`] (as a type of the caller's, e.g.
/// the projected fields). One `find` command.
///
/// On a sharded collection a find without an equality on `_id` is a scatter-gather; it is
/// named so in the server's logs (`comment`: [`KEYWORD_SEARCH`] for a keyword search, else
/// [`DOCUMENT_FIND`]).
pub struct Find<D> {
    filter: Filter<D>,
    /// The top-level fields wanted; empty: the whole documents.
    projection: Vec<Path>,
    sort: Vec<(Path, i32)>,
    limit: Option<i64>,
    /// Leave out documents of a polymorphic collection whose discriminator is unknown or
    /// missing, rather than fail on them.
    skip_unknown: bool,
    /// The filter and options as sent, kept for [`Find::stream`]'s cursor to borrow.
    sent: std::sync::OnceLock<Result<(crate::store::query::Filter, FindOptions), String>>,
}

impl<D: Document> Find<D> {
    /// The documents matching `filter`, whole, in no particular order.
    pub fn new(filter: Filter<D>) -> Self {
        Find {
            filter,
            projection: Vec::new(),
            sort: Vec::new(),
            limit: None,
            skip_unknown: false,
            sent: std::sync::OnceLock::new(),
        }
    }

    /// Adds `field` to the projection: then only `_id` and the projected fields are read (the
    /// seed's `{title: 1}`), on every store.
    pub fn project<T>(mut self, field: Field<D, T>) -> Self {
        self.projection.push(field.name().into());
        self
    }

    /// Sorts by `field`, ascending (after the sort keys given before).
    pub fn ascending<T>(mut self, field: Field<D, T>) -> Self {
        self.sort.push((field.name().into(), 1));
        self
    }

    /// Sorts by `field`, descending (after the sort keys given before).
    pub fn descending<T>(mut self, field: Field<D, T>) -> Self {
        self.sort.push((field.name().into(), -1));
        self
    }

    /// Leaves out the documents whose discriminator is missing or names no variant (a
    /// polymorphic enum's find; by default each is
    /// [`Error::UnknownVariant`](crate::Error::UnknownVariant)). They still count towards
    /// [`Find::limit`]: the store returns them and this find drops them.
    pub fn skip_unknown_variants(mut self) -> Self {
        self.skip_unknown = true;
        self
    }

    /// At most `n` documents.
    pub fn limit(mut self, n: u32) -> Self {
        self.limit = Some(i64::from(n));
        self
    }

    /// The matching documents, as `D`: each decoded by its stored schema version and upgraded
    /// (written back with `write_back`); a newer version than this build knows is
    /// [`Error::NewerVersion`](crate::Error::NewerVersion).
    pub async fn all<S: Store>(self, store: &S) -> Result<Vec<D>> {
        crate::observe::traced_op!(document.find, store, D::COLLECTION, async {
            if self.decodes_raw() {
                return self.all_raw(store).await;
            }
            let docs = self.documents(store).await?;
            let mut out = Vec::with_capacity(docs.len());
            for d in docs {
                out.push(read_stored::<D, S>(store, d).await?);
            }
            Ok(out)
        })
    }

    /// Whether every document can decode straight from its bytes: no schema versions (to
    /// classify and upgrade), not the enum of a polymorphic collection (its discriminator to
    /// check), no projection, nothing to skip.
    fn decodes_raw(&self) -> bool {
        D::VERSIONING.is_none()
            && !matches!(D::POLYMORPHIC, Some(super::Polymorphic::Enum { .. }))
            && !self.skip_unknown
            && self.sent_projection().is_empty()
    }

    /// [`Find::all`] on the bytes the store read ([`Store::find_raw`]: on MongoDB, as the
    /// server sent them), each document decoded as `D` without building a `Document` first, as
    /// a typed driver collection does. A document that does not decode so (a variant's
    /// discriminator or a history's fields refused by the type, a value of the wrong type)
    /// goes the way of every other read, which strips what the library keeps and reports
    /// what does not decode.
    async fn all_raw<S: Store>(&self, store: &S) -> Result<Vec<D>> {
        let filter = self.sent_filter()?;
        indexes_ready::<D, S>(store).await?;
        let found = (store.find_raw(D::COLLECTION, &filter, &self.options())).await?;
        let mut out = Vec::with_capacity(found.len());
        for raw in found {
            match bson::from_slice::<D>(raw.as_bytes()) {
                Ok(d) => out.push(d),
                Err(_) => {
                    let doc = crate::codec::raw::from_raw(D::COLLECTION, &raw)?;
                    out.push(read_stored::<D, S>(store, doc).await?);
                }
            }
        }
        Ok(out)
    }

    /// The matching documents, each decoded as `P` (the projected fields, or any type the
    /// documents decode as). On a versioned type, `P` is read from documents of the current
    /// schema version only (a projection has not the whole document to upgrade): one of an
    /// older version is an [`store::Error::Decode`](crate::store::Error::Decode) saying so (read it whole
    /// with [`Find::all`], or sweep), one of a newer version
    /// [`Error::NewerVersion`](crate::Error::NewerVersion).
    pub async fn all_as<P: DeserializeOwned, S: Store>(self, store: &S) -> Result<Vec<P>> {
        crate::observe::traced_op!(document.find, store, D::COLLECTION, async {
            let docs = self.documents(store).await?;
            docs.into_iter().map(decode_current::<D, P>).collect()
        })
    }

    /// The matching documents as a stream, read through one cursor in batches of 1,000 (on
    /// MongoDB a `find`, then a `getMore` per batch; the in-memory store reads them at once),
    /// each decoded and upgraded as by [`Find::all`] (never written back).
    pub fn stream<'a, S: Store>(
        &'a self,
        store: &'a S,
    ) -> impl futures::Stream<Item = Result<D>> + Send + 'a
    where
        D: 'a,
    {
        use futures::{stream, StreamExt};
        let skip = self.skip_unknown;
        let sent = self.sent.get_or_init(|| {
            (self.filter.to_query())
                .map(|f| (super::polymorphic::scope::<D>(f), self.options()))
                .map_err(|e| e.to_string())
        });
        let span = crate::observe::op_span!(document.find, store, D::COLLECTION);
        let found = stream::once(async move {
            let (filter, opts) = sent.as_ref().map_err(crate::Error::invalid)?;
            indexes_ready::<D, S>(store).await?;
            Ok::<_, crate::Error>((filter, opts))
        })
        .flat_map(move |q| match q {
            Err(e) => stream::once(async move { Err(e) }).left_stream(),
            Ok((filter, opts)) => store
                .scan(D::COLLECTION, filter, opts, STREAM_BATCH)
                .filter_map(move |raw| {
                    let doc = raw.map_err(crate::Error::from).and_then(|raw| {
                        raw.to_document().map_err(|e| {
                            crate::Error::decode(D::COLLECTION, None, format!("not BSON: {e}"))
                        })
                    });
                    let out = match doc {
                        Ok(d) if skip && super::polymorphic::is_unknown::<D>(&d) => None,
                        Ok(d) => Some(super::decode_stored::<D>(d).map(|(d, _)| d)),
                        Err(e) => Some(Err(e)),
                    };
                    std::future::ready(out)
                })
                .right_stream(),
        });
        crate::observe::traced_stream(span, found)
    }

    /// The first matching document, as `D` (the seed's `findOne`).
    pub async fn one<S: Store>(self, store: &S) -> Result<Option<D>> {
        Ok(self.limit(1).all(store).await?.into_iter().next())
    }

    /// The first matching document, decoded as `P`.
    pub async fn one_as<P: DeserializeOwned, S: Store>(self, store: &S) -> Result<Option<P>> {
        Ok(self.limit(1).all_as(store).await?.into_iter().next())
    }

    /// The find options sent: the projection, sort and limit, and the `comment` naming a
    /// collection-wide read (none when the filter holds an equality on `_id`).
    pub fn options(&self) -> FindOptions {
        let by_id = (self.filter.to_query().ok())
            .is_some_and(|f| f.equalities().iter().any(|(p, _)| *p == "_id"));
        let comment = match (by_id, self.filter.is_keyword_search()) {
            (true, _) => None,
            (false, true) => Some(KEYWORD_SEARCH),
            (false, false) => Some(DOCUMENT_FIND),
        };
        FindOptions {
            sort: self.sort.clone(),
            limit: self.limit,
            projection: self.sent_projection(),
            comment,
            ..FindOptions::default()
        }
    }

    /// The fields a projection reads: the projected ones, and the schema version of a
    /// versioned type (what tells a document this build can decode as the projection from
    /// one it cannot); empty: whole documents.
    fn sent_projection(&self) -> Vec<Path> {
        let mut fields = self.projection.clone();
        if let Some(v) = D::VERSIONING.filter(|_| !fields.is_empty()) {
            if !fields.iter().any(|p| *p == v.field) {
                fields.push(v.field.into());
            }
        }
        fields
    }

    /// The documents as found, cut to the projection (a store may return more fields than
    /// asked: the in-memory store does).
    /// The filter sent: the given one within the type's scope (a variant's discriminator
    /// beside it, for a polymorphic collection), what `explain` of this read takes
    /// ([`MemoryStore::explain`](crate::MemoryStore::explain), MongoDB's `explain`).
    pub fn sent_filter(&self) -> Result<crate::store::query::Filter> {
        Ok(super::polymorphic::scope::<D>(self.filter.to_query()?))
    }

    async fn documents<S: Store>(&self, store: &S) -> Result<Vec<BsonDocument>> {
        let filter = self.sent_filter()?;
        let opts = self.options();
        indexes_ready::<D, S>(store).await?;
        let mut found = store.find(D::COLLECTION, &filter, &opts).await?;
        if self.skip_unknown {
            found.retain(|d| !super::polymorphic::is_unknown::<D>(d));
        }
        let projection = self.sent_projection();
        if projection.is_empty() {
            return Ok(found);
        }
        let wanted = |k: &String| k == "_id" || projection.iter().any(|p| p == k);
        Ok(found
            .into_iter()
            .map(|d| d.into_iter().filter(|(k, _)| wanted(k)).collect())
            .collect())
    }
}

/// Documents per batch of [`Find::stream`]'s cursor.
const STREAM_BATCH: u32 = 1_000;

/// A stored document decoded as `P` when it is at `D`'s current schema version.
fn decode_current<D: Document, P: DeserializeOwned>(mut doc: BsonDocument) -> Result<P> {
    if let Stored::Older(from) = versions::classify::<D>(&doc)? {
        return Err(crate::Error::decode(
            D::COLLECTION,
            doc.get("_id"),
            format!(
                "stored at schema version {from}, older than {}: a projection reads the current \
                 version only; read it whole (`all`), or sweep the collection (`migrate`)",
                D::VERSIONING.map_or(0, |v| v.current)
            ),
        ));
    }
    strip_kept::<D>(&mut doc);
    decode(D::COLLECTION, doc)
}
