//! The store contract: the few primitive operations the patterns are written against.
//!
//! Two implementations ship: [`MemoryStore`](crate::MemoryStore) (embedded, the default) and
//! `MongoStore` (feature `mongodb`). Both keep the same collections and the same documents, and
//! apply each single-document write atomically. The conformance suite in `tests/` runs
//! unchanged against both.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::query::{Filter, FindOptions, IndexSpec, Update};
use crate::series::SeriesSpec;
use crate::Result;

/// What an `update_one` did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateOutcome {
    /// A document matched the filter (and was updated).
    pub matched: bool,
    /// No document matched and one was inserted (`upsert`).
    pub upserted: bool,
}

/// Totals over the array field of the documents matching a filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArrayStats {
    /// Documents matched.
    pub documents: u64,
    /// Sum of the lengths of their arrays (a missing field counts 0).
    pub items: u64,
    /// Documents whose field is present but not an array.
    pub not_arrays: u64,
}

/// The primitive operations the patterns need. Every method acts on one collection by name
/// and is atomic for each document it writes.
pub trait Store: Send + Sync {
    /// Inserts a document; a unique index violation is [`Error::DuplicateKey`](crate::Error::DuplicateKey).
    fn insert_one(&self, coll: &str, doc: Document) -> impl Future<Output = Result<()>> + Send;

    /// Updates the first document matching `filter`; with `upsert`, inserts one when none
    /// matches (the filter's top-level equalities, then the update with `$setOnInsert`).
    ///
    /// A store may move the items `update` pushes into the document rather than copy them
    /// (the in-memory store does), so once it applied, `update` may have lost them; when the
    /// write returns an error, `update` is as it was, ready for a retry.
    fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> impl Future<Output = Result<UpdateOutcome>> + Send;

    /// Updates the first document matching `filter` in `sort` order (MongoDB's `findAndModify`,
    /// one round trip), using index `hint` (unless empty) where the server takes hints; with
    /// `upsert`, inserts one when none matches, as [`Store::update_one`] does. Returns the
    /// matched document as it was before the update, with only the top-level `fields` (`_id`
    /// only if listed); `None` when none matched (and one was inserted, with `upsert`).
    /// `update` may lose its pushed items once applied, as with [`Store::update_one`].
    ///
    /// With no `fields`, nothing of the document is wanted, only whether one matched (then
    /// `Some` of an empty document). The MongoDB store then sends the lighter `update` command,
    /// which takes no sort: the server updates the first match in the order of the index its
    /// planner picks, so `sort` must be the order of the index that serves `filter` (as the
    /// series' open-document index serves its push, newest first).
    #[allow(clippy::too_many_arguments)] // findAndModify's own parameters, each one used
    fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(crate::query::Path, i32)],
        hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> impl Future<Output = Result<Option<Document>>> + Send;

    /// One attempt of a series push (see [`crate::series`]): appends `items` to the key's open
    /// document (the newest whose count is below the series' size) and adds their number to
    /// its count, or, when the key has none, inserts document number `seq` with `_id` `new_id()`
    /// holding them. Returns `true` when it inserted. Once applied, `items` may be left empty;
    /// on an error they are as they were ([`Error::DuplicateKey`](crate::Error::DuplicateKey):
    /// document `seq`, or that `_id`, exists).
    ///
    /// The default sends the seed's conditional upsert through [`Store::update_first`] (one
    /// round trip). A store may do the same natively: the in-memory store does, without
    /// building the query and the update.
    fn push_open(
        &self,
        spec: &SeriesSpec,
        key: &Bson,
        items: &mut Vec<Bson>,
        seq: i64,
        new_id: &(dyn Fn() -> Bson + Sync),
    ) -> impl Future<Output = Result<bool>> + Send {
        crate::series::push_open_upsert(self, spec, key, items, seq, new_id)
    }

    /// Replaces the first document matching `filter` by `doc` (inserts it with `upsert`).
    fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: Document,
        upsert: bool,
    ) -> impl Future<Output = Result<UpdateOutcome>> + Send;

    /// The documents matching `filter`, sorted, skipped and limited, in one round trip where
    /// the result fits in one reply (16 MiB).
    fn find(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> impl Future<Output = Result<Vec<Document>>> + Send;

    /// [`Store::find`], each document as its BSON bytes: for the reads that decode typed values,
    /// which then decode straight from the bytes a server sent instead of building a
    /// `Document` first. The default serializes what [`Store::find`] returns.
    fn find_raw(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> impl Future<Output = Result<Vec<RawDocumentBuf>>> + Send {
        async move {
            let docs = self.find(coll, filter, opts).await?;
            docs.iter().map(|d| to_raw(coll, d)).collect()
        }
    }

    /// Counts the matching documents and the elements of their `array_field`, server-side.
    fn array_stats(
        &self,
        coll: &str,
        filter: &Filter,
        array_field: &str,
    ) -> impl Future<Output = Result<ArrayStats>> + Send;

    /// Deletes every matching document; returns how many.
    fn delete_many(&self, coll: &str, filter: &Filter) -> impl Future<Output = Result<u64>> + Send;

    /// Creates the index if no index of that name exists (idempotent).
    fn create_index(
        &self,
        coll: &str,
        index: &IndexSpec,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Names of the collection's indexes (empty when the collection does not exist).
    fn index_names(&self, coll: &str) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Drops an index by name.
    fn drop_index(&self, coll: &str, name: &str) -> impl Future<Output = Result<()>> + Send;

    /// The per-store memo of index sets already ensured, so each is created once per process.
    fn ensured(&self) -> &EnsuredIndexes;
}

/// What a store remembers in this process: which series it has already ensured the indexes
/// of, and, per series key whose newest document a push of this process saw, the number the
/// next document gets and the `_id` of the newest (so that the push that opens the next one is
/// one upsert, not a miss, a read and an insert, and picks an `_id` the newest does not hold).
/// Both are looked up before every push, without allocating.
#[derive(Debug, Default)]
pub struct EnsuredIndexes {
    /// A program has a handful of series: a list compared by value (no hashing) is the
    /// cheapest lookup for that.
    indexes: Mutex<Vec<SeriesSpec>>,
    next_numbers: Mutex<NextNumbers>,
}

/// Next document numbers by collection and key: entries `(collection, key, next)` under a
/// hash of the collection and key (compared in full on lookup).
#[derive(Debug, Default)]
struct NextNumbers {
    by_hash: HashMap<u64, Vec<(String, Bson, Next)>, BuildHasherDefault<Prehashed>>,
    len: usize,
}

/// What a process knows of a key's series: the number its next document gets, and the
/// time-named `_id` of the document before it, when known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Next {
    pub(crate) number: i64,
    pub(crate) newest: Option<TimeId>,
}

/// The parts of a time-named `_id` (`<prefix>_<seconds>` or `<prefix>_<seconds>_<suffix>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeId {
    pub(crate) seconds: i64,
    pub(crate) suffix: u32,
}

/// At most this many next numbers are remembered; past it a push that opens a document takes
/// the slower path (a read of the newest document, then an insert).
const MAX_NEXT_NUMBERS: usize = 100_000;

impl EnsuredIndexes {
    pub(crate) fn contains(&self, spec: &SeriesSpec) -> bool {
        lock(&self.indexes).contains(spec)
    }
    pub(crate) fn insert(&self, spec: SeriesSpec) {
        let mut specs = lock(&self.indexes);
        if !specs.contains(&spec) {
            specs.push(spec);
        }
    }
    /// What is remembered of `key`'s next document in `coll`.
    pub(crate) fn next_number(&self, coll: &str, key: &Bson) -> Option<Next> {
        let h = memo_hash(coll, key);
        let m = lock(&self.next_numbers);
        let entries = m.by_hash.get(&h)?;
        entries
            .iter()
            .find(|(c, k, _)| c == coll && k == key)
            .map(|e| e.2)
    }
    /// Takes what is remembered of `key`'s next document in `coll`.
    pub(crate) fn take_next_number(&self, coll: &str, key: &Bson) -> Option<Next> {
        let h = memo_hash(coll, key);
        let mut m = lock(&self.next_numbers);
        let entries = m.by_hash.get_mut(&h)?;
        let i = entries.iter().position(|(c, k, _)| c == coll && k == key)?;
        let (_, _, n) = entries.swap_remove(i);
        if entries.is_empty() {
            m.by_hash.remove(&h);
        }
        m.len -= 1;
        Some(n)
    }
    /// Remembers the number of `key`'s next document in `coll`.
    pub(crate) fn set_next_number(&self, coll: &str, key: &Bson, n: Next) {
        let h = memo_hash(coll, key);
        let mut m = lock(&self.next_numbers);
        let m = &mut *m;
        let entries = m.by_hash.entry(h).or_default();
        match entries.iter_mut().find(|(c, k, _)| c == coll && k == key) {
            Some(entry) => entry.2 = n,
            None if m.len < MAX_NEXT_NUMBERS => {
                entries.push((coll.to_owned(), key.clone(), n));
                m.len += 1;
            }
            None => {
                if entries.is_empty() {
                    m.by_hash.remove(&h);
                }
            }
        }
    }
    /// Forgets everything (after a collection was dropped behind the store's back).
    pub fn clear(&self) {
        lock(&self.indexes).clear();
        *lock(&self.next_numbers) = NextNumbers::default();
    }
}

/// A hash of a collection and a key, for [`NextNumbers`]. Keys equal by `==` hash alike for
/// the key types the derives produce (integers, strings, ObjectIds); for other values a
/// mismatch only costs the memo a miss. FNV-1a: a few instructions per byte, against a few
/// hundred for the standard SipHash on these short inputs (an attacker choosing keys can at
/// worst make lookups in this bounded memo linear, never wrong).
fn memo_hash(coll: &str, key: &Bson) -> u64 {
    let mut h = Fnv::default();
    h.write(coll.as_bytes());
    h.write_u8(0xff);
    match key {
        Bson::Int32(x) => h.write_i64(*x as i64),
        Bson::Int64(x) => h.write_i64(*x),
        Bson::String(s) => {
            h.write_u8(2);
            h.write(s.as_bytes());
        }
        Bson::ObjectId(o) => {
            h.write_u8(3);
            h.write(&o.bytes());
        }
        other => {
            h.write_u8(4);
            let _ = std::fmt::Write::write_fmt(&mut h, format_args!("{other:?}"));
        }
    }
    h.finish()
}

/// The 64-bit FNV-1a hash.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl std::fmt::Write for Fnv {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        Hasher::write(self, s.as_bytes());
        Ok(())
    }
}

/// The hasher of a map whose keys are already hashes: passes the `u64` through.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Creates `indexes` on `coll`, dropping indexes whose name starts with one of
/// `stale_prefixes` and that are not in the set (an older `size`). Idempotent.
pub(crate) async fn ensure_indexes<S: Store>(
    store: &S,
    coll: &str,
    indexes: &[IndexSpec],
    stale_prefixes: &[String],
) -> Result<()> {
    if !stale_prefixes.is_empty() {
        for name in store.index_names(coll).await? {
            let stale = stale_prefixes.iter().any(|p| name.starts_with(p.as_str()))
                && !indexes.iter().any(|i| i.name == name);
            if stale {
                store.drop_index(coll, &name).await?;
            }
        }
    }
    for index in indexes {
        store.create_index(coll, index).await?;
    }
    Ok(())
}

/// The `_id` of a stored document, or an error naming the collection.
pub(crate) fn doc_id<'a>(coll: &str, doc: &'a Document) -> Result<&'a Bson> {
    doc.get("_id")
        .ok_or_else(|| crate::Error::decode(coll, None, "document has no _id"))
}

/// A document as its BSON bytes, or an error naming the collection (a document that does not
/// serialize: a key with a NUL byte).
pub(crate) fn to_raw(coll: &str, doc: &Document) -> Result<RawDocumentBuf> {
    RawDocumentBuf::from_document(doc).map_err(|e| crate::Error::decode(coll, doc.get("_id"), e))
}

/// A document read as bytes, as a `Document` (for the reads' `Document` paths and their
/// errors), or an error naming the collection.
pub(crate) fn from_raw(coll: &str, raw: &RawDocument) -> Result<Document> {
    Document::try_from(raw).map_err(|e| crate::Error::decode(coll, None, e))
}

/// A value of a document read as bytes, as a `Bson`, or an error naming the collection.
pub(crate) fn raw_value(coll: &str, v: RawBsonRef) -> Result<Bson> {
    Bson::try_from(v.to_raw_bson()).map_err(|e| crate::Error::decode(coll, None, e))
}
