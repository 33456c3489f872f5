//! The small, closed query language the patterns speak to a [`Store`](crate::Store):
//! the store contract's filters, updates, find options, index and validator specs. An
//! application uses the typed `pattern_core::document::Filter` and
//! `pattern_core::document::Update` instead.
//!
//! Filters, updates and index specs are typed values, never documents assembled from user
//! input: a user-supplied value only ever sits in value position (a bare scalar, or behind
//! `$eq`), so it cannot be read as an operator, a field path or a regex. The MongoDB store translates them to the
//! driver's documents ([`Filter::to_document`], [`Update::to_document`]); a filter's meaning,
//! with MongoDB's semantics for the subset, is [`eval`] (which the in-memory store and the
//! patterns use), and the in-memory store applies updates with its own engine.

use bson::{Bson, Document};

pub mod eval;
mod filter;
pub mod paths;
mod schema;
#[cfg(test)]
mod tests;
mod update;

pub use filter::is_plain_scalar;
pub use filter::Filter;
pub use schema::Schema;
pub use update::{Expr, PushSort, Rewrite, Shift, Update, UNMET};

/// A field name or dotted path: a small string, held inline up to 24 bytes (no allocation for
/// the field names a push or a read names); any `&str` or `String` converts
/// (`"count".into()`, `format!(..).into()`).
pub type Path = compact_str::CompactString;

/// Options of a find.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FindOptions {
    /// Sort keys, `1` ascending, `-1` descending.
    pub sort: Vec<(Path, i32)>,
    /// Documents to pass over first (at most 2^63-1).
    pub skip: u64,
    /// Documents returned at most (`None` or 0: all; a negative limit counts as its absolute value).
    pub limit: Option<i64>,
    /// The top-level fields wanted (`_id` always comes); empty: the whole documents. A store
    /// may return more fields than asked (the in-memory store returns whole documents): only
    /// what is asked is read.
    pub projection: Vec<Path>,
    /// MongoDB's `comment`, which the server logs with the command (profiler, `currentOp`,
    /// slow-query log). The library names its collection-wide reads with
    /// [`SCATTER`] `<operation>`: on a sharded cluster they are the
    /// scatter-gather ones, every other read names its shard key. The in-memory store ignores it.
    pub comment: Option<&'static str>,
}

/// The prefix of the `comment` on the library's collection-wide reads (`pattern scatter:
/// bucket verify`): on a sharded cluster, the reads that reach every shard.
pub const SCATTER: &str = "pattern scatter:";

impl FindOptions {
    /// Refuses what no server takes: a skip past 2^63-1 (MongoDB's `skip` is an Int64).
    pub fn check(&self) -> crate::Result<()> {
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
    /// The index's name (`createIndexes` does nothing when an index of that name exists).
    pub name: String,
    /// The keys in order, `1` ascending, `-1` descending.
    pub keys: Vec<(String, i32)>,
    /// At most one document per key value.
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

/// A recursive search in one collection (MongoDB's `$graphLookup`), from one document: the
/// documents whose `connect_to` equals a value of the start document's `start_with`, then
/// those whose `connect_to` equals a value of a found document's `connect_from`, and so on.
/// A field holding an array contributes each element; null and missing values connect
/// nothing. Each document is found once, at the smallest depth, so cycles end the search.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphLookup {
    /// The `_id` of the start document.
    pub start: Bson,
    /// The start document's field whose value(s) begin the search (`_id`, `parent`, `children`).
    pub start_with: Path,
    /// The field of each found document whose value(s) continue the search.
    pub connect_from: Path,
    /// The field the values are matched against (an array field matches by element).
    pub connect_to: Path,
    /// The deepest depth searched: `Some(0)` finds only the documents matching the start's
    /// values; `None` has no limit.
    pub max_depth: Option<u32>,
}

/// What a [`GraphLookup`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// The start document.
    pub start: Document,
    /// Each found document with its depth (0: matched by the start's values), in no particular
    /// order. The start document is among them only if the search reaches it again.
    pub found: Vec<(Document, u32)>,
}
