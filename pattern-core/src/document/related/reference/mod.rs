//! The extended reference pattern: a field of one document type holds a copy of chosen fields
//! of another (`#[document(reference)] director: DirectorRef`, where `DirectorRef` is a
//! `#[derive(Reference)] #[reference(source = Director)]` struct holding the director's `_id`
//! and some of its fields), kept equal to its source by every write the library performs.
//!
//! - **The source's writes** (`save`, `update_one`, `delete` of a type declaring
//!   `referenced_by(Film = director)`) update every copy. In the source's transaction when the
//!   copies that differ number at most the type's `fan_out` (1,000 unless declared); past it,
//!   the transaction records a propagation in [`REFERENCES`] (`pending`, with the time it began)
//!   and the copies are brought in line after it commits, in batches of `fan_out`, each a
//!   transaction ([`propagate`]). Until the last batch commits, copies not yet reached hold the
//!   values before the write: that is the window of staleness, recorded in the job and listed
//!   by [`pending_propagations`]. A killed propagation is never lost: its job stays, and [`propagate`]
//!   finishes it (as does a later write of that source past the fan-out); each copy is written
//!   once.
//! - **The referencing type's writes** (`insert`, `save`, `update_one`) fill the copy from its
//!   source in their transaction: what the caller put in the copy's fields is replaced by the
//!   source's values (a missing source is [`Error::NotFound`]). A write that makes a document
//!   point at a source also writes that source's entry in [`REFERENCES`], so it conflicts with
//!   a concurrent write of the source: one of the two transactions retries, and neither leaves
//!   a copy behind.
//! - **A source's delete**: an optional copy (`Option<DirectorRef>`) becomes `null`; a required
//!   one refuses the delete while a copy exists ([`Error::StillReferenced`]).
//! - **After writes by other tools**: [`verify_copies`] lists copies that differ from their
//!   source, or whose source is gone; [`repair_copies`] brings them in line, in batches, each a
//!   transaction (run it again after a kill: it goes on where the copies are).

pub(crate) mod after;
mod batches;
mod checks;
mod place;
mod repair;

pub use batches::{pending_propagations, propagate, Pending, Propagated};
pub use checks::{
    copied_field, copies_a_counter, listed_each, listed_in, lists, reference_each, reference_field,
    reference_in, referrer, referrer_at, Elements,
};
pub use repair::{repair_copies, verify_copies, Repaired, StaleCopy};
pub(crate) use repair::{repair_copies_of, source_in_line};

use bson::{doc, Bson, Document as BsonDocument};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::codec::order::same_value;
use crate::document::{find_by_id, id_bson, Document, Scope, Subset};
use crate::error::display_bson;
use crate::store::query::{Filter, FindOptions, IndexSpec, Update};
use crate::store::{find_one, Store, WriteOp};
use crate::{Error, Result};

/// The collection of the library's entries per referenced source document (`_id`:
/// `{c: <source collection>, id: <source _id>}`): a counter every write that changes copies or
/// points a document at the source bumps (so the two conflict), and the propagations past the
/// fan-out not yet finished (`pending: [{c: <collection>, p: <path>, since: <date>}]`).
pub const REFERENCES: &str = "pattern_references";

/// The copies a source's write updates inside its own transaction, unless its type declares
/// another `fan_out`.
pub const DEFAULT_FAN_OUT: u32 = 1_000;

/// The `comment` of the reads of a source's copies (by `<path>._id`: on a collection sharded
/// by another field, every shard answers them).
pub const REFERENCE_COPIES: &str = "pattern scatter: reference copies";
/// The `comment` of a referencing document's write's read of its source (by `_id`: one shard),
/// which makes its transaction one of the extended reference's (the source's shard and the
/// document's: docs/sharding.md).
pub const REFERENCE_SOURCE: &str = "pattern reference: source";
/// The `comment` of [`verify_copies`]'s scan.
pub const REFERENCE_VERIFY: &str = "pattern scatter: reference verify";

/// A copy of chosen fields of a source document type, embedded in another document type: the
/// source's `_id` (stored as `_id`) and the fields of the same Rust names. Implemented by
/// `#[derive(Reference)]`, which checks each field against the source's typed path.
pub trait Reference: Serialize + DeserializeOwned + Send + Sync + Sized {
    /// The document type copied.
    type Source: Document;
    /// The fields copied: where the source stores each, where the copy does.
    const FIELDS: &'static [Copied];
}

/// The source of a `#[derive(Reference)]` whose attributes have errors (the derive's
/// fallback, so that only those errors show). Not a public API.
#[doc(hidden)]
#[derive(Serialize, serde::Deserialize)]
pub struct NoSource {
    #[serde(rename = "_id")]
    id: (),
}

impl Document for NoSource {
    const COLLECTION: &'static str = "";
    type Id = ();
    fn id(&self) -> &() {
        &self.id
    }
}

/// One copied field: the source's stored name and the copy's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copied {
    /// Where the source stores it.
    pub from: &'static str,
    /// Where the copy stores it.
    pub to: &'static str,
}

/// What a reference field holds: a copy ([`Reference`]), an `Option` of one (`null` once its
/// source is deleted) or a `Vec` of copies (kept per element; a source's delete removes its
/// elements).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a copy of a document's fields",
    label = "a #[document(reference)] field holds a #[derive(Reference)] type, an `Option` or a `Vec` of one",
    note = "#[derive(Reference)] #[reference(source = Director)] struct DirectorRef {{ #[serde(rename = \"_id\")] id: ..., name: String }}"
)]
pub trait Slot {
    /// The copy's type.
    type Ref: Reference;
    /// Whether the field may be `null` (its source deleted).
    const OPTIONAL: bool;
    /// Whether the field holds a `Vec` of copies.
    const MANY: bool = false;
}

impl<R: Reference> Slot for Option<R> {
    type Ref = R;
    const OPTIONAL: bool = true;
}

impl<R: Reference> Slot for Vec<R> {
    type Ref = R;
    const OPTIONAL: bool = false;
    const MANY: bool = true;
}

/// A reference field of a referencing type: where it is stored, its source's collection, what
/// it copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceField {
    /// The referencing document's (top-level) field holding the copy, or holding the embedded
    /// document(s) that do.
    pub path: &'static str,
    /// The field of the embedded document in `path` (of each element, with `each`) holding
    /// the copy: `#[document(reference(in = director))]`; `""` when `path` holds it.
    pub within: &'static str,
    /// `path` is an array of embedded documents, each holding a copy at `within`:
    /// `#[document(reference(each = person))]`.
    pub each: bool,
    /// The copy's place holds a `Vec` of copies.
    pub many: bool,
    /// The source's collection.
    pub source: &'static str,
    /// The copied fields.
    pub fields: &'static [Copied],
    /// An `Option` of a copy.
    pub optional: bool,
    /// A versioned source type's upgrade: a source stored at an older schema version is read
    /// as its current version stores it, so that every copy holds the current fields.
    pub upgrade: Option<SourceUpgrade>,
    /// The documents holding the copies: on a variant's type, its variant's (`None`: every
    /// document of the referencing collection).
    pub holders: Option<Scope>,
    /// The sources: a variant's type's documents only (`None`: every document of the source
    /// collection).
    pub sources: Option<Scope>,
    /// The holder type's `subset(...)`: its parents embed the holders, copies included, so a
    /// write of the copies rewrites the subsets of the holders' parents.
    pub subset: Option<Subset>,
}

impl ReferenceField {
    /// The source `id` (of the source's variant).
    pub(crate) fn source_by_id(&self, id: &Bson) -> Filter {
        Scope::narrow(self.sources, Filter::Eq("_id".into(), id.clone()))
    }

    /// The source `id` as stored (one `find`), `None` when gone or of another variant.
    pub(crate) async fn read_source<T: Store>(
        &self,
        tx: &T,
        id: &Bson,
    ) -> Result<Option<BsonDocument>> {
        Ok(find_one(tx, self.source, &self.source_by_id(id)).await?)
    }
}

/// A source type's stored document at its current schema version: itself at that version, an
/// older one decoded as its version's type and upgraded (as a read of the source would).
#[derive(Clone, Copy)]
pub struct SourceUpgrade(pub fn(BsonDocument) -> Result<BsonDocument>);

impl PartialEq for SourceUpgrade {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

impl Eq for SourceUpgrade {}

impl std::fmt::Debug for SourceUpgrade {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SourceUpgrade")
    }
}

/// [`SourceUpgrade`] of the source type `S`.
pub(crate) fn at_current<S: Document>(doc: BsonDocument) -> Result<BsonDocument> {
    match crate::document::versions::classify::<S>(&doc)? {
        crate::document::versions::Stored::Current => Ok(doc),
        crate::document::versions::Stored::Older(_) => {
            let (source, _) = crate::document::decode_stored::<S>(doc)?;
            crate::document::to_document(&source)
        }
    }
}

impl ReferenceField {
    /// A source document of this field as its current version stores it.
    pub(crate) fn current(&self, source: BsonDocument) -> Result<BsonDocument> {
        match self.upgrade {
            Some(SourceUpgrade(upgrade)) => upgrade(source),
            None => Ok(source),
        }
    }
}

/// One referencing type's field, as its source lists it (`referenced_by(Film = director)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Referrer {
    /// The referencing collection.
    pub collection: &'static str,
    /// The field.
    pub field: ReferenceField,
}

/// How a source type propagates its writes to the copies (`fan_out = N`, `deferred`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Propagation {
    /// The copies a write updates in its own transaction at most; past it, in batches of as
    /// many, after it commits.
    pub fan_out: u32,
    /// Past the fan-out, the write only records the propagation: [`propagate`] (a worker)
    /// runs it. Otherwise the write runs it before it returns.
    pub deferred: bool,
}

impl Default for Propagation {
    fn default() -> Self {
        Propagation {
            fan_out: DEFAULT_FAN_OUT,
            deferred: false,
        }
    }
}

/// The copy of `source`'s fields (no round trip: from a document already read).
pub fn copy_of<R: Reference>(source: &R::Source) -> Result<R> {
    let stored = crate::document::to_document(source)?;
    decode_copy::<R>(&stored)
}

fn decode_copy<R: Reference>(stored: &BsonDocument) -> Result<R> {
    let coll = <R::Source as Document>::COLLECTION;
    let id = stored.get("_id").cloned().unwrap_or(Bson::Null);
    let mut copy = doc! {"_id": id.clone()};
    for f in R::FIELDS {
        copy.insert(f.to, stored.get(f.from).cloned().unwrap_or(Bson::Null));
    }
    bson::from_document(copy).map_err(|e| Error::decode(coll, Some(&id), e))
}

/// The copy of the source `id`'s fields as stored (one `find` of the source, projected), or
/// `None` without it: what to put in a new referencing document.
pub async fn load_copy<R, S, Q>(store: &S, id: &Q) -> Result<Option<R>>
where
    R: Reference,
    S: Store,
    Q: Serialize + ?Sized,
{
    crate::observe::traced_op!(
        document.load_copy,
        store,
        <R::Source as Document>::COLLECTION,
        async {
            let coll = <R::Source as Document>::COLLECTION;
            let opts = FindOptions {
                limit: Some(1),
                projection: R::FIELDS.iter().map(|f| f.from.into()).collect(),
                ..FindOptions::default()
            };
            let by_id = Scope::narrow_to::<R::Source>(Filter::Eq("_id".into(), id_bson(id)?));
            match store.find(coll, &by_id, &opts).await?.pop() {
                Some(d) => decode_copy::<R>(&d).map(Some),
                None => Ok(None),
            }
        }
    )
}

/// The index of a referencing collection serving the reads and updates of a source's copies,
/// in `_id` order within a source (a propagation's batches are ranges of it).
pub(crate) fn indexes(r: &ReferenceField) -> IndexSpec {
    IndexSpec {
        name: format!("pattern_reference_{}._id_1_by_id", r.at()),
        keys: vec![(format!("{}._id", r.at()), 1), ("_id".to_owned(), 1)],
        unique: false,
        partial: None,
    }
}

/// The name of the index earlier versions created instead of [`indexes`]' (`{<field>._id: 1}`),
/// dropped once the new one exists.
pub(crate) fn former_index(r: &ReferenceField) -> String {
    format!("pattern_reference_{}._id_1", r.at())
}

/// The copies among `ids` (sorted by `_id`, as the index holds them) as one condition: the
/// range from the first to the last when all are of one comparable type (MongoDB's `$gte` and
/// `$lte` do not cross types) and the store is not a sharded cluster's router (where the list
/// reaches only the shards holding them), else the list. A range may hold copies not listed:
/// copies already in line between two stale ones (see [`set_copies`]).
fn among(ids: Vec<Bson>, routed: bool) -> Filter {
    if routed {
        return Filter::In("_id".into(), ids);
    }
    let bracket = |b: &Bson| match b {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => Some(0),
        Bson::String(_) => Some(1),
        Bson::ObjectId(_) => Some(2),
        Bson::DateTime(_) => Some(3),
        _ => None,
    };
    match (ids.first(), ids.last()) {
        (Some(a), Some(z))
            if ids.len() > 1
                && bracket(a).is_some()
                && ids.iter().all(|b| bracket(b) == bracket(a)) =>
        {
            Filter::And(vec![
                Filter::Gte("_id".into(), a.clone()),
                Filter::Lte("_id".into(), z.clone()),
            ])
        }
        _ => Filter::In("_id".into(), ids),
    }
}

/// The copies of the source `id` in `r`, held in `coll`, and what they are set to: `source`'s
/// values (`None`: it is gone, they become `null`). What [`set_copies`], [`rewrite_copies`] and
/// [`bring_in_line`] write.
#[derive(Clone, Copy)]
struct CopiesOf<'a> {
    coll: &'a str,
    r: &'a ReferenceField,
    id: &'a Bson,
    source: Option<&'a BsonDocument>,
}

/// The copies of the source `id` among `ids` (see [`among`]), found stale by the caller, set to
/// `source`'s values, in `coll`: one update, marked as the copies' by its comment
/// ([`REFERENCE_COPIES`]); how many matched.
///
/// The filter holds the range and the reference, not the staleness again: every copy of the
/// source in the range is set to the source as this transaction reads it, which is what each
/// must hold, so the result is the same. A copy already in line between two stale ones (a
/// propagation resumed after a crash, a copy written meanwhile) is sent the value it holds,
/// which MongoDB does not write again. Checking the staleness per copy instead cost a quarter
/// of the update's time on the test server (BENCHMARKS.md, section 11). Copies elsewhere than
/// a field of their own: [`rewrite_copies`].
async fn set_copies<T: Store>(t: &T, copies: CopiesOf<'_>, ids: Vec<Bson>) -> Result<u64> {
    let (coll, r, id, source) = (copies.coll, copies.r, copies.id, copies.source);
    let holders = r.subset.map(|_| ids.clone());
    let written = if r.flat() {
        let routed = t.routes_by_shard_key().await?;
        let copies = WriteOp::UpdateMany {
            filter: Filter::And(vec![among(ids, routed), mine(r, id)]),
            update: Box::new(set_copy(r, id, source)),
        };
        let matched = t
            .write_across(vec![(coll, copies)], Some(REFERENCE_COPIES))
            .await?;
        matched.first().copied().unwrap_or(0)
    } else {
        rewrite_copies(t, copies, ids).await?
    };
    if let (Some(s), Some(holders)) = (r.subset, holders) {
        if written > 0 {
            subsets_of(t, coll, &s, holders).await?;
        }
    }
    Ok(written)
}

/// The subsets of the parents of the holders `ids` (children of `s` in `coll`, whose copies
/// were just written) rewritten where they differ: one `find` of the holders' keys, then
/// [`subsets_in_line`](crate::document::subsets_in_line).
async fn subsets_of<T: Store>(t: &T, coll: &str, s: &Subset, ids: Vec<Bson>) -> Result<()> {
    let opts = FindOptions {
        projection: vec![s.key.into()],
        ..FindOptions::default()
    };
    let mut keys: Vec<Bson> = Vec::new();
    for d in t.find(coll, &Filter::In("_id".into(), ids), &opts).await? {
        if let Some(k) = d.get(s.key) {
            if !keys.iter().any(|x| same_value(Some(x), Some(k))) {
                keys.push(k.clone());
            }
        }
    }
    if !keys.is_empty() {
        crate::document::subsets_in_line(t, coll, s, &keys).await?;
    }
    Ok(())
}

/// [`set_copies`] of a field whose copies are not the field itself (see [`place`]): the holders
/// among `ids` read (their `_id` and the field: one `find`), and each whose field changes sent
/// its new value (one write of them all, each by `_id`); how many were.
async fn rewrite_copies<T: Store>(t: &T, copies: CopiesOf<'_>, ids: Vec<Bson>) -> Result<u64> {
    let (coll, r, id, source) = (copies.coll, copies.r, copies.id, copies.source);
    let opts = FindOptions {
        projection: vec!["_id".into(), r.path.into()],
        comment: Some(REFERENCE_COPIES),
        ..FindOptions::default()
    };
    let filter = Filter::And(vec![Filter::In("_id".into(), ids), mine(r, id)]);
    let copy = copy_value(r, id, source);
    let sets: Vec<_> = (t.find(coll, &filter, &opts).await?.iter())
        .filter_map(|holder| {
            let new = r.replaced(holder, id, &copy)?;
            Some((holder.get("_id")?.clone(), vec![(r.path.into(), new)]))
        })
        .collect();
    let n = sets.len() as u64;
    crate::document::related::set_each(t, coll, sets, &[]).await?;
    Ok(n)
}

/// The update of the copies of the source `id` in `r` that differ from `source` to its values.
fn set_stale(r: &ReferenceField, id: &Bson, source: Option<&BsonDocument>) -> WriteOp {
    WriteOp::UpdateMany {
        filter: stale(r, id, source),
        update: Box::new(set_copy(r, id, source)),
    }
}

/// The update setting a copy of the source `id` in `r` to `source`'s values.
fn set_copy(r: &ReferenceField, id: &Bson, source: Option<&BsonDocument>) -> Update {
    Update {
        set: vec![(r.path.into(), copy_value(r, id, source))],
        ..Update::default()
    }
}

fn entry_id(source: &str, id: &Bson) -> Bson {
    Bson::Document(doc! {"c": source, "id": id.clone()})
}

/// In a transaction: the source's entry bumped (created if need be), so that this transaction
/// and any other that changes the source's copies, or points a document at it, conflict.
async fn touch<T: Store>(tx: &T, source: &str, id: &Bson) -> Result<()> {
    let (by_id, mut update) = bump(source, id);
    tx.update_one(REFERENCES, &by_id, &mut update, true).await?;
    Ok(())
}

/// [`touch`] as a write of [`REFERENCES`] to send with others.
fn touch_op(source: &str, id: &Bson) -> WriteOp {
    let (filter, update) = bump(source, id);
    WriteOp::Update {
        filter,
        update: Box::new(update),
        upsert: true,
    }
}

/// The source's entry and the bump of its counter (an upsert).
fn bump(source: &str, id: &Bson) -> (Filter, Update) {
    let update = Update {
        inc: vec![("seq".into(), 1)],
        ..Update::default()
    };
    (Filter::Eq("_id".into(), entry_id(source, id)), update)
}

/// The copy of `source` (`_id` first, then the copied fields), `null` when it is gone: what a
/// stale copy is set to, whole (a copy holds nothing else).
fn copy_value(r: &ReferenceField, id: &Bson, source: Option<&BsonDocument>) -> Bson {
    match source {
        Some(s) => {
            let mut copy = doc! {"_id": id.clone()};
            for f in r.fields {
                copy.insert(f.to, s.get(f.from).cloned().unwrap_or(Bson::Null));
            }
            Bson::Document(copy)
        }
        None => Bson::Null,
    }
}

/// The copies of the source `id` in `r`.
fn mine(r: &ReferenceField, id: &Bson) -> Filter {
    Scope::narrow(r.holders, r.holding(id))
}

/// Whether any document holds a copy of `D`'s document `id` (one `find` of one `_id` per
/// referencing field, in the caller's transaction): an archive moves a source only once
/// nothing copies it.
pub(crate) async fn still_copied<D: Document, T: Store>(tx: &T, id: &Bson) -> Result<bool> {
    let one = FindOptions {
        limit: Some(1),
        projection: vec!["_id".into()],
        comment: Some(REFERENCE_COPIES),
        ..FindOptions::default()
    };
    for r in D::REFERENCED_BY {
        if !tx
            .find(r.collection, &mine(&r.field, id), &one)
            .await?
            .is_empty()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The copies of the source `id` in `r` that differ from `source` (all of them, when it is
/// gone).
fn stale(r: &ReferenceField, id: &Bson, source: Option<&BsonDocument>) -> Filter {
    match source {
        None => mine(r, id),
        Some(s) => Scope::narrow(r.holders, r.differing(id, s)),
    }
}

/// Up to `limit` stale copies of the source `id` brought in line (one `find`, one `update`);
/// how many.
async fn bring_in_line<T: Store>(
    tx: &T,
    copies: CopiesOf<'_>,
    limit: usize,
) -> Result<(usize, bool)> {
    let (coll, r, id, source) = (copies.coll, copies.r, copies.id, copies.source);
    let opts = FindOptions {
        limit: Some(limit as i64 + 1),
        sort: vec![("_id".into(), 1)],
        projection: vec!["_id".into()],
        comment: Some(REFERENCE_COPIES),
        ..FindOptions::default()
    };
    let found = tx.find(coll, &stale(r, id, source), &opts).await?;
    let more = found.len() > limit;
    let ids: Vec<Bson> = (found.into_iter().take(limit))
        .filter_map(|d| d.get("_id").cloned())
        .collect();
    let n = ids.len();
    if n > 0 {
        set_copies(tx, copies, ids).await?;
    }
    Ok((n, more))
}

/// Whether a write from `before` to `after` changes a copied field.
fn changes(by: &[Referrer], before: Option<&BsonDocument>, after: Option<&BsonDocument>) -> bool {
    let Some(before) = before.filter(|_| !by.is_empty()) else {
        return false;
    };
    let Some(after) = after else {
        return true;
    };
    // Numbers by value: a field rewritten as another number type is not a change of the copies.
    (by.iter().flat_map(|r| r.field.fields))
        .any(|f| !same_value(before.get(f.from), after.get(f.from)))
}

/// In a source's write transaction (`D` a referenced type, `by` and `how` its copies: on an
/// enum, the variant's), after the write: every copy brought in line, or, past the fan-out,
/// the propagation recorded; whether one was.
pub(crate) async fn propagate_in<D: Document, T: Store>(
    tx: &T,
    (by, how): (&'static [Referrer], Propagation),
    id: &Bson,
    before: Option<&BsonDocument>,
    after: Option<&BsonDocument>,
) -> Result<bool> {
    if !changes(by, before, after) {
        return Ok(false);
    }
    let fan_out = how.fan_out.max(1) as usize;
    propagate_later::<D, T>(tx, by, id, after, fan_out).await
}

/// In a source's write transaction, after a write that changed a copied field (to `after`,
/// `None` when deleted): the entry bumped, up to `fan_out` stale copies of each referencing
/// collection found and brought in line, and where more remain the propagation recorded for
/// after the commit; whether one was.
pub(crate) async fn propagate_later<D: Document, T: Store>(
    tx: &T,
    by: &'static [Referrer],
    id: &Bson,
    after: Option<&BsonDocument>,
    fan_out: usize,
) -> Result<bool> {
    touch(tx, D::COLLECTION, id).await?;
    let mut later = Vec::new();
    for r in by {
        if after.is_none() && !r.field.follows_delete() {
            let one = FindOptions {
                limit: Some(1),
                projection: vec!["_id".into()],
                comment: Some(REFERENCE_COPIES),
                ..FindOptions::default()
            };
            let copies = mine(&r.field, id);
            if let Some(d) = tx.find(r.collection, &copies, &one).await?.pop() {
                return Err(Error::StillReferenced {
                    collection: D::COLLECTION.to_owned(),
                    id: display_bson(id),
                    by: Box::new(crate::error::ReferencedBy {
                        field: format!("{}.{}", r.collection, r.field.path),
                        example: display_bson(d.get("_id").unwrap_or(&Bson::Null)),
                    }),
                });
            }
            continue;
        }
        let copies = CopiesOf {
            coll: r.collection,
            r: &r.field,
            id,
            source: after,
        };
        let (_, more) = bring_in_line(tx, copies, fan_out).await?;
        if more {
            later.push(r);
        }
    }
    if later.is_empty() {
        return Ok(false);
    }
    let by_id = Filter::Eq("_id".into(), entry_id(D::COLLECTION, id));
    let entry = find_by_id(tx, REFERENCES, &entry_id(D::COLLECTION, id)).await?;
    let mut jobs = jobs_of(entry.as_ref());
    let now = Bson::DateTime(bson::DateTime::now());
    for r in later {
        if !jobs.iter().any(|j| is_job(j, r)) {
            jobs.push(Bson::Document(
                doc! {"c": r.collection, "p": r.field.at(), "since": now.clone()},
            ));
        }
    }
    let mut update = Update {
        set: vec![("pending".into(), Bson::Array(jobs))],
        ..Update::default()
    };
    tx.update_one(REFERENCES, &by_id, &mut update, false)
        .await?;
    Ok(true)
}

fn jobs_of(entry: Option<&BsonDocument>) -> Vec<Bson> {
    match entry.and_then(|e| e.get("pending")) {
        Some(Bson::Array(a)) => a.clone(),
        _ => Vec::new(),
    }
}

fn is_job(j: &Bson, r: &Referrer) -> bool {
    matches!(j, Bson::Document(d)
        if d.get_str("c").ok() == Some(r.collection) && d.get_str("p").ok() == Some(&*r.field.at()))
}

/// In a referencing type's write transaction: the copies of `doc` filled from their sources
/// (a source `doc` points at and `before` did not is touched: see [`REFERENCES`]).
pub(crate) async fn fill<D: Document, T: Store>(
    tx: &T,
    refs: &[ReferenceField],
    before: Option<&BsonDocument>,
    doc: &mut BsonDocument,
) -> Result<bool> {
    let mut changed = false;
    for r in refs {
        if !r.flat() {
            changed |= fill_placed::<D, T>(tx, r, before, doc).await?;
            continue;
        }
        let copy = match doc.get_mut(r.path) {
            Some(Bson::Document(c)) => c,
            None | Some(Bson::Null) if r.optional => continue,
            other => {
                return Err(Error::invalid(format!(
                    "`{}`'s reference `{}` holds {}, not a copy of a `{}` document",
                    D::COLLECTION,
                    r.path,
                    other.map_or_else(|| "nothing".to_owned(), |b| display_bson(b)),
                    r.source
                )))
            }
        };
        let Some(id) = copy.get("_id").cloned() else {
            return Err(Error::invalid(format!(
                "`{}`'s reference `{}` has no `_id`",
                D::COLLECTION,
                r.path
            )));
        };
        let was = before
            .and_then(|b| b.get_document(r.path).ok())
            .and_then(|c| c.get("_id"));
        let opts = FindOptions {
            limit: Some(1),
            comment: Some(REFERENCE_SOURCE),
            ..FindOptions::default()
        };
        let Some(source) = tx.find(r.source, &r.source_by_id(&id), &opts).await?.pop() else {
            return Err(Error::NotFound {
                collection: r.source.to_owned(),
                id: display_bson(&id),
            });
        };
        let source = r.current(source)?;
        if !same_value(was, Some(&id)) {
            touch(tx, r.source, &id).await?;
        }
        for f in r.fields {
            let v = source.get(f.from).cloned().unwrap_or(Bson::Null);
            if !same_value(copy.get(f.to), Some(&v)) {
                copy.insert(f.to, v);
                changed = true;
            }
        }
    }
    Ok(changed)
}

/// [`fill`] of a field whose copies are not the field itself (see [`place`]): every copy's
/// source read (one `find` of them all), each copy set to its source's fields.
async fn fill_placed<D: Document, T: Store>(
    tx: &T,
    r: &ReferenceField,
    before: Option<&BsonDocument>,
    doc: &mut BsonDocument,
) -> Result<bool> {
    let mut scratch = Bson::Null;
    let mut ids: Vec<Bson> = Vec::new();
    let mut bad: Option<String> = None;
    let top = match doc.get_mut(r.path) {
        Some(v) => v,
        None => &mut scratch,
    };
    r.walk(top, &mut |c| {
        match c {
            Bson::Document(d) => match d.get("_id") {
                Some(id) if !ids.iter().any(|i| same_value(Some(i), Some(id))) => {
                    ids.push(id.clone())
                }
                Some(_) => {}
                None => bad = Some("a copy without an `_id`".to_owned()),
            },
            Bson::Null if r.optional => {}
            other => bad = Some(display_bson(other)),
        }
        true
    });
    if let Some(what) = bad {
        return Err(Error::invalid(format!(
            "`{}`'s reference `{}` holds {what}, not a copy of a `{}` document",
            D::COLLECTION,
            r.at(),
            r.source
        )));
    }
    if ids.is_empty() {
        return Ok(false);
    }
    let opts = FindOptions {
        comment: Some(REFERENCE_SOURCE),
        ..FindOptions::default()
    };
    let by_ids = Scope::narrow(r.sources, Filter::In("_id".into(), ids.clone()));
    let sources = (tx.find(r.source, &by_ids, &opts).await?.into_iter())
        .map(|s| r.current(s))
        .collect::<Result<Vec<_>>>()?;
    let source_of = |id: &Bson| sources.iter().find(|s| same_value(s.get("_id"), Some(id)));
    if let Some(gone) = ids.iter().find(|id| source_of(id).is_none()) {
        return Err(Error::NotFound {
            collection: r.source.to_owned(),
            id: display_bson(gone),
        });
    }
    // A source the document points at and did not before: its entry touched (one write).
    let was = before.map(|b| r.source_ids(b)).unwrap_or_default();
    let new: Vec<(&str, WriteOp)> = (ids.iter())
        .filter(|id| !was.iter().any(|w| same_value(Some(w), Some(id))))
        .map(|id| (REFERENCES, touch_op(r.source, id)))
        .collect();
    if !new.is_empty() {
        tx.write_across(new, None).await?;
    }
    let mut changed = false;
    let top = match doc.get_mut(r.path) {
        Some(v) => v,
        None => &mut scratch,
    };
    r.walk(top, &mut |c| {
        let Bson::Document(copy) = c else { return true };
        let Some(source) = copy.get("_id").and_then(&source_of) else {
            return true;
        };
        for f in r.fields {
            let v = source.get(f.from).cloned().unwrap_or(Bson::Null);
            if !same_value(copy.get(f.to), Some(&v)) {
                copy.insert(f.to, v);
                changed = true;
            }
        }
        true
    });
    Ok(changed)
}
