//! Bulk ingest across keys: many keys' items written in batches, one ordered batch of writes
//! ([`Store::write_batch`]) once each key's newest document is known (the memo): per key, a
//! compare-and-set push filling its open document, then inserts of whole new documents; the
//! keys' fills first, so that like writes stand together (on MongoDB one command a kind of
//! write, or one `bulkWrite`). With roll-ups, the keys' roll-ups then go in one more batch, on
//! their collection, between the insert and the delete of the batch's pending mark
//! (`series::pending`, `rollups.rs`).
//! Any write the batch could not apply (another writer got there first, an `_id` taken) stops
//! the batch there; the keys from there on go through the ordinary push, which learns the
//! truth. So nothing is lost, nothing is written twice, and each key's items keep their order.

use crate::store::Error as StoreError;
use std::collections::HashMap;

use bson::{Bson, Document};

mod rollups;

use super::ids::parse_bucket_id;
use super::push::{push, seconds};
use super::read::take_array;
use super::{Next, TimeId, BATCH_BYTES};
use crate::codec::as_int;
use crate::series::bucket_id;
use crate::spec::SeriesSpec;
use crate::store::query::{Filter, FindOptions, Path};
use crate::store::{BatchOutcome, Store, WriteOp};
use crate::{Error, Result};

/// One item to ingest: its key (and the key's `_id` prefix), the serialized item, its time
/// (epoch milliseconds), and its index in the caller's input.
pub(crate) struct Entry {
    pub(crate) key: Bson,
    pub(crate) prefix: String,
    pub(crate) item: Bson,
    pub(crate) millis: i64,
    pub(crate) index: usize,
}

/// Writes `entries` (each key's in order) in batches of at most `batch` items. Returns how
/// many were written; on an error, [`Error::Ingest`] with the indexes of those that were not.
pub(crate) async fn ingest<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    entries: Vec<Entry>,
    batch: usize,
) -> Result<u64> {
    let unwritten_all = |from: &[Entry], e: Error, written: u64| Error::Ingest {
        written,
        unwritten: from.iter().map(|e| e.index).collect(),
        source: Box::new(e),
    };
    let mut sizes = Vec::with_capacity(entries.len());
    for e in &entries {
        match crate::codec::size::check_item_size(spec.collection, &e.item) {
            Ok(n) => sizes.push(n),
            Err(err) => return Err(unwritten_all(&entries, err.into(), 0)),
        }
    }
    if let Err(e) = spec.ensure_indexes(store).await {
        return Err(unwritten_all(&entries, e, 0));
    }
    let mut written = 0u64;
    let mut start = 0;
    while start < entries.len() {
        // The next batch: `batch` items, fewer when they pass the byte budget.
        let (mut end, mut bytes) = (start, 0usize);
        while end < entries.len() && end - start < batch.max(1) {
            bytes += sizes[end];
            if bytes > BATCH_BYTES && end > start {
                break;
            }
            end += 1;
        }
        match ingest_batch(store, spec, &entries[start..end]).await {
            Ok(n) => written += n,
            Err((n, mut unwritten, e)) => {
                unwritten.extend(entries[end..].iter().map(|e| e.index));
                unwritten.sort_unstable();
                return Err(Error::Ingest {
                    written: written + n,
                    unwritten,
                    source: Box::new(e),
                });
            }
        }
        start = end;
    }
    Ok(written)
}

/// What this process knows of a key's newest document, for a batch.
#[derive(Clone, Debug)]
struct State {
    /// The number of the key's next document.
    next: i64,
    /// The newest document's `_id` parts and count (`None`: the key has no document).
    newest: Option<(TimeId, u32)>,
    /// A series cut by span: the key's open documents of the windows the batch writes to.
    open: Vec<Open>,
}

/// An open document of a series cut by span.
#[derive(Clone, Copy, Debug)]
struct Open {
    /// The start of its window.
    window: i64,
    id: TimeId,
    count: u32,
}

/// One key's items in a batch, and what the batch does with them.
struct Group<'a> {
    key: &'a Bson,
    prefix: &'a str,
    entries: Vec<&'a Entry>,
    state: Option<State>,
}

/// What one write of the batch holds: its group, its items (a range of the group's entries),
/// its document's `_id`, and the count the document had before it (0 for an insert).
struct Planned {
    group: usize,
    items: std::ops::Range<usize>,
    id: Bson,
    before: usize,
}

type BatchError = (u64, Vec<usize>, Error);

async fn ingest_batch<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    entries: &[Entry],
) -> std::result::Result<u64, BatchError> {
    // Group by key (by value), each key's items in input order.
    let mut groups: Vec<Group> = Vec::new();
    let mut by_key: HashMap<Vec<u8>, usize> = HashMap::new();
    for e in entries {
        let g = *by_key
            .entry(crate::codec::order::value_key(&e.key))
            .or_insert_with(|| {
                groups.push(Group {
                    key: &e.key,
                    prefix: &e.prefix,
                    entries: Vec::new(),
                    state: None,
                });
                groups.len() - 1
            });
        groups[g].entries.push(e);
    }
    let routed = match store.routes_by_shard_key().await {
        Ok(routed) => routed,
        Err(e) => return Err((0, all_indexes(&groups), e.into())),
    };
    if let Err(e) = learn(store, spec, &mut groups).await {
        return Err((0, all_indexes(&groups), e));
    }
    // The writes: per key, fill the newest document, then insert whole new ones (cut by span:
    // per window, fill its open document, then insert new ones).
    let (mut ops, mut planned) = (Vec::new(), Vec::new());
    for (g, group) in groups.iter_mut().enumerate() {
        let Some(mut st) = group.state.take() else {
            continue;
        };
        let mut plan = Plan {
            spec,
            routed,
            g,
            group,
            ops: &mut ops,
            planned: &mut planned,
        };
        let done = if spec.span_bounds().is_some() {
            plan.spanned(&mut st)
        } else {
            plan.by_size(&mut st)
        };
        match done {
            Ok(true) => group.state = Some(st),
            // Not planned (its windows go back in time): the ordinary push.
            Ok(false) => {}
            Err(e) => return Err((0, all_indexes(&groups), e)),
        }
    }
    // Each key's roll-up (in the roll-ups' collection), of all its items in the batch: its
    // aggregates computed before anything is written, and the keys to mark pending.
    let rolls = match rollups::rolls(spec, &groups, &planned, planned.len()) {
        Ok(rolls) => rolls,
        Err(e) => return Err((0, all_indexes(&groups), e)),
    };
    // Like writes together (on MongoDB a command per kind).
    let (ops, planned) = like_writes_together(ops, planned);
    if let Err(e) = Box::pin(keep_width(store, spec, &groups, &planned)).await {
        return Err((0, all_indexes(&groups), e));
    }
    // With roll-ups: the batch's pending mark first, so that no read trusts a roll-up this
    // batch could leave behind its buckets (`series::pending`).
    let pending = match rolls.is_empty() {
        true => None,
        false => {
            let keys = rolls.iter().map(|r| groups[r.group].key.clone()).collect();
            match super::pending::open(store, spec, keys).await {
                Ok(p) => Some(p),
                Err(e) => return Err((0, all_indexes(&groups), e)),
            }
        }
    };
    let outcome = if ops.is_empty() {
        BatchOutcome {
            applied: 0,
            error: None,
        }
    } else {
        store.write_batch(spec.collection, ops).await
    };
    let applied = match outcome.error {
        None => planned.len(),
        // Unknown how far it got (the connection broke): read the documents back.
        Some(StoreError::Unavailable { .. }) => {
            match verify(store, spec, &groups, &planned).await {
                Ok(n) => n,
                // The pending mark stays: reads count these keys' buckets until `backfill`.
                Err(_) => {
                    let e = outcome.error.expect("an error");
                    return Err((0, all_indexes(&groups), e.into()));
                }
            }
        }
        Some(_) => outcome.applied.min(planned.len()),
    };
    // The roll-ups of the writes that applied, then the pending mark deleted.
    let settled = match pending {
        Some(pending) => {
            rollups::send(store, spec, &groups, &planned, applied, rolls, pending).await
        }
        None => Ok(()),
    };

    let mut written = 0u64;
    // Keys whose writes all applied: remembered as planned.
    let mut pending: Vec<(usize, usize)> = Vec::new(); // (group, first entry not written)
    let mut first_unapplied: HashMap<usize, usize> = HashMap::new();
    for (i, p) in planned.iter().enumerate() {
        if i < applied {
            written += p.items.len() as u64;
        } else {
            first_unapplied.entry(p.group).or_insert(p.items.start);
        }
    }
    for (g, group) in groups.iter().enumerate() {
        let memo = super::memo(store);
        match (first_unapplied.get(&g), &group.state) {
            (None, Some(st)) => {
                let next = Next {
                    number: st.next,
                    newest: st.newest.map(|(id, _)| id),
                    count: st.newest.map(|(_, c)| c),
                };
                memo.set_next_number(spec.collection, group.key, next);
            }
            (Some(&from), _) => {
                memo.take_next_number(spec.collection, group.key);
                pending.push((g, from));
            }
            // Not learned (numbering unknown): the ordinary push.
            (None, None) => pending.push((g, 0)),
        }
    }
    // The rest, key by key, through the ordinary push (which learns what the batch did not).
    // A key that fails is reported whole (its items from there on), and the others go on.
    // A roll-up not updated: the items are written (none is reported unwritten for it).
    let mut failed: Option<(Vec<usize>, Error)> = settled.err().map(|e| (Vec::new(), e));
    for &(g, from) in &pending {
        let group = &groups[g];
        let rest = &group.entries[from..];
        let values = rest.iter().map(|e| e.item.clone()).collect();
        let millis: Vec<i64> = rest.iter().map(|e| e.millis).collect();
        match push(store, spec, group.key, group.prefix, values, &millis).await {
            Ok(()) => written += rest.len() as u64,
            Err(e) => {
                let (unwritten, _) = failed.get_or_insert_with(|| (Vec::new(), e));
                unwritten.extend(rest.iter().map(|e| e.index));
            }
        }
    }
    match failed {
        None => Ok(written),
        Some((unwritten, e)) => Err((written, unwritten, e)),
    }
}

/// The batch's writes reordered so that writes of one kind stand together: every key's
/// leading fills first, then each key's other writes (mostly inserts), each key's own writes
/// in their order. A failed write still stops the batch at a prefix of each key's writes (what
/// the ordinary push then learns), and a store that sends a run of one kind as one command
/// (the MongoDB store, `insert` and `update`) sends two or three commands a batch, not two a
/// key.
fn like_writes_together(ops: Vec<WriteOp>, planned: Vec<Planned>) -> (Vec<WriteOp>, Vec<Planned>) {
    let mut past_fills = vec![false; planned.iter().map(|p| p.group + 1).max().unwrap_or(0)];
    let (mut fills, mut rest) = (Vec::new(), Vec::new());
    for (op, p) in ops.into_iter().zip(planned) {
        let past = &mut past_fills[p.group];
        *past |= !matches!(op, WriteOp::Update { .. });
        if *past {
            rest.push((op, p));
        } else {
            fills.push((op, p));
        }
    }
    fills.into_iter().chain(rest).unzip()
}

/// In a collection that keeps its width (not cut by span, whose width the span's covers): the
/// width the planned writes need, raised first. Each write names its bucket (a fill by its
/// `_id`, an insert), so what its items need is known before it is sent.
async fn keep_width<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    groups: &[Group<'_>],
    planned: &[Planned],
) -> Result<()> {
    if spec.span_bounds().is_some() || !super::width::kept_for(spec) || planned.is_empty() {
        return Ok(());
    }
    let mut need = super::width::Width::default();
    for p in planned {
        let Bson::String(id) = &p.id else { continue };
        let Some(named) = parse_bucket_id(groups[p.group].prefix, id) else {
            continue;
        };
        let ms = groups[p.group].entries[p.items.clone()]
            .iter()
            .map(|e| e.millis);
        let (lo, hi) = (ms.clone().min().unwrap_or(0), ms.max().unwrap_or(0));
        need = need.max(super::width::from_start(named.start_ms(), (lo, hi)));
    }
    super::width::admit(store, spec, need).await?;
    Ok(())
}

/// The input indexes of every item of the batch.
fn all_indexes(groups: &[Group<'_>]) -> Vec<usize> {
    groups
        .iter()
        .flat_map(|g| g.entries.iter().map(|e| e.index))
        .collect()
}

/// Fills in each group's state: from the memo when it knows the newest document's count;
/// otherwise one find of the keys' open documents, then one read of the newest document of
/// each key still unknown ([`Store::first_per`]): at most two commands, whatever the number
/// of keys. A key whose newest document has no number is left unknown (its items take the
/// ordinary push).
async fn learn<S: Store>(store: &S, spec: &SeriesSpec<'_>, groups: &mut [Group<'_>]) -> Result<()> {
    let memo = super::memo(store);
    let spanned = spec.span_bounds();
    let mut unknown: Vec<usize> = Vec::new();
    for (g, group) in groups.iter_mut().enumerate() {
        match memo.next_number(spec.collection, group.key) {
            Some(Next {
                number,
                newest: Some(id),
                count,
            }) if count.is_some() || spanned.is_some() => {
                // Cut by span: the newest document is the open one of its window, and the
                // only one the items can go to when none is in an earlier window (a newer
                // window's items open documents of their own).
                let window = (spec.keeps).window_of(id.start_ms());
                let forward =
                    (group.entries.iter()).all(|e| spec.keeps.window_of(e.millis) >= window);
                let open = match (spanned, count, window) {
                    (Some(_), Some(count), Some(window)) if forward => {
                        vec![Open { window, id, count }]
                    }
                    _ => Vec::new(),
                };
                group.state = Some(State {
                    next: number,
                    newest: Some((id, count.unwrap_or(0))),
                    open,
                })
            }
            _ => unknown.push(g),
        }
    }
    if let Some((min, _, _)) = spanned {
        return learn_spanned(store, spec, groups, unknown, min).await;
    }
    if unknown.is_empty() {
        return Ok(());
    }
    let open = Filter::and(open_of(spec, groups, &unknown));
    let opts = FindOptions {
        projection: [spec.key_field, spec.count_field, spec.order.field()]
            .map(Path::from)
            .to_vec(),
        ..FindOptions::default()
    };
    let docs = store.find(spec.collection, &open, &opts).await?;
    let docs = by_key(spec, &docs);
    let mut still: Vec<usize> = Vec::new();
    for g in unknown {
        // The key's open documents: at most one (the newest) unless written by other tools.
        let mine = of_key(&docs, groups[g].key).iter();
        let newest = mine.max_by_key(|d| d.get(spec.order.field()).and_then(as_int));
        match newest {
            Some(doc) => groups[g].state = state_of(spec, groups[g].prefix, doc),
            None => still.push(g),
        }
    }
    if still.is_empty() {
        return Ok(());
    }
    // Keys with no open document: each one's newest, all in one read (none for a key with no
    // document at all).
    learn_newest(store, spec, groups, still, &opts.projection).await
}

/// The state of each of the keys `of` from its newest document, all in one read
/// ([`Store::first_per`]; a key with no document starts at 1).
async fn learn_newest<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    groups: &mut [Group<'_>],
    of: Vec<usize>,
    projection: &[Path],
) -> Result<()> {
    let theirs = Filter::and([keys_in(spec, groups, &of), spec.in_series()]);
    let by = spec.key_field;
    let newest = (store.first_per(
        spec.collection,
        &theirs,
        by,
        &spec.newest_first(),
        projection,
    ))
    .await?;
    let newest = by_key(spec, &newest);
    for g in of {
        let doc = of_key(&newest, groups[g].key).first();
        groups[g].state = match doc {
            None => Some(State {
                next: 1,
                newest: None,
                open: Vec::new(),
            }),
            Some(doc) => state_of(spec, groups[g].prefix, doc),
        };
    }
    Ok(())
}

/// [`learn`] for a series cut by span: the number of each key's next document from the memo
/// or, for the keys it does not know, one read of their newest documents; and one find of the
/// keys' open documents in the windows the batch writes to (from its earliest item's), unless
/// the memo gave a key's (its newest document and count, with no item of the batch in an
/// earlier window): at most two commands, whatever the number of keys, and none for a batch
/// of keys this process wrote last. A key with an open document whose `_id`
/// is not one of its time-named `_id`s is left unknown (its items take the ordinary push).
async fn learn_spanned<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    groups: &mut [Group<'_>],
    unknown: Vec<usize>,
    min: &str,
) -> Result<()> {
    let fields = [spec.key_field, spec.count_field, spec.order.field(), min];
    let opts = FindOptions {
        projection: fields.map(Path::from).to_vec(),
        ..FindOptions::default()
    };
    if !unknown.is_empty() {
        learn_newest(store, spec, groups, unknown, &opts.projection).await?;
    }
    // The keys whose open documents the batch must read: those the memo gave no open one.
    let known: Vec<usize> = (0..groups.len())
        .filter(|g| groups[*g].state.as_ref().is_some_and(|s| s.open.is_empty()))
        .collect();
    let earliest = (groups
        .iter()
        .flat_map(|g| g.entries.iter().map(|e| e.millis)))
    .min();
    let Some(from) = earliest.and_then(|t| spec.keeps.window_of(t)) else {
        return Ok(());
    };
    if known.is_empty() {
        return Ok(());
    }
    let mut open = open_of(spec, groups, &known);
    let since = Bson::DateTime(bson::DateTime::from_millis(from));
    open.push(Filter::Gte(Path::from(min), since));
    let open = Filter::and(open);
    let docs = store.find(spec.collection, &open, &opts).await?;
    let docs = by_key(spec, &docs);
    for g in known {
        let (key, prefix) = (groups[g].key, groups[g].prefix);
        let mut open = Vec::new();
        for doc in of_key(&docs, key) {
            let time = match doc.get(min) {
                Some(Bson::DateTime(d)) => Some(d.timestamp_millis()),
                _ => None,
            };
            let parsed = state_of(spec, prefix, doc).zip(time);
            let Some((State { newest, .. }, time)) = parsed else {
                open.clear();
                groups[g].state = None;
                break;
            };
            let (id, count) = newest.expect("a state of a document");
            open.push(Open {
                window: spec.keeps.window_of(time).unwrap_or(0),
                id,
                count,
            });
        }
        if let Some(st) = groups[g].state.as_mut() {
            st.open = open;
        }
    }
    Ok(())
}

/// `{key: {$in: [the keys of groups `of`]}}`.
fn keys_in(spec: &SeriesSpec<'_>, groups: &[Group<'_>], of: &[usize]) -> Filter {
    let keys = of.iter().map(|g| groups[*g].key.clone()).collect();
    Filter::In(Path::from(spec.key_field), keys)
}

/// The open documents of the keys of groups `of`: the conditions, to add more to.
fn open_of(spec: &SeriesSpec<'_>, groups: &[Group<'_>], of: &[usize]) -> Vec<Filter> {
    vec![
        keys_in(spec, groups, of),
        spec.open_partial(),
        spec.in_series(),
    ]
}

/// Documents by their key's value (numbers by value: [`value_key`]), in their order: each
/// key's then found at once, where a search per key would take keys × documents steps.
///
/// [`value_key`]: crate::codec::order::value_key
fn by_key<'d>(spec: &SeriesSpec<'_>, docs: &'d [Document]) -> HashMap<Vec<u8>, Vec<&'d Document>> {
    let mut by: HashMap<Vec<u8>, Vec<&Document>> = HashMap::new();
    for doc in docs {
        if let Some(k) = doc.get(spec.key_field) {
            by.entry(crate::codec::order::value_key(k))
                .or_default()
                .push(doc);
        }
    }
    by
}

/// The documents of [`by_key`] whose key is `key`.
fn of_key<'m, 'd>(by: &'m HashMap<Vec<u8>, Vec<&'d Document>>, key: &Bson) -> &'m [&'d Document] {
    by.get(&crate::codec::order::value_key(key))
        .map_or(&[], Vec::as_slice)
}

/// The state a key's newest document gives: `None` when it has no number, or its `_id` is not
/// one of the key's time-named `_id`s, or its count is not a count.
fn state_of(spec: &SeriesSpec<'_>, prefix: &str, doc: &Document) -> Option<State> {
    let seq = doc.get(spec.order.field()).and_then(as_int)?;
    let id = match doc.get("_id") {
        Some(Bson::String(id)) => parse_bucket_id(prefix, id)?,
        _ => return None,
    };
    let count = doc.get(spec.count_field).and_then(as_int)?;
    Some(State {
        next: seq.checked_add(1)?,
        newest: Some((id, u32::try_from(count).ok()?)),
        open: Vec::new(),
    })
}

/// After a batch whose fate is unknown: how many of its writes applied (they apply in order),
/// read back by `_id`: a write applied when its document holds its items where it put them.
async fn verify<S: Store>(
    store: &S,
    spec: &SeriesSpec<'_>,
    groups: &[Group<'_>],
    planned: &[Planned],
) -> Result<usize> {
    let ids: Vec<Bson> = planned.iter().map(|p| p.id.clone()).collect();
    let keys: Vec<Bson> = groups.iter().map(|g| g.key.clone()).collect();
    let by_ids = Filter::and([
        Filter::In(Path::from(spec.key_field), keys),
        Filter::In("_id".into(), ids),
    ]);
    let docs = (store.find(spec.collection, &by_ids, &FindOptions::default())).await?;
    let by_id: HashMap<Vec<u8>, &Document> = (docs.iter())
        .filter_map(|d| Some((crate::codec::order::value_key(d.get("_id")?), d)))
        .collect();
    for (i, p) in planned.iter().enumerate() {
        let doc = by_id.get(&crate::codec::order::value_key(&p.id)).copied();
        let holds = doc.is_some_and(|d| {
            let mut d = d.clone();
            let Ok(items) = take_array(spec.collection, spec.items_field, &mut d) else {
                return false;
            };
            let ours = &groups[p.group].entries[p.items.clone()];
            items.len() >= p.before + ours.len()
                && (items[p.before..p.before + ours.len()].iter())
                    .zip(ours)
                    .all(|(a, b)| a == &b.item)
        });
        if !holds {
            return Ok(i);
        }
    }
    Ok(planned.len())
}

// The writes a batch plans for one key's items: a fill of the open document, then inserts
// of new ones (for a series cut by span, per window).

/// The writes of one key's items in a batch, added to the batch's.
struct Plan<'p, 'a> {
    spec: &'p SeriesSpec<'p>,
    /// The store routes by shard key (a `mongos`): a fill's filter names the key.
    routed: bool,
    g: usize,
    group: &'p Group<'a>,
    ops: &'p mut Vec<WriteOp>,
    planned: &'p mut Vec<Planned>,
}

impl Plan<'_, '_> {
    /// Fill the newest document, then insert whole new ones. Always planned.
    fn by_size(&mut self, st: &mut State) -> Result<bool> {
        let (size, n) = (self.spec.size as usize, self.group.entries.len());
        let mut done = 0;
        if let Some((id, count)) = st.newest.filter(|(_, c)| (*c as usize) < size) {
            let take = (size - count as usize).min(n);
            self.fill(0..take, id, count)?;
            st.newest = Some((id, count + take as u32));
            done = take;
        }
        while done < n {
            let take = size.min(n - done);
            self.insert(done..done + take, st)?;
            done += take;
        }
        Ok(true)
    }

    /// Cut by span: per window, fill its open document, then insert new ones. Planned only
    /// when the items' windows never go back (their runs are then in input order, as the
    /// batch's writes are); otherwise `false`, and the key's items take the ordinary push.
    fn spanned(&mut self, st: &mut State) -> Result<bool> {
        let (size, n) = (self.spec.size as usize, self.group.entries.len());
        let window = |i: usize| (self.spec.keeps).window_of(self.group.entries[i].millis);
        if (1..n).any(|i| window(i) < window(i - 1)) {
            return Ok(false);
        }
        let mut done = 0;
        while done < n {
            let w = window(done);
            let run = (done..n).find(|&i| window(i) != w).unwrap_or(n);
            let open =
                (st.open.iter_mut()).find(|o| Some(o.window) == w && (o.count as usize) < size);
            if let Some(o) = open {
                let take = (size - o.count as usize).min(run - done);
                let (id, count) = (o.id, o.count);
                o.count += take as u32;
                // The newest document's count, followed for the next batch (the memo).
                if let Some((_, c)) = st.newest.as_mut().filter(|(n, _)| *n == id) {
                    *c = o.count;
                }
                self.fill(done..done + take, id, count)?;
                done += take;
                continue;
            }
            let take = size.min(run - done);
            let id = self.insert(done..done + take, st)?;
            st.open.push(Open {
                window: w.unwrap_or(0),
                id,
                count: take as u32,
            });
            done += take;
        }
        Ok(true)
    }

    fn values(&self, r: std::ops::Range<usize>) -> (Vec<Bson>, Vec<i64>) {
        let entries = &self.group.entries[r];
        (
            entries.iter().map(|e| e.item.clone()).collect(),
            entries.iter().map(|e| e.millis).collect(),
        )
    }

    /// Items `r` pushed into the document with `_id` parts `id`, which holds `count`.
    fn fill(&mut self, r: std::ops::Range<usize>, id: TimeId, count: u32) -> Result<()> {
        let spec = self.spec;
        let (values, millis) = self.values(r.clone());
        let kept = spec.kept(&values, &millis)?;
        let mut update = spec.push_update(values, &kept);
        // The compare-and-set: the document holds `count` items, as this process last saw
        // it. Should another writer have pushed, or the document be gone (the upsert then
        // tests the document it would insert), the update is refused and the batch stops
        // there. In the update, not in the filter: a condition beside the `_id` in a filter
        // costs a planned query on every write (test server T25).
        update.require = Some(spec.fill_condition(&update, u64::from(count)));
        let bson_id = Bson::String(bucket_id(self.group.prefix, id.seconds, id.suffix));
        // The key too behind a router: an update on a cluster sharded by it must name it.
        // Elsewhere the `_id` alone: a condition on the key brings the key's indexes in as
        // candidate plans, which the test server weighs on every write (test server T16).
        let by_id = Filter::Eq("_id".into(), bson_id.clone());
        let filter = match self.routed {
            true => Filter::and([spec.by_key(self.group.key), by_id]),
            false => by_id,
        };
        self.ops.push(WriteOp::Update {
            filter,
            update: Box::new(update),
            upsert: true,
        });
        self.planned.push(Planned {
            group: self.g,
            items: r,
            id: bson_id,
            before: count as usize,
        });
        Ok(())
    }

    /// Items `r` as new document `st.next`, after `st.newest`: its `_id` parts.
    fn insert(&mut self, r: std::ops::Range<usize>, st: &mut State) -> Result<TimeId> {
        let spec = self.spec;
        let secs = seconds(self.group.entries[r.start].millis);
        let suffix = match st.newest {
            Some((id, _)) if id.seconds == secs => id.suffix.saturating_add(1),
            _ => 0,
        };
        let id = Bson::String(bucket_id(self.group.prefix, secs, suffix));
        let (values, millis) = self.values(r.clone());
        let kept = spec.kept(&values, &millis)?;
        let doc = spec.new_doc(self.group.key, id.clone(), st.next, values, &kept);
        self.ops.push(WriteOp::Insert(doc));
        self.planned.push(Planned {
            group: self.g,
            items: r.clone(),
            id,
            before: 0,
        });
        let id = TimeId {
            seconds: secs,
            suffix,
        };
        st.newest = Some((id, r.len() as u32));
        st.next += 1;
        Ok(id)
    }
}
