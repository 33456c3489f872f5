//! The one write path of a `#[derive(Document)]` type or enum. Every write — `insert`, `save`,
//! `update_one`, the `_if` writes, `delete`, `change_variant`, a read's `write_back`, the
//! sweep's upgrade — is a [`Write`] run by [`run`] (or, inside a transaction the caller holds,
//! [`upgrade_in`]) through the same eight stages, in one order: encode, read, guard, fill,
//! record, write, children, after commit. ARCHITECTURE.md ("The write pipeline") has their
//! table: what each does and which feature's module owns it. The features' stages are the
//! type's [`Plan`] (`stages.rs`): each write kind below reads and writes its document and runs
//! the plan at each step, naming no feature.
//!
//! A write runs in one transaction when a stage after the write's own command needs the
//! document as it was (history, computed, subset, references); otherwise its stages fold into
//! one command: the guards become the command's filter (the version not newer, the variant),
//! read back only when the command is refused, to say why. The fast paths send what a
//! hand-written write sends (BENCHMARKS.md, section 1).

use crate::store::Error as StoreError;
use bson::{Bson, Document as BsonDocument};

use super::history::Stamp;
use super::polymorphic;
use super::related::reference::{self, REFERENCES};
use super::versions::{self, Stored};
use super::{decode_stored, find_by_id, to_document, Document};
use crate::store::query::{Filter, Update};
use crate::store::{find_one, transaction_with, BoxFuture, Store};
use crate::{Error, Result};
use stages::{Guard, Plan};

mod stages;

/// `D`'s plan: a constant of each type.
const fn plan<D: Document>() -> Plan {
    Plan::of::<D>()
}

/// How many times a versioned update upgrades a document it found at an older version and
/// tries again before giving up ([`store::Error::Contention`](crate::store::Error::Contention)).
const UPGRADE_ATTEMPTS: u32 = 8;

/// A write of a document of `D`, after stage 1 (encode).
// One value per write call, moved into its future: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Write {
    /// `insert`: the document, which must be new.
    Insert(BsonDocument),
    /// `save` and `save_if` (`expected`: the revision the caller read); `change_variant`
    /// (`any_variant`: over whatever variant is stored, never inserting).
    Save {
        doc: BsonDocument,
        expected: Option<u64>,
        any_variant: bool,
    },
    /// `update_one` (the first document matching `filter`, scoped to `D`'s variant) and
    /// `update_if` (`expected`: the `_id` and the revision read; `filter` by that `_id`).
    Update {
        filter: Filter,
        update: Update,
        expected: Option<(Bson, u64)>,
    },
    /// `delete` and `delete_if`.
    Delete { id: Bson, expected: Option<u64> },
    /// A read's `write_back` of an upgrade: `new` (upgraded from `read`) over the stored
    /// document if that is still exactly `read`.
    Upgrade {
        read: BsonDocument,
        new: BsonDocument,
    },
}

impl Write {
    /// Whether the write runs in a transaction of its own (stage 2 needed).
    fn transactional<D: Document>(&self) -> bool {
        let plan = const { plan::<D>() };
        match self {
            Write::Upgrade { .. } => true,
            // A new document has no state to record: history's stage reads the last revision
            // recorded and the insert stands alone.
            Write::Insert(_) => plan.linked(),
            // A source's update that writes no copied field changes no copy.
            Write::Update {
                update,
                expected: None,
                ..
            } if reference::after::applies::<D>() => reference::after::may_change::<D>(update),
            // A change of variant over a document a newer build wrote is refused: read first.
            Write::Save {
                any_variant: true, ..
            } if plan.has(stages::Stage::Versions) => true,
            _ => plan.reads_before(),
        }
    }
}

/// Runs `write` through the stages; whether it wrote (an insert: always; a save: always, a
/// `change_variant`: whether a document was there; an update: whether one matched; a delete:
/// whether there was one; a write-back: whether the document was still the one read).
pub(crate) fn run<D: Document, S: Store>(store: &S, write: Write) -> BoxFuture<'_, Result<bool>> {
    // Boxed: one future for every write of every type, whatever stages it takes, kept off the
    // caller's (an async test of many writes would otherwise hold the largest inline).
    Box::pin(async move {
        // A delete, or a change of variant: what the document was counts no more.
        let deleted = match &write {
            Write::Delete { id, .. } => Some(id.clone()),
            Write::Save {
                doc,
                any_variant: true,
                ..
            } => Some(id_of(doc)),
            _ => None,
        };
        let (wrote, propagate) = if write.transactional::<D>() {
            in_its_transaction::<D, S>(store, write).await?
        } else {
            (one_command::<D, S>(store, write).await?, None)
        };
        // Stage 8: after the commit.
        let deleted = deleted.filter(|_| wrote);
        (const { plan::<D>() })
            .after_commit::<D, S>(store, propagate.as_ref(), deleted.as_ref())
            .await?;
        Ok(wrote)
    })
}

/// Stages 2–7 of `write` in a transaction of its own.
async fn in_its_transaction<D: Document, S: Store>(
    store: &S,
    write: Write,
) -> Result<(bool, Option<Bson>)> {
    // In a transaction of its own, a source's update that found more stale copies than its
    // fan-out is abandoned and run again ([`reference::after`]); in one the caller holds,
    // nothing can be abandoned: the copies stay in it.
    let fan_out = match store.current_transaction() {
        None => PastFanOut::Abandon,
        Some(_) => PastFanOut::Keep,
    };
    let mut ctx = (write, fan_out);
    loop {
        let done = in_transaction(store, &mut ctx, |tx, (write, past)| {
            Box::pin(async move { staged::<D, _>(tx, write, past).await })
        })
        .await;
        match (done, ctx.1) {
            (Err(_), PastFanOut::Abandoned) => ctx.1 = PastFanOut::Abandon,
            (done, _) => return done,
        }
    }
}

/// What a source's update does when it finds more stale copies than its fan-out
/// ([`reference::after`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PastFanOut {
    /// Abandon the transaction (then [`PastFanOut::Abandoned`]) to run it again.
    Abandon,
    Abandoned,
    /// Keep the copies written (a transaction the caller holds, or no source update).
    Keep,
}

/// How many times a write is run again when two first references to one source created its
/// entry at once (the loser's upsert is a duplicate key).
const ENTRY_RACES: u32 = 3;

/// [`transaction_with`], run again when it lost the race to create a source's entry in
/// [`REFERENCES`].
async fn in_transaction<S, C, T, F>(store: &S, ctx: &mut C, mut work: F) -> Result<T>
where
    S: Store,
    C: Send,
    T: Send,
    F: for<'t> FnMut(&'t S::Txn, &'t mut C) -> BoxFuture<'t, Result<T>> + Send,
{
    let mut attempt = 0;
    loop {
        match transaction_with(store, ctx, &mut work).await {
            Err(Error::Store(StoreError::DuplicateKey { collection, .. }))
                if collection == REFERENCES && attempt + 1 < ENTRY_RACES =>
            {
                attempt += 1;
            }
            done => return done,
        }
    }
}

/// Stages 2–7 of a write on `t` (its transaction, or the store for an insert that needs
/// none); whether it wrote, and the `_id` whose propagation stage 7 recorded for after the
/// commit.
async fn staged<D: Document, T: Store>(
    t: &T,
    write: &Write,
    past_fan_out: &mut PastFanOut,
) -> Result<(bool, Option<Bson>)> {
    let plan = const { plan::<D>() };
    match write {
        Write::Insert(doc) => {
            let mut doc = doc.clone();
            let id = id_of(&doc);
            plan.fill::<D, T>(t, None, &mut doc).await?;
            plan.record::<D, T>(t, &id, None).await?.stamp(&mut doc);
            t.insert_one(D::COLLECTION, doc.clone()).await?;
            let propagate = plan.children::<D, T>(t, &id, None, Some(&doc)).await?;
            Ok((true, propagate))
        }
        Write::Save {
            doc,
            expected,
            any_variant,
        } => {
            let id = id_of(doc);
            let cur = find_by_id(t, D::COLLECTION, &id).await?;
            if *any_variant && cur.is_none() {
                return Ok((false, None));
            }
            plan.guard::<D>(&Guard {
                id: &id,
                stored: cur.as_ref(),
                written: Some(doc),
                expected: *expected,
                overwrites: true,
                any_variant: *any_variant,
            })?;
            let mut doc = doc.clone();
            plan.fill::<D, T>(t, cur.as_ref(), &mut doc).await?;
            (plan.record::<D, T>(t, &id, cur.as_ref()).await?).stamp(&mut doc);
            let by_id = Filter::Eq("_id".into(), id.clone());
            t.replace_one(D::COLLECTION, &by_id, doc.clone(), true)
                .await?;
            let propagate = (plan.children::<D, T>(t, &id, cur.as_ref(), Some(&doc))).await?;
            Ok((true, propagate))
        }
        Write::Update {
            filter,
            update,
            expected,
        } => {
            if expected.is_none() && reference::after::applies::<D>() {
                if let Some(done) = from_after::<D, T>(t, filter, update, past_fan_out).await? {
                    return Ok(done);
                }
            }
            let cur = match expected {
                None => read_current::<D, T>(t, filter).await?,
                Some((id, e)) => {
                    let cur = find_one(t, D::COLLECTION, filter).await?;
                    plan.guard::<D>(&Guard {
                        id,
                        stored: cur.as_ref(),
                        written: None,
                        expected: Some(*e),
                        overwrites: true,
                        any_variant: false,
                    })?;
                    match cur {
                        Some(cur) => Some(upgraded::<D, T>(t, cur).await?),
                        None => None,
                    }
                }
            };
            let Some(cur) = cur else {
                return Ok((false, None));
            };
            let id = id_of(&cur);
            let stamp = plan.record::<D, T>(t, &id, Some(&cur)).await?;
            let by_id = Filter::Eq("_id".into(), id.clone());
            let mut update = update.clone();
            stamp.stamp_update(&mut update);
            t.update_one(D::COLLECTION, &by_id, &mut update, false)
                .await?;
            if !plan.linked() {
                return Ok((true, None));
            }
            let mut after = find_by_id(t, D::COLLECTION, &id).await?;
            if let Some(a) = after.as_mut() {
                if plan.fill::<D, T>(t, Some(&cur), a).await? {
                    t.replace_one(D::COLLECTION, &by_id, a.clone(), false)
                        .await?;
                }
            }
            let propagate = (plan.children::<D, T>(t, &id, Some(&cur), after.as_ref())).await?;
            Ok((true, propagate))
        }
        Write::Delete { id, expected } => {
            let by_id = polymorphic::scope::<D>(Filter::Eq("_id".into(), id.clone()));
            let cur = find_one(t, D::COLLECTION, &by_id).await?;
            plan.guard::<D>(&Guard {
                id,
                stored: cur.as_ref(),
                written: None,
                expected: *expected,
                overwrites: false,
                any_variant: false,
            })?;
            let Some(cur) = cur else {
                return Ok((false, None));
            };
            plan.record::<D, T>(t, id, Some(&cur)).await?;
            t.delete_many(D::COLLECTION, &Filter::Eq("_id".into(), id.clone()))
                .await?;
            let propagate = (plan.children::<D, T>(t, id, Some(&cur), None)).await?;
            Ok((true, propagate))
        }
        Write::Upgrade { read, new } => {
            let id = id_of(new);
            match find_by_id(t, D::COLLECTION, &id).await? {
                Some(cur) if cur == *read => {}
                _ => return Ok((false, None)),
            }
            let by_id = Filter::Eq("_id".into(), id);
            upgrade_in::<D, T>(t, read, new.clone(), &by_id).await?;
            Ok((true, None))
        }
    }
}

/// Stages 2–7 of a source's `update_one` ([`reference::after`]) from the document after the
/// update: one `findAndModify` (at the current version, on a versioned type), then the copies
/// by filter. `None` when no document at the current version matched and the type has
/// versions (the general stages then look for one at another). When the copies outnumbered
/// the fan-out and `past_fan_out` allows it, fails and says so in `past_fan_out`: the
/// transaction is abandoned and run again.
async fn from_after<D: Document, T: Store>(
    tx: &T,
    filter: &Filter,
    update: &Update,
    past_fan_out: &mut PastFanOut,
) -> Result<Option<(bool, Option<Bson>)>> {
    let current = match D::VERSIONING {
        Some(v) => Filter::And(vec![filter.clone(), v.at(v.current)]),
        None => filter.clone(),
    };
    let mut update = update.clone();
    let fields = reference::after::copied::<D>();
    let after = tx
        .update_returning(D::COLLECTION, &current, &mut update, &fields)
        .await?;
    let Some(after) = after else {
        return Ok(D::VERSIONING.is_none().then_some((false, None)));
    };
    let id = id_of(&after);
    match reference::after::bring_in_line_after::<D, T>(tx, &id, &after).await? {
        reference::after::Followed::Done(recorded) => Ok(Some((true, recorded.then_some(id)))),
        reference::after::Followed::PastFanOut if *past_fan_out == PastFanOut::Keep => {
            Ok(Some((true, None)))
        }
        reference::after::Followed::PastFanOut => {
            *past_fan_out = PastFanOut::Abandoned;
            Err(Error::Store(StoreError::Contention {
                attempts: 1,
                what: format!(
                    "an update of `{}` found more stale copies than its fan-out",
                    D::COLLECTION
                ),
            }))
        }
    }
}

/// Stages 4–7 of an upgrade inside a transaction the caller holds (a write-back's, a sweep
/// batch's): `new` (upgraded from `cur`, the document read in it) with its copies filled from
/// their sources, written over the document matching `cas`, as a revision on a type with
/// history, what others keep of it brought in line; the document as written.
pub(crate) async fn upgrade_in<D: Document, T: Store>(
    tx: &T,
    cur: &BsonDocument,
    mut new: BsonDocument,
    cas: &Filter,
) -> Result<BsonDocument> {
    let plan = const { plan::<D>() };
    let id = id_of(cur);
    plan.fill::<D, T>(tx, Some(cur), &mut new).await?;
    (plan.record::<D, T>(tx, &id, Some(cur)).await?).stamp(&mut new);
    let done = tx
        .replace_one(D::COLLECTION, cas, new.clone(), false)
        .await?;
    // `cur` was read in this transaction: a filter that misses it would leave the history
    // and the others' aggregates written for a replacement that did not happen. Fail, and
    // the transaction with it (a sweep that counted it would run its passes again forever).
    if !done.matched {
        return Err(Error::invalid(format!(
            "the upgrade of document {} in `{}` matched nothing, though this transaction read \
             it: its filter does not select it ({cas:?})",
            crate::error::display_bson(&id),
            D::COLLECTION
        )));
    }
    plan.children::<D, T>(tx, &id, Some(cur), Some(&new))
        .await?;
    Ok(new)
}

/// How a document left its collection ([`leave_in`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Left {
    /// Deleted, what others keep of it in line; the `_id` when a propagation was recorded for
    /// after the commit ([`left`]).
    Gone(Option<Bson>),
    /// Kept: other documents still hold copies of it (a source of extended references).
    Copied,
}

/// Stages 5–7 of a document moved out of its collection, inside the mover's transaction (an
/// archive's, which writes the copy): `cur`, read in it, recorded as a delete records it
/// (history: the revisions read back through `history`, `at_revision` and `as_of` as a
/// deleted document's), deleted, and what others keep of it brought in line as after a
/// delete (a parent's computed values and subset leave it). A source whose copies other
/// documents still hold stays ([`Left::Copied`], nothing written).
pub(crate) async fn leave_in<D: Document, T: Store>(tx: &T, cur: &BsonDocument) -> Result<Left> {
    let plan = const { plan::<D>() };
    let id = id_of(cur);
    if plan.has(stages::Stage::Source) && reference::still_copied::<D, T>(tx, &id).await? {
        return Ok(Left::Copied);
    }
    plan.record::<D, T>(tx, &id, Some(cur)).await?;
    tx.delete_many(D::COLLECTION, &Filter::Eq("_id".into(), id.clone()))
        .await?;
    let propagate = plan.children::<D, T>(tx, &id, Some(cur), None).await?;
    Ok(Left::Gone(propagate))
}

/// Stage 8 of a document [`leave_in`] moved out, after its transaction committed.
pub(crate) async fn left<D: Document, S: Store>(
    store: &S,
    id: &Bson,
    propagate: Option<&Bson>,
) -> Result<()> {
    (const { plan::<D>() })
        .after_commit::<D, S>(store, propagate, Some(id))
        .await
}

/// Stage 3 for a document read at any version: `cur` itself at the current version; at an
/// older one, upgraded and written as a write of its own ([`upgrade_in`]) first; at a newer
/// one, [`Error::NewerVersion`].
async fn upgraded<D: Document, T: Store>(tx: &T, cur: BsonDocument) -> Result<BsonDocument> {
    match versions::classify::<D>(&cur)? {
        Stored::Current => Ok(cur),
        Stored::Older(_) => {
            let (doc, _) = decode_stored::<D>(cur.clone())?;
            let new = to_document(&doc)?;
            let by_id = Filter::Eq("_id".into(), id_of(&cur));
            upgrade_in::<D, T>(tx, &cur, new, &by_id).await
        }
    }
}

/// Stages 2–3 of `update_one` in a transaction: the first document matching `filter` at the
/// current version; one found at an older version is upgraded first and the read tried again;
/// none: `None`.
async fn read_current<D: Document, T: Store>(
    tx: &T,
    filter: &Filter,
) -> Result<Option<BsonDocument>> {
    let (Some(at_current), Some(not_current)) = (
        versions::current_filter::<D>(),
        versions::not_current_filter::<D>(),
    ) else {
        return Ok(find_one(tx, D::COLLECTION, filter).await?);
    };
    let current = Filter::And(vec![filter.clone(), at_current]);
    let other = Filter::And(vec![filter.clone(), not_current]);
    for _ in 0..UPGRADE_ATTEMPTS {
        if let Some(cur) = find_one(tx, D::COLLECTION, &current).await? {
            return Ok(Some(cur));
        }
        let Some(found) = find_one(tx, D::COLLECTION, &other).await? else {
            return Ok(None);
        };
        upgraded::<D, T>(tx, found).await?;
    }
    Err(Error::Store(StoreError::Contention {
        attempts: UPGRADE_ATTEMPTS,
        what: format!("an update of `{}` kept upgrading documents", D::COLLECTION),
    }))
}

/// The one-command form of a write without a transaction (no stage reads what it replaces):
/// the guards in its filter, read back only when it is refused, to say why.
async fn one_command<D: Document, S: Store>(store: &S, write: Write) -> Result<bool> {
    match write {
        Write::Insert(doc) => {
            // History's stage 5 without a state to record: the revision after the last.
            staged::<D, S>(store, &Write::Insert(doc), &mut PastFanOut::Keep)
                .await
                .map(|d| d.0)
        }
        Write::Save {
            doc,
            any_variant: true,
            ..
        } => {
            let by_id = Filter::Eq("_id".into(), id_of(&doc));
            Ok(store
                .replace_one(D::COLLECTION, &by_id, doc, false)
                .await?
                .matched)
        }
        Write::Save { doc, .. } => guarded_save::<D, S>(store, doc).await.map(|()| true),
        Write::Update { filter, update, .. } => guarded_update::<D, S>(store, filter, update).await,
        Write::Delete { id, .. } => {
            let by_id = polymorphic::scope::<D>(Filter::Eq("_id".into(), id));
            Ok(store.delete_many(D::COLLECTION, &by_id).await? > 0)
        }
        Write::Upgrade { .. } => unreachable!("a write-back is transactional"),
    }
}

/// How many times a save whose upsert lost to a concurrent change of variant or delete runs
/// again before giving up ([`store::Error::Contention`](crate::store::Error::Contention)).
const SAVE_ATTEMPTS: u32 = 16;

/// A save in one command: a replacement with `upsert` whose filter holds the guards (the
/// `_id`; on a versioned type, a version no newer than this build's; on a polymorphic type,
/// the variant written). An `_id` that exists and did not match is read to say why: a newer
/// version ([`Error::NewerVersion`]) or another variant ([`Error::OtherVariant`]), nothing
/// written; gone or matching again (a concurrent delete, change of variant or upgrade between
/// the two commands), the save runs again.
async fn guarded_save<D: Document, S: Store>(store: &S, doc: BsonDocument) -> Result<()> {
    let id = id_of(&doc);
    let variant = polymorphic::written::<D>(&doc);
    let mut filter = vec![polymorphic::save_filter(&id, variant.as_ref())];
    if let Some(v) = versions::versioning_of::<D>(&doc) {
        filter.push(v.not_newer());
    }
    let filter = match filter.len() {
        1 => filter.pop().expect("one filter"),
        _ => Filter::And(filter),
    };
    for _ in 0..SAVE_ATTEMPTS {
        let e = match (store.replace_one(D::COLLECTION, &filter, doc.clone(), true)).await {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        if !polymorphic::on_id(&e) {
            return Err(e.into());
        }
        let Some(stored) = find_by_id(store, D::COLLECTION, &id).await? else {
            continue;
        };
        versions::classify::<D>(&stored)?;
        polymorphic::same_variant::<D>(&id, &stored, &doc)?;
    }
    Err(Error::Store(StoreError::Contention {
        attempts: SAVE_ATTEMPTS,
        what: format!(
            "a save of `{}` kept losing to changes of the document's variant or version",
            D::COLLECTION
        ),
    }))
}

/// `update_one` in one command. On a versioned type the update applies to a document at this
/// build's version only (its paths are this version's): when none matched, a `find` looks for
/// a match at another version: an older one is upgraded (a write-back, compare-and-set) and
/// the update tried again; a newer one is [`Error::NewerVersion`], nothing written.
async fn guarded_update<D: Document, S: Store>(
    store: &S,
    filter: Filter,
    update: Update,
) -> Result<bool> {
    let Some(at_current) = versions::current_filter::<D>() else {
        let mut update = update;
        let done = store
            .update_one(D::COLLECTION, &filter, &mut update, false)
            .await?;
        return Ok(done.matched);
    };
    let current = Filter::And(vec![filter.clone(), at_current]);
    for _ in 0..UPGRADE_ATTEMPTS {
        let mut attempt = update.clone();
        let done = store
            .update_one(D::COLLECTION, &current, &mut attempt, false)
            .await?;
        if done.matched {
            return Ok(true);
        }
        // At any version: none is no match; one at the current version was upgraded by
        // another writer since the update (try again).
        let Some(found) = find_one(store, D::COLLECTION, &filter).await? else {
            return Ok(false);
        };
        match versions::classify::<D>(&found)? {
            Stored::Older(_) => {
                let (upgraded, _) = decode_stored::<D>(found.clone())?;
                let new = to_document(&upgraded)?;
                in_its_transaction::<D, S>(store, Write::Upgrade { read: found, new }).await?;
            }
            // Current, yet not matched at the current version: upgraded by another writer
            // since (try again), unless this build cannot read it (a polymorphic document of
            // a variant it does not know): that is its error, not a race to retry.
            Stored::Current => {
                decode_stored::<D>(found)?;
            }
        }
    }
    Err(Error::Store(StoreError::Contention {
        attempts: UPGRADE_ATTEMPTS,
        what: format!(
            "an update of `{}` kept finding its document rewritten at an older version",
            D::COLLECTION
        ),
    }))
}

fn id_of(doc: &BsonDocument) -> Bson {
    doc.get("_id").cloned().unwrap_or(Bson::Null)
}

impl Stamp {
    /// Stage 5's revision fields on a replacement.
    fn stamp(&self, doc: &mut BsonDocument) {
        for (k, v) in self.fields() {
            doc.insert(k, v);
        }
    }

    /// Stage 5's revision fields on an update.
    fn stamp_update(&self, update: &mut Update) {
        for (k, v) in self.fields() {
            update.set.push((k.into(), v));
        }
    }
}
