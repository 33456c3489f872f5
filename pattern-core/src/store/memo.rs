//! What a store remembers in this process: the series whose indexes it has ensured, the
//! collections whose validator it installed, and per series key the number of the next
//! document and the newest document's `_id`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

use bson::Bson;

use crate::spec::{SeriesSpec, TreeSpec};

/// What a store remembers in this process: which series it has already ensured the indexes
/// of, and, per series key whose newest document a push of this process saw, the number the
/// next document gets and the `_id` of the newest (so that the push that opens the next one is
/// one upsert, not a miss, a read and an insert, and picks an `_id` the newest does not hold).
/// Both are looked up before every push, without allocating.
#[derive(Debug, Default)]
pub struct StoreMemo {
    /// A program has a handful of series: a list compared by value (no hashing) is the
    /// cheapest lookup for that.
    indexes: Mutex<Vec<SeriesSpec>>,
    trees: Mutex<Vec<TreeSpec>>,
    /// The collections whose validator this process installed.
    validators: Mutex<Vec<String>>,
    /// The collections of plain documents (`#[derive(Document)]`) whose indexes (keyword
    /// arrays') this process ensured.
    documents: Mutex<Vec<String>>,
    next_numbers: Mutex<NextNumbers>,
    /// The collections of series with time bounds whose every bucket is known bounded (see
    /// [`BOUNDED_COLLECTIONS`](crate::spec::BOUNDED_COLLECTIONS)), and those known not to be.
    bounded: Mutex<Vec<(String, bool)>>,
    /// Every series and tree ensured in this process, kept across [`clear`](Self::clear).
    served: Mutex<(Vec<SeriesSpec>, Vec<TreeSpec>)>,
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
    /// The count of document `number - 1` when this process last wrote it (known to
    /// [`ingest`](crate::bucket::ingest), which fills it with a compare-and-set on it).
    pub(crate) count: Option<u32>,
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

impl StoreMemo {
    pub(crate) fn contains(&self, spec: &SeriesSpec) -> bool {
        lock(&self.indexes).contains(spec)
    }
    pub(crate) fn insert(&self, spec: SeriesSpec) {
        let mut specs = lock(&self.indexes);
        if !specs.contains(&spec) {
            specs.push(spec);
            let mut served = lock(&self.served);
            if !served.0.contains(&spec) {
                served.0.push(spec);
            }
        }
    }
    /// Whether every bucket of `coll` is known to carry complete time bounds (`None`: not
    /// learned yet).
    pub(crate) fn all_bounded(&self, coll: &str) -> Option<bool> {
        (lock(&self.bounded).iter()).find_map(|(c, b)| (c == coll).then_some(*b))
    }
    pub(crate) fn set_all_bounded(&self, coll: &str, all: bool) {
        let mut known = lock(&self.bounded);
        match known.iter_mut().find(|(c, _)| c == coll) {
            Some(entry) => entry.1 = all,
            None => known.push((coll.to_owned(), all)),
        }
    }
    pub(crate) fn has_tree(&self, spec: &TreeSpec) -> bool {
        lock(&self.trees).contains(spec)
    }
    pub(crate) fn add_tree(&self, spec: TreeSpec) {
        let mut specs = lock(&self.trees);
        if !specs.contains(&spec) {
            specs.push(spec);
            let mut served = lock(&self.served);
            if !served.1.contains(&spec) {
                served.1.push(spec);
            }
        }
    }
    /// Whether this process installed `coll`'s validator.
    pub(crate) fn has_validator(&self, coll: &str) -> bool {
        listed(&self.validators, coll)
    }
    pub(crate) fn add_validator(&self, coll: &str) {
        list(&self.validators, coll);
    }
    /// Whether this process ensured the indexes of the documents of `coll`.
    pub(crate) fn has_documents(&self, coll: &str) -> bool {
        listed(&self.documents, coll)
    }
    pub(crate) fn add_documents(&self, coll: &str) {
        list(&self.documents, coll);
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
    /// Sets the count of `key`'s newest document in `coll`, when its next number is
    /// remembered (one push more into it).
    pub(crate) fn set_count(&self, coll: &str, key: &Bson, count: u32) {
        let h = memo_hash(coll, key);
        let mut m = lock(&self.next_numbers);
        let found =
            (m.by_hash.get_mut(&h).into_iter().flatten()).find(|(c, k, _)| c == coll && k == key);
        if let Some(entry) = found {
            entry.2.count = Some(count);
        }
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
    /// Every series (bucket collections, outlier overflow collections) whose indexes this
    /// store has ensured in this process, i.e. that its pushes and reads used, also before a
    /// [`clear`](Self::clear): the layouts a process served (the targeting check of the tests
    /// reads the collections' shard keys from them).
    pub fn served_series(&self) -> Vec<SeriesSpec> {
        lock(&self.served).0.clone()
    }
    /// Every tree whose indexes this store has ensured in this process, also before a
    /// [`clear`](Self::clear).
    pub fn served_trees(&self) -> Vec<TreeSpec> {
        lock(&self.served).1.clone()
    }
    /// Forgets everything (after a collection was dropped behind the store's back).
    pub fn clear(&self) {
        lock(&self.indexes).clear();
        lock(&self.trees).clear();
        *lock(&self.next_numbers) = NextNumbers::default();
        lock(&self.bounded).clear();
        lock(&self.validators).clear();
        lock(&self.documents).clear();
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

/// Whether `coll` is among the collections of `colls`.
fn listed(colls: &Mutex<Vec<String>>, coll: &str) -> bool {
    lock(colls).iter().any(|c| c == coll)
}

/// Adds `coll` to the collections of `colls` (once).
fn list(colls: &Mutex<Vec<String>>, coll: &str) {
    let mut colls = lock(colls);
    if !colls.iter().any(|c| c == coll) {
        colls.push(coll.to_owned());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
