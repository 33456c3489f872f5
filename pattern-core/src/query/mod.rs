//! The small, closed query language the patterns speak to a [`Store`](crate::Store).
//!
//! Filters, updates and index specs are typed values, never documents assembled from user
//! input: a user-supplied value only ever sits in value position (a bare scalar, or behind
//! `$eq`), so it cannot be read as an operator, a field path or a regex. The MongoDB store translates them to the
//! driver's documents ([`Filter::to_document`], [`Update::to_document`]); the in-memory store
//! evaluates them with the functions of this module, with MongoDB's semantics for the subset.

use std::borrow::Cow;

use bson::{Bson, Document};

pub(crate) mod eval;
mod filter;
#[cfg(test)]
mod tests;
mod update;

pub(crate) use filter::is_plain_scalar;
pub use filter::Filter;
pub use update::Update;

/// A field name or dotted path. The patterns' own paths are `&'static str`s, borrowed
/// without allocating; any `String` converts too (`"count".into()`, `format!(..).into()`).
pub type Path = Cow<'static, str>;

/// Options of a find.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FindOptions {
    /// Sort keys, `1` ascending, `-1` descending.
    pub sort: Vec<(Path, i32)>,
    pub skip: u64,
    pub limit: Option<i64>,
}

impl FindOptions {
    /// Refuses what no server takes: a skip past 2^63-1 (MongoDB's `skip` is an Int64).
    pub(crate) fn check(&self) -> crate::Result<()> {
        if i64::try_from(self.skip).is_err() {
            return Err(crate::Error::invalid(format!(
                "skip must be at most 2^63-1, got {}",
                self.skip
            )));
        }
        Ok(())
    }
}

/// An index the patterns need.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexSpec {
    pub name: String,
    pub keys: Vec<(String, i32)>,
    pub unique: bool,
    /// `partialFilterExpression`
    pub partial: Option<Filter>,
}

impl IndexSpec {
    /// The key document, e.g. `{customerId: 1, _id: 1}`.
    pub fn key_document(&self) -> Document {
        self.keys
            .iter()
            .map(|(k, d)| (k.clone(), Bson::Int32(*d)))
            .collect()
    }
}
