//! `analyze versions`: the schema versions a collection's documents store, counted in one read,
//! without any type of the application.
//!
//! A document without the version field is counted apart ([`VersionsAnalysis::unversioned`]):
//! `#[derive(Document)]` with `#[document(version = N, ...)]` reads such a document as its
//! `unversioned` version (by default the lowest declared one). The field is `version_field`,
//! by default `schema_version`.

use std::collections::BTreeMap;

use bson::RawBsonRef;
use serde::Serialize;

use super::preflight::require_collection;
use crate::error::display_bson;
use crate::pass::scan::{id, scan, sorted};
use crate::pass::Options;
use crate::store::query::{Filter, Path};
use crate::store::Store;
use crate::{Error, Result};

/// The `comment` of [`analyze_versions`]'s read of the whole collection (a
/// [`SCATTER`](crate::store::query::SCATTER) name: on a sharded collection every shard answers
/// it).
pub const VERSIONS_SCAN: &str = "pattern scatter: version histogram";

/// The `_id`s of documents whose field holds no number that [`VersionsAnalysis::examples`]
/// lists at most.
pub const VERSIONS_EXAMPLES: usize = 10;

/// What [`analyze_versions`] found: how many documents store each schema version.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VersionsAnalysis {
    /// The collection read.
    pub collection: String,
    /// The version field counted (`schema_version` unless `version_field` says otherwise).
    pub field: String,
    /// Documents read.
    pub documents: u64,
    /// Each version stored (an Int32, an Int64 or an integral Double) and how many documents
    /// store it, by version ascending.
    pub versions: Vec<(i64, u64)>,
    /// Documents without the field: `#[derive(Document)]` reads them as its `unversioned`
    /// version (by default the lowest declared one).
    pub unversioned: u64,
    /// Documents whose field holds something else than an integer (a string, a null, a
    /// fractional number...): a versioned read refuses them.
    pub not_numbers: u64,
    /// The `_id`s (relaxed Extended JSON) of the first [`VERSIONS_EXAMPLES`] of those.
    pub examples: Vec<String>,
}

/// Reads every document of `collection` once (only its `_id` and `field`) and counts the
/// schema versions they store in `field` (`schema_version` is the derive's default): each
/// integer (Int32, Int64, or a Double without a fraction) is a version; a document without
/// the field is [`unversioned`](VersionsAnalysis::unversioned), which `#[derive(Document)]` with
/// `#[document(version = N, ...)]` reads as its `unversioned` version (by default the lowest
/// declared one); any other value is counted in
/// [`not_numbers`](VersionsAnalysis::not_numbers), with the first `_id`s as examples.
///
/// Writes nothing. A collection that does not exist is refused ([`Error::SourceNotFound`]);
/// an empty `field` is [`store::Error::InvalidInput`](crate::store::Error::InvalidInput). Memory: one counter per distinct version.
pub async fn analyze_versions<S: Store>(
    store: &S,
    collection: &str,
    field: &str,
    options: &Options<'_>,
) -> Result<VersionsAnalysis> {
    crate::observe::traced_op!(document.analyze_versions, store, collection, async {
        if field.is_empty() {
            return Err(Error::invalid("the version field's name is empty"));
        }
        require_collection(store, collection).await?;
        let mut versions: BTreeMap<i64, u64> = BTreeMap::new();
        let (mut unversioned, mut not_numbers) = (0u64, 0u64);
        let mut examples: Vec<String> = Vec::new();
        let all = Filter::and([]);
        let documents = scan(
            store,
            collection,
            &all,
            sorted(VERSIONS_SCAN, vec![], vec![Path::from(field)]),
            options,
            "versions",
            |doc| {
                let value = doc
                    .get(field)
                    .map_err(|e| Error::decode(collection, None, e))?;
                match value.map(version_of) {
                    None => unversioned += 1,
                    Some(Some(v)) => *versions.entry(v).or_default() += 1,
                    Some(None) => {
                        not_numbers += 1;
                        if examples.len() < VERSIONS_EXAMPLES {
                            examples.push(display_bson(&id(collection, &doc)?));
                        }
                    }
                }
                Ok(())
            },
        )
        .await?;
        Ok(VersionsAnalysis {
            collection: collection.to_owned(),
            field: field.to_owned(),
            documents,
            versions: versions.into_iter().collect(),
            unversioned,
            not_numbers,
            examples,
        })
    })
}

/// The version a stored value is: an integer, or a Double without a fraction (in the range
/// where every integer is exact).
pub(super) fn version_of(value: RawBsonRef<'_>) -> Option<i64> {
    match value {
        RawBsonRef::Int32(n) => Some(i64::from(n)),
        RawBsonRef::Int64(n) => Some(n),
        RawBsonRef::Double(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(f as i64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_counts_as_a_version() {
        assert_eq!(version_of(RawBsonRef::Int32(3)), Some(3));
        assert_eq!(version_of(RawBsonRef::Int64(-4)), Some(-4));
        assert_eq!(version_of(RawBsonRef::Double(2.0)), Some(2));
        assert_eq!(version_of(RawBsonRef::Double(2.5)), None);
        assert_eq!(version_of(RawBsonRef::Double(f64::NAN)), None);
        assert_eq!(version_of(RawBsonRef::String("1")), None);
        assert_eq!(version_of(RawBsonRef::Null), None);
    }
}
