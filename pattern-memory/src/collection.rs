//! A collection of the in-memory store: its documents by `_id`, with their sizes, its
//! indexes and its validator; inserts, replacements and updates, each checked whole before it
//! applies.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::sync::Arc;

use bson::Document;

use super::apply::UpdateEngine;
use super::index::{MemIndex, Moved};
use super::key::Key;
use pattern_store::codec::size::{check_size, document_bytes};
use pattern_store::query::{IndexSpec, Schema, Update};
use pattern_store::{Error, Result};

/// A collection: its documents, its indexes, and its clock. Cloned whole when a transaction
/// first writes to it (its working copy), and when a plain write changes it while a
/// transaction's snapshot shares it.
#[derive(Clone, Debug, Default)]
pub(super) struct Collection {
    pub(super) docs: Docs,
    pub(super) indexes: Vec<MemIndex>,
    pub(super) clock: Clock,
    /// The `$jsonSchema` every write must leave its document passing (see
    /// [`Store::set_validator`](pattern_store::Store::set_validator): level "moderate").
    pub(super) validator: Option<Arc<Schema>>,
    /// Index entries a series push left where they were (see [`Collection::settle`]): index
    /// `i`'s entry of document `id` is filed under `key`, which its document no longer has.
    pub(super) pending: Vec<Pending>,
    /// What the last series push learned of the indexes (see [`PushShape`]); forgotten when
    /// an index comes or goes.
    pub(super) push_shape: Option<PushShape>,
}

/// Which indexes a push of `count`, `array` and `kept` fields moves: those keyed on a kept
/// field (`keyed`, bit `i` for index `i`) and those whose partial filter reads `count` or
/// `array` (`filtered`). `None` in `moved`: a push the in-place path declines (an index keyed
/// on the count or the array, or filtered on a kept field, a unique one that may move...).
#[derive(Clone, Debug)]
pub(super) struct PushShape {
    pub(super) count: String,
    pub(super) array: String,
    pub(super) kept: Vec<String>,
    pub(super) moved: Option<(u64, u64)>,
}

/// An index entry filed under a key its document no longer has: `(index, _id, key)`.
pub(super) type Pending = (usize, Key, Option<Vec<Key>>);

/// How many entries may wait in [`Collection::pending`] before a push settles them.
pub(super) const PENDING_MAX: usize = 64;

/// Where a collection's writes stand: every write stamps the document it leaves with the next
/// tick, so a document is unchanged since a snapshot of its collection exactly when it has the
/// same stamp in both (see [`unchanged`]). `generation` tells a collection dropped and
/// created again (whose ticks start over) from the one a snapshot holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Clock {
    pub(super) generation: u64,
    pub(super) tick: u64,
}

/// A collection's documents by `_id`.
pub(super) type Docs = BTreeMap<Key, Stored>;

/// A stored document, its BSON size (`None`: it does not serialize), kept so that an update
/// checks the size limit from what it changed rather than by measuring everything, and the
/// tick of the write that left it ([`Clock`]).
///
/// The document is shared (`Arc`): a transaction's copy of a collection shares every document
/// with the store's until one side writes it (`Arc::make_mut`), so copying a collection copies
/// its map, not its documents.
#[derive(Clone, Debug)]
pub(super) struct Stored {
    pub(super) doc: Arc<Document>,
    pub(super) bytes: Option<usize>,
    pub(super) stamp: u64,
    /// Bit `i`: the document's entry in index `i` waits in [`Collection::pending`].
    pub(super) pending: u64,
}

/// Whether document `id` is as `snapshot` (a collection as a transaction's snapshot holds it)
/// had it in `current` (the same collection now): absent from both, or present in both with
/// the same stamp, in the same generation of the collection.
pub(super) fn unchanged(
    snapshot: Option<&Collection>,
    current: Option<&Collection>,
    id: &Key,
) -> bool {
    let was = snapshot.and_then(|c| c.docs.get(id).map(|s| (c.clock.generation, s.stamp)));
    let is = current.and_then(|c| c.docs.get(id).map(|s| (c.clock.generation, s.stamp)));
    was == is
}

impl Collection {
    /// Files every entry a series push left in [`Collection::pending`] under its document's
    /// key. Everything that reads or changes the collection but that push settles it first
    /// (`State::get`, `State::collection`, a snapshot's share): a push into the key's open
    /// bucket moves the bucket's time bounds, and so its entry in the bounds index, on every
    /// push; it moves it once (here), however many pushes the bucket took meanwhile.
    pub(super) fn settle(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let Collection {
            docs,
            indexes,
            pending,
            ..
        } = self;
        for (i, id, filed) in pending.drain(..) {
            let now = docs.get_mut(&id).map(|stored| {
                stored.pending = 0;
                indexes[i].key_of(&stored.doc)
            });
            indexes[i].rekey(filed, now.flatten(), &id);
        }
    }

    /// An empty collection of a new generation (see [`Clock`]).
    pub(super) fn new() -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static GENERATIONS: AtomicU64 = AtomicU64::new(1);
        Collection {
            clock: Clock {
                generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
                tick: 0,
            },
            ..Collection::default()
        }
    }

    /// The stamp of a write now.
    pub(super) fn tick(&mut self) -> u64 {
        self.clock.tick += 1;
        self.clock.tick
    }

    pub(super) fn insert(&mut self, coll: &str, doc: Document) -> Result<()> {
        self.insert_or_return(coll, doc)
            .map_err(|refused| refused.0)
    }

    /// [`Collection::insert`], giving the document back when it is refused.
    pub(super) fn insert_or_return(
        &mut self,
        coll: &str,
        doc: Document,
    ) -> std::result::Result<(), Box<(Error, Document)>> {
        self.insert_deferring(coll, doc, 0)
    }

    /// [`Collection::insert_or_return`], the document's entries in the indexes of `defer`
    /// (bit `i`: index `i`; non-unique indexes only) left to wait in [`Collection::pending`]
    /// (see [`Collection::settle`]): a series push opening a bucket, whose time bounds the
    /// next pushes move, files its entry in the bounds index once, when it settles.
    pub(super) fn insert_deferring(
        &mut self,
        coll: &str,
        mut doc: Document,
        defer: u64,
    ) -> std::result::Result<(), Box<(Error, Document)>> {
        let mut bytes = document_bytes(&doc);
        if let Err(e) = check_size(coll, bytes) {
            return Err(Box::new((e, doc)));
        }
        if !doc.contains_key("_id") {
            doc.insert("_id", bson::oid::ObjectId::new());
            // Type byte, "_id" and its NUL, 12 bytes of ObjectId.
            bytes = bytes.map(|n| n + 1 + 4 + 12);
        }
        let doc = id_first(doc);
        if let Err(e) = validate(coll, self.validator.as_deref(), &doc) {
            return Err(Box::new((e, doc)));
        }
        let id = doc.get("_id").map_or(Key::Null, Key::of);
        let stamp = self.tick();
        let Collection {
            docs,
            indexes,
            pending,
            ..
        } = self;
        let Entry::Vacant(slot) = docs.entry(id) else {
            let e = Error::DuplicateKey {
                collection: coll.to_owned(),
                message: format!("E11000 duplicate key error collection: {coll} index: _id_"),
            };
            return Err(Box::new((e, doc)));
        };
        let id = slot.key();
        let waits = |i: usize, ix: &MemIndex| i < 64 && defer & (1 << i) != 0 && !ix.spec.unique;
        // Each index's place for the document, found once (a unique index's check and the
        // filing in one search), all of them before anything is filed.
        let (mut places, mut waiting, mut refused) =
            (Vec::with_capacity(indexes.len()), 0_u64, None);
        for (i, ix) in indexes.iter_mut().enumerate() {
            if waits(i, ix) {
                waiting |= 1 << i;
                continue;
            }
            let Some(key) = ix.key_of(&doc) else {
                continue; // outside its partial filter
            };
            match ix.place(key, id) {
                Some(place) => places.push(place),
                None => {
                    refused = Some(i);
                    break;
                }
            }
        }
        if let Some(i) = refused {
            drop(places);
            return Err(Box::new((indexes[i].duplicate(coll), doc)));
        }
        for place in places {
            place.file(id);
        }
        for i in 0..indexes.len().min(64) {
            if waiting & (1 << i) != 0 {
                pending.push((i, id.clone(), None));
            }
        }
        slot.insert(Stored {
            doc: Arc::new(doc),
            bytes,
            stamp,
            pending: waiting,
        });
        if pending.len() > PENDING_MAX {
            self.settle();
        }
        Ok(())
    }

    /// Replaces document `id` (which exists) by `new`.
    pub(super) fn replace(&mut self, coll: &str, id: &Key, new: Document) -> Result<()> {
        let bytes = document_bytes(&new);
        check_size(coll, bytes)?;
        let stamp = self.tick();
        let Collection {
            docs,
            indexes,
            validator,
            ..
        } = self;
        let slot = docs.get_mut(id).expect("replace: the document exists");
        if passes(validator.as_deref(), &slot.doc) {
            validate(coll, validator.as_deref(), &new)?;
        }
        // Each index's key for the old document and for the new one: an entry moves only
        // when they differ (and only then can a unique index conflict).
        let keys: Vec<_> = indexes
            .iter()
            .map(|ix| (ix.key_of(&slot.doc), ix.key_of(&new)))
            .collect();
        for (index, (old, key)) in indexes.iter().zip(&keys) {
            if old != key && index.holds_other(key.as_deref(), id) {
                return Err(index.duplicate(coll));
            }
        }
        debug_assert_eq!(
            slot.pending, 0,
            "replace of a document with pending entries"
        );
        *slot = Stored {
            doc: Arc::new(new),
            bytes,
            stamp,
            pending: 0,
        };
        for (index, (old, new)) in indexes.iter_mut().zip(keys) {
            index.rekey(old, new, id);
        }
        Ok(())
    }

    /// Applies `update` to document `id` (which exists) in place, moving its pushed items
    /// into the document ([`Update::apply_taking`]). On error the document, the indexes and
    /// `update` are unchanged. Returns, when `fields` is given, those top-level fields
    /// (`_id` only if listed) as they were before.
    pub(super) fn update(
        &mut self,
        coll: &str,
        id: &Key,
        update: &mut Update,
        fields: Option<&[&str]>,
    ) -> Result<(Option<Document>, bool)> {
        let stamp = self.tick();
        let Collection {
            docs,
            indexes,
            validator,
            ..
        } = self;
        let Stored { doc, bytes, .. } = docs.get_mut(id).expect("update: the document exists");
        super::apply::check_requirement(coll, update, doc)?;
        // "Moderate": only a document that passed the validator must pass it once updated.
        let validator = validator.as_deref().filter(|v| passes(Some(v), doc));
        // Copied only when a transaction's copy of the collection shares it.
        let doc = Arc::make_mut(doc);
        let before = fields.map(|fields| fields_of(doc, fields));
        // The indexes whose entry for the document the update may move (those reading a
        // field it writes), with the document's key in them before the update.
        let written = update.written();
        let writes_id = written.contains(&"_id");
        let moving: Vec<(usize, Before)> = indexes
            .iter()
            .enumerate()
            .filter_map(|(i, ix)| match ix.moved_by(&written)? {
                Moved::Keys => Some((i, Before::Key(ix.key_of(doc)))),
                Moved::Filter => Some((i, Before::InFilter(ix.in_filter(doc)))),
            })
            .collect();
        drop(written);
        let undo = update.undo_log(doc, false);
        update.apply_taking(doc, false).map_err(|e| Error::Server {
            message: e,
            source: None,
        })?;
        // Its size: the old one plus what changed, else (the old document, or a value it
        // replaced, did not serialize) measured whole.
        let size = bytes
            .zip(undo.size_change(doc, update))
            .and_then(|(n, change)| n.checked_add_signed(change))
            .or_else(|| document_bytes(doc));
        debug_assert_eq!(size, document_bytes(doc), "size of the updated document");
        // The checks a replacement by the updated document would make; a refusal undoes it.
        let checked = validate(coll, validator, doc)
            .and_then(|()| check_updated(coll, doc, size, id, indexes, moving, writes_id));
        match checked {
            Ok(moves) => {
                for (i, old, new) in moves {
                    indexes[i].rekey(old, new, id);
                }
                *bytes = size;
                let modified = undo.changed(doc, update);
                // A document left as it was is not written (MongoDB writes nothing for it):
                // it keeps its stamp, so no transaction sees it changed.
                if modified {
                    docs.get_mut(id).expect("updated above").stamp = stamp;
                }
                Ok((before, modified))
            }
            Err(e) => {
                undo.restore(doc, update);
                Err(e)
            }
        }
    }

    /// Removes document `id` and its index entries; returns it.
    pub(super) fn take(&mut self, id: &Key) -> Option<(Key, Stored)> {
        let (id, stored) = self.docs.remove_entry(id)?;
        for index in &mut self.indexes {
            index.remove(&stored.doc, &id);
        }
        Some((id, stored))
    }

    /// Puts back a document [`Collection::take`] removed, as it was (its stamp too), without
    /// checks: it was there before.
    pub(super) fn put_back(&mut self, id: Key, stored: Stored) {
        for index in &mut self.indexes {
            index.add(&stored.doc, &id);
        }
        self.docs.insert(id, stored);
    }

    /// Puts `stored` (a document from another copy of the collection, whose size limit was
    /// checked there) under `id`, which holds no document, with a new stamp; refused when a
    /// unique index holds its key for another document.
    pub(super) fn put(&mut self, coll: &str, id: Key, mut stored: Stored) -> Result<()> {
        for index in &self.indexes {
            if index.conflicts(&stored.doc, &id) {
                return Err(index.duplicate(coll));
            }
        }
        for index in &mut self.indexes {
            index.add(&stored.doc, &id);
        }
        stored.stamp = self.tick();
        self.docs.insert(id, stored);
        Ok(())
    }

    /// Deletes the documents `ids` (which exist).
    pub(super) fn delete(&mut self, ids: &[Key]) {
        for id in ids {
            if let Some(Stored { doc, .. }) = self.docs.remove(id) {
                for index in &mut self.indexes {
                    index.remove(&doc, id);
                }
            }
        }
    }

    /// Creates the index unless one of that name exists (then it must be the same index).
    pub(super) fn create_index(&mut self, coll: &str, spec: &IndexSpec) -> Result<()> {
        if spec.keys.is_empty() {
            return Err(Error::invalid("an index needs at least one key"));
        }
        if let Some(existing) = self.indexes.iter().find(|i| i.spec.name == spec.name) {
            if existing.spec != *spec {
                return Err(Error::Server {
                    message: format!(
                        "an index named {} already exists with different options",
                        spec.name
                    ),
                    source: None,
                });
            }
            return Ok(());
        }
        let mut index = MemIndex::new(spec.clone());
        for (id, Stored { doc, .. }) in &self.docs {
            if index.conflicts(doc, id) {
                return Err(Error::DuplicateKey {
                    collection: coll.to_owned(),
                    message: format!(
                        "E11000 duplicate key error building index {} on {coll}",
                        spec.name
                    ),
                });
            }
            index.add(doc, id);
        }
        self.settle();
        self.indexes.push(index);
        self.push_shape = None;
        Ok(())
    }

    /// Drops index `name` (if any), its pending entries settled first.
    pub(super) fn drop_index(&mut self, name: &str) {
        self.settle();
        self.indexes.retain(|i| i.spec.name != name);
        self.push_shape = None;
    }
}

/// An index entry that moves: the index (its position), the old key, the new key.
pub(super) type Move = (usize, Option<Vec<Key>>, Option<Vec<Key>>);

/// What an index held for a document before an update that can move its entry: its key
/// ([`Moved::Keys`]), or whether it held it at all ([`Moved::Filter`]: the key's values are
/// not written, so the entry keeps them if it stays).
pub(super) enum Before {
    Key(Option<Vec<Key>>),
    InFilter(bool),
}

/// Checks document `id` once updated (`doc`, of `bytes`) as a replacement would: its `_id`
/// is unchanged (looked at only when the update wrote it: `id_written`), its size within the
/// limit, and no unique index among `moving` (an index's position and what it held for the
/// document before the update) holds its new key for another document.
/// Returns the entries to move.
pub(super) fn check_updated(
    coll: &str,
    doc: &Document,
    bytes: Option<usize>,
    id: &Key,
    indexes: &[MemIndex],
    moving: Vec<(usize, Before)>,
    id_written: bool,
) -> Result<Vec<Move>> {
    if id_written && doc.get("_id").is_none_or(|x| Key::of(x) != *id) {
        return Err(Error::invalid("an update may not change _id"));
    }
    check_size(coll, bytes)?;
    // Allocated only when an entry moves (a push moves none until its bucket fills).
    let mut moves = Vec::new();
    for (i, before) in moving {
        let index = &indexes[i];
        let (old, new) = match before {
            Before::Key(old) => (old, index.key_of(doc)),
            Before::InFilter(was) => {
                let now = index.in_filter(doc);
                if was == now {
                    continue; // the entry stays as it was
                }
                let values = index.values_of(doc);
                if was {
                    (Some(values), None)
                } else {
                    (None, Some(values))
                }
            }
        };
        if old != new {
            if index.holds_other(new.as_deref(), id) {
                return Err(index.duplicate(coll));
            }
            moves.push((i, old, new));
        }
    }
    Ok(moves)
}

/// Whether `doc` passes `validator` (any document passes none).
pub(super) fn passes(validator: Option<&Schema>, doc: &Document) -> bool {
    validator.is_none_or(|v| v.violation(doc).is_none())
}

/// [`Error::SchemaViolation`] when `validator` refuses `doc`.
pub(super) fn validate(coll: &str, validator: Option<&Schema>, doc: &Document) -> Result<()> {
    match validator.and_then(|v| v.violation(doc)) {
        None => Ok(()),
        Some(why) => Err(Error::SchemaViolation {
            collection: coll.to_owned(),
            message: format!("Document failed validation: {why}"),
        }),
    }
}

/// `doc`'s fields among `fields`, copied (an update's before-image, as
/// [`Collection::update`] returns it).
pub(super) fn fields_of(doc: &Document, fields: &[&str]) -> Document {
    match fields {
        // Only whether a document matched: a copy of an empty document costs less than a new
        // one (which seeds its hasher).
        [] => empty_document().clone(),
        _ => (doc.iter())
            .filter(|(k, _)| fields.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

pub(super) fn empty_document() -> &'static Document {
    static EMPTY: std::sync::OnceLock<Document> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Document::new)
}

pub(super) fn id_first(mut doc: Document) -> Document {
    if doc.keys().next().map(String::as_str) == Some("_id") {
        return doc;
    }
    let mut out = Document::new();
    if let Some(id) = doc.remove("_id") {
        out.insert("_id", id);
    }
    out.extend(doc);
    out
}
