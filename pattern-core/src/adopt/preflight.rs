//! What a migration checks before its first write: that the data it was pointed at is there.
//! A typo in a collection or field name is refused ([`Error::SourceNotFound`]) with what was
//! found instead, before anything (a checkpoint, an index) is created.

use bson::Document;

use crate::error::Missing;
use crate::pass::scan::MIGRATE;
use crate::store::query::{Filter, FindOptions};
use crate::store::Store;
use crate::{Error, Result};

/// Documents whose top-level field names a refusal lists at most.
const SAMPLE: i64 = 100;

/// Refuses a collection that does not exist, naming the database's collections.
pub(crate) async fn require_collection<S: Store>(store: &S, coll: &str) -> Result<()> {
    let names = store.collection_names().await?;
    if names.iter().any(|n| n == coll) {
        return Ok(());
    }
    Err(Error::SourceNotFound {
        collection: coll.to_owned(),
        missing: Box::new(Missing::Collection),
        found: names,
    })
}

/// Refuses a collection none of whose documents matches `has` (a field `field` there, holding
/// `holding`), naming the fields its documents have. With `only_if_any`, an empty (or missing)
/// collection passes.
pub(crate) async fn require_field<S: Store>(
    store: &S,
    coll: &str,
    has: Filter,
    field: &str,
    holding: &str,
    only_if_any: bool,
) -> Result<()> {
    if any(store, coll, has.clone()).await? {
        return Ok(());
    }
    let found = fields(store, coll).await?;
    if only_if_any && found.is_empty() {
        return Ok(());
    }
    // Asked again after the sample: a writer (a live push into the bucket collection) may have
    // created the collection's first documents since the first question. Documents seen in
    // the sample and none with the field now is a refusal that no concurrent insert explains.
    if any(store, coll, has).await? {
        return Ok(());
    }
    Err(Error::SourceNotFound {
        collection: coll.to_owned(),
        missing: Box::new(Missing::Field {
            field: field.to_owned(),
            holding: holding.to_owned(),
        }),
        found,
    })
}

/// Refuses a collection none of whose documents has the top-level field `field`.
pub(crate) async fn require_exists<S: Store>(
    store: &S,
    coll: &str,
    field: &str,
    holding: &str,
) -> Result<()> {
    let has = Filter::Exists(field.to_owned().into(), true);
    require_field(store, coll, has, field, holding, false).await
}

/// Whether a document matches `filter` (one `find` with limit 1).
async fn any<S: Store>(store: &S, coll: &str, filter: Filter) -> Result<bool> {
    let one = FindOptions {
        limit: Some(1),
        projection: vec!["_id".into()],
        comment: Some(MIGRATE),
        ..FindOptions::default()
    };
    Ok(!store.find(coll, &filter, &one).await?.is_empty())
}

/// The top-level field names of the first [`SAMPLE`] documents, in the order first seen.
async fn fields<S: Store>(store: &S, coll: &str) -> Result<Vec<String>> {
    let some = FindOptions {
        limit: Some(SAMPLE),
        comment: Some(MIGRATE),
        ..FindOptions::default()
    };
    let docs: Vec<Document> = store.find(coll, &Filter::And(Vec::new()), &some).await?;
    let mut names: Vec<String> = Vec::new();
    for d in &docs {
        for k in d.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    Ok(names)
}
