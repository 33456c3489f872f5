//! The engine both patterns share: a series of items kept `size` at a time in documents of one
//! collection, keyed by a field (a customer's trade buckets; an outlier's overflow chunks).
//!
//! Invariants, on every store and under any number of concurrent writers:
//! - a document never holds more than `size` items (every write is conditional on `count`);
//! - nothing is lost or duplicated: a write either applies whole or not at all, and the retry
//!   loops only retry writes that did not apply;
//! - the documents of a key are numbered 1, 2, 3... in a `seq` field (`page` for buckets), and
//!   at most one is open (`count < size`): the newest. A push goes to the open document in one
//!   atomic conditional upsert ([`Store::push_open`]); the first push of a process to a key
//!   returns the document's number, and from then on the process knows the next one. The
//!   upsert inserts document `n + 1` only when no document is open, and a unique index on
//!   `{key, seq}` lets one of two concurrent openers win (or refuses a number another process
//!   already used); the other retries into the winner's document. So each writer's items are
//!   read back in the order it pushed them, and page `n` is found by its number, however deep.
//! - Documents without a number (the seed's single overflow document, buckets written before
//!   numbering, or by other tools) come first, in `_id` order; numbering continues after them.

use std::marker::PhantomData;

use bson::oid::ObjectId;
use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf};
use futures::stream::{self, Stream, TryStreamExt};
use serde::de::{DeserializeOwned, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::error::display_bson;
use crate::query::{Filter, FindOptions, IndexSpec, Update};
use crate::store::{doc_id, ensure_indexes, from_raw, raw_value, ArrayStats, Next, Store, TimeId};
use crate::{Error, Result};

/// Attempts before a retry loop reports [`Error::Contention`]. Every retry follows a write of
/// another writer that did apply, so the loop only spins under that much concurrent traffic.
const MAX_ATTEMPTS: u32 = 10_000;

/// How the documents of one key are numbered and named. Both number them in a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SeriesOrder {
    /// Numbered in the given field; `_id = "<key>_<epoch seconds of the first item>"`: the
    /// seed's bucket layout. Two documents that would get the same `_id` (first items in the
    /// same second) are told apart by a suffix: `123_1698335223_000001`.
    TimeId(&'static str),
    /// Numbered in the given field; `_id` is an ObjectId (overflow chunks).
    Seq(&'static str),
}

impl SeriesOrder {
    /// The field numbering the documents.
    pub const fn field(&self) -> &'static str {
        match self {
            SeriesOrder::TimeId(f) | SeriesOrder::Seq(f) => f,
        }
    }
}

/// Where and how a series is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SeriesSpec {
    pub collection: &'static str,
    /// The field holding the key in every document (`customerId`, `book_id`).
    pub key_field: &'static str,
    /// The array field (`history`, `customers_purchased_extra`).
    pub items_field: &'static str,
    /// The field counting the items of the array (`count`).
    pub count_field: &'static str,
    /// Items per document, at least 1.
    pub size: u32,
    pub order: SeriesOrder,
}

impl SeriesSpec {
    /// The indexes the series needs: `{key, seq, _id}`, which orders a key's documents and
    /// serves every read by key (the newest document is its last entry); one on
    /// `{key, seq: -1, _id: -1}` partial on `count < size`, which holds only open documents,
    /// newest first: how a push finds its document, or finds there is none, in one index probe
    /// however long the series (it both filters and sorts, so the server's planner picks it
    /// without a hint: SecantusDB's hinted queries cost in proportion to the collection); and a
    /// unique one on `{key, seq}` (documents without `seq` aside) that admits one document
    /// `n + 1`. `seq` never changes once written, so that partial index never sees a document
    /// leave its filter (the test server mishandles unique partial indexes that do).
    ///
    /// The open-document index is named to sort before any other index on the key
    /// (`0_pattern_open_...`): SecantusDB tries a query's candidate indexes in name order, and
    /// when `{key, seq, _id}` came first it walked every document of the key before the open
    /// one, so a push cost in proportion to the key's history (30 ms at 10,000 buckets against
    /// 0.5 ms; BENCHMARKS.md, section 5). A real mongod plans both orders alike.
    pub fn indexes(&self) -> Vec<IndexSpec> {
        let (k, seq) = (self.key_field, self.order.field());
        vec![
            IndexSpec {
                name: self.read_index_name(),
                keys: vec![(k.into(), 1), (seq.into(), 1), ("_id".into(), 1)],
                unique: false,
                partial: None,
            },
            IndexSpec {
                name: self.open_index_name(),
                keys: vec![(k.into(), 1), (seq.into(), -1), ("_id".into(), -1)],
                unique: false,
                partial: Some(Filter::Lt(
                    self.count_field.into(),
                    Bson::Int32(self.size as i32),
                )),
            },
            IndexSpec {
                name: format!("pattern_{k}_1_{seq}_-1_unique"),
                keys: vec![(k.into(), 1), (seq.into(), -1)],
                unique: true,
                partial: Some(Filter::Exists(seq.into(), true)),
            },
        ]
    }

    fn read_index_name(&self) -> String {
        format!(
            "pattern_{}_1_{}_1__id_1",
            self.key_field,
            self.order.field()
        )
    }

    fn open_index_name(&self) -> String {
        format!("{}{}", self.open_index_prefix(), self.size)
    }

    fn open_index_prefix(&self) -> String {
        let (k, seq, count) = (self.key_field, self.order.field(), self.count_field);
        format!("0_pattern_open_{k}_{seq}_{count}_lt_")
    }

    /// Indexes of earlier versions or settings, dropped when found: the open-document index
    /// for another `size`, the `{key, _id}` index of unnumbered buckets, and `{key, seq}`.
    fn stale_prefixes(&self) -> Vec<String> {
        let k = self.key_field;
        vec![
            self.open_index_prefix(),
            format!(
                "pattern_open_{k}_{}_{}_lt_",
                self.order.field(),
                self.count_field
            ),
            format!("pattern_open_{}_{}_lt_", k, self.count_field),
            format!("pattern_{k}_1__id_1"),
            format!("pattern_{k}_1_{}_1", self.order.field()),
        ]
    }

    /// Creates the indexes once per store; an open-document index for another `size` is
    /// dropped first. Runs before every push and read: once done, it is one set lookup.
    pub async fn ensure_indexes<S: Store>(&self, store: &S) -> Result<()> {
        if store.ensured().contains(self) {
            return Ok(());
        }
        if self.size == 0 || self.size > i32::MAX as u32 {
            return Err(Error::invalid(format!(
                "series size must be in 1..=2^31-1, got {}",
                self.size
            )));
        }
        match ensure_indexes(store, self.collection, &self.indexes(), &self.stale_prefixes()).await {
            Ok(()) => {
                store.ensured().insert(*self);
                Ok(())
            }
            Err(Error::DuplicateKey { message, .. }) => Err(Error::invalid(format!(
                "cannot create the indexes of `{}`: two of its documents have the same key and sequence number \
                 (written by another tool?): {message}",
                self.collection
            ))),
            other => other,
        }
    }

    fn by_key(&self, key: &Bson) -> Filter {
        Filter::Eq(self.key_field.into(), key.clone())
    }

    /// A document of the series: its number is absent (the unnumbered documents that come
    /// first) or a number. A document whose number field holds anything else (a string, null,
    /// an array: written by another tool) is not part of the series: no read returns or
    /// counts it and no push writes to it.
    fn in_series(&self) -> Filter {
        Filter::NumberOrMissing(self.order.field().into())
    }

    /// The key's documents ([`SeriesSpec::in_series`]), with `more` conditions.
    fn docs_of(&self, key: &Bson, more: impl IntoIterator<Item = Filter>) -> Filter {
        let mut all = vec![self.by_key(key), self.in_series()];
        all.extend(more);
        Filter::And(all)
    }

    /// The key's documents in order: unnumbered ones first (by `_id`), then by number.
    fn sort(&self) -> Vec<(crate::query::Path, i32)> {
        vec![(self.order.field().into(), 1), ("_id".into(), 1)]
    }

    /// Newest document first.
    fn newest_first(&self) -> [(crate::query::Path, i32); 2] {
        [(self.order.field().into(), -1), ("_id".into(), -1)]
    }

    /// The key's open documents (`count < size`).
    fn open(&self, key: &Bson) -> Filter {
        Filter::And(vec![
            self.by_key(key),
            Filter::Lt(self.count_field.into(), Bson::Int32(self.size as i32)),
            self.in_series(),
        ])
    }

    fn push_update(&self, items: Vec<Bson>) -> Update {
        Update {
            inc: vec![(self.count_field.into(), items.len() as i32)],
            push: vec![(self.items_field.into(), items)],
            ..Update::default()
        }
    }

    /// A new document holding `items`: `_id`, the key, then the other fields in the
    /// lexicographic order MongoDB gives the fields an upsert creates.
    pub(crate) fn new_doc(&self, key: &Bson, id: Bson, seq: i64, items: &[Bson]) -> Document {
        self.new_doc_taking(key, id, seq, &mut items.to_vec())
    }

    /// [`SeriesSpec::new_doc`], moving `items` into it. Its array has room for a full
    /// document of up to 16 items (a few reallocations saved for the pushes that fill it, at
    /// most 16 slots of 112 bytes held by a document that stays small).
    pub(crate) fn new_doc_taking(
        &self,
        key: &Bson,
        id: Bson,
        seq: i64,
        items: &mut Vec<Bson>,
    ) -> Document {
        let room = (self.size as usize).clamp(items.len(), items.len().max(16));
        let mut array = Vec::with_capacity(room);
        array.append(items);
        let mut fields = [
            (self.count_field, Bson::Int32(array.len() as i32)),
            (self.items_field, Bson::Array(array)),
            (self.order.field(), Bson::Int64(seq)),
        ];
        fields.sort_by(|a, b| a.0.cmp(b.0));
        let mut doc = Document::new();
        doc.insert("_id", id);
        doc.insert(self.key_field, key.clone());
        for (k, v) in fields {
            doc.insert(k, v);
        }
        doc
    }
}

/// The `_id` of a [`SeriesOrder::TimeId`] document: `<prefix>_<seconds>`, then `_<suffix>`
/// in at least 6 digits unless `suffix` is 0. Written digit by digit: every push computes the
/// `_id` of the document it may open, and `format!` costs several times more.
pub fn bucket_id(prefix: &str, seconds: i64, suffix: u32) -> String {
    let mut id = String::with_capacity(prefix.len() + 28);
    id.push_str(prefix);
    id.push('_');
    if seconds < 0 {
        id.push('-');
    }
    push_digits(&mut id, seconds.unsigned_abs(), 1);
    if suffix != 0 {
        id.push('_');
        push_digits(&mut id, u64::from(suffix), 6);
    }
    id
}

/// Appends `n` in decimal, zero-padded to at least `width` digits (at most 20).
fn push_digits(out: &mut String, mut n: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut start = buf.len();
    while n > 0 || start > buf.len() - width.clamp(1, 20) {
        start -= 1;
        buf[start] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.push_str(std::str::from_utf8(&buf[start..]).expect("ASCII digits"));
}

fn contention(what: &str) -> Error {
    Error::Contention {
        attempts: MAX_ATTEMPTS,
        what: what.to_owned(),
    }
}

/// Appends `items` to the series of `key`, in order. `times[i]` is item i's epoch seconds
/// (used by [`SeriesOrder::TimeId`] only). One item costs one round trip in the common case.
pub(crate) async fn push<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    prefix: &str,
    mut items: Vec<Bson>,
    times: &[i64],
) -> Result<()> {
    for item in &items {
        crate::error::check_item_size(spec.collection, item)?;
    }
    spec.ensure_indexes(store).await?;
    match items.len() {
        0 => Ok(()),
        1 => {
            let one = items.pop().expect("one item");
            push_one(store, spec, key, prefix, one, times.first().copied()).await
        }
        _ => push_many(store, spec, key, prefix, &items, times, None).await,
    }
}

/// Writes `items` as the whole series of `key`, whose documents were just deleted: numbered
/// from 1, one insert per document, with no read first. Should another writer have opened
/// document 1 meanwhile, this goes on as a push does, after it.
pub(crate) async fn push_fresh<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    items: Vec<Bson>,
) -> Result<()> {
    for item in &items {
        crate::error::check_item_size(spec.collection, item)?;
    }
    spec.ensure_indexes(store).await?;
    store.ensured().take_next_number(spec.collection, key);
    if items.is_empty() {
        return Ok(());
    }
    push_many(store, spec, key, "", &items, &[], Some(1)).await
}

async fn push_one<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    prefix: &str,
    item: Bson,
    time: Option<i64>,
) -> Result<()> {
    let coll = spec.collection;
    // The open document's `_id` comes back too: the next document's `_id` must differ from it.
    let fields = [spec.count_field, spec.order.field(), "_id"];
    let mut ids = NewIds::new(spec, prefix, time);
    // The number the key's next document gets, when this process saw its newest one.
    let memo = store.ensured().next_number(coll, key);
    let mut next = memo.map(|m| m.number);
    ids.after(memo.and_then(|m| m.newest));
    let mut items = vec![item];
    for _ in 0..MAX_ATTEMPTS {
        if let Some(seq) = next {
            // The common case, one round trip: the seed's conditional upsert, into the key's
            // open document, or opening document `seq` when none is open.
            ids.prepare(store, seq).await?;
            match store
                .push_open(spec, key, &mut items, seq, &|| ids.id())
                .await
            {
                Ok(false) => return Ok(()),
                Ok(true) => {
                    remember(store, spec, key, seq.checked_add(1), ids.opened());
                    return Ok(());
                }
                // The `_id` is taken (an older document of the key starts in the same second):
                // the next attempt opens document `seq` under the next free suffix.
                Err(e) if is_id_taken(&e) => ids.id_taken(),
                // Document `seq` exists (another writer opened it: the next attempt pushes
                // into it), or the store did not say which index refused: find out below.
                Err(Error::DuplicateKey { .. }) => {
                    ids.collided(seq);
                    store.ensured().take_next_number(coll, key);
                    next = None;
                }
                Err(e) => {
                    let open = spec.open(key);
                    return Err(name_foreign(store, coll, &open, spec.items_field, e).await);
                }
            }
            if next.is_some() {
                continue;
            }
        }
        // The next number unknown: push into the open document returning its number
        // (`findAndModify`), which gives the next one. No hint: the open-document index both
        // filters and sorts, so the planner picks it.
        let open = spec.open(key);
        let mut update = spec.push_update(std::mem::take(&mut items));
        let pushed = store
            .update_first(
                coll,
                &open,
                &spec.newest_first(),
                "",
                &mut update,
                false,
                &fields,
            )
            .await;
        let pushed = match pushed {
            Ok(pushed) => pushed,
            Err(e) => return Err(name_foreign(store, coll, &open, spec.items_field, e).await),
        };
        if let Some(before) = pushed {
            let seq = before.get(spec.order.field()).and_then(as_int);
            let newest = ids.parse(before.get("_id"));
            remember(store, spec, key, seq.and_then(|n| n.checked_add(1)), newest);
            return Ok(());
        }
        // Nothing matched, so nothing moved: the items are back. No open document: read the
        // newest, open the next.
        items = std::mem::take(&mut update.push[0].1);
        let seq = match newest_doc(store, spec, key).await? {
            Some(doc) if open.matches(&doc) => continue, // opened meanwhile: push into it
            Some(doc) => {
                ids.after(ids.parse(doc.get("_id")));
                next_number(store, spec, key, &doc).await?
            }
            None => 1,
        };
        let id = ids.next(store, seq).await?;
        match store
            .insert_one(coll, spec.new_doc(key, id, seq, &items))
            .await
        {
            Ok(()) => {
                remember(store, spec, key, seq.checked_add(1), ids.opened());
                return Ok(());
            }
            // The number is still free: open it under the next free suffix (one upsert).
            Err(e) if is_id_taken(&e) => {
                ids.id_taken();
                next = Some(seq);
            }
            Err(Error::DuplicateKey { .. }) => {
                number_held_by_foreign(store, spec, key, seq).await?;
                ids.collided(seq);
            }
            Err(e) => return Err(e),
        }
    }
    Err(contention("opening a document"))
}

/// [`Store::push_open`] as the seed's conditional upsert: `update` (`$push` the items, `$inc`
/// the count, and on insert `$setOnInsert` the `_id`, key and number) of the key's newest open
/// document, found through the open-document index, which both filters and sorts (so no hint).
pub(crate) async fn push_open_upsert<S: Store + ?Sized>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    items: &mut Vec<Bson>,
    seq: i64,
    new_id: &(dyn Fn() -> Bson + Sync),
) -> Result<bool> {
    let mut update = spec.push_update(std::mem::take(items));
    update.set_on_insert = vec![
        ("_id".into(), new_id()),
        (spec.key_field.into(), key.clone()),
        (spec.order.field().into(), Bson::Int64(seq)),
    ];
    let (open, newest) = (spec.open(key), spec.newest_first());
    let pushed = store
        .update_first(spec.collection, &open, &newest, "", &mut update, true, &[])
        .await;
    if pushed.is_err() {
        // A write that returns an error leaves `update` as it was.
        *items = std::mem::take(&mut update.push[0].1);
    }
    Ok(pushed?.is_none())
}

/// The key's newest document.
///
/// When this process remembers the number `n` of the key's next document, the newest is
/// document `n - 1` or a later one, and the query is bounded below by that number: SecantusDB
/// reads a sorted query's whole index range before applying its limit (52 ms for the newest of
/// 10,000 documents of one key, 1 ms bounded). Should nothing be found there (documents were
/// deleted behind the memo), the key is read unbounded.
async fn newest_doc<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
) -> Result<Option<Document>> {
    let opts = FindOptions {
        sort: spec.newest_first().to_vec(),
        limit: Some(1),
        ..FindOptions::default()
    };
    let known = store.ensured().next_number(spec.collection, key);
    if let Some(n) = known.map(|k| k.number).filter(|n| *n > 1) {
        let bounded = spec.docs_of(
            key,
            [Filter::Gte(spec.order.field().into(), Bson::Int64(n - 1))],
        );
        if let Some(doc) = store.find(spec.collection, &bounded, &opts).await?.pop() {
            return Ok(Some(doc));
        }
    }
    Ok(store
        .find(spec.collection, &spec.docs_of(key, []), &opts)
        .await?
        .pop())
}

fn remember<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    next: Option<i64>,
    newest: Option<TimeId>,
) {
    if let Some(number) = next {
        let next = Next { number, newest };
        store.ensured().set_next_number(spec.collection, key, next);
    }
}

/// Whether a write was refused because its `_id` is taken (rather than by another unique
/// index). Both stores name the index in the message, as MongoDB does:
/// `E11000 duplicate key error collection: db.trades index: _id_ dup key: { _id: ... }`.
fn is_id_taken(e: &Error) -> bool {
    match e {
        Error::DuplicateKey { message, .. } => message
            .split_once("index: ")
            .is_some_and(|(_, rest)| rest.split_whitespace().next() == Some("_id_")),
        _ => false,
    }
}

/// A write to a document matching `filter` failed on the server's side. When a document
/// matching it has an `field` that is not an array (written by another tool, which the write
/// cannot push to), the error names it as a read of it does: [`Error::Decode`] with the
/// collection and `_id`. Any other error is returned as it is. One read, only after a failure.
pub(crate) async fn name_foreign<S: Store>(
    store: &S,
    coll: &str,
    filter: &Filter,
    field: &str,
    e: Error,
) -> Error {
    if !matches!(e, Error::Server { .. }) {
        return e;
    }
    let mut all = match filter {
        Filter::And(all) => all.clone(),
        one => vec![one.clone()],
    };
    all.push(Filter::NotArray(field.to_owned().into()));
    let one = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    match store.find(coll, &Filter::And(all), &one).await {
        Ok(docs) => match docs.first() {
            Some(doc) => {
                let found = doc.get(field).map(Bson::element_type);
                let found = found.map_or_else(|| "missing".to_owned(), |t| format!("{t:?}"));
                Error::decode(
                    coll,
                    doc.get("_id"),
                    format!("`{field}` is not an array but {found}"),
                )
            }
            None => e,
        },
        Err(_) => e,
    }
}

/// Opening document `seq` was refused on `{key, seq}`, as when another writer opened it
/// first. When the holder is a document outside the series instead (a number field holding
/// an array, which MongoDB's unique index files under each of its numbers), no retry can open
/// it: the error names that document. One read, only after such a refusal.
async fn number_held_by_foreign<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    seq: i64,
) -> Result<()> {
    let field = spec.order.field();
    let holder = Filter::And(vec![
        spec.by_key(key),
        Filter::Eq(field.into(), Bson::Int64(seq)),
    ]);
    let one = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    match store.find(spec.collection, &holder, &one).await?.first() {
        Some(doc) if !spec.in_series().matches(doc) => Err(Error::decode(
            spec.collection,
            doc.get("_id"),
            format!(
                "`{field}` is not a number but {}, and holds number {seq} in the unique index \
                 on {{{}, {field}}}: document {seq} of the key cannot be opened",
                doc.get(field)
                    .map_or_else(|| "missing".to_owned(), display_bson),
                spec.key_field
            ),
        )),
        _ => Ok(()),
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
struct NewIds<'a> {
    spec: &'a SeriesSpec,
    prefix: &'a str,
    /// The first item's epoch seconds ([`SeriesOrder::TimeId`] only).
    seconds: Option<i64>,
    suffix: u32,
    /// The newest document's `_id`, when it is one of this key's time-named `_id`s.
    newest: Option<TimeId>,
    collided: Option<i64>,
    bump: bool,
}

impl<'a> NewIds<'a> {
    fn new(spec: &'a SeriesSpec, prefix: &'a str, time: Option<i64>) -> Self {
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
    fn at(&mut self, time: Option<i64>) {
        if !self.time_named() {
            return;
        }
        let seconds = Some(time.unwrap_or_else(crate::key::now_seconds));
        if self.seconds != seconds {
            (self.seconds, self.suffix) = (seconds, 0);
        }
        self.follow_newest();
    }

    /// The newest document of the key is `newest` (`None`: unknown, or not time-named).
    fn after(&mut self, newest: Option<TimeId>) {
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

    /// The parts of `id` when it is a time-named `_id` of this key.
    fn parse(&self, id: Option<&Bson>) -> Option<TimeId> {
        match (self.time_named(), id) {
            (true, Some(Bson::String(id))) => parse_bucket_id(self.prefix, id),
            _ => None,
        }
    }

    async fn next<S: Store>(&mut self, store: &S, seq: i64) -> Result<Bson> {
        self.prepare(store, seq).await?;
        Ok(self.id())
    }

    /// Gets the `_id` of document `seq` ready: after a refusal on its `_id`, the next free
    /// suffix (a read).
    async fn prepare<S: Store>(&mut self, store: &S, seq: i64) -> Result<()> {
        if let Some(seconds) = self.seconds {
            let bump = std::mem::take(&mut self.bump);
            if bump && self.collided.is_none_or(|c| c == seq) {
                self.suffix =
                    next_suffix(store, self.spec, self.prefix, seconds, self.suffix).await?;
                self.collided = None;
            }
        }
        Ok(())
    }

    /// The `_id` [`NewIds::prepare`] got ready (made only when a document is opened).
    fn id(&self) -> Bson {
        match self.seconds {
            Some(seconds) => Bson::String(bucket_id(self.prefix, seconds, self.suffix)),
            None => Bson::ObjectId(ObjectId::new()),
        }
    }

    /// The `_id` just opened, as the newest document's: the next one in the same second takes
    /// the next suffix.
    fn opened(&mut self) -> Option<TimeId> {
        let seconds = self.seconds?;
        let opened = TimeId {
            seconds,
            suffix: self.suffix,
        };
        self.after(Some(opened));
        Some(opened)
    }

    /// A write was refused on `_id`.
    fn id_taken(&mut self) {
        self.bump = true;
        self.collided = None;
    }

    /// A write opening document `seq` was refused, on an index the store did not name.
    fn collided(&mut self, seq: i64) {
        // Twice on the same number: the `_id` is taken, not the number.
        self.bump = self.collided == Some(seq);
        self.collided = Some(seq);
    }
}

/// The parts of `id` when it is `<prefix>_<seconds>` or `<prefix>_<seconds>_<suffix>` as
/// [`bucket_id`] writes them.
fn parse_bucket_id(prefix: &str, id: &str) -> Option<TimeId> {
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

/// Several items: fill the newest document with a compare-and-set on its `count`, then open
/// new documents of up to `size` items each: one write per document touched, plus one read of
/// the newest document first (and again only after a write lost a race). Remembers the next
/// number, as a single push does.
async fn push_many<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    prefix: &str,
    items: &[Bson],
    times: &[i64],
    start: Option<i64>,
) -> Result<()> {
    let coll = spec.collection;
    let size = spec.size as usize;
    let (mut done, mut failures) = (0usize, 0u32);
    let mut ids = NewIds::new(spec, prefix, times.first().copied());
    // The number of the next document, once this call filled the newest one itself (or was
    // told the key has none): then the next document is opened without reading the newest
    // first (an insert per `size` items).
    let mut known_next: Option<i64> = start;
    while done < items.len() {
        if failures >= MAX_ATTEMPTS {
            return Err(contention("pushing several items"));
        }
        let rest = &items[done..];
        let seq = if let Some(seq) = known_next.take() {
            seq
        } else {
            let last = newest_doc(store, spec, key).await?;
            let newest = ids.parse(last.as_ref().and_then(|d| d.get("_id")));
            ids.after(newest);
            match &last {
                Some(doc) if spec.open(key).matches(doc) => {
                    let count = read_count(spec, doc)?;
                    let take = (size.saturating_sub(count as usize)).min(rest.len()).max(1);
                    let cas = Filter::and([
                        Filter::Eq("_id".into(), doc_id(coll, doc)?.clone()),
                        Filter::Eq(spec.count_field.into(), Bson::Int64(count as i64)),
                        Filter::Lte(spec.count_field.into(), Bson::Int64((size - take) as i64)),
                    ]);
                    let mut update = spec.push_update(rest[..take].to_vec());
                    let pushed = match store.update_one(coll, &cas, &mut update, false).await {
                        Ok(outcome) => outcome,
                        Err(e) => {
                            return Err(name_foreign(store, coll, &cas, spec.items_field, e).await)
                        }
                    };
                    if pushed.matched {
                        done += take;
                        let seq = doc.get(spec.order.field()).and_then(as_int);
                        let next = seq.and_then(|n| n.checked_add(1));
                        remember(store, spec, key, next, newest);
                        if count as usize + take == size {
                            known_next = next; // filled it: the next one is to open
                        }
                    } else {
                        failures += 1;
                    }
                    continue;
                }
                Some(doc) => next_number(store, spec, key, doc).await?,
                None => 1,
            }
        };
        let take = size.min(rest.len());
        ids.at(times.get(done).copied());
        let id = ids.next(store, seq).await?;
        match store
            .insert_one(coll, spec.new_doc(key, id, seq, &rest[..take]))
            .await
        {
            Ok(()) => {
                done += take;
                remember(store, spec, key, seq.checked_add(1), ids.opened());
                if take == size {
                    known_next = seq.checked_add(1);
                }
            }
            Err(e) if is_id_taken(&e) => {
                // The number is still free: open it under the next free suffix.
                failures += 1;
                ids.id_taken();
                known_next = Some(seq);
            }
            Err(Error::DuplicateKey { .. }) => {
                number_held_by_foreign(store, spec, key, seq).await?;
                failures += 1;
                ids.collided(seq);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One past the highest suffix in use for `<prefix>_<seconds>` (and past `suffix`).
async fn next_suffix<S: Store>(
    store: &S,
    spec: &SeriesSpec,
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
    let desc = FindOptions {
        sort: vec![("_id".into(), -1)],
        limit: Some(1),
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

/// The number of the document after `newest` (the key's newest document, full): one past its
/// number; when it has none (documents written before numbering, or by other tools), one past
/// the key's document count, so that numbering continues after them.
async fn next_number<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    newest: &Document,
) -> Result<i64> {
    let field = spec.order.field();
    match newest.get(field) {
        None | Some(Bson::Null) => {
            let s = store
                .array_stats(spec.collection, &spec.docs_of(key, []), spec.items_field)
                .await?;
            Ok(s.documents as i64 + 1)
        }
        Some(v) => as_int(v)
            .filter(|n| *n >= 0)
            .and_then(|n| n.checked_add(1))
            .ok_or_else(|| {
                Error::decode(
                    spec.collection,
                    newest.get("_id"),
                    format!(
                        "`{field}` is not an integer in 0..2^63-1: {}",
                        display_bson(v)
                    ),
                )
            }),
    }
}

/// An integer stored as Int32, Int64 or an integral Double.
pub fn as_int(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(x) => Some(*x as i64),
        Bson::Int64(x) => Some(*x),
        // Integral and within i64 (2^63 itself is not: `as` would saturate it to 2^63-1).
        Bson::Double(x)
            if x.fract() == 0.0
                && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(x) =>
        {
            Some(*x as i64)
        }
        _ => None,
    }
}

fn read_count(spec: &SeriesSpec, doc: &Document) -> Result<u64> {
    let f = spec.count_field;
    match doc.get(f).and_then(as_int) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Error::decode(
            spec.collection,
            doc.get("_id"),
            format!("`{f}` is not a non-negative integer"),
        )),
    }
}

/// The items of one stored document, decoded (taken out of the document, not copied).
pub(crate) fn decode_items<T: DeserializeOwned>(
    coll: &str,
    items_field: &str,
    mut doc: Document,
) -> Result<Vec<T>> {
    let arr = take_array(coll, items_field, &mut doc)?;
    let id = doc.get("_id");
    arr.into_iter()
        .enumerate()
        .map(|(i, b)| {
            bson::from_bson(b)
                .map_err(|e| Error::decode(coll, id, format!("`{items_field}.{i}`: {e}")))
        })
        .collect()
}

/// [`decode_items`] from the document's BSON bytes: the array is decoded in one pass, with no
/// `Bson` value built for its items. Anything unexpected (the field missing or not an array,
/// an item that does not decode) goes through [`decode_items`], for the same errors.
pub(crate) fn decode_raw_items<T: DeserializeOwned>(
    coll: &str,
    items_field: &str,
    doc: &RawDocument,
) -> Result<Vec<T>> {
    if let Ok(Some(RawBsonRef::Array(items))) = doc.get(items_field) {
        if let Ok(Values(items)) = bson::from_slice::<Values<T>>(items.as_bytes()) {
            return Ok(items);
        }
    }
    decode_items(coll, items_field, from_raw(coll, doc)?)
}

/// The values of a BSON array read as the document it is (`{"0": .., "1": ..}`), in order.
struct Values<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Values<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Visit<T> {
            type Value = Values<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array's document")
            }
            fn visit_map<M: MapAccess<'de>>(
                self,
                mut m: M,
            ) -> std::result::Result<Values<T>, M::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0));
                while let Some((IgnoredAny, v)) = m.next_entry::<IgnoredAny, T>()? {
                    out.push(v);
                }
                Ok(Values(out))
            }
        }
        d.deserialize_map(Visit(PhantomData))
    }
}

/// The items of one stored document as they are stored (taken out, not copied).
pub(crate) fn take_items(coll: &str, items_field: &str, mut doc: Document) -> Result<Vec<Bson>> {
    take_array(coll, items_field, &mut doc)
}

/// Takes array `items_field` out of `doc` (empty when absent or null).
fn take_array(coll: &str, items_field: &str, doc: &mut Document) -> Result<Vec<Bson>> {
    match doc.get_mut(items_field) {
        Some(Bson::Array(a)) => Ok(std::mem::take(a)),
        None | Some(Bson::Null) => Ok(Vec::new()),
        Some(other) => {
            let found = other.element_type();
            Err(Error::decode(
                coll,
                doc.get("_id"),
                format!("`{items_field}` is not an array but {found:?}"),
            ))
        }
    }
}

/// Document `n` (1-based) of a key, as its BSON bytes: one indexed lookup of its number,
/// however deep. When no document has that number, the key's unnumbered documents (written
/// before numbering, or by other tools), which come first, are counted instead: a second round
/// trip, only then.
pub(crate) async fn nth_doc<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
    n: u64,
) -> Result<Option<RawDocumentBuf>> {
    if n == 0 {
        return Err(Error::invalid("pages are numbered from 1"));
    }
    // Numbers are stored as Int64: no document has a number past 2^63-1, and no key has as
    // many unnumbered documents. Answered here, alike on every store.
    let Ok(n) = i64::try_from(n) else {
        return Ok(None);
    };
    spec.ensure_indexes(store).await?;
    let field = spec.order.field();
    let one = FindOptions {
        limit: Some(1),
        ..FindOptions::default()
    };
    // A bare equality, the cheapest lookup: only a number equals `n` (MongoDB would also
    // match a foreign array holding `n`, which its unique index already files under `n`).
    let numbered = Filter::And(vec![
        spec.by_key(key),
        Filter::Eq(field.into(), Bson::Int64(n)),
    ]);
    if let Some(doc) = store
        .find_raw(spec.collection, &numbered, &one)
        .await?
        .pop()
    {
        return Ok(Some(doc));
    }
    let unnumbered = Filter::and([spec.by_key(key), Filter::Exists(field.into(), false)]);
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        skip: n.unsigned_abs() - 1,
        limit: Some(1),
    };
    Ok(store
        .find_raw(spec.collection, &unnumbered, &opts)
        .await?
        .pop())
}

/// Every document of a key, in order, as BSON bytes, in one find (one round trip below
/// 16 MiB).
pub(crate) async fn all_docs<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
) -> Result<Vec<RawDocumentBuf>> {
    let opts = FindOptions {
        sort: spec.sort(),
        ..FindOptions::default()
    };
    store
        .find_raw(spec.collection, &spec.docs_of(key, []), &opts)
        .await
}

/// The documents of a key in order, as BSON bytes, fetched `batch` at a time by range on the
/// order field (keyset pagination: each batch is one indexed range read, however deep).
pub(crate) fn doc_stream<'a, S: Store>(
    store: &'a S,
    spec: SeriesSpec,
    key: Bson,
    batch: i64,
) -> impl Stream<Item = Result<RawDocumentBuf>> + Send + 'a {
    // The first batch takes the key's documents in order (unnumbered ones first, by `_id`;
    // then by number). The next batches continue after its last document: among the
    // unnumbered ones by `_id` (then the numbered ones from the start), or among the numbered
    // ones by number.
    #[derive(Clone)]
    enum Next {
        First,
        Unnumbered(Bson),
        Numbered(Option<Bson>),
        Done,
    }
    let field = spec.order.field();
    stream::try_unfold(Next::First, move |next| {
        let key = key.clone();
        async move {
            let mut filter = vec![spec.by_key(&key), spec.in_series()];
            let sort = match &next {
                Next::Done => return Ok(None),
                Next::First => spec.sort(),
                Next::Unnumbered(after) => {
                    filter.push(Filter::Exists(field.into(), false));
                    filter.push(Filter::Gt("_id".into(), after.clone()));
                    vec![("_id".into(), 1)]
                }
                Next::Numbered(after) => {
                    filter.push(match after {
                        Some(a) => Filter::Gt(field.into(), a.clone()),
                        None => Filter::Exists(field.into(), true),
                    });
                    vec![(field.into(), 1)]
                }
            };
            spec.ensure_indexes(store).await?;
            let opts = FindOptions {
                sort,
                skip: 0,
                limit: Some(batch),
            };
            let docs = store
                .find_raw(spec.collection, &Filter::and(filter), &opts)
                .await?;
            let full = docs.len() as i64 == batch;
            let value = |doc: &RawDocument, f: &str| -> Result<Option<Bson>> {
                match doc.get(f) {
                    Ok(None) | Ok(Some(RawBsonRef::Null)) => Ok(None),
                    Ok(Some(v)) => raw_value(spec.collection, v).map(Some),
                    Err(e) => Err(Error::decode(spec.collection, None, e)),
                }
            };
            let after = match (docs.last(), &next) {
                (Some(last), _) if full => match value(last, field)? {
                    Some(seq) => Next::Numbered(Some(seq)),
                    None => Next::Unnumbered(value(last, "_id")?.ok_or_else(|| {
                        Error::decode(spec.collection, None, "document has no _id")
                    })?),
                },
                (_, Next::Unnumbered(_)) => Next::Numbered(None),
                _ => Next::Done,
            };
            Ok(Some((docs, after)))
        }
    })
    .map_ok(|docs| stream::iter(docs.into_iter().map(Ok)))
    .try_flatten()
}

/// Documents and items of a key; a document whose array field is not an array is reported as
/// a decode error naming it.
pub(crate) async fn stats<S: Store>(
    store: &S,
    spec: &SeriesSpec,
    key: &Bson,
) -> Result<ArrayStats> {
    let s = store
        .array_stats(spec.collection, &spec.docs_of(key, []), spec.items_field)
        .await?;
    if s.not_arrays > 0 {
        let bad = spec.docs_of(key, [Filter::NotArray(spec.items_field.into())]);
        let one = FindOptions {
            limit: Some(1),
            ..FindOptions::default()
        };
        let doc = store.find(spec.collection, &bad, &one).await?;
        return Err(Error::decode(
            spec.collection,
            doc.first().and_then(|d| d.get("_id")),
            format!("`{}` is not an array", spec.items_field),
        ));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::{bucket_id, is_id_taken, parse_bucket_id, TimeId};
    use crate::Error;

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
        let dup = |message: &str| Error::DuplicateKey {
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
        assert!(!is_id_taken(&Error::InvalidInput("index: _id_".into())));
    }

    #[test]
    fn bucket_id_is_the_formatted_id() {
        let seconds = [
            0,
            1,
            9,
            10,
            1_698_335_223,
            -1,
            -1_698_335_223,
            i64::MAX,
            i64::MIN,
        ];
        let suffixes = [0, 1, 42, 999_999, 1_000_000, u32::MAX];
        for prefix in ["", "123", "a_b"] {
            for s in seconds {
                for x in suffixes {
                    let want = if x == 0 {
                        format!("{prefix}_{s}")
                    } else {
                        format!("{prefix}_{s}_{x:06}")
                    };
                    assert_eq!(bucket_id(prefix, s, x), want);
                }
            }
        }
    }
}
