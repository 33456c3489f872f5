//! [`OpenPush`]: a push to a key's open document, prepared by the caller, in the contract's own
//! terms. The series layer builds one per push; a store applies it ([`Store::push_open`]):
//! natively (the in-memory store), or as the conditional upsert [`OpenPush::filter`],
//! [`OpenPush::order`] and [`OpenPush::update`] spell (every store, by default).
//!
//! The documents it writes: each holds one key's items in an array, their number in a count
//! field, and a number (`0, 1, 2...` per key; absent on the unnumbered documents that come
//! first). A document is *open* while its count is below the size; the key's open document
//! is found through the *open-document index* on `{key, order...}` partial on `count < size`.

use bson::{Bson, Document};
use smallvec::SmallVec;

use crate::query::{Filter, IndexSpec, Path, Update};
use crate::Result;
use crate::Store;

/// A push of items to a key's open document, or, when the key has none, the opening of a new
/// one holding them. Borrowed from the caller, built for each push.
pub struct OpenPush<'a> {
    /// The collection.
    pub collection: &'a str,
    /// The field holding the key in every document.
    pub key_field: &'a str,
    /// The key the items go to.
    pub key: &'a Bson,
    /// The array field the items are appended to.
    pub items_field: &'a str,
    /// The field counting the array's items.
    pub count_field: &'a str,
    /// Items per document: a document is open while its count is below it.
    pub size: u32,
    /// The field numbering a key's documents. A document whose number field holds anything
    /// but a number (or nothing) is not one of these documents: no push writes to it.
    pub number_field: &'a str,
    /// The open-document index's keys after the key field (its first): the push writes to
    /// the first open document in this order.
    pub open_order: [(&'a str, i32); 2],
    /// When the documents are cut by time windows: the items' window, which the open document
    /// must be of.
    pub window: Option<Window<'a>>,
    /// What the items add to the values each document keeps beside them (`$inc`, `$min`,
    /// `$max` in the push's update; the values themselves in a new document).
    pub kept: KeptOps,
    /// The items' size in bytes, when the caller measured it (a store may use it rather than
    /// measure them again).
    pub items_bytes: Option<usize>,
    /// The number of the document the push opens when the key has no open one.
    pub seq: i64,
    /// The `_id` of the document the push opens (called at most once per attempt).
    pub new_id: &'a (dyn Fn() -> Bson + Sync),
    /// The fields a document gets when the push opens it, beside its `_id`, key, number,
    /// count, items and kept values (marks of what the writer keeps). Called only when the
    /// push opens a document, or to build the upsert.
    pub marks: &'a (dyn Fn() -> Vec<(&'a str, Bson)> + Sync),
}

/// The time window `[start, end)` (epoch milliseconds) a push's items are in, for documents cut
/// by windows: the open document's earliest (`min_field`) and latest (`max_field`) times must
/// both be in it.
#[derive(Clone, Copy, Debug)]
pub struct Window<'a> {
    /// The field holding a document's earliest time.
    pub min_field: &'a str,
    /// The field holding a document's latest time.
    pub max_field: &'a str,
    /// The window's start.
    pub start: i64,
    /// The window's end (excluded).
    pub end: i64,
}

/// The values a push keeps, each field with the value its items add, by how it combines
/// (`$inc`, `$min`, `$max`). Held inline, one value an operator (a time bound each, a
/// summary's first sum): every push builds and moves one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptOps {
    /// Added to the field (`$inc`).
    pub sum: KeptList,
    /// The smaller of the field and the value (`$min`).
    pub min: KeptList,
    /// The larger of the field and the value (`$max`).
    pub max: KeptList,
}

/// Fields and values of one [`KeptOps`] operator.
pub type KeptList = SmallVec<[(Path, Bson); 1]>;

impl KeptOps {
    /// Each field and its value, `$inc`s first.
    pub fn values(&self) -> impl Iterator<Item = &(Path, Bson)> {
        self.sum.iter().chain(&self.min).chain(&self.max)
    }
}

impl OpenPush<'_> {
    /// The key's open document that takes these items: the key, room (`count < size`), a
    /// number or none, and for a window, both times in it.
    pub fn filter(&self) -> Filter {
        // The number (and the window) in a clause of its own, beside the room condition
        // again: the test server then routes the key and the room through the open-document
        // index, where the merged query fetches every document of the key (T21). The same
        // match on every server.
        let mut apart = vec![
            self.open_partial(),
            Filter::NumberOrMissing(Path::from(self.number_field)),
        ];
        if let Some(w) = self.window {
            let date = |ms: i64| Bson::DateTime(bson::DateTime::from_millis(ms));
            apart.extend([
                Filter::Gte(Path::from(w.min_field), date(w.start)),
                Filter::Lt(Path::from(w.min_field), date(w.end)),
                Filter::Lt(Path::from(w.max_field), date(w.end)),
            ]);
        }
        let all = vec![
            Filter::Eq(Path::from(self.key_field), self.key.clone()),
            self.open_partial(),
            Filter::Clause(apart),
        ];
        Filter::And(all)
    }

    /// The open-document index's partial filter: the documents with room.
    pub fn open_partial(&self) -> Filter {
        Filter::Lt(Path::from(self.count_field), Bson::Int32(self.size as i32))
    }

    /// The open-document index's keys: the key, then [`OpenPush::open_order`].
    pub fn open_keys(&self) -> [(&str, i32); 3] {
        let [a, b] = self.open_order;
        [(self.key_field, 1), a, b]
    }

    /// The order that picks the open document among the matches: the open-document index's
    /// own, after the key.
    pub fn order(&self) -> [(Path, i32); 2] {
        let [(a, da), (b, db)] = self.open_order;
        [(Path::from(a), da), (Path::from(b), db)]
    }

    /// Whether `index` is the open-document index (by its keys and filter, whatever its name):
    /// the index a store may read the open document from. Compared in place: every push asks.
    #[inline]
    pub fn is_open_index(&self, index: &IndexSpec) -> bool {
        let keys = self.open_keys();
        matches!(&index.partial, Some(Filter::Lt(p, Bson::Int32(n)))
                if i64::from(*n) == i64::from(self.size) && p == self.count_field)
            && index.keys.len() == keys.len()
            && (index.keys.iter().zip(keys)).all(|((k, d), (l, e))| k == l && *d == e)
    }

    /// The update that pushes `items` into the open document: `$push` them, `$inc` the count,
    /// and the kept values' `$inc`/`$min`/`$max`.
    pub fn update(&self, items: Vec<Bson>) -> Update {
        Update {
            inc: vec![(Path::from(self.count_field), items.len() as i32)],
            push: vec![(Path::from(self.items_field), items)],
            sum: self.kept.sum.to_vec(),
            min: self.kept.min.to_vec(),
            max: self.kept.max.to_vec(),
            ..Update::default()
        }
    }

    /// [`OpenPush::update`] as the conditional upsert: on insert, the `_id`, the key, the
    /// number and the marks.
    pub fn upsert(&self, items: Vec<Bson>) -> Update {
        let mut update = self.update(items);
        update.set_on_insert = vec![
            ("_id".into(), (self.new_id)()),
            (Path::from(self.key_field), self.key.clone()),
            (Path::from(self.number_field), Bson::Int64(self.seq)),
        ];
        let marks = (self.marks)().into_iter();
        (update.set_on_insert).extend(marks.map(|(k, v)| (Path::from(k), v)));
        update
    }

    /// The document the push opens, holding `items` (moved into it): `_id`, the key, then the
    /// other fields in the lexicographic order MongoDB gives the fields an upsert creates. Its
    /// array has room for a full document of up to 16 items (a few reallocations saved for
    /// the pushes that fill it).
    pub fn new_doc_taking(&self, items: &mut Vec<Bson>) -> Document {
        let room = (self.size as usize).clamp(items.len(), items.len().max(16));
        let mut array = Vec::with_capacity(room);
        array.append(items);
        let mut fields: SmallVec<[(&str, Bson); 8]> = smallvec::smallvec![
            (self.count_field, Bson::Int32(array.len() as i32)),
            (self.items_field, Bson::Array(array)),
            (self.number_field, Bson::Int64(self.seq)),
        ];
        fields.extend((self.marks)());
        fields.extend(self.kept.values().map(|(k, v)| (k.as_str(), v.clone())));
        fields.sort_by(|a, b| a.0.cmp(b.0));
        let mut doc = crate::codec::room::with_room(2 + fields.len());
        doc.insert("_id", (self.new_id)());
        doc.insert(self.key_field, self.key.clone());
        for (k, v) in fields {
            doc.insert(k, v);
        }
        doc
    }
}

/// [`Store::push_open`] as the conditional upsert ([`OpenPush::upsert`] of the first
/// [`OpenPush::filter`] match in [`OpenPush::order`]), on any store, in one command.
pub async fn push_open_upsert<S: Store>(
    store: &S,
    push: &OpenPush<'_>,
    items: &mut Vec<Bson>,
) -> Result<bool> {
    let mut update = push.upsert(std::mem::take(items));
    let (open, order) = (push.filter(), push.order());
    let pushed = store
        .update_first(push.collection, &open, &order, "", &mut update, true, &[])
        .await;
    if pushed.is_err() {
        // A write that returns an error leaves `update` as it was.
        *items = std::mem::take(&mut update.push[0].1);
    }
    Ok(pushed?.is_none())
}

/// [`Store::push_open_then`] as two writes, one after the other.
pub async fn push_then_apart<S: Store>(
    store: &S,
    push: &OpenPush<'_>,
    items: &mut Vec<Bson>,
    then_coll: &str,
    then_filter: &Filter,
    then: &mut Update,
) -> Result<(bool, Result<()>)> {
    let opened = store.push_open(push, items).await?;
    let outcome = store.update_one(then_coll, then_filter, then, true).await;
    Ok((opened, outcome.map(|_| ())))
}
