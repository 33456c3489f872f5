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

use bson::{doc, Bson, Document as BsonDocument};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{find_by_id, id_bson, id_key, Document, Field};
use crate::adopt::{Options, Progress};
use crate::error::display_bson;
use crate::store::query::{Filter, FindOptions, IndexSpec, Update};
use crate::store::{transaction_with, Store};
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

/// What a reference field holds: a copy ([`Reference`]) or an `Option` of one (`null` once its
/// source is deleted).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a copy of a document's fields",
    label = "a #[document(reference)] field holds a #[derive(Reference)] type or an `Option` of one",
    note = "#[derive(Reference)] #[reference(source = Director)] struct DirectorRef {{ #[serde(rename = \"_id\")] id: ..., name: String }}"
)]
pub trait Slot {
    /// The copy's type.
    type Ref: Reference;
    /// Whether the field may be `null` (its source deleted).
    const OPTIONAL: bool;
}

impl<R: Reference> Slot for Option<R> {
    type Ref = R;
    const OPTIONAL: bool = true;
}

/// A reference field of a referencing type: where it is stored, its source's collection, what
/// it copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceField {
    /// The referencing document's field holding the copy.
    pub path: &'static str,
    /// The source's collection.
    pub source: &'static str,
    /// The copied fields.
    pub fields: &'static [Copied],
    /// An `Option` of a copy.
    pub optional: bool,
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

/// The reference field `f` of `D` (the derive's check: `f` holds a [`Slot`]).
pub const fn reference_field<D: Document, F: Slot>(f: Field<D, F>) -> ReferenceField {
    ReferenceField {
        path: f.name(),
        source: <<F::Ref as Reference>::Source as Document>::COLLECTION,
        fields: <F::Ref as Reference>::FIELDS,
        optional: F::OPTIONAL,
    }
}

/// `D`'s field `f` as a referrer of `S` (the derive's check: `f` holds copies of `S`).
pub const fn referrer<S: Document, D: Document, F: Slot>(f: Field<D, F>) -> Referrer
where
    F::Ref: Reference<Source = S>,
{
    Referrer {
        collection: D::COLLECTION,
        field: reference_field(f),
    }
}

/// A copied field (the derive's check: the source's field `f` has the copy field's type).
pub const fn copied_field<S, T>(f: Field<S, T>, to: &'static str) -> Copied {
    Copied { from: f.name(), to }
}

const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `by` (a source's `REFERENCED_BY`) lists the field `path` of `collection` (the
/// derive's check that a source knows each of its copies).
pub const fn lists(by: &[Referrer], collection: &str, path: &str) -> bool {
    let mut i = 0;
    while i < by.len() {
        if same_str(by[i].collection, collection) && same_str(by[i].field.path, path) {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether a copy in `by` copies one of `counters` (the derive's check: an approximate counter
/// is written by increments that no copy would follow).
pub const fn copies_a_counter(by: &[Referrer], counters: &[super::Approximate]) -> bool {
    let mut i = 0;
    while i < by.len() {
        let fields = by[i].field.fields;
        let mut j = 0;
        while j < fields.len() {
            let mut k = 0;
            while k < counters.len() {
                if same_str(fields[j].from, counters[k].field) {
                    return true;
                }
                k += 1;
            }
            j += 1;
        }
        i += 1;
    }
    false
}

/// The copy of `source`'s fields (no round trip: from a document already read).
pub fn copy_of<R: Reference>(source: &R::Source) -> Result<R> {
    let stored = super::to_document(source)?;
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
    let coll = <R::Source as Document>::COLLECTION;
    let opts = FindOptions {
        limit: Some(1),
        projection: R::FIELDS.iter().map(|f| f.from.into()).collect(),
        ..FindOptions::default()
    };
    let by_id = Filter::Eq("_id".into(), id_bson(id)?);
    match store.find(coll, &by_id, &opts).await?.pop() {
        Some(d) => decode_copy::<R>(&d).map(Some),
        None => Ok(None),
    }
}

/// The index of a referencing collection serving the reads of a source's copies.
pub(crate) fn indexes(r: &ReferenceField) -> IndexSpec {
    IndexSpec {
        name: format!("pattern_reference_{}._id_1", r.path),
        keys: vec![(format!("{}._id", r.path), 1)],
        unique: false,
        partial: None,
    }
}

fn entry_id(source: &str, id: &Bson) -> Bson {
    Bson::Document(doc! {"c": source, "id": id.clone()})
}

/// In a transaction: the source's entry bumped (created if need be), so that this transaction
/// and any other that changes the source's copies, or points a document at it, conflict.
async fn touch<T: Store>(tx: &T, source: &str, id: &Bson) -> Result<()> {
    let mut update = Update {
        inc: vec![("seq".into(), 1)],
        ..Update::default()
    };
    let by_id = Filter::Eq("_id".into(), entry_id(source, id));
    tx.update_one(REFERENCES, &by_id, &mut update, true).await?;
    Ok(())
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

/// The copies of the source `id` in `r` that differ from `source` (all of them, when it is
/// gone).
fn stale(r: &ReferenceField, id: &Bson, source: Option<&BsonDocument>) -> Filter {
    let mine = Filter::Eq(format!("{}._id", r.path).into(), id.clone());
    match source {
        None => mine,
        Some(s) => Filter::And(vec![
            mine,
            Filter::Or(
                (r.fields.iter())
                    .map(|f| {
                        let v = s.get(f.from).cloned().unwrap_or(Bson::Null);
                        Filter::Ne(format!("{}.{}", r.path, f.to).into(), v)
                    })
                    .collect(),
            ),
        ]),
    }
}

/// Up to `limit` stale copies of the source `id` brought in line (one `find`, one `update`);
/// how many.
async fn bring_in_line<T: Store>(
    tx: &T,
    coll: &str,
    r: &ReferenceField,
    id: &Bson,
    source: Option<&BsonDocument>,
    limit: usize,
) -> Result<(usize, bool)> {
    let opts = FindOptions {
        limit: Some(limit as i64 + 1),
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
        let update = Update {
            set: vec![(r.path.into(), copy_value(r, id, source))],
            ..Update::default()
        };
        tx.update_many(coll, &Filter::In("_id".into(), ids), &update)
            .await?;
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
    (by.iter().flat_map(|r| r.field.fields)).any(|f| before.get(f.from) != after.get(f.from))
}

/// In a source's write transaction (`D` a referenced type), after the write: every copy
/// brought in line, or, past the fan-out, the propagation recorded; whether one was.
pub(crate) async fn propagate_in<D: Document, T: Store>(
    tx: &T,
    id: &Bson,
    before: Option<&BsonDocument>,
    after: Option<&BsonDocument>,
) -> Result<bool> {
    if !changes(D::REFERENCED_BY, before, after) {
        return Ok(false);
    }
    touch(tx, D::COLLECTION, id).await?;
    let fan_out = D::PROPAGATION.fan_out.max(1) as usize;
    let mut later = Vec::new();
    for r in D::REFERENCED_BY {
        if after.is_none() && !r.field.optional {
            let one = FindOptions {
                limit: Some(1),
                projection: vec!["_id".into()],
                comment: Some(REFERENCE_COPIES),
                ..FindOptions::default()
            };
            let mine = Filter::Eq(format!("{}._id", r.field.path).into(), id.clone());
            if let Some(d) = tx.find(r.collection, &mine, &one).await?.pop() {
                return Err(Error::StillReferenced {
                    collection: D::COLLECTION.to_owned(),
                    id: display_bson(id),
                    by: format!("{}.{}", r.collection, r.field.path),
                    example: display_bson(d.get("_id").unwrap_or(&Bson::Null)),
                });
            }
            continue;
        }
        let (_, more) = bring_in_line(tx, r.collection, &r.field, id, after, fan_out).await?;
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
                doc! {"c": r.collection, "p": r.field.path, "since": now.clone()},
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
        if d.get_str("c").ok() == Some(r.collection) && d.get_str("p").ok() == Some(r.field.path))
}

/// In a referencing type's write transaction: the copies of `doc` filled from their sources
/// (a source `doc` points at and `before` did not is touched: see [`REFERENCES`]).
pub(crate) async fn fill<D: Document, T: Store>(
    tx: &T,
    before: Option<&BsonDocument>,
    doc: &mut BsonDocument,
) -> Result<bool> {
    let mut changed = false;
    for r in D::REFERENCES {
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
        let by_id = Filter::Eq("_id".into(), id.clone());
        let Some(source) = tx.find(r.source, &by_id, &opts).await?.pop() else {
            return Err(Error::NotFound {
                collection: r.source.to_owned(),
                id: display_bson(&id),
            });
        };
        if was != Some(&id) {
            touch(tx, r.source, &id).await?;
        }
        for f in r.fields {
            let v = source.get(f.from).cloned().unwrap_or(Bson::Null);
            if copy.get(f.to) != Some(&v) {
                copy.insert(f.to, v);
                changed = true;
            }
        }
    }
    Ok(changed)
}

/// The propagations recorded for `D`'s documents and not finished.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pending {
    /// The source document's `_id` (relaxed Extended JSON).
    pub source: String,
    /// The referencing collection and field.
    pub copies: String,
    /// When the write that began it committed (milliseconds since the epoch): copies not yet
    /// reached have been stale since.
    pub since_ms: i64,
}

/// The propagations of `D`'s writes recorded and not finished (one `find` of [`REFERENCES`]).
pub async fn pending_propagations<D: Document, S: Store>(store: &S) -> Result<Vec<Pending>> {
    let mut out = Vec::new();
    for entry in entries::<D, S>(store, None).await? {
        let source = entry
            .get_document("_id")
            .ok()
            .and_then(|i| i.get("id"))
            .map_or_else(String::new, display_bson);
        for j in jobs_of(Some(&entry)) {
            if let Bson::Document(j) = j {
                out.push(Pending {
                    source: source.clone(),
                    copies: format!(
                        "{}.{}",
                        j.get_str("c").unwrap_or(""),
                        j.get_str("p").unwrap_or("")
                    ),
                    since_ms: j
                        .get_datetime("since")
                        .map(|d| d.timestamp_millis())
                        .unwrap_or(0),
                });
            }
        }
    }
    Ok(out)
}

async fn entries<D: Document, S: Store>(
    store: &S,
    only: Option<&Bson>,
) -> Result<Vec<BsonDocument>> {
    let mut filter = vec![
        Filter::Eq("_id.c".into(), Bson::String(D::COLLECTION.to_owned())),
        Filter::Exists("pending.0".into(), true),
    ];
    if let Some(id) = only {
        filter.push(Filter::Eq("_id".into(), entry_id(D::COLLECTION, id)));
    }
    store
        .find(REFERENCES, &Filter::And(filter), &FindOptions::default())
        .await
}

/// What [`propagate`] did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Propagated {
    /// Propagations finished.
    pub finished: u64,
    /// Copies written (each once: a copy already in line is not written again).
    pub copies: u64,
    /// Batches (transactions).
    pub batches: u64,
}

/// Finishes every recorded propagation of `D`'s writes (or of the document `only`): in batches
/// of `opts.batch_items` copies (the type's `fan_out` by default), each a transaction that reads
/// the source as it is then and writes the copies that differ from it; the last one removes
/// the job. `opts.progress` is called after each batch with the copies written so far.
pub async fn propagate<D: Document, S: Store>(
    store: &S,
    only: Option<&Bson>,
    opts: &Options<'_>,
) -> Result<Propagated> {
    let batch = if opts.batch_items == crate::adopt::DEFAULT_BATCH_ITEMS {
        D::PROPAGATION.fan_out.max(1) as usize
    } else {
        opts.batch_items.max(1)
    };
    let mut done = Propagated::default();
    for entry in entries::<D, S>(store, only).await? {
        let Some(id) = entry.get_document("_id").ok().and_then(|i| i.get("id")) else {
            continue;
        };
        for job in jobs_of(Some(&entry)) {
            let r = (D::REFERENCED_BY.iter())
                .find(|r| is_job(&job, r))
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "a propagation of `{}` to {} is recorded, which this build's \
                         referenced_by(...) does not list",
                        D::COLLECTION,
                        display_bson(&job)
                    ))
                })?;
            loop {
                let (n, finished) = batch_of::<D, S>(store, r, id, batch).await?;
                done.copies += n as u64;
                done.batches += 1;
                if let Some(p) = opts.progress {
                    p(&Progress {
                        phase: "propagate",
                        done: done.copies,
                        total: None,
                    });
                }
                if finished {
                    done.finished += 1;
                    break;
                }
            }
        }
    }
    Ok(done)
}

/// One batch of a propagation, in a transaction; the copies written and whether the job is
/// finished (then removed).
async fn batch_of<D: Document, S: Store>(
    store: &S,
    r: &Referrer,
    id: &Bson,
    batch: usize,
) -> Result<(usize, bool)> {
    let mut ctx = (*r, id.clone());
    transaction_with(store, &mut ctx, |tx, (r, id)| {
        Box::pin(async move {
            let (r, id) = (&*r, &*id);
            let source = find_by_id(tx, D::COLLECTION, id).await?;
            if source.is_none() && !r.field.optional {
                return Err(Error::invalid(format!(
                    "the copies of `{}` {} in `{}.{}` cannot follow it: it was deleted by \
                     another tool and the reference is required (verify_copies lists them)",
                    D::COLLECTION,
                    display_bson(id),
                    r.collection,
                    r.field.path
                )));
            }
            let (n, more) =
                bring_in_line(tx, r.collection, &r.field, id, source.as_ref(), batch).await?;
            if more {
                return Ok((n, false));
            }
            let key = entry_id(D::COLLECTION, id);
            let entry = find_by_id(tx, REFERENCES, &key).await?;
            let jobs: Vec<Bson> = (jobs_of(entry.as_ref()).into_iter())
                .filter(|j| !is_job(j, r))
                .collect();
            let mut update = if jobs.is_empty() {
                Update {
                    unset: vec!["pending".into()],
                    ..Update::default()
                }
            } else {
                Update {
                    set: vec![("pending".into(), Bson::Array(jobs))],
                    ..Update::default()
                }
            };
            tx.update_one(
                REFERENCES,
                &Filter::Eq("_id".into(), key),
                &mut update,
                false,
            )
            .await?;
            Ok((n, true))
        })
    })
    .await
}

/// A copy that differs from its source.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StaleCopy {
    /// The referencing document's `_id` (relaxed Extended JSON).
    pub document: String,
    /// Its reference field.
    pub field: &'static str,
    /// The source's `_id`.
    pub source: String,
    /// The copied fields that differ (empty when the source is gone).
    pub differs: Vec<&'static str>,
    /// The source no longer exists (deleted by another tool).
    pub source_missing: bool,
}

/// Every copy in `D`'s documents that differs from its source, or whose source is gone: one
/// scan of `D`'s collection, one `find` of the sources per 1,000 documents.
pub async fn verify_copies<D: Document, S: Store>(store: &S) -> Result<Vec<StaleCopy>> {
    Ok(stale_copies::<D, S>(store)
        .await?
        .into_iter()
        .map(|(s, _)| s)
        .collect())
}

/// [`verify_copies`], each with its source's `_id` as stored.
async fn stale_copies<D: Document, S: Store>(store: &S) -> Result<Vec<(StaleCopy, Bson)>> {
    let mut out = Vec::new();
    for r in D::REFERENCES {
        let opts = FindOptions {
            projection: vec![r.path.into()],
            comment: Some(REFERENCE_VERIFY),
            ..FindOptions::default()
        };
        let all = Filter::Exists(format!("{}._id", r.path).into(), true);
        let mut scan = store.scan(D::COLLECTION, &all, &opts, 1_000);
        let mut chunk = Vec::new();
        while let Some(raw) = scan.next().await {
            let d = raw?
                .to_document()
                .map_err(|e| Error::decode(D::COLLECTION, None, e))?;
            chunk.push(d);
            if chunk.len() == 1_000 {
                compare(store, r, std::mem::take(&mut chunk), &mut out).await?;
            }
        }
        drop(scan);
        compare(store, r, chunk, &mut out).await?;
    }
    Ok(out)
}

async fn compare<S: Store>(
    store: &S,
    r: &ReferenceField,
    docs: Vec<BsonDocument>,
    out: &mut Vec<(StaleCopy, Bson)>,
) -> Result<()> {
    if docs.is_empty() {
        return Ok(());
    }
    let copy_id = |d: &BsonDocument| {
        d.get_document(r.path)
            .ok()
            .and_then(|c| c.get("_id"))
            .cloned()
    };
    let ids: Vec<Bson> = docs.iter().filter_map(copy_id).collect();
    let opts = FindOptions {
        projection: r.fields.iter().map(|f| f.from.into()).collect(),
        ..FindOptions::default()
    };
    let sources = store
        .find(r.source, &Filter::In("_id".into(), ids), &opts)
        .await?;
    let by_id: std::collections::HashMap<Vec<u8>, BsonDocument> = (sources.into_iter())
        .map(|s| (id_key(s.get("_id").unwrap_or(&Bson::Null)), s))
        .collect();
    for d in &docs {
        let Some(id) = copy_id(d) else { continue };
        let copy = d.get_document(r.path).ok();
        let stale = |differs, source_missing| {
            let s = StaleCopy {
                document: display_bson(d.get("_id").unwrap_or(&Bson::Null)),
                field: r.path,
                source: display_bson(&id),
                differs,
                source_missing,
            };
            (s, id.clone())
        };
        match by_id.get(&id_key(&id)) {
            None => out.push(stale(Vec::new(), true)),
            Some(s) => {
                let differs: Vec<&'static str> = (r.fields.iter())
                    .filter(|f| {
                        let want = s.get(f.from).unwrap_or(&Bson::Null);
                        copy.and_then(|c| c.get(f.to)).unwrap_or(&Bson::Null) != want
                    })
                    .map(|f| f.to)
                    .collect();
                if !differs.is_empty() {
                    out.push(stale(differs, false));
                }
            }
        }
    }
    Ok(())
}

/// What [`repair_copies`] did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Repaired {
    /// Copies written.
    pub copies: u64,
    /// Copies whose source is gone: left as they are (an optional reference is set to `null`
    /// and counted in `copies`).
    pub orphans: Vec<StaleCopy>,
}

/// Brings every copy [`verify_copies`] lists in line with its source, source by source, in
/// batches of `opts.batch_items` (1,000 by default), each a transaction that reads the source
/// as it is then. Killed, it is run again: it finds what is left.
pub async fn repair_copies<D: Document, S: Store>(
    store: &S,
    opts: &Options<'_>,
) -> Result<Repaired> {
    let batch = opts.batch_items.clamp(1, 1_000);
    let mut out = Repaired::default();
    let mut seen = std::collections::HashSet::new();
    for (s, id) in stale_copies::<D, S>(store).await? {
        let Some(r) = D::REFERENCES.iter().find(|r| r.path == s.field) else {
            continue;
        };
        if s.source_missing && !r.optional {
            out.orphans.push(s);
            continue;
        }
        if !seen.insert((s.field, id_key(&id))) {
            continue;
        }
        loop {
            let mut ctx = ();
            let (n, more) = transaction_with(store, &mut ctx, |tx, ()| {
                let id = id.clone();
                Box::pin(async move {
                    let source = find_by_id(tx, r.source, &id).await?;
                    bring_in_line(tx, D::COLLECTION, r, &id, source.as_ref(), batch).await
                })
            })
            .await?;
            out.copies += n as u64;
            if let Some(p) = opts.progress {
                p(&Progress {
                    phase: "repair",
                    done: out.copies,
                    total: None,
                });
            }
            if !more {
                break;
            }
        }
    }
    Ok(out)
}
