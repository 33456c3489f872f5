//! A transaction's commit: the check that nothing it wrote changed since its snapshot, then
//! its documents into the store (a collection replaced whole, or the writes merged).

use super::*;

/// Checks that every document the transaction wrote is as its snapshot had it, then puts
/// them in the store (see the module's documentation); on an error nothing changed.
pub(super) fn commit_locked(inner: &mut Inner, state: &mut State) -> Result<()> {
    let mut replaced: Vec<String> = Vec::new();
    for (coll, ids) in &inner.writes {
        let snapshot = inner.snapshot.get(coll);
        let current = state.collections.get(coll);
        if same(snapshot, current) {
            replaced.push(coll.clone());
            continue;
        }
        let (snapshot, current) = (snapshot.map(|c| &**c), current.map(Slot::get));
        if let Some(id) = ids.iter().find(|id| !unchanged(snapshot, current, id)) {
            return Err(conflict(format!(
                "document {} of `{coll}` changed after the transaction started",
                crate::error::display_bson(&id.0)
            )));
        }
    }
    let mut merged: Vec<(&String, Merge)> = Vec::new();
    for (coll, ids) in &inner.writes {
        if replaced.contains(coll) {
            continue;
        }
        let view = (inner.working.get(coll)).or_else(|| inner.snapshot.get(coll).map(|c| &**c));
        let created = !state.collections.contains_key(coll);
        match merge(state.collection(coll), coll, view, ids, created) {
            Ok(done) => merged.push((coll, done)),
            Err(e) => {
                for (coll, done) in merged.into_iter().rev() {
                    done.undo(state, coll);
                }
                return Err(conflict(format!(
                    "committing would break a unique index of `{coll}`: {e}"
                )));
            }
        }
    }
    for coll in replaced {
        if let Some(working) = inner.working.remove(&coll) {
            state.collections.insert(coll, Slot::Owned(working));
        }
    }
    Ok(())
}

/// Whether the store's collection is still the one the snapshot holds (or both have none).
pub(super) fn same(snapshot: Option<&Arc<Collection>>, current: Option<&Slot>) -> bool {
    match (snapshot, current) {
        (Some(a), Some(Slot::Shared(b))) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// What a merge into a collection of the store changed: the documents it put, and those it
/// took out (to put back).
struct Merge {
    put: Vec<Key>,
    taken: Vec<(Key, Stored)>,
    created: bool,
}

impl Merge {
    fn undo(self, state: &mut State, coll: &str) {
        if self.created {
            state.collections.remove(coll);
            return;
        }
        let c = state.collection(coll);
        for id in &self.put {
            c.take(id);
        }
        for (id, stored) in self.taken {
            c.put_back(id, stored);
        }
    }
}

/// Puts the documents `ids` as `view` (the transaction's copy) has them into `current`: the
/// old versions out first, then the new ones in (so that documents trading unique keys do
/// not collide). On a refusal, `current` is as it was.
fn merge(
    current: &mut Collection,
    coll: &str,
    view: Option<&Collection>,
    ids: &BTreeSet<Key>,
    created: bool,
) -> Result<Merge> {
    let mut done = Merge {
        put: Vec::new(),
        taken: ids.iter().filter_map(|id| current.take(id)).collect(),
        created,
    };
    for id in ids {
        let Some(stored) = view.and_then(|v| v.docs.get(id)) else {
            continue; // deleted
        };
        if let Err(e) = current.put(coll, id.clone(), stored.clone()) {
            for id in &done.put {
                current.take(id);
            }
            for (id, stored) in std::mem::take(&mut done.taken) {
                current.put_back(id, stored);
            }
            return Err(e);
        }
        done.put.push(id.clone());
    }
    Ok(done)
}
