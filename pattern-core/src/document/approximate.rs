//! The approximation pattern (`#[document(approximate(every = N))]` on an integer field): a
//! counter that writes to the store once every `N` increments, accumulating in the process in
//! between. One `$inc` of `N` replaces `N` writes of 1.
//!
//! What a crash loses: the increments counted in the process and not yet written, fewer than
//! `N` per document and field (plus those of a [`flush`] cut short by the crash, which returns
//! them to the count first). Nothing is ever counted twice: each batch of `N` is taken out of
//! the count under a lock before it is written, and put back if the write fails.
//!
//! On a variant of a polymorphic collection, a counter counts for its document while it is
//! that variant: its write holds the discriminator, and a delete or a change of variant (by
//! the enum's or the variant's writes) drops the counts not yet written.

use std::collections::HashMap;
use std::sync::Mutex;

use bson::{Bson, Document as BsonDocument};

use super::{id_bson, lock, parts, polymorphic, Document, Scope};
use crate::codec::order::value_key as key_bytes;
use crate::key::IdRef;
use crate::store::query::{Filter, Update};
use crate::store::{Extension, ExtensionKey, Store};
use crate::{Error, Result};

/// An approximate counter field: what `#[document(approximate(every = N))]` declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Approximate {
    /// The field's BSON name.
    pub field: &'static str,
    /// Increments counted in the process per write (at least 1).
    pub every: u32,
}

/// The increments counted and not yet written, per store: by collection, field and document.
#[derive(Debug, Default)]
struct Pending(Mutex<HashMap<Key, (Bson, u64)>>);

/// A counter's key: its collection, variant (`""` for a type that is no variant), field, and
/// the document's `_id` by value (an Int32 5 and an Int64 5 are one document, as on the server).
type Key = (&'static str, &'static str, &'static str, Vec<u8>);

/// `D`'s part of a counter's key: its collection and variant.
fn owner<D: Document>() -> (&'static str, &'static str) {
    let variant = Scope::of(D::POLYMORPHIC).map_or("", |s| s.value);
    (D::COLLECTION, variant)
}

impl Extension for Pending {
    /// Forgets what was counted and not written: what a crash of the process would lose.
    fn forget(&self) {
        lock(&self.0).clear();
    }
}

static PENDING: ExtensionKey<Pending> = ExtensionKey::new();

/// The derive's check of a variant's counters: its collection (its enum's) keeps no history,
/// whose every write is a revision (an approximate counter writes without one).
pub const fn counters_without_history(history: Option<&str>, counters: &[Approximate]) {
    if history.is_some() && !counters.is_empty() {
        panic!(
            "an approximate counter writes without a revision: a variant of a polymorphic \
             collection with history cannot have one (keep the counter in another type)"
        );
    }
}

fn declared<D: Document>(field: &str) -> Result<Approximate> {
    (D::APPROXIMATE.iter().find(|a| a.field == field).copied()).ok_or_else(|| {
        Error::invalid(format!(
            "field `{field}` of `{}` is not an approximate counter: declare \
             #[document(approximate(every = N))] on it",
            D::COLLECTION
        ))
    })
}

/// Adds 1 to the counter `field` of the document `id`: counted in the process, and written
/// (`$inc` of `every`, one `update`) by the increment that completes a batch of `every`. Whether
/// this call wrote. A write that fails puts its batch back (and returns the error); a document
/// that does not exist is [`Error::NotFound`], its batch put back too.
pub async fn increment<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    field: &'static str,
    id: &Q,
) -> Result<bool> {
    crate::observe::traced_op!(document.increment, store, D::COLLECTION, async {
        let a = declared::<D>(field)?;
        let id = id_bson(id)?;
        let (coll, variant) = owner::<D>();
        let key = (coll, variant, field, key_bytes(&id));
        let pending = &store.extensions().get(&PENDING).0;
        let batch = {
            let mut map = lock(pending);
            let entry = map.entry(key.clone()).or_insert_with(|| (id.clone(), 0));
            entry.1 += 1;
            if entry.1 >= u64::from(a.every) {
                entry.1 -= u64::from(a.every);
                Some(u64::from(a.every))
            } else {
                None
            }
        };
        let Some(n) = batch else {
            return Ok(false);
        };
        match write::<D, S>(store, field, &id, n).await {
            Ok(()) => Ok(true),
            Err(e) => {
                put_back(pending, key, id, n);
                Err(e)
            }
        }
    })
}

fn put_back(pending: &Mutex<HashMap<Key, (Bson, u64)>>, key: Key, id: Bson, n: u64) {
    lock(pending).entry(key).or_insert_with(|| (id, 0)).1 += n;
}

/// One `$inc` of `n` on the document `id`.
async fn write<D: Document, S: Store>(store: &S, field: &str, id: &Bson, n: u64) -> Result<()> {
    let mut update = Update {
        sum: vec![(field.into(), Bson::Int64(n as i64))],
        ..Update::default()
    };
    // A variant's counter: its document while it is that variant.
    let by_id = polymorphic::scope::<D>(Filter::Eq("_id".into(), id.clone()));
    let done = store
        .update_one(D::COLLECTION, &by_id, &mut update, false)
        .await?;
    if done.matched {
        Ok(())
    } else {
        Err(Error::NotFound {
            collection: D::COLLECTION.to_owned(),
            id: crate::error::display_bson(id),
        })
    }
}

/// Writes every increment of `D`'s approximate counters counted in this process and not yet
/// written (one `update` per document and field with some); returns how many increments it
/// wrote. Call it before the process ends: what it does not write, a crash loses. Counters
/// whose write fails keep their count (the first error is returned after the others are
/// tried).
pub async fn flush<D: Document, S: Store>(store: &S) -> Result<u64> {
    crate::observe::traced_op!(document.flush, store, D::COLLECTION, async {
        let pending = &store.extensions().get(&PENDING).0;
        let taken: Vec<(Key, (Bson, u64))> = {
            let mut map = lock(pending);
            let mine = owner::<D>();
            let keys: Vec<Key> = (map.keys())
                .filter(|k| (k.0, k.1) == mine && D::APPROXIMATE.iter().any(|a| a.field == k.2))
                .cloned()
                .collect();
            keys.into_iter()
                .filter_map(|k| map.remove(&k).map(|v| (k, v)))
                .filter(|(_, (_, n))| *n > 0)
                .collect()
        };
        let (mut written, mut first_error) = (0u64, None);
        for (key, (id, n)) in taken {
            match write::<D, S>(store, key.2, &id, n).await {
                Ok(()) => written += n,
                Err(e) => {
                    put_back(pending, key, id, n);
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(written),
        }
    })
}

/// The increments counted for the document `id` and not written, dropped: its delete through
/// the library, or its change of variant (they count towards nothing now, and a document
/// inserted later with its `_id` starts from what it is written with). Every variant's, on a
/// polymorphic collection.
pub(crate) fn forget<D: Document, S: Store>(store: &S, id: &Bson) {
    if parts::<D>().iter().all(|p| p.approximate.is_empty()) {
        return;
    }
    let key = key_bytes(id);
    let mut map = lock(&store.extensions().get(&PENDING).0);
    map.retain(|k, _| !(k.0 == D::COLLECTION && k.3 == key));
}

/// The increments of counter `field` of the document `id` counted in this process and not yet
/// written (what a crash now would lose).
pub fn pending<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    field: &'static str,
    id: &Q,
) -> Result<u64> {
    declared::<D>(field)?;
    let (coll, variant) = owner::<D>();
    let key = (coll, variant, field, key_bytes(&id_bson(id)?));
    let map = lock(&store.extensions().get(&PENDING).0);
    Ok(map.get(&key).map_or(0, |(_, n)| *n))
}

/// The counter's value as stored plus what this process counted and has not written: the best
/// estimate this process has (one `find`).
pub async fn estimate<D: Document, S: Store, Q: IdRef<D::Id> + ?Sized>(
    store: &S,
    field: &'static str,
    id: &Q,
) -> Result<Option<i64>> {
    crate::observe::traced_op!(document.estimate, store, D::COLLECTION, async {
        let waiting = pending::<D, S, Q>(store, field, id)?;
        let Some(doc): Option<BsonDocument> =
            super::find_by_id(store, D::COLLECTION, &id_bson(id)?).await?
        else {
            return Ok(None);
        };
        let stored = doc.get(field).and_then(crate::codec::as_int).unwrap_or(0);
        Ok(Some(stored + waiting as i64))
    })
}
