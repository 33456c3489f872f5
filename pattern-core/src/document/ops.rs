//! The public reads and writes of a document type, each an operation span around the write
//! pipeline (`write/`) or one read: what the derive's generated methods call.

use std::future::Future;

use bson::{Bson, Document as BsonDocument};

use super::write::{self, Write};
use super::{
    history, id_bson, indexes_ready, polymorphic, read_stored, to_document, Document, Filter, Find,
    Update,
};
use crate::key::IdRef;
use crate::observe::{op_span, operation, OpSpan};
use crate::store::query;
use crate::store::{find_one, Store};
use crate::Result;

#[doc = crate::__document_doc!(insert)]
pub async fn insert<D: Document, S: Store>(store: &S, doc: &D) -> Result<()> {
    let span = op_span!(document.insert, store, D::COLLECTION);
    let op = async {
        let doc = to_document(doc)?;
        write::run::<D, S>(store, Write::Insert(doc))
            .await
            .map(|_| ())
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

#[doc = crate::__document_doc!(save)]
pub async fn save<D: Document, S: Store>(store: &S, doc: &D) -> Result<()> {
    let span = op_span!(document.save, store, D::COLLECTION);
    let op = async {
        let doc = to_document(doc)?;
        let save = Write::Save {
            doc,
            expected: None,
            any_variant: false,
        };
        write::run::<D, S>(store, save).await.map(|_| ())
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

/// The stored document with this `_id`.
pub(crate) async fn find_by_id<S: Store>(
    store: &S,
    coll: &str,
    id: &Bson,
) -> Result<Option<BsonDocument>> {
    let by_id = query::Filter::Eq("_id".into(), id.clone());
    Ok(find_one(store, coll, &by_id).await?)
}

#[doc = crate::__document_doc!(get)]
pub async fn get<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<Option<D>> {
    crate::observe::traced_op!(document.get, store, D::COLLECTION, async move {
        let by_id = polymorphic::scope::<D>(query::Filter::Eq("_id".into(), id_bson(id)?));
        match find_one(store, D::COLLECTION, &by_id).await? {
            Some(d) => read_stored::<D, S>(store, d).await.map(Some),
            None => Ok(None),
        }
    })
}

#[doc = crate::__document_doc!(update_one)]
pub async fn update_one<D: Document, S: Store>(
    store: &S,
    filter: Filter<D>,
    update: Update<D>,
) -> Result<bool> {
    let span = op_span!(document.update_one, store, D::COLLECTION);
    let op = async {
        let filter = polymorphic::scope::<D>(filter.to_query()?);
        let update = update.into_query()?;
        let update = Write::Update {
            filter,
            update,
            expected: None,
        };
        write::run::<D, S>(store, update).await
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

#[doc = crate::__document_doc!(delete)]
pub async fn delete<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    id: &Q,
) -> Result<bool> {
    let span = op_span!(document.delete, store, D::COLLECTION);
    let op = async {
        let id = id_bson(id)?;
        write::run::<D, S>(store, Write::Delete { id, expected: None }).await
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

#[doc = crate::__document_doc!(save_if)]
pub async fn save_if<D: Document, S: Store>(store: &S, doc: &D, expected: u64) -> Result<()> {
    let span = op_span!(document.save_if, store, D::COLLECTION);
    let save = async {
        Ok(Write::Save {
            doc: to_document(doc)?,
            expected: Some(expected),
            any_variant: false,
        })
    };
    write_if::<D, S>(store, span, save).await
}

#[doc = crate::__document_doc!(update_if)]
pub async fn update_if<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    id: &Q,
    expected: u64,
    update: Update<D>,
) -> Result<()> {
    let span = op_span!(document.update_if, store, D::COLLECTION);
    let update = async {
        let update = update.into_query()?;
        let id = id_bson(id)?;
        Ok(Write::Update {
            filter: polymorphic::scope::<D>(query::Filter::Eq("_id".into(), id.clone())),
            update,
            expected: Some((id, expected)),
        })
    };
    write_if::<D, S>(store, span, update).await
}

#[doc = crate::__document_doc!(delete_if)]
pub async fn delete_if<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    id: &Q,
    expected: u64,
) -> Result<()> {
    let span = op_span!(document.delete_if, store, D::COLLECTION);
    let delete = async {
        Ok(Write::Delete {
            id: id_bson(id)?,
            expected: Some(expected),
        })
    };
    write_if::<D, S>(store, span, delete).await
}

/// A write conditional on the revision the caller read ([`save_if`], [`update_if`],
/// [`delete_if`]), in its operation's `span`: a type without history is refused before
/// anything is sent; then `write` is built and goes through the write pipeline.
/// The operation's future itself, not a future around it: no deeper than the other writes'.
fn write_if<'a, D: Document, S: Store>(
    store: &'a S,
    span: OpSpan,
    write: impl Future<Output = Result<Write>> + 'a,
) -> impl Future<Output = Result<()>> + 'a {
    let first = async {
        history::history_of::<D>()?;
        indexes_ready::<D, S>(store).await
    };
    let op = async move { write::run::<D, S>(store, write.await?).await.map(|_| ()) };
    operation(span, first, op, Ok)
}

/// Writes `doc` over the stored document with its `_id`, whatever variant that one is: the
/// explicit change of a document's variant (a `save` refuses it). Whether a document was
/// there (none: nothing written; insert it). One `update` with a replacement.
pub async fn change_variant<D: Document, S: Store>(store: &S, doc: &D) -> Result<bool> {
    let span = op_span!(document.change_variant, store, D::COLLECTION);
    let op = async {
        let doc = to_document(doc)?;
        let change = Write::Save {
            doc,
            expected: None,
            any_variant: true,
        };
        write::run::<D, S>(store, change).await
    };
    operation(span, indexes_ready::<D, S>(store), op, Ok).await
}

#[doc = crate::__document_doc!(find)]
///
/// See [`Find`].
pub fn find<D: Document>(filter: Filter<D>) -> Find<D> {
    Find::new(filter)
}
