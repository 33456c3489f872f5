//! What the series engine remembers per store in this process (a store
//! [extension](crate::store::Extensions)): the series whose indexes it has ensured, the
//! collections whose every bucket is known bounded, and per series key the number of the next
//! document, the newest document's `_id` and count. Looked up before every push, without
//! allocating.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use bson::Bson;

use crate::spec::{SeriesOrder, SeriesSpec};
use crate::store::{Extension, ExtensionKey, Store};

/// The key of the series memo in every store's extensions.
static MEMO: ExtensionKey<SeriesMemo> = ExtensionKey::new();

/// The series memo of `store`.
pub(crate) fn memo<S: Store>(store: &S) -> &SeriesMemo {
    store.extensions().get(&MEMO)
}

/// What a store remembers of its series in this process: which series it has already ensured
/// the indexes of, and, per series key whose newest document a push of this process saw, the
/// number the next document gets and the `_id` of the newest (so that the push that opens the
/// next one is one upsert, not a miss, a read and an insert, and picks an `_id` the newest
/// does not hold).
#[derive(Debug, Default)]
pub(crate) struct SeriesMemo {
    /// A program has a handful of series: a list compared by value (no hashing) is the
    /// cheapest lookup for that.
    indexes: Mutex<EnsuredSpecs>,
    /// The address of the last spec [`SeriesMemo::know_static`] took (0: none), read without
    /// the lock: a program's pushes mostly go to one series after another.
    last_static: AtomicUsize,
    next_numbers: Mutex<NextNumbers>,
    /// The collections of series with time bounds whose every bucket is known bounded (see
    /// [`BOUNDED_COLLECTIONS`](crate::spec::BOUNDED_COLLECTIONS)), and those known not to be.
    bounded: Mutex<Vec<(String, BoundsMark)>>,
}

impl Extension for SeriesMemo {
    fn forget(&self) {
        *lock(&self.indexes) = EnsuredSpecs::default();
        self.last_static.store(0, Ordering::Relaxed);
        *lock(&self.next_numbers) = NextNumbers::default();
        lock(&self.bounded).clear();
    }
}

/// The series whose indexes were ensured.
#[derive(Debug, Default)]
struct EnsuredSpecs {
    specs: Vec<Ensured>,
    /// The addresses of `'static` specs (the derives' constants) found among `specs`: a spec
    /// at one of these addresses is that very spec, known without comparing its fields. A
    /// spec that is not `'static` (on a stack, on the heap) is never at such an address.
    statics: Vec<usize>,
}

/// A series whose indexes were ensured: its spec, owned (a spec may borrow from its caller).
#[derive(Debug)]
struct Ensured {
    collection: Box<str>,
    key_field: Box<str>,
    items_field: Box<str>,
    count_field: Box<str>,
    size: u32,
    /// The numbering field, and whether `_id`s are time-named.
    order: (Box<str>, bool),
    bounds: Option<(Box<str>, Box<str>)>,
    summary: Vec<(crate::spec::SummaryOp, Box<str>, Box<str>)>,
    span: Option<i64>,
    /// Whether it keeps roll-ups: a writer without them over the same collection is another
    /// series, whose first write in the process untrusts the roll-ups.
    rollup: bool,
}

impl Ensured {
    fn of(s: &SeriesSpec<'_>) -> Self {
        Ensured {
            collection: s.collection.into(),
            key_field: s.key_field.into(),
            items_field: s.items_field.into(),
            count_field: s.count_field.into(),
            size: s.size,
            order: (
                s.order.field().into(),
                matches!(s.order, SeriesOrder::TimeId(_)),
            ),
            bounds: s.keeps.bounds.map(|(a, b)| (a.into(), b.into())),
            summary: (s.keeps.summary.iter())
                .map(|a| (a.op, a.item_field.into(), a.field.into()))
                .collect(),
            span: s.keeps.span,
            rollup: s.keeps.rollup.is_some(),
        }
    }

    fn is(&self, s: &SeriesSpec<'_>) -> bool {
        *self.collection == *s.collection
            && *self.key_field == *s.key_field
            && *self.items_field == *s.items_field
            && *self.count_field == *s.count_field
            && self.size == s.size
            && *self.order.0 == *s.order.field()
            && self.order.1 == matches!(s.order, SeriesOrder::TimeId(_))
            && match (&self.bounds, s.keeps.bounds) {
                (None, None) => true,
                (Some((a, b)), Some((c, d))) => **a == *c && **b == *d,
                _ => false,
            }
            && self.span == s.keeps.span
            && self.rollup == s.keeps.rollup.is_some()
            && self.summary.len() == s.keeps.summary.len()
            && (self.summary.iter().zip(s.keeps.summary))
                .all(|((op, i, f), a)| *op == a.op && **i == *a.item_field && **f == *a.field)
    }
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

/// A bucket collection's mark: whether every bucket carries complete time bounds, and the
/// span every bucket keeps to (written only by writers cut by that span).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BoundsMark {
    pub(crate) all_bounded: bool,
    pub(crate) span: Option<i64>,
    /// The fingerprint of the aggregates every roll-up of the collection is exact for (0: the
    /// roll-ups are not trusted, or there are none).
    pub(crate) rollup: u64,
    /// The mark says an older version's roll-ups, kept among the buckets, are exact: this
    /// version's writes do not update them (`series::indexes`).
    pub(crate) old_rollup: bool,
    /// Buckets of the collection were moved to an archive (`bucket::archive`).
    pub(crate) archived: bool,
    /// The library created the collection: every document of it carries its number (none of
    /// the unnumbered documents of other tools, which a key's next number must count).
    pub(crate) numbered: bool,
    /// How far from its bucket's `_id` second any item of the collection lies (`series::width`).
    /// `None`: not kept (a collection the library did not create, or one a write could not
    /// keep it for).
    pub(crate) width: Option<Width>,
    /// The lease on the width, in milliseconds (the mark's `width_lease`; 0: none), and what
    /// this process holds of it (`series::lease`).
    pub(crate) lease: Lease,
}

/// `new`, with the time this process learned its width set when the width is not `old`'s.
fn stamped(old: BoundsMark, mut new: BoundsMark) -> BoundsMark {
    if new.width != old.width {
        new.lease.width_since = Some(Instant::now());
    }
    new
}

/// What a process knows of a collection's width lease (`series::lease`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Lease {
    /// The lease, in milliseconds, as the mark held it when this process last learned the width
    /// (it only grows): 0, none.
    pub(crate) ms: i64,
    /// When this process learned the width it holds: set by the memo whenever that changes.
    pub(crate) width_since: Option<Instant>,
    /// A width the mark has held for a whole lease, by this process's clock: a push within it
    /// waits for nothing.
    pub(crate) settled: Width,
    /// Until when a range read may scan by the width without reading the mark.
    pub(crate) trusted: Option<Trust>,
}

/// A reader's trust in the width its process holds (`series::lease`): until `until` by the
/// monotonic clock, and for `wall_for` from `wall_from` by the wall clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Trust {
    pub(crate) until: Instant,
    pub(crate) wall_from: SystemTime,
    pub(crate) wall_for: Duration,
}

/// How far a collection's items lie from their bucket's `_id` second, in milliseconds: after
/// its last millisecond, and before it (`series::width`, which holds what it does).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Width {
    pub(crate) after: i64,
    pub(crate) before: i64,
}

/// The parts of a time-named `_id` (`<prefix>_<seconds>` or `<prefix>_<seconds>_<suffix>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeId {
    pub(crate) seconds: i64,
    pub(crate) suffix: u32,
}

impl TimeId {
    /// The epoch milliseconds its second starts at.
    pub(crate) fn start_ms(&self) -> i64 {
        self.seconds.saturating_mul(1000)
    }
}

/// Where a spec lives (see [`EnsuredSpecs::statics`]).
fn address(spec: &SeriesSpec<'_>) -> usize {
    std::ptr::from_ref(spec) as usize
}

/// At most this many next numbers are remembered; past it a push that opens a document takes
/// the slower path (a read of the newest document, then an insert).
const MAX_NEXT_NUMBERS: usize = 100_000;

impl SeriesMemo {
    pub(crate) fn contains(&self, spec: &SeriesSpec<'_>) -> bool {
        if self.last_static.load(Ordering::Relaxed) == address(spec) {
            return true;
        }
        let ensured = lock(&self.indexes);
        ensured.statics.contains(&address(spec)) || ensured.specs.iter().any(|e| e.is(spec))
    }
    pub(crate) fn insert(&self, spec: &SeriesSpec<'_>) {
        let mut ensured = lock(&self.indexes);
        if !ensured.specs.iter().any(|e| e.is(spec)) {
            ensured.specs.push(Ensured::of(spec));
        }
    }
    /// Remembers where `spec`, a constant, lives, once its indexes are ensured: from then on
    /// [`SeriesMemo::contains`] knows it by its address.
    pub(crate) fn know_static(&self, spec: &'static SeriesSpec<'static>) {
        let at = address(spec);
        if self.last_static.load(Ordering::Relaxed) == at {
            return;
        }
        let mut ensured = lock(&self.indexes);
        let known = ensured.statics.contains(&at);
        if known || ensured.specs.iter().any(|e| e.is(spec)) {
            if !known {
                ensured.statics.push(at);
            }
            self.last_static.store(at, Ordering::Relaxed);
        }
    }
    /// What `coll`'s mark in [`BOUNDED_COLLECTIONS`](crate::spec::BOUNDED_COLLECTIONS) says
    /// (`None`: not read yet).
    pub(crate) fn bounds_mark(&self, coll: &str) -> Option<BoundsMark> {
        (lock(&self.bounded).iter()).find_map(|(c, b)| (c == coll).then_some(*b))
    }
    /// Changes what is remembered of `coll`'s mark, when anything is.
    pub(crate) fn change_bounds_mark(
        &self,
        coll: &str,
        change: impl FnOnce(BoundsMark) -> BoundsMark,
    ) {
        let mut known = lock(&self.bounded);
        if let Some(entry) = known.iter_mut().find(|(c, _)| c == coll) {
            entry.1 = stamped(entry.1, change(entry.1));
        }
    }
    pub(crate) fn set_bounds_mark(&self, coll: &str, mark: BoundsMark) {
        let mut known = lock(&self.bounded);
        match known.iter_mut().find(|(c, _)| c == coll) {
            Some(entry) => entry.1 = stamped(entry.1, mark),
            None => known.push((coll.to_owned(), stamped(BoundsMark::default(), mark))),
        }
    }
    /// What is remembered of `key`'s next document in `coll`.
    pub(crate) fn next_number(&self, coll: &str, key: &Bson) -> Option<Next> {
        self.next_number_at(coll, key).1
    }
    /// [`SeriesMemo::next_number`], and where `key` is remembered, for
    /// [`SeriesMemo::set_count_at`] (a push hashes the key once).
    pub(crate) fn next_number_at(&self, coll: &str, key: &Bson) -> (MemoAt, Option<Next>) {
        let h = memo_hash(coll, key);
        let m = lock(&self.next_numbers);
        let next = (m.by_hash.get(&h).into_iter().flatten())
            .find(|(c, k, _)| c == coll && same_key(k, key))
            .map(|e| e.2);
        (MemoAt(h), next)
    }
    /// Takes what is remembered of `key`'s next document in `coll`.
    pub(crate) fn take_next_number(&self, coll: &str, key: &Bson) -> Option<Next> {
        let h = memo_hash(coll, key);
        let mut m = lock(&self.next_numbers);
        let entries = m.by_hash.get_mut(&h)?;
        let i = entries
            .iter()
            .position(|(c, k, _)| c == coll && same_key(k, key))?;
        let (_, _, n) = entries.swap_remove(i);
        if entries.is_empty() {
            m.by_hash.remove(&h);
        }
        m.len -= 1;
        Some(n)
    }
    /// Sets the count of `key`'s newest document in `coll` (found `at`) to `count`, when
    /// what is remembered of the key is still `was` (one push more into the document `was`
    /// names). Compare-and-set: another task of this process that learned of a newer document
    /// meanwhile keeps what it learned; a count set from an older one would call the newer
    /// full, and a push that the newer does not take would then open a second open document
    /// beside it.
    pub(crate) fn set_count_at(&self, at: MemoAt, coll: &str, key: &Bson, was: Next, count: u32) {
        let h = at.0;
        let mut m = lock(&self.next_numbers);
        let found = (m.by_hash.get_mut(&h).into_iter().flatten())
            .find(|(c, k, n)| c == coll && *n == was && same_key(k, key));
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
        match entries
            .iter_mut()
            .find(|(c, k, _)| c == coll && same_key(k, key))
        {
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
}

/// Where a key's next number is remembered ([`SeriesMemo::next_number_at`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemoAt(u64);

/// Whether two keys are one, as the server holds them: numbers by value (a key read from
/// stored data as an Int32 and a typed `i64` key are one series). Same-typed keys first.
fn same_key(a: &Bson, b: &Bson) -> bool {
    a == b || crate::codec::order::values_equal(a, b)
}

/// A hash of a collection and a key, for [`NextNumbers`]: keys equal by value ([`same_key`])
/// hash alike (an integer by value as an `i64`, whatever its number type; a symbol as its
/// string; anything else by its canonical bytes). FNV-1a: a few instructions per byte, against a few
/// hundred for the standard SipHash on these short inputs (an attacker choosing keys can at
/// worst make lookups in this bounded memo linear, never wrong).
fn memo_hash(coll: &str, key: &Bson) -> u64 {
    let mut h = Fnv::default();
    h.write(coll.as_bytes());
    h.write_u8(0xff);
    match key {
        Bson::Int32(x) => h.write_i64(*x as i64),
        Bson::Int64(x) => h.write_i64(*x),
        Bson::String(s) | Bson::Symbol(s) => {
            h.write_u8(2);
            h.write(s.as_bytes());
        }
        Bson::ObjectId(o) => {
            h.write_u8(3);
            h.write(&o.bytes());
        }
        other => match crate::codec::number::canonical(other) {
            Some(Bson::Int64(x)) => h.write_i64(x),
            _ => {
                h.write_u8(4);
                h.write(&crate::codec::order::value_key(other));
            }
        },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Keeps;

    const TRADES: SeriesSpec<'static> = SeriesSpec {
        collection: "trades",
        key_field: "customerId",
        items_field: "history",
        count_field: "count",
        size: 10,
        order: SeriesOrder::TimeId("page"),
        keeps: Keeps::NONE,
    };
    const BIGGER: SeriesSpec<'static> = SeriesSpec { size: 11, ..TRADES };

    #[test]
    fn a_constant_spec_is_known_by_its_address_only_once_ensured() {
        let memo = SeriesMemo::default();
        let (trades, bigger): (&'static SeriesSpec<'static>, &'static SeriesSpec<'static>) =
            (&TRADES, &BIGGER);
        // Not ensured: its address is not taken.
        memo.know_static(trades);
        assert!(!memo.contains(trades));
        memo.insert(trades);
        memo.know_static(trades);
        assert_eq!(lock(&memo.indexes).statics, [address(trades)]);
        assert!(memo.contains(trades));
        // A copy elsewhere is the same spec by value; a constant of another value is not
        // ensured, whatever is known of the first.
        let copy = TRADES;
        assert!(memo.contains(&copy));
        assert!(!memo.contains(bigger));
        memo.know_static(bigger);
        assert!(!memo.contains(bigger));
        // Forgetting forgets the addresses too.
        memo.forget();
        assert!(!memo.contains(trades));
    }

    /// A key's next number is one entry whatever number type names the key: a migration that
    /// takes it with a key read from stored data (an Int32, a Decimal128) takes the entry a
    /// typed `i64` push made, and no stale second entry is left to open a bucket out of turn.
    #[test]
    fn a_key_is_remembered_once_by_value() {
        let memo = SeriesMemo::default();
        let next = Next {
            number: 3,
            newest: None,
            count: None,
        };
        memo.set_next_number("trades", &Bson::Int64(5), next);
        let five: Bson = Bson::Decimal128("5.0".parse().unwrap());
        for key in [Bson::Int32(5), Bson::Double(5.0), five.clone()] {
            assert_eq!(memo.next_number("trades", &key), Some(next), "{key:?}");
        }
        memo.set_next_number("trades", &Bson::Int32(5), Next { number: 4, ..next });
        assert_eq!(lock(&memo.next_numbers).len, 1);
        assert_eq!(
            memo.take_next_number("trades", &five).map(|n| n.number),
            Some(4)
        );
        assert_eq!(memo.next_number("trades", &Bson::Int64(5)), None);
        assert_eq!(memo.next_number("trades", &Bson::String("5".into())), None);
    }

    /// A push counts itself into the newest document it knew only while that is still what
    /// the process knows: a count set from an older document would call a newer one, which
    /// another task of the process opened meanwhile, full, and a push that one does not take
    /// (out of its window) would open a second open document beside it.
    #[test]
    fn a_count_is_set_only_on_what_was_known() {
        let memo = SeriesMemo::default();
        let key = Bson::Int64(0);
        let old = Next {
            number: 23,
            newest: None,
            count: Some(4),
        };
        memo.set_next_number("trades", &key, old);
        let (at, known) = memo.next_number_at("trades", &key);
        assert_eq!(known, Some(old));
        // Another task opens document 23 with one item.
        let opened = Next {
            number: 24,
            count: Some(1),
            ..old
        };
        memo.set_next_number("trades", &key, opened);
        memo.set_count_at(at, "trades", &key, old, 5);
        assert_eq!(memo.next_number("trades", &key), Some(opened));
        // Unchanged meanwhile: counted.
        memo.set_count_at(at, "trades", &key, opened, 2);
        assert_eq!(
            memo.next_number("trades", &key).and_then(|n| n.count),
            Some(2)
        );
    }
}
