//! `verify`: every defect of a stored tree, as data; `repair`: the model's fields rebuilt
//! from the parent links it holds.

use std::collections::{HashMap, HashSet};

use bson::{Bson, Document};

use super::model::{
    array_of, bounds, bump_version, by_id, id_of, path_segments, set, stored_parent, stored_path,
};
use super::read::{all, key};
use crate::codec::order::compare_values;
use crate::spec::{TreeModel, TreeSpec};
use crate::store::query::Update;
use crate::store::{transaction, Store};
use crate::Result;

/// What [`verify`](super::verify) found: the nodes it read and every defect, as data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verified {
    /// Nodes read.
    pub nodes: u64,
    /// Every defect found (empty when the tree is sound).
    pub defects: Vec<Defect>,
}

impl Verified {
    /// No defect: the tree is sound.
    pub fn is_clean(&self) -> bool {
        self.defects.is_empty()
    }
}

/// A defect of a stored tree, found by [`verify`](super::verify).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Defect {
    /// A model field of the node does not have the model's type (an `ancestors` that is not
    /// an array, a `path` that is not `",a,b,"`, a `left` that is not an integer...).
    Malformed {
        /// The node's id.
        id: Bson,
        /// What is wrong with the field.
        reason: String,
    },
    /// The node's parent does not exist.
    Orphan {
        /// The node's id.
        id: Bson,
        /// The parent id it holds.
        parent: Bson,
    },
    /// The node is its own ancestor: its parent links go round in a cycle.
    Cycle {
        /// A node of the cycle.
        id: Bson,
    },
    /// Child references: the node is listed in the `children` of more than one node.
    TwoParents {
        /// The node's id.
        id: Bson,
        /// The nodes that list it.
        parents: Vec<Bson>,
    },
    /// Child references: a `children` array lists a node that does not exist.
    MissingChild {
        /// The node whose `children` lists it.
        parent: Bson,
        /// The id listed.
        child: Bson,
    },
    /// Array of ancestors: the stored array is not the chain of parents from the root.
    WrongAncestors {
        /// The node's id.
        id: Bson,
        /// The ancestors it holds.
        stored: Vec<Bson>,
        /// The ancestors its parent links give.
        expected: Vec<Bson>,
    },
    /// Materialized paths: the stored path is not the parent's path followed by the parent
    /// (the last segment is the parent link).
    WrongPath {
        /// The node's id.
        id: Bson,
        /// The path it holds.
        stored: Option<String>,
        /// The path its parent links give.
        expected: Option<String>,
    },
    /// Nested sets: `left`/`right` are not the numbers of a depth-first walk of the parent
    /// links (overlapping, gapped, or not nested as the parents say).
    WrongBounds {
        /// The node's id.
        id: Bson,
        /// The `left` and `right` it holds.
        stored: Option<(i64, i64)>,
        /// The numbers a depth-first walk gives.
        expected: (i64, i64),
    },
}

impl Defect {
    /// Whether [`repair`](super::repair) rebuilds it from the parent links.
    pub fn repairable(&self) -> bool {
        matches!(
            self,
            Defect::WrongAncestors { .. }
                | Defect::WrongPath { .. }
                | Defect::WrongBounds { .. }
                | Defect::MissingChild { .. }
        )
    }
}

/// What [`repair`](super::repair) did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Repair {
    /// The defects it fixed (one update per node, all in one transaction).
    pub fixed: Vec<Defect>,
    /// The defects it cannot fix from the parent links: orphans, cycles, a child under two
    /// parents, malformed fields. They need a decision (delete, or move somewhere).
    pub unrepaired: Vec<Defect>,
}

/// The tree as its parent links describe it.
struct Links {
    /// Parent of each node (by key), `None` for a root.
    parent: HashMap<Vec<u8>, Option<Bson>>,
    ids: HashMap<Vec<u8>, Bson>,
    defects: Vec<Defect>,
}

fn links(spec: &TreeSpec, docs: &[Document]) -> Links {
    let mut out = Links {
        parent: HashMap::new(),
        ids: docs.iter().map(|d| (key(&id_of(d)), id_of(d))).collect(),
        defects: Vec::new(),
    };
    let malformed = |d: &Document, e: crate::Error| Defect::Malformed {
        id: id_of(d),
        reason: e.to_string(),
    };
    if spec.model == TreeModel::ChildRefs {
        let mut holders: HashMap<Vec<u8>, Vec<Bson>> = HashMap::new();
        for d in docs {
            match array_of(spec, d, spec.fields.children) {
                Ok(list) => {
                    for c in list {
                        if !out.ids.contains_key(&key(c)) {
                            out.defects.push(Defect::MissingChild {
                                parent: id_of(d),
                                child: c.clone(),
                            });
                        } else {
                            holders.entry(key(c)).or_default().push(id_of(d));
                        }
                    }
                }
                Err(e) => out.defects.push(malformed(d, e)),
            }
        }
        for d in docs {
            let k = key(&id_of(d));
            let parents = holders.remove(&k).unwrap_or_default();
            if parents.len() > 1 {
                out.defects.push(Defect::TwoParents {
                    id: id_of(d),
                    parents: parents.clone(),
                });
            }
            out.parent.insert(k, parents.into_iter().next());
        }
        return out;
    }
    for d in docs {
        if spec.model == TreeModel::MaterializedPath {
            if let Err(e) = path_segments(spec, d) {
                out.defects.push(malformed(d, e));
            }
        }
        let p = stored_parent(spec, d);
        if let Some(p) = &p {
            if !out.ids.contains_key(&key(p)) {
                out.defects.push(Defect::Orphan {
                    id: id_of(d),
                    parent: p.clone(),
                });
            }
        }
        out.parent.insert(key(&id_of(d)), p);
    }
    out
}

/// Each node's chain of ancestors (root first) when its links reach a root; `None` on a
/// cycle or below an orphan. Nodes on a cycle are reported.
fn chains(l: &mut Links) -> HashMap<Vec<u8>, Option<Vec<Bson>>> {
    let mut done: HashMap<Vec<u8>, Option<Vec<Bson>>> = HashMap::new();
    let keys: Vec<Vec<u8>> = l.parent.keys().cloned().collect();
    for start in keys {
        let mut path: Vec<Vec<u8>> = Vec::new();
        let mut on_path: HashSet<Vec<u8>> = HashSet::new();
        let mut cur = start.clone();
        // Walk up until a known node, a root, a missing parent or a repeat (a cycle).
        let base: Option<Vec<Bson>> = loop {
            if let Some(known) = done.get(&cur) {
                break known.clone();
            }
            if !on_path.insert(cur.clone()) {
                // `cur` is on a cycle: every node from its first visit on is.
                let at = path.iter().position(|k| *k == cur).unwrap_or(0);
                for k in &path[at..] {
                    l.defects.push(Defect::Cycle {
                        id: l.ids[k].clone(),
                    });
                    done.insert(k.clone(), None);
                }
                path.truncate(at);
                break None;
            }
            path.push(cur.clone());
            match l.parent.get(&cur).cloned().flatten() {
                None => {
                    // A root.
                    path.pop();
                    done.insert(cur.clone(), Some(Vec::new()));
                    break Some(Vec::new());
                }
                Some(p) if !l.parent.contains_key(&key(&p)) => {
                    path.pop();
                    done.insert(cur.clone(), None);
                    break None;
                }
                Some(p) => cur = key(&p),
            }
        };
        // Fill in the nodes walked, from the top down.
        let mut chain = base;
        for k in path.iter().rev() {
            chain = chain.map(|mut c| {
                if let Some(Some(p)) = l.parent.get(k) {
                    c.push(p.clone());
                }
                c
            });
            done.insert(k.clone(), chain.clone());
        }
    }
    done
}

/// Every defect, and the fixes that rebuild the repairable ones.
fn examine(spec: &TreeSpec, docs: &[Document]) -> (Vec<Defect>, Vec<(Bson, Update)>) {
    let mut l = links(spec, docs);
    let chains = chains(&mut l);
    let mut fixes: Vec<(Bson, Update)> = Vec::new();
    let f = &spec.fields;
    match spec.model {
        TreeModel::Ancestors => {
            for d in docs {
                let Some(Some(expected)) = chains.get(&key(&id_of(d))) else {
                    continue;
                };
                let stored = match array_of(spec, d, f.ancestors) {
                    Ok(a) => a.to_vec(),
                    Err(e) => {
                        l.defects.push(Defect::Malformed {
                            id: id_of(d),
                            reason: e.to_string(),
                        });
                        continue;
                    }
                };
                let same = stored.len() == expected.len()
                    && stored
                        .iter()
                        .zip(expected)
                        .all(|(a, b)| compare_values(a, b).is_eq());
                if !same {
                    fixes.push((
                        id_of(d),
                        set(vec![(f.ancestors, Bson::Array(expected.clone()))]),
                    ));
                    l.defects.push(Defect::WrongAncestors {
                        id: id_of(d),
                        stored,
                        expected: expected.clone(),
                    });
                }
            }
        }
        TreeModel::MaterializedPath => {
            for d in docs {
                let Some(Some(chain)) = chains.get(&key(&id_of(d))) else {
                    continue;
                };
                let Ok(stored) = stored_path(spec, d) else {
                    continue; // reported as malformed
                };
                let names: Vec<String> = chain
                    .iter()
                    .map(|b| match b {
                        Bson::String(s) => s.clone(),
                        other => crate::error::display_bson(other),
                    })
                    .collect();
                let expected = (!names.is_empty()).then(|| format!(",{},", names.join(",")));
                if stored != expected.as_deref() {
                    let value = expected.clone().map_or(Bson::Null, Bson::String);
                    fixes.push((id_of(d), set(vec![(f.path, value)])));
                    l.defects.push(Defect::WrongPath {
                        id: id_of(d),
                        stored: stored.map(str::to_owned),
                        expected,
                    });
                }
            }
        }
        TreeModel::NestedSet => {
            nested_bounds(spec, docs, &chains, &mut l.defects, &mut fixes);
        }
        TreeModel::ParentRefs | TreeModel::ChildRefs => {}
    }
    (l.defects, fixes)
}

/// The numbering a depth-first walk of the parent links gives (siblings in their stored
/// `left` order), against the stored one.
fn nested_bounds(
    spec: &TreeSpec,
    docs: &[Document],
    chains: &HashMap<Vec<u8>, Option<Vec<Bson>>>,
    defects: &mut Vec<Defect>,
    fixes: &mut Vec<(Bson, Update)>,
) {
    let sound: Vec<Document> = docs
        .iter()
        .filter(|d| matches!(chains.get(&key(&id_of(d))), Some(Some(_))))
        .cloned()
        .collect();
    for d in &sound {
        if let Err(e) = bounds(spec, d) {
            defects.push(Defect::Malformed {
                id: id_of(d),
                reason: e.to_string(),
            });
        }
    }
    let kids = super::read::children_map(spec, &sound);
    let mut roots: Vec<Document> = sound
        .iter()
        .filter(|d| stored_parent(spec, d).is_none())
        .cloned()
        .collect();
    super::model::sort_siblings(spec, &mut roots);
    let stored: HashMap<Vec<u8>, Option<(i64, i64)>> = sound
        .iter()
        .map(|d| (key(&id_of(d)), bounds(spec, d).ok()))
        .collect();
    let mut n = 0i64;
    let mut expected: Vec<(Bson, (i64, i64))> = Vec::new();
    // Iterative walk: (id, entered?) frames.
    let mut stack: Vec<(Bson, Option<i64>)> =
        roots.iter().rev().map(|r| (id_of(r), None)).collect();
    while let Some((id, left)) = stack.pop() {
        match left {
            None => {
                n += 1;
                stack.push((id.clone(), Some(n)));
                if let Some(cs) = kids.get(&key(&id)) {
                    stack.extend(cs.iter().rev().map(|c| (c.clone(), None)));
                }
            }
            Some(l) => {
                n += 1;
                expected.push((id, (l, n)));
            }
        }
    }
    let f = &spec.fields;
    for (id, want) in expected {
        let have = stored.get(&key(&id)).cloned().flatten();
        if have != Some(want) {
            fixes.push((
                id.clone(),
                set(vec![
                    (f.left, Bson::Int64(want.0)),
                    (f.right, Bson::Int64(want.1)),
                ]),
            ));
            defects.push(Defect::WrongBounds {
                id,
                stored: have,
                expected: want,
            });
        }
    }
}

pub(super) async fn verify<S: Store>(store: &S, spec: &TreeSpec) -> Result<Verified> {
    let docs = all(store, spec).await?;
    Ok(Verified {
        nodes: docs.len() as u64,
        defects: examine(spec, &docs).0,
    })
}

pub(super) async fn repair<S: Store>(store: &S, spec: &TreeSpec) -> Result<Repair> {
    let spec = *spec;
    transaction(store, |tx| {
        Box::pin(async move {
            bump_version(tx, &spec).await?;
            let docs = all(tx, &spec).await?;
            let (defects, fixes) = examine(&spec, &docs);
            for (id, mut update) in fixes {
                tx.update_one(spec.collection, &by_id(&id), &mut update, false)
                    .await?;
            }
            let mut report = Repair::default();
            for d in defects {
                if let Defect::MissingChild { parent, child } = &d {
                    let pull = Update {
                        pull: vec![(spec.fields.children.into(), child.clone())],
                        ..Update::default()
                    };
                    tx.update_many(spec.collection, &by_id(parent), &pull)
                        .await?;
                }
                if d.repairable() {
                    report.fixed.push(d);
                } else {
                    report.unrepaired.push(d);
                }
            }
            Ok(report)
        })
    })
    .await
}
