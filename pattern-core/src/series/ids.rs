//! The `_id`s of the documents a push opens: time-named for buckets (`<key>_<seconds>`, with a
//! suffix for a second already taken), ObjectIds for overflow chunks.

use crate::store::Error as StoreError;
use bson::oid::ObjectId;
use bson::Bson;

use super::TimeId;
use crate::key::KeyPart;
use crate::series::bucket_id;
use crate::spec::{SeriesOrder, SeriesSpec};
use crate::store::query::{Filter, FindOptions};
use crate::store::Store;
use crate::Result;

/// Whether a write was refused because its `_id` is taken (rather than by another unique
/// index). Both stores name the index in the message, as MongoDB does:
/// `E11000 duplicate key error collection: db.trades index: _id_ dup key: { _id: ... }`.
pub(super) fn is_id_taken(e: &StoreError) -> bool {
    match e {
        StoreError::DuplicateKey { message, .. } => message
            .split_once("index: ")
            .is_some_and(|(_, rest)| rest.split_whitespace().next() == Some("_id_")),
        _ => false,
    }
}

/// A key's text in its buckets' `_id`s (`123` in `123_1698335223`): a `str`, or
/// [`PrefixOf`] a typed key, made the first time it is needed.
pub(crate) trait IdPrefix {
    fn get(&self) -> &str;
}

impl IdPrefix for str {
    fn get(&self) -> &str {
        self
    }
}

/// The prefix of a typed key ([`KeyPart::id_prefix`]), made when first needed: most pushes
/// open no document, and never need it.
pub(crate) struct PrefixOf<'a, Q: ?Sized> {
    key: &'a Q,
    made: std::sync::OnceLock<String>,
}

impl<'a, Q: KeyPart + ?Sized> PrefixOf<'a, Q> {
    pub(crate) fn new(key: &'a Q) -> Self {
        PrefixOf {
            key,
            made: std::sync::OnceLock::new(),
        }
    }
}

impl<Q: KeyPart + ?Sized> IdPrefix for PrefixOf<'_, Q> {
    fn get(&self) -> &str {
        self.made.get_or_init(|| self.key.id_prefix())
    }
}

/// The `_id`s of the documents a push opens, and what to do when one collides.
///
/// For [`SeriesOrder::TimeId`], a new document's `_id` is `<prefix>_<seconds of its first
/// item>`, with a suffix when an older document of the key starts in the same second. The
/// suffix is one past the newest document's when that one starts in the same second (known
/// from this process's memo, or from the document a push just read or opened), so a burst of
/// documents within one second opens each in one write. A write refused on its `_id` (a
/// document this process did not know) takes the next free suffix (a read) before it is
/// retried: an `_id` seen taken is never sent again. A write refused on `{key, seq}` means
/// another writer opened document `seq` first: the next attempt pushes into it. When a store
/// does not say which index refused, a second refusal on the same `seq` is taken as the `_id`.
pub(super) struct NewIds<'a, P: ?Sized> {
    spec: &'a SeriesSpec<'a>,
    prefix: &'a P,
    /// The first item's epoch seconds ([`SeriesOrder::TimeId`] only).
    seconds: Option<i64>,
    suffix: u32,
    /// The newest document's `_id`, when it is one of this key's time-named `_id`s.
    newest: Option<TimeId>,
    collided: Option<i64>,
    bump: bool,
}

// By hand: a derive would ask `P: Clone` of a prefix held by reference.
impl<P: ?Sized> Clone for NewIds<'_, P> {
    fn clone(&self) -> Self {
        NewIds { ..*self }
    }
}

impl<'a, P: IdPrefix + ?Sized> NewIds<'a, P> {
    pub(super) fn new(spec: &'a SeriesSpec, prefix: &'a P, time: Option<i64>) -> Self {
        let mut ids = NewIds {
            spec,
            prefix,
            seconds: None,
            suffix: 0,
            newest: None,
            collided: None,
            bump: false,
        };
        ids.at(time);
        ids
    }

    fn time_named(&self) -> bool {
        matches!(self.spec.order, SeriesOrder::TimeId(_))
    }

    /// Sets the first item's time (for a batch, the time of the item that opens a document;
    /// `None`: now).
    pub(super) fn at(&mut self, time: Option<i64>) {
        if !self.time_named() {
            return;
        }
        let seconds = Some(time.unwrap_or_else(|| crate::key::now_millis().div_euclid(1000)));
        if self.seconds != seconds {
            (self.seconds, self.suffix) = (seconds, 0);
        }
        self.follow_newest();
    }

    /// The newest document of the key is `newest` (`None`: unknown, or not time-named).
    pub(super) fn after(&mut self, newest: Option<TimeId>) {
        self.newest = newest;
        self.follow_newest();
    }

    fn follow_newest(&mut self) {
        if let (Some(newest), Some(seconds)) = (self.newest, self.seconds) {
            if newest.seconds == seconds {
                self.suffix = self.suffix.max(newest.suffix.saturating_add(1));
            }
        }
    }

    /// The epoch milliseconds of the second the key's newest document is named by, when known.
    pub(super) fn newest_start(&self) -> Option<i64> {
        self.newest.map(|n| n.start_ms())
    }

    /// The parts of `id` when it is a time-named `_id` of this key.
    pub(super) fn parse(&self, id: Option<&Bson>) -> Option<TimeId> {
        match (self.time_named(), id) {
            (true, Some(Bson::String(id))) => parse_bucket_id(self.prefix.get(), id),
            _ => None,
        }
    }

    pub(super) async fn next<S: Store>(&mut self, store: &S, seq: i64) -> Result<Bson> {
        self.prepare(store, seq).await?;
        Ok(self.id())
    }

    /// Gets the `_id` of document `seq` ready: after a refusal on its `_id`, the next free
    /// suffix (a read).
    pub(super) async fn prepare<S: Store>(&mut self, store: &S, seq: i64) -> Result<()> {
        if let Some(seconds) = self.seconds {
            let bump = std::mem::take(&mut self.bump);
            if bump && self.collided.is_none_or(|c| c == seq) {
                // Boxed: after a refusal only (every push's future would carry it).
                let next = next_suffix(store, self.spec, self.prefix.get(), seconds, self.suffix);
                self.suffix = Box::pin(next).await?;
                self.collided = None;
            }
        }
        Ok(())
    }

    /// The `_id` [`NewIds::prepare`] got ready (made only when a document is opened).
    pub(super) fn id(&self) -> Bson {
        match self.seconds {
            Some(seconds) => Bson::String(bucket_id(self.prefix.get(), seconds, self.suffix)),
            None => Bson::ObjectId(ObjectId::new()),
        }
    }

    /// The `_id` just opened, as the newest document's: the next one in the same second takes
    /// the next suffix.
    pub(super) fn opened(&mut self) -> Option<TimeId> {
        let seconds = self.seconds?;
        let opened = TimeId {
            seconds,
            suffix: self.suffix,
        };
        self.after(Some(opened));
        Some(opened)
    }

    /// A write was refused on `_id`.
    pub(super) fn id_taken(&mut self) {
        self.bump = true;
        self.collided = None;
    }

    /// A write opening document `seq` was refused, on an index the store did not name.
    pub(super) fn collided(&mut self, seq: i64) {
        // Twice on the same number: the `_id` is taken, not the number.
        self.bump = self.collided == Some(seq);
        self.collided = Some(seq);
    }
}

/// The parts of `id` when it is `<prefix>_<seconds>` or `<prefix>_<seconds>_<suffix>` as
/// [`bucket_id`] writes them.
pub(crate) fn parse_bucket_id(prefix: &str, id: &str) -> Option<TimeId> {
    let rest = id.strip_prefix(prefix)?.strip_prefix('_')?;
    let (seconds, suffix) = match rest.split_once('_') {
        // At least 6 digits, zero-padded to 6 only.
        Some((s, x))
            if (x.len() == 6 || (x.len() > 6 && !x.starts_with('0')))
                && x.bytes().all(|b| b.is_ascii_digit()) =>
        {
            let suffix = x.parse::<u32>().ok()?;
            (s, (suffix != 0).then_some(suffix)?)
        }
        Some(_) => return None,
        None => (rest, 0),
    };
    let digits = seconds.strip_prefix('-').unwrap_or(seconds);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && seconds != "-0";
    let seconds = seconds.parse::<i64>().ok().filter(|_| canonical)?;
    Some(TimeId { seconds, suffix })
}

/// One past the highest suffix in use for `<prefix>_<seconds>` (and past `suffix`).
async fn next_suffix<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    prefix: &str,
    seconds: i64,
    suffix: u32,
) -> Result<u32> {
    let coll = spec.collection;
    let base = format!("{}_", bucket_id(prefix, seconds, 0));
    let range = Filter::and([
        Filter::Gte("_id".into(), Bson::String(base.clone())),
        Filter::Lt(
            "_id".into(),
            Bson::String(format!("{}`", &base[..base.len() - 1])),
        ),
    ]);
    // Across keys: `_id`s are unique in the whole collection, and another key's bucket may
    // hold the name (a scatter-gather on a cluster sharded by the key; only after a collision).
    let desc = FindOptions {
        sort: vec![("_id".into(), -1)],
        limit: Some(1),
        comment: Some("pattern scatter: bucket _id suffix"),
        ..FindOptions::default()
    };
    let highest = store
        .find(coll, &range, &desc)
        .await?
        .first()
        .and_then(|d| {
            d.get_str("_id")
                .ok()
                .and_then(|s| s[base.len()..].parse::<u32>().ok())
        })
        .unwrap_or(0);
    Ok(highest.max(suffix) + 1)
}

#[cfg(test)]
mod tests {
    use super::{is_id_taken, parse_bucket_id, TimeId};
    use crate::series::bucket_id;
    use crate::store::Error as StoreError;

    /// Every `_id` [`bucket_id`] writes parses back to its parts; other strings do not parse.
    #[test]
    fn bucket_ids_parse_back() {
        for prefix in ["", "123", "a_b", "7_1700000000"] {
            for seconds in [0, 1, 1_698_335_223, -1, -1_698_335_223, i64::MAX, i64::MIN] {
                for suffix in [0, 1, 42, 999_999, 1_000_000, u32::MAX] {
                    let id = bucket_id(prefix, seconds, suffix);
                    assert_eq!(
                        parse_bucket_id(prefix, &id),
                        Some(TimeId { seconds, suffix }),
                        "{id}"
                    );
                }
            }
        }
        for other in [
            "123",
            "123_",
            "1234_5",
            "123_x",
            "123_01",
            "123_-0",
            "123_5_1",
            "123_5_000000",
            "123_5_0000001",
            "123_5_",
            "123_99999999999999999999",
            "123_5_9999999999",
            "123_5_000001_000002",
        ] {
            assert_eq!(parse_bucket_id("123", other), None, "{other}");
        }
    }

    /// A refusal on `_id` is told apart from one on another index, in MongoDB's message (also
    /// after a "caused by" prefix) and the in-memory store's.
    #[test]
    fn id_refusals_are_recognized() {
        let dup = |message: &str| StoreError::DuplicateKey {
            collection: "c".into(),
            message: message.into(),
        };
        let on_id = [
            r#"E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: "a" }"#,
            r#"Plan executor error during update :: caused by :: E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: "a" }"#,
            "E11000 duplicate key error collection: c index: _id_",
        ];
        for m in on_id {
            assert!(is_id_taken(&dup(m)), "{m}");
        }
        let other = [
            "E11000 duplicate key error collection: db.c index: pattern_k_1_page_-1_unique dup key: { k: 1, page: 1 }",
            "E11000 duplicate key error collection: c index: _id_x",
            "E11000 duplicate key error",
        ];
        for m in other {
            assert!(!is_id_taken(&dup(m)), "{m}");
        }
        assert!(!is_id_taken(&StoreError::InvalidInput(
            "index: _id_".into()
        )));
    }
}
