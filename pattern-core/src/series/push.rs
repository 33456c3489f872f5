//! Pushes: one item (the conditional upsert, one round trip in the common case), several (a
//! compare-and-set on the open document, then the new documents in one ordered batch), and the
//! `_id`s of the documents a push opens.

use crate::store::Error as StoreError;
use bson::{Bson, Document};

use super::ids::{is_id_taken, IdPrefix, NewIds};
use super::read::take_array;
use super::rollup::{mark_stale, roll_up, write_rolled};
use super::width;
use super::{memo, Next, TimeId, BATCH_BYTES};
use crate::codec::as_int;
use crate::codec::raw::doc_id;
use crate::error::display_bson;
use crate::series::Kept;
use crate::spec::SeriesSpec;
use crate::store::query::{Filter, FindOptions, Path};
use crate::store::{find_one, BatchOutcome, Store, WriteOp};
use crate::{Error, Result};

/// Attempts before a retry loop reports [`store::Error::Contention`](crate::store::Error::Contention). Every retry follows a write of
/// another writer that did apply, so the loop only spins under that much concurrent traffic.
const MAX_ATTEMPTS: u32 = 10_000;

fn contention(what: &str) -> Error {
    Error::Store(StoreError::Contention {
        attempts: MAX_ATTEMPTS,
        what: what.to_owned(),
    })
}

/// Appends `items` to the series of `key`, in order. `times[i]` is item i's epoch milliseconds
/// (used by [`SeriesOrder::TimeId`](crate::spec::SeriesOrder::TimeId) and time bounds only). One
/// item costs one round trip in the common case.
pub(crate) async fn push<S: Store, P: IdPrefix + Sync + ?Sized>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    prefix: &P,
    items: Vec<Bson>,
    times: &[i64],
) -> Result<()> {
    let bytes = ready(store, spec, &items).await?;
    match items.len() {
        0 => Ok(()),
        1 => {
            let kept = Kept {
                items_bytes: Some(bytes),
                ..spec.kept(&items, times)?
            };
            push_one(
                store,
                spec,
                key,
                prefix,
                items,
                times.first().copied(),
                &kept,
            )
            .await
        }
        // Cut by span: each item to its window's open document, one conditional upsert each
        // (the items of one push may fall in several windows, each with its own document).
        _ if spec.span_bounds().is_some() => {
            for (i, item) in items.into_iter().enumerate() {
                let time = times.get(i).copied();
                let kept =
                    spec.kept(std::slice::from_ref(&item), times.get(i..=i).unwrap_or(&[]))?;
                push_one(store, spec, key, prefix, vec![item], time, &kept).await?;
            }
            Ok(())
        }
        // Boxed: a push of one item, the common call, would carry it.
        _ => Box::pin(push_many(store, spec, key, prefix, &items, times, None)).await,
    }
}

/// Before any write: every item fits in a document, and the series' indexes exist. Returns
/// the items' size ([`Kept::items_bytes`]).
async fn ready<S: Store>(store: &S, spec: &SeriesSpec<'_>, items: &[Bson]) -> Result<usize> {
    let mut bytes = 0_usize;
    for item in items {
        let n = crate::codec::size::check_item_size(spec.collection, item)?;
        bytes = bytes.saturating_add(n);
    }
    spec.ensure_indexes(store).await?;
    Ok(bytes)
}

/// Writes `items` as the whole series of `key`, whose documents were just deleted: numbered
/// from 1, in one ordered batch, with no read first. Should another writer have opened
/// document 1 meanwhile, this goes on as a push does, after it.
pub(crate) async fn push_fresh<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    items: Vec<Bson>,
) -> Result<()> {
    ready(store, spec, &items).await?;
    memo(store).take_next_number(spec.collection, key);
    if items.is_empty() {
        return Ok(());
    }
    push_many(store, spec, key, "", &items, &[], Some(1)).await
}

async fn push_one<S: Store, P: IdPrefix + Sync + ?Sized>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    prefix: &P,
    mut items: Vec<Bson>,
    time: Option<i64>,
    kept: &Kept,
) -> Result<()> {
    debug_assert_eq!(items.len(), 1, "push_one pushes one item");
    let coll = spec.collection;
    let spanned = spec.span_bounds().is_some();
    // Not cut by span, in a collection that keeps its width: the item's time, which the
    // push's window is built around.
    let floating = time.filter(|_| !spanned && width::kept_for(spec));
    let time = time.map(seconds);
    let mut ids = NewIds::new(spec, prefix, time);
    // The number the key's next document gets, when this process saw its newest one.
    let (at, known) = memo(store).next_number_at(coll, key);
    let mut next = known.map(|m| m.number);
    // Whether the number may be guessed (the key unknown to this process, no refusal yet).
    let mut guess = known.is_none();
    ids.after(known.and_then(|m| m.newest));
    for _ in 0..MAX_ATTEMPTS {
        if let Some(seq) = next {
            // The common case, one round trip: the seed's conditional upsert, into the key's
            // open document, or opening document `seq` when none is open.
            // Within the collection's width (`series::width`): the push joins an open bucket
            // only within it of the item, raised first to what the newest bucket needs. Should
            // the key's open bucket be the newest and not take the item, the upsert must not
            // open a second one: it opens the newest's number again, which the unique index
            // refuses, and the push goes through the read below, which raises the width.
            let mut window = None;
            let mut seq = seq;
            if let Some(t) = floating {
                // From the newest bucket's first second, as if its first item were the earliest
                // (the window bounds the bucket's earliest and latest times).
                let need = (ids.newest_start()).map_or_else(width::Width::default, |c| {
                    width::to_join((c, c.saturating_add(999)), t)
                });
                window = Box::pin(width::admit(store, spec, need)).await?;
                let newest = memo(store)
                    .next_number(coll, key)
                    .filter(|m| m.number == seq);
                let full = newest.and_then(|m| m.count).is_some_and(|c| c >= spec.size);
                if window.is_some() && !full && seq > 1 {
                    seq -= 1;
                }
            }
            ids.prepare(store, seq).await?;
            let new_id = || ids.id();
            let marks = || spec.marks();
            let mut push = spec.open_push(key, kept, seq, &new_id, &marks);
            if let (Some(t), Some(w)) = (floating, window) {
                push.window = width::window(spec, t, w);
            }
            // With a roll-up, it goes in the same command.
            let (pushed, rolled) = if let Some(rollups) = spec.keeps.rollup {
                let mut then = spec.rollup_update(kept, 1);
                // Boxed: every push's future would carry it, roll-ups or not.
                let both = Box::pin(store.push_open_then(
                    &push,
                    &mut items,
                    rollups,
                    &spec.rollup_of(key),
                    &mut then,
                ))
                .await;
                match both {
                    Ok((opened, rolled)) => (Ok(opened), Some(rolled)),
                    Err(e) => (Err(e), None),
                }
            } else {
                (store.push_open(&push, &mut items).await, None)
            };
            match overflowed(spec, kept, pushed) {
                Ok(false) => {
                    // Into the newest document, whose count this process knew: one more. (Cut
                    // by span, it may have gone to an older window's document: not counted.)
                    if let Some(m) = known.filter(|_| !spanned) {
                        if let Some(c) = m.count {
                            memo(store).set_count_at(at, coll, key, m, c + 1);
                        }
                    }
                    return roll_up(store, spec, key, kept, 1, rolled).await;
                }
                Ok(true) => {
                    remember(store, spec, key, seq.checked_add(1), ids.opened(), Some(1));
                    return roll_up(store, spec, key, kept, 1, rolled).await;
                }
                // The `_id` is taken (an older document of the key starts in the same second):
                // the next attempt opens document `seq` under the next free suffix.
                Err(e) if is_id_taken(&e) => ids.id_taken(),
                // Document `seq` exists (another writer opened it: the next attempt pushes
                // into it), or the store did not say which index refused: find out below.
                Err(StoreError::DuplicateKey { .. }) => {
                    ids.collided(seq);
                    memo(store).take_next_number(coll, key);
                    next = None;
                    guess = false;
                }
                Err(e) => {
                    let open = spec.open(key);
                    return Err(Box::pin(name_foreign(
                        store,
                        coll,
                        &open,
                        spec.items_field,
                        e.into(),
                    ))
                    .await);
                }
            }
            if next.is_some() {
                continue;
            }
        }
        // The next number unknown. Boxed: the rarer path, which every push's future would
        // otherwise carry.
        let unknown = push_unknown(store, spec, key, kept, &mut ids, &mut items, &mut guess);
        match Box::pin(unknown).await? {
            None => return Ok(()),
            Some(number) => next = number,
        }
    }
    Err(contention("opening a document"))
}

/// Where the collection keeps its width: raised to what items with times `bounds` need in the
/// bucket named `id` (a fill or an insert whose bucket is known before it is sent).
async fn admit_into<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    id: Option<TimeId>,
    bounds: Option<(i64, i64)>,
) -> Result<()> {
    if let (Some(c), Some(b)) = (id, bounds.filter(|_| width::kept_for(spec))) {
        Box::pin(width::admit(
            store,
            spec,
            width::from_start(c.start_ms(), b),
        ))
        .await?;
    }
    Ok(())
}

/// Whole epoch seconds of epoch milliseconds (floored): what a bucket's `_id` is named by.
pub(crate) fn seconds(millis: i64) -> i64 {
    millis.div_euclid(1000)
}

/// A write that the store refused because a summary's `$inc` would overflow (both stores
/// say "Failed to apply $inc"), as [`store::Error::Overflow`](crate::store::Error::Overflow) naming the sums it added to (the
/// field named in the message when there; MongoDB names only the document); anything else
/// as it is.
pub(crate) fn overflowed<T>(
    spec: &SeriesSpec<'_>,
    kept: &Kept,
    r: pattern_store::Result<T>,
) -> pattern_store::Result<T> {
    match r {
        Err(StoreError::Server { message, .. })
            if !spec.keeps.summary.is_empty() && message.contains("Failed to apply $inc") =>
        {
            let sums = (spec.keeps.summary.iter().zip(&kept.summary))
                .filter(|(a, v)| a.op == crate::spec::SummaryOp::Sum && v.is_some())
                .map(|(a, _)| a.field);
            let mut named: Vec<&str> = sums.clone().filter(|f| message.contains(*f)).collect();
            if named.is_empty() {
                named = sums.collect();
            }
            Err(StoreError::Overflow {
                collection: spec.collection.to_owned(),
                field: named.join(", "),
                message: format!("the bucket's sum would overflow: {message}"),
            })
        }
        r => r,
    }
}

/// The key's newest document.
///
/// When this process remembers the number `n` of the key's next document, the newest is
/// document `n - 1` or a later one, and the query is bounded below by that number: a server
/// that reads a sorted query's whole index range before applying its limit (test server, T1)
/// then reads two entries rather than the key's whole history. Should nothing be found there
/// (documents were deleted behind the memo), the key is read unbounded. The bounded query sends
/// no number condition ([`SeriesSpec::in_series`]): with it, in any form, the test server reads
/// every document of the key (T23). The bound itself matches numbers alone, and arrays holding
/// one: a document of another tool found there is left to the unbounded read, which checks the
/// condition on the server.
pub(super) async fn newest_doc<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
) -> Result<Option<Document>> {
    let opts = FindOptions {
        sort: spec.newest_first().to_vec(),
        limit: Some(1),
        ..FindOptions::default()
    };
    let known = memo(store).next_number(spec.collection, key);
    if let Some(n) = known.map(|k| k.number).filter(|n| *n > 1) {
        let bounded = Filter::And(vec![
            spec.by_key(key),
            Filter::Gte(Path::from(spec.order.field()), Bson::Int64(n - 1)),
        ]);
        let found = store.find(spec.collection, &bounded, &opts).await?.pop();
        if let Some(doc) = found.filter(|doc| spec.in_series().matches(doc)) {
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
    spec: &SeriesSpec<'_>,
    key: &Bson,
    next: Option<i64>,
    newest: Option<TimeId>,
    count: Option<u32>,
) {
    if let Some(number) = next {
        let next = Next {
            number,
            newest,
            count,
        };
        memo(store).set_next_number(spec.collection, key, next);
    }
}

/// A write to a document matching `filter` failed on the server's side. When a document
/// matching it has an `field` that is not an array (written by another tool, which the write
/// cannot push to), the error names it as a read of it does: [`store::Error::Decode`](crate::store::Error::Decode) with the
/// collection and `_id`. Any other error is returned as it is. One read, only after a failure.
pub(crate) async fn name_foreign<S: Store>(
    store: &S,
    coll: &str,
    filter: &Filter,
    field: &str,
    e: Error,
) -> Error {
    if !matches!(e, Error::Store(StoreError::Server { .. })) {
        return e;
    }
    let mut all = match filter {
        Filter::And(all) => all.clone(),
        one => vec![one.clone()],
    };
    all.push(Filter::NotArray(field.to_owned().into()));
    // The error a read of the document gives.
    match find_one(store, coll, &Filter::And(all)).await {
        Ok(Some(mut doc)) => take_array(coll, field, &mut doc).err().unwrap_or(e),
        Ok(None) | Err(_) => e,
    }
}

/// Opening document `seq` was refused on `{key, seq}`, as when another writer opened it
/// first. When the holder is a document outside the series instead (a number field holding
/// an array, which MongoDB's unique index files under each of its numbers), no retry can open
/// it: the error names that document. One read, only after such a refusal.
async fn number_held_by_foreign<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    seq: i64,
) -> Result<()> {
    let field = spec.order.field();
    let holder = Filter::And(vec![
        spec.by_key(key),
        Filter::Eq(Path::from(field), Bson::Int64(seq)),
    ]);
    match find_one(store, spec.collection, &holder).await?.as_ref() {
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

/// Several items: fill the newest document with a compare-and-set on its `count`, then open
/// new documents of up to `size` items each, all in one ordered batch (an `insert` for one):
/// one write for the fill and one for the new documents, plus one read of the newest document
/// first (and again only after a write lost a race). Remembers the next number, as a single
/// push does. With roll-ups, each of the two writes carries the roll-up of its items after it,
/// in the same ordered batch ([`write_rolled`]).
async fn push_many<S: Store, P: IdPrefix + Sync + ?Sized>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    prefix: &P,
    items: &[Bson],
    times: &[i64],
    start: Option<i64>,
) -> Result<()> {
    // The first error of a roll-up whose items are written: the push goes on, and reports it.
    let behind = &mut None;
    let coll = spec.collection;
    let done = &mut 0usize;
    // A fill with its roll-up refused at this document and count: its next attempt, when it
    // finds them again, is the plain compare-and-set (the refusal was a sum near Int64's ends,
    // which that update reports).
    let mut unmet: Option<(Bson, u64)> = None;
    let size = spec.size as usize;
    let mut failures = 0u32;
    let mut ids = NewIds::new(spec, prefix, times.first().copied().map(seconds));
    // The values `items[range]` add to what a document keeps.
    let kept = |range: std::ops::Range<usize>| {
        let millis = times.get(range.clone()).unwrap_or(&[]);
        spec.kept(&items[range], millis)
    };
    // The number of the next document, once this call filled the newest one itself (or was
    // told the key has none): then the next document is opened without reading the newest
    // first (the new documents in one batch).
    let mut known_next: Option<i64> = start;
    while *done < items.len() {
        if failures >= MAX_ATTEMPTS {
            return Err(contention("pushing several items"));
        }
        let rest = &items[*done..];
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
                    let id = doc_id(coll, doc)?.clone();
                    // The key too: on a cluster sharded by it, the update reaches one shard.
                    let by_id =
                        Filter::and([spec.by_key(key), Filter::Eq("_id".into(), id.clone())]);
                    let cas = Filter::and([
                        by_id.clone(),
                        Filter::Eq(Path::from(spec.count_field), Bson::Int64(count as i64)),
                        Filter::Lte(
                            Path::from(spec.count_field),
                            Bson::Int64((size - take) as i64),
                        ),
                    ]);
                    let values = kept(*done..*done + take)?;
                    // The bucket as it is (the compare-and-set holds it so) with the items:
                    // the width that needs.
                    admit_into(store, spec, ids.parse(doc.get("_id")), values.bounds).await?;
                    let mut update = spec.push_update(rest[..take].to_vec(), &values);
                    let refused_before = unmet.as_ref() == Some(&(id.clone(), count));
                    let n = take as u64;
                    let matched = if spec.keeps.rollup.is_some() && !refused_before {
                        // The compare-and-set as the update's condition, not the filter's: a
                        // fill it refuses stops the batch before the roll-up.
                        update.require = Some(spec.fill_condition(&update, count));
                        let fill = WriteOp::Update {
                            filter: by_id,
                            update: Box::new(update),
                            upsert: true,
                        };
                        let (outcome, rolled) =
                            write_rolled(store, spec, key, vec![fill], &values, n).await;
                        match outcome.error {
                            None => {
                                if let Some(r @ Err(_)) = rolled {
                                    let rolled = roll_up(store, spec, key, &values, n, Some(r));
                                    keep_first(behind, rolled.await);
                                }
                                Ok(true)
                            }
                            Some(StoreError::Unmet { .. }) => {
                                unmet = Some((id, count));
                                Ok(false)
                            }
                            Some(e) => {
                                // Unknown whether the fill applied, or its roll-up.
                                if matches!(e, StoreError::Unavailable { .. }) {
                                    let _ = mark_stale(store, spec, key).await;
                                }
                                Err(e)
                            }
                        }
                    } else {
                        let pushed = store.update_one(coll, &cas, &mut update, false).await;
                        let pushed = overflowed(spec, &values, pushed).map(|p| p.matched);
                        if let Ok(true) = pushed {
                            keep_first(behind, roll_up(store, spec, key, &values, n, None).await);
                        }
                        pushed
                    };
                    let matched = match matched {
                        Ok(matched) => matched,
                        Err(e) => {
                            let e = e.into();
                            return Err(name_foreign(store, coll, &cas, spec.items_field, e).await);
                        }
                    };
                    if matched {
                        *done += take;
                        let seq = doc.get(spec.order.field()).and_then(as_int);
                        let next = seq.and_then(|n| n.checked_add(1));
                        let after = u32::try_from(count as usize + take).ok();
                        remember(store, spec, key, next, newest, after);
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
        // The rest as whole new documents `seq`, `seq + 1`... in one ordered batch: each
        // planned as a push of its own would open it (its `_id` from the one before), so a
        // refusal is met as that push meets it, with the `_id`s as they were at its document.
        let mut plan: Vec<Opening<'_, P>> = Vec::new();
        let mut docs = Vec::new();
        let (mut at, mut number, mut bytes) = (*done, seq, 0_usize);
        while at < items.len() {
            let take = size.min(items.len() - at);
            ids.at(times.get(at).copied().map(seconds));
            ids.prepare(store, number).await?;
            let before = ids.clone();
            let values = kept(at..at + take)?;
            let id = ids.id();
            admit_into(store, spec, ids.parse(Some(&id)), values.bounds).await?;
            let doc = spec.new_doc(
                key,
                id.clone(),
                number,
                items[at..at + take].to_vec(),
                &values,
            );
            // A batch stays well under the 16 MiB of a command: the rest in the next one.
            let n = crate::codec::size::document_bytes(&doc).unwrap_or(BATCH_BYTES);
            bytes = bytes.saturating_add(n);
            if !docs.is_empty() && bytes > BATCH_BYTES {
                ids = before;
                break;
            }
            docs.push(doc);
            let opened = ids.opened();
            plan.push(Opening {
                number,
                id,
                first: at,
                take,
                ids: before,
                opened,
            });
            at += take;
            number = match number.checked_add(1) {
                Some(n) => n,
                None => break,
            };
        }
        let n_items: usize = plan.iter().map(|o| o.take).sum();
        // With roll-ups: the items' roll-up after the documents, in the same ordered batch.
        let mut rolled_whole = false;
        let outcome = if spec.keeps.rollup.is_some() {
            let values = kept(*done..*done + n_items)?;
            let (n, inserts) = (
                n_items as u64,
                docs.into_iter().map(WriteOp::Insert).collect(),
            );
            let (outcome, rolled) = write_rolled(store, spec, key, inserts, &values, n).await;
            if let Some(r @ Err(_)) = rolled {
                keep_first(behind, roll_up(store, spec, key, &values, n, Some(r)).await);
            }
            rolled_whole = outcome.error.is_none();
            outcome
        } else {
            match docs.len() {
                // One document: an `insert`, as a push of one would send it.
                1 => match store
                    .insert_one(coll, docs.pop().expect("one document"))
                    .await
                {
                    Ok(()) => BatchOutcome {
                        applied: 1,
                        error: None,
                    },
                    Err(e) => BatchOutcome {
                        applied: 0,
                        error: Some(e),
                    },
                },
                _ => {
                    store
                        .write_batch(coll, docs.into_iter().map(WriteOp::Insert).collect())
                        .await
                }
            }
        };
        // Unknown how far it got (the connection broke): the documents read back.
        let unknown = matches!(outcome.error, Some(StoreError::Unavailable { .. }));
        let read_back = match unknown {
            true => opened_of(store, spec, key, items, &plan).await.ok(),
            false => None,
        };
        let applied = read_back.unwrap_or(outcome.applied);
        if spec.keeps.rollup.is_some() && !rolled_whole {
            if unknown && read_back.is_none_or(|n| n == plan.len()) {
                // Every document may be written, and the roll-up after them: not to be trusted.
                let _ = mark_stale(store, spec, key).await;
            } else if applied > 0 {
                // The batch stopped before the roll-up: the items of the documents it wrote.
                let n: usize = plan[..applied].iter().map(|o| o.take).sum();
                let values = kept(*done..*done + n)?;
                let rolled = roll_up(store, spec, key, &values, n as u64, None).await;
                keep_first(behind, rolled);
            }
        }
        for o in &plan[..applied.min(plan.len())] {
            *done += o.take;
            let count = u32::try_from(o.take).ok();
            remember(store, spec, key, o.number.checked_add(1), o.opened, count);
        }
        let Some(e) = outcome.error else {
            if let Some(last) = plan.last().filter(|o| o.take == size) {
                known_next = last.number.checked_add(1);
            }
            continue;
        };
        // Its reply lost, every document read back as opened: done.
        let Some(refused) = plan.into_iter().nth(applied) else {
            continue;
        };
        ids = refused.ids;
        match e {
            e if is_id_taken(&e) => {
                // The number is still free: open it under the next free suffix.
                failures += 1;
                ids.id_taken();
                known_next = Some(refused.number);
            }
            StoreError::DuplicateKey { .. } => {
                number_held_by_foreign(store, spec, key, refused.number).await?;
                failures += 1;
                ids.collided(refused.number);
            }
            e => return Err(e.into()),
        }
    }
    behind.take().map_or(Ok(()), Err)
}

/// Keeps the first error of a roll-up whose items are written: the push goes on.
fn keep_first(behind: &mut Option<Error>, rolled: Result<()>) {
    if let Err(e) = rolled {
        behind.get_or_insert(e);
    }
}

/// A document [`push_many`] opens in its batch: its number and `_id`, its first item and how
/// many it takes, the `_id`s as they were when it was planned (after its own `_id` was got
/// ready), and the `_id` it opened.
struct Opening<'a, P: ?Sized> {
    number: i64,
    id: Bson,
    first: usize,
    take: usize,
    ids: NewIds<'a, P>,
    opened: Option<TimeId>,
}

/// How many of `plan`'s documents a batch whose reply was lost opened, read back by `_id`: a
/// document is this batch's when it holds the number and first item planned for it (they
/// apply in order: the first one missing ends the count).
async fn opened_of<S: Store, P: ?Sized>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    items: &[Bson],
    plan: &[Opening<'_, P>],
) -> Result<usize> {
    let ids: Vec<Bson> = plan.iter().map(|o| o.id.clone()).collect();
    let mine = Filter::and([spec.by_key(key), Filter::In("_id".into(), ids)]);
    let found = (store.find(spec.collection, &mine, &FindOptions::default())).await?;
    let ours = |o: &Opening<'_, P>| {
        found.iter().any(|d| {
            d.get("_id") == Some(&o.id)
                && d.get(spec.order.field()).and_then(as_int) == Some(o.number)
                && matches!(d.get(spec.items_field), Some(Bson::Array(a)) if a.first() == items.get(o.first))
        })
    };
    Ok(plan.iter().take_while(|o| ours(o)).count())
}

/// The number of the document after `newest` (the key's newest document, full): one past its
/// number; when it has none (documents written before numbering, or by other tools), one past
/// the key's document count, so that numbering continues after them.
async fn next_number<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
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

fn read_count(spec: &SeriesSpec<'_>, doc: &Document) -> Result<u64> {
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

// [`push_one`]'s rarer path, kept out of the common push's future (it is boxed): the key's
// next number unknown, or taken by another writer.

/// [`push_one`] with the key's next number unknown (or taken by another writer): the
/// caller boxes this whole future. `None` once the item is pushed; else the number to try next
/// (`Some(None)`: still unknown), the item back in `items`.
///
/// In a collection the library created and never archived from ([`BoundsMark`]: every
/// document numbered, numbers dense from 1 and all here), the first attempt (`guess`) is one
/// write: the push's conditional upsert opening document 1, as a `findAndModify` returning the
/// open document's number when there is one. A key never seen gets document 1; a key with a
/// document open gets the item, its number known; a key with documents and none open is
/// refused on `{key, number}` (document 1 exists) and takes the read of the newest and the
/// insert of the next. Elsewhere (documents of other tools may have no number, and count; an
/// archive holds a key's first numbers), or after a refusal: the push into the open document
/// returning its number, or the read of the newest and the insert of the next.
///
/// [`BoundsMark`]: super::memo::BoundsMark
async fn push_unknown<S: Store, P: IdPrefix + Sync + ?Sized>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    kept: &Kept,
    ids: &mut NewIds<'_, P>,
    items: &mut Vec<Bson>,
    guess: &mut bool,
) -> Result<Option<Option<i64>>> {
    let coll = spec.collection;
    // The open document's `_id` comes back too: the next document's `_id` must differ from it.
    let mut fields = vec![spec.count_field, spec.order.field(), "_id"];
    // Its bounds too where the collection keeps its width: what the next push's window needs.
    if let Some((min, max)) = spec.keeps.bounds.filter(|_| width::kept_for(spec)) {
        fields.extend([min, max]);
    }
    let guessed = std::mem::take(guess) && {
        let mark = spec.bounds_mark(store).await?;
        mark.numbered && !mark.archived
    };
    if guessed {
        ids.prepare(store, 1).await?;
        let id = ids.id();
        // Within the collection's width, as the common push: a server that, two upserts
        // racing, applies the one that lost as an update of the other's document (test server,
        // T28) then applies it only within the width; the bucket it names, which the reply
        // then does not, holds the item as any the width allows.
        let window = match kept.bounds.filter(|_| spec.span_bounds().is_none()) {
            Some((t, _)) => (width::admit(store, spec, width::Width::default()).await?)
                .and_then(|w| width::window(spec, t, w)),
            None => None,
        };
        let (pushed, open, mut update) = {
            let new_id = || id.clone();
            let marks = || spec.marks();
            let mut push = spec.open_push(key, kept, 1, &new_id, &marks);
            // The key's open document, whatever the width: when it is there, the next
            // attempt pushes into it.
            let open = push.filter();
            push.window = push.window.or(window);
            let (within, order) = (push.filter(), push.order());
            let mut update = push.upsert(std::mem::take(items));
            let pushed = store
                .update_first(coll, &within, &order, "", &mut update, true, &fields)
                .await;
            (pushed, open, update)
        };
        match overflowed(spec, kept, pushed) {
            Ok(Some(before)) => return pushed_into(store, spec, key, kept, ids, &before).await,
            Ok(None) => {
                remember(store, spec, key, Some(2), ids.opened(), Some(1));
                return roll_up(store, spec, key, kept, 1, None)
                    .await
                    .map(|()| None);
            }
            Err(e) => {
                // A write that returns an error leaves the update as it was: the items back.
                *items = std::mem::take(&mut update.push[0].1);
                if is_id_taken(&e) {
                    ids.id_taken();
                    return Ok(Some(Some(1)));
                }
                if !matches!(e, StoreError::DuplicateKey { .. }) {
                    return Err(name_foreign(store, coll, &open, spec.items_field, e.into()).await);
                }
                // Document 1 exists and none was open: open the one after the newest.
                ids.collided(1);
                return open_next(store, spec, key, kept, ids, items, &open).await;
            }
        }
    }
    // The next number unknown: push into the open document returning its number
    // (`findAndModify`), which gives the next one. No hint: the open-document index both
    // filters and sorts, so the planner picks it. The push's own filter, order and update; not
    // its upsert (no number to open), so no `_id` or marks are made.
    let (no_id, no_marks) = (|| Bson::Null, Vec::new);
    let push = spec.open_push(key, kept, 0, &no_id, &no_marks);
    let open = push.filter();
    let mut update = push.update(std::mem::take(items));
    let pushed = store
        .update_first(coll, &open, &push.order(), "", &mut update, false, &fields)
        .await;
    let pushed = match overflowed(spec, kept, pushed) {
        Ok(pushed) => pushed,
        Err(e) => return Err(name_foreign(store, coll, &open, spec.items_field, e.into()).await),
    };
    if let Some(before) = pushed {
        return pushed_into(store, spec, key, kept, ids, &before).await;
    }
    // Nothing matched, so nothing moved: the items are back. No open document: read the
    // newest, open the next.
    *items = std::mem::take(&mut update.push[0].1);
    open_next(store, spec, key, kept, ids, items, &open).await
}

/// The item went into the key's open document, `before` as it was (its count, number and
/// `_id`): the next number is one past its number, remembered with its count.
async fn pushed_into<S: Store, P: IdPrefix + Sync + ?Sized>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    kept: &Kept,
    ids: &mut NewIds<'_, P>,
    before: &Document,
) -> Result<Option<Option<i64>>> {
    // Cut by span, it went to its window's document, not necessarily the newest: the next
    // number is not learned here (it is when a push opens a document).
    if spec.span_bounds().is_none() {
        let seq = before.get(spec.order.field()).and_then(as_int);
        let newest = ids.parse(before.get("_id"));
        // Pushed with no window, into a bucket named `newest`: the width it needs, raised
        // before the push returns (a read that began after it finds the item); and what a
        // window of the next push into it needs (its bounds, as they were, with the item).
        if let (Some(id), Some(b)) = (newest, kept.bounds.filter(|_| width::kept_for(spec))) {
            let mut need = width::from_start(id.start_ms(), b);
            if let Some(was) = width::bounds_of(spec, before) {
                need = need
                    .max(width::to_join(was, b.0))
                    .max(width::to_join(was, b.1));
            }
            Box::pin(width::admit(store, spec, need)).await?;
        }
        let count = (before.get(spec.count_field).and_then(as_int))
            .and_then(|c| u32::try_from(c.checked_add(1)?).ok());
        remember(
            store,
            spec,
            key,
            seq.and_then(|n| n.checked_add(1)),
            newest,
            count,
        );
    }
    roll_up(store, spec, key, kept, 1, None)
        .await
        .map(|()| None)
}

/// No document of the key is open (`open`, the push's filter, matched none): reads the newest
/// and opens the next with the item.
async fn open_next<S: Store, P: IdPrefix + Sync + ?Sized>(
    store: &S,
    spec: &SeriesSpec<'_>,
    key: &Bson,
    kept: &Kept,
    ids: &mut NewIds<'_, P>,
    items: &[Bson],
    open: &Filter,
) -> Result<Option<Option<i64>>> {
    let coll = spec.collection;
    let seq = match newest_doc(store, spec, key).await? {
        Some(doc) if open.matches(&doc) => return Ok(Some(None)), // opened meanwhile: push into it
        Some(doc) => {
            ids.after(ids.parse(doc.get("_id")));
            next_number(store, spec, key, &doc).await?
        }
        None => 1,
    };
    let id = ids.next(store, seq).await?;
    match store
        .insert_one(coll, spec.new_doc(key, id, seq, items.to_vec(), kept))
        .await
    {
        Ok(()) => {
            remember(store, spec, key, seq.checked_add(1), ids.opened(), Some(1));
            roll_up(store, spec, key, kept, 1, None)
                .await
                .map(|()| None)
        }
        // The number is still free: open it under the next free suffix (one upsert).
        Err(e) if is_id_taken(&e) => {
            ids.id_taken();
            Ok(Some(Some(seq)))
        }
        Err(StoreError::DuplicateKey { .. }) => {
            number_held_by_foreign(store, spec, key, seq).await?;
            ids.collided(seq);
            Ok(Some(None))
        }
        Err(e) => Err(e.into()),
    }
}
