//! The operations of the store contract, written once over where the collections live
//! ([`Space`]): the store's own state for plain operations, a transaction's snapshot and
//! working copies for the transaction's.
//!
//! A write first finds the documents it changes, then claims them ([`Space::claim`]: a
//! transaction checks them for conflicts, a plain write waits for the transactions holding
//! them), and only then changes anything.

use std::collections::BTreeSet;

use bson::{Bson, Document, RawDocumentBuf};

use super::apply::UpdateEngine;
use super::collection::{fields_of, id_first, Collection};
use super::key::Key;
use pattern_store::query::eval::get_path;
use pattern_store::query::{Filter, FindOptions, Graph, GraphLookup, Path, Update};
use pattern_store::{ArrayStats, UpdateOutcome};
use pattern_store::{Error, Result};

/// Why an operation stopped before it finished.
#[derive(Debug)]
pub(super) enum Stop {
    /// It failed (nothing was changed, unless the operation says otherwise).
    Failed(Error),
    /// A plain write would change a document this open transaction (its id) has written:
    /// nothing was changed; it runs again once the transaction ends.
    Wait(u64),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Failed(e)
    }
}

/// What an operation returns: its result, or why it stopped.
pub(super) type Step<T> = std::result::Result<T, Stop>;

/// Where an operation's collections live.
pub(super) trait Space {
    /// Collection `coll` as this space sees it (`None`: it does not exist).
    fn read(&mut self, coll: &str) -> Option<&Collection>;

    /// Collection `coll` to change (created empty if need be). Only the documents
    /// [`Space::claim`] accepted may be changed in it.
    fn write(&mut self, coll: &str) -> &mut Collection;

    /// Accepts, or refuses, that the operation changes the documents `ids` (their `_id`s) of
    /// `coll`, before it changes anything.
    fn claim<'b>(&mut self, coll: &str, ids: impl IntoIterator<Item = &'b Key>) -> Step<()>;
}

/// [`Store::insert_one`](pattern_store::Store::insert_one); the document is taken once inserted
/// (left in place when the operation waits or fails).
pub(super) fn insert<S: Space>(space: &mut S, coll: &str, doc: &mut Option<Document>) -> Step<()> {
    let d = doc.as_mut().expect("a document to insert");
    if !d.contains_key("_id") {
        d.insert("_id", bson::oid::ObjectId::new());
    }
    space.claim(coll, d.get("_id").map(Key::of).as_ref())?;
    let d = doc.take().expect("a document to insert");
    space.write(coll).insert(coll, d)?;
    Ok(())
}

/// Updates the first document matching `filter` in `sort` order, or upserts. With `fields`,
/// also returns the matched document's `_id` and those fields, as they were.
pub(super) fn update<S: Space>(
    space: &mut S,
    coll: &str,
    filter: &Filter,
    sort: &[(Path, i32)],
    update: &mut Update,
    upsert: bool,
    fields: Option<&[&str]>,
) -> Step<(UpdateOutcome, Option<Document>)> {
    update.check()?;
    if let Some((id, unchanged)) = first_for_update(space, coll, filter, sort, update, fields) {
        // An update that changes nothing writes nothing, as on MongoDB: no claim, no stamp.
        if let Some(before) = unchanged {
            let outcome = UpdateOutcome {
                matched: true,
                upserted: false,
                modified: false,
            };
            return Ok((outcome, before));
        }
        space.claim(coll, [&id])?;
        let c = space.write(coll);
        // An in-place push appends its items (it takes none else): the document changed.
        let (before, modified) = match c.push_in_place(coll, &id, update, fields, 0) {
            Some(done) => (done?, true),
            None => c.update(coll, &id, update, fields)?,
        };
        let outcome = UpdateOutcome {
            matched: true,
            upserted: false,
            modified,
        };
        return Ok((outcome, before));
    }
    if !upsert {
        return Ok((UpdateOutcome::default(), None));
    }
    let mut doc = Document::new();
    for (k, v) in filter.equalities() {
        doc.insert(k, v.clone());
    }
    let copied = doc.len();
    // A required condition is tested on the document the upsert starts from, as the
    // pipeline's `$cond` sees it.
    crate::apply::check_requirement(coll, update, &doc)?;
    update.apply(&mut doc, true).map_err(|e| Error::Server {
        message: e,
        source: None,
    })?;
    // MongoDB (5.0+) adds the fields an update creates in lexicographic order. The update
    // appended them after the fields copied from the filter (whose values it may have
    // changed in place).
    // `_id` first, as every stored document has it (so that `insert` need not move it), and
    // made here when neither the filter nor the update gives it (to be claimed).
    let mut all: Vec<(String, Bson)> = doc.into_iter().collect();
    let mut created = all.split_off(copied);
    created.sort_by(|a, b| a.0.cmp(&b.0));
    let id = match all.iter().position(|(k, _)| k == "_id") {
        Some(i) => all.remove(i),
        None => match created.iter().position(|(k, _)| k == "_id") {
            Some(i) => created.remove(i),
            None => ("_id".to_owned(), bson::oid::ObjectId::new().into()),
        },
    };
    space.claim(coll, [&Key::of(&id.1)])?;
    let ordered: Document = std::iter::once(id).chain(all).chain(created).collect();
    space.write(coll).insert(coll, ordered)?;
    let outcome = UpdateOutcome {
        matched: false,
        upserted: true,
        modified: false,
    };
    Ok((outcome, None))
}

/// [`Store::update_returning`](pattern_store::Store::update_returning): the first document
/// matching `filter` updated, then its `_id` and `fields` as they are after the update.
pub(super) fn update_returning<S: Space>(
    space: &mut S,
    coll: &str,
    filter: &Filter,
    update: &mut Update,
    fields: &[&str],
) -> Step<Option<Document>> {
    update.check()?;
    let mut returned = vec!["_id"];
    returned.extend(fields.iter().copied().filter(|f| *f != "_id"));
    let Some((id, unchanged)) = first_for_update(space, coll, filter, &[], update, Some(&returned))
    else {
        return Ok(None);
    };
    if let Some(after) = unchanged {
        return Ok(after); // as it was, and is: nothing written
    }
    space.claim(coll, [&id])?;
    let c = space.write(coll);
    c.update(coll, &id, update, None)?;
    let doc = &c.docs.get(&id).expect("updated above").doc;
    Ok(Some(fields_of(doc, &returned)))
}

/// [`Store::replace_one`](pattern_store::Store::replace_one); the document is taken once written.
pub(super) fn replace<S: Space>(
    space: &mut S,
    coll: &str,
    filter: &Filter,
    doc: &mut Option<Document>,
    upsert: bool,
) -> Step<UpdateOutcome> {
    if let Some(id) = space.read(coll).and_then(|c| c.first_match(filter)) {
        space.claim(coll, [&id])?;
        let mut doc = doc.take().expect("a replacement");
        doc.insert("_id", id.value().into_owned());
        let doc = id_first(doc);
        let c = space.write(coll);
        let modified = (c.docs.get(&id)).is_none_or(|s| *s.doc != doc);
        c.replace(coll, &id, doc)?;
        return Ok(UpdateOutcome {
            matched: true,
            upserted: false,
            modified,
        });
    }
    if !upsert {
        return Ok(UpdateOutcome::default());
    }
    // The document's own `_id`, else the filter's, else a new one; first.
    let given = doc.as_ref().expect("a replacement").get("_id");
    let id = given
        .or_else(|| (filter.equalities().into_iter()).find_map(|(k, v)| (k == "_id").then_some(v)))
        .cloned()
        .unwrap_or_else(|| bson::oid::ObjectId::new().into());
    space.claim(coll, [&Key::of(&id)])?;
    let mut full = bson::doc! {"_id": id};
    full.extend(doc.take().expect("a replacement"));
    space.write(coll).insert(coll, full)?;
    Ok(UpdateOutcome {
        matched: false,
        upserted: true,
        modified: false,
    })
}

/// [`Store::delete_many`](pattern_store::Store::delete_many).
pub(super) fn delete<S: Space>(space: &mut S, coll: &str, filter: &Filter) -> Step<u64> {
    let ids = match space.read(coll) {
        Some(c) => c.matching(filter),
        None => return Ok(0),
    };
    if ids.is_empty() {
        return Ok(0);
    }
    space.claim(coll, &ids)?;
    space.write(coll).delete(&ids);
    Ok(ids.len() as u64)
}

/// [`Store::update_many`](pattern_store::Store::update_many): each matching document in `_id` order,
/// each atomically; the first that refuses the update stops it (those before stay updated).
pub(super) fn update_many<S: Space>(
    space: &mut S,
    coll: &str,
    filter: &Filter,
    update: &Update,
) -> Step<u64> {
    update.check()?;
    let (matched, ids) = match space.read(coll) {
        Some(c) => {
            let mut ids = c.matching(filter);
            let matched = ids.len() as u64;
            // Those it changes nothing in are not written, as on MongoDB: not claimed either.
            if update.sets_alone() {
                ids.retain(|id| (c.docs.get(id)).is_none_or(|s| !update.changes_nothing(&s.doc)));
            }
            (matched, ids)
        }
        None => return Ok(0),
    };
    if ids.is_empty() {
        return Ok(matched);
    }
    space.claim(coll, &ids)?;
    let c = space.write(coll);
    for id in &ids {
        // `Collection::update` moves pushed items into the document: each gets its own copy.
        let mut one = update.clone();
        c.update(coll, id, &mut one, None)?;
    }
    Ok(matched)
}

/// The first document matching `filter` in `sort` order, for `update`: its `_id`, and, when
/// the update changes nothing in it ([`UpdateEngine::changes_nothing`]), what an update
/// returns of it (`fields` as [`Collection::update`] takes them): it is then not written.
fn first_for_update<S: Space>(
    space: &mut S,
    coll: &str,
    filter: &Filter,
    sort: &[(Path, i32)],
    update: &Update,
    fields: Option<&[&str]>,
) -> Option<(Key, Option<Option<Document>>)> {
    let c = space.read(coll)?;
    // Without a sort, the document read to match the filter is the one checked.
    let (id, doc) = match sort {
        [] => c
            .first_matching(filter)
            .map(|(id, doc)| (id.clone(), Some(doc)))?,
        _ => (c.first_in_order(filter, sort)?, None),
    };
    let unchanged = (update.sets_alone())
        .then(|| doc.or_else(|| c.docs.get(&id).map(|s| &*s.doc)))
        .flatten()
        .filter(|doc| update.changes_nothing(doc))
        .map(|doc| fields.map(|f| fields_of(doc, f)));
    Some((id, unchanged))
}

/// [`Store::find`](pattern_store::Store::find) in `c`.
pub(super) fn find(c: Option<&Collection>, filter: &Filter, opts: &FindOptions) -> Vec<Document> {
    c.map(|c| c.find(filter, opts)).unwrap_or_default()
}

/// [`Store::find_raw`](pattern_store::Store::find_raw) in `c`: serialized from the stored documents,
/// without copying them first.
pub(super) fn find_raw(
    coll: &str,
    c: Option<&Collection>,
    filter: &Filter,
    opts: &FindOptions,
) -> Result<Vec<RawDocumentBuf>> {
    let Some(c) = c else {
        return Ok(Vec::new());
    };
    c.find_refs(filter, &opts.sort, opts.skip, opts.limit)
        .into_iter()
        .map(|(_, doc)| pattern_store::codec::raw::to_raw(coll, doc))
        .collect()
}

/// [`Store::array_stats`](pattern_store::Store::array_stats) in `c`.
pub(super) fn array_stats(c: Option<&Collection>, filter: &Filter, field: &str) -> ArrayStats {
    let mut stats = ArrayStats::default();
    let Some(c) = c else {
        return stats;
    };
    for id in c.matching(filter) {
        stats.documents += 1;
        match c.docs[&id].doc.get(field) {
            Some(Bson::Array(a)) => stats.items += a.len() as u64,
            None | Some(Bson::Null) => {}
            Some(_) => stats.not_arrays += 1,
        }
    }
    stats
}

/// [`Store::graph_lookup`](pattern_store::Store::graph_lookup) in `c`: a breadth-first search, one
/// `$in` query per depth (served by an index on `connect_to`, or by `_id`, where there is
/// one). Each value is looked up once and each document found once, at its smallest depth.
pub(super) fn graph_lookup(c: Option<&Collection>, q: &GraphLookup) -> Option<Graph> {
    let c = c?;
    let start = &c.docs.get(&Key::of(&q.start))?.doc;
    let mut searched: BTreeSet<Key> = BTreeSet::new();
    let mut seen: BTreeSet<Key> = BTreeSet::new();
    let mut found = Vec::new();
    let mut frontier = Vec::new();
    connecting(get_path(start, &q.start_with), &mut searched, &mut frontier);
    let mut depth = 0_u32;
    while !frontier.is_empty() && q.max_depth.is_none_or(|max| depth <= max) {
        let matching = Filter::In(q.connect_to.clone(), std::mem::take(&mut frontier));
        for id in c.matching(&matching) {
            let doc = &c.docs[&id].doc;
            if seen.insert(id) {
                connecting(get_path(doc, &q.connect_from), &mut searched, &mut frontier);
                found.push((Document::clone(doc), depth));
            }
        }
        depth += 1;
    }
    Some(Graph {
        start: Document::clone(start),
        found,
    })
}

/// Adds to `out` the values of a field that continue a graph search and were not searched
/// yet: each element of an array, the value itself otherwise; never null, undefined or a
/// missing value.
fn connecting(v: Option<&Bson>, searched: &mut BTreeSet<Key>, out: &mut Vec<Bson>) {
    let mut add = |v: &Bson| {
        if !matches!(v, Bson::Null | Bson::Undefined) && searched.insert(Key::of(v)) {
            out.push(v.clone());
        }
    };
    match v {
        None => {}
        Some(Bson::Array(a)) => a.iter().for_each(add),
        Some(v) => add(v),
    }
}
