//! The tree models against an oracle: one random sequence of operations (with tricky ids)
//! applied to all five models on both stores, every answer compared with a plain parent map
//! and `verify` clean after every step; write skew between two moves; concurrent inserts and
//! moves; verify and repair on injected defects.
//!
//! `PATTERN_TREE_CASES` (default 4) and `PATTERN_TREE_SEED` widen or replay the oracle run.

use pattern_core::store;
use std::collections::{BTreeMap, BTreeSet};

use bson::{doc, Bson, Document};
use pattern_core::store::{AnyStore, MongoStore};
use pattern_core::tree::{raw, Defect};
use pattern_core::{
    spec::{TreeModel, TreeSpec},
    store::Store,
    Error,
};
use pattern_tests::{memory_store, mongo_store, on_both_stores};

/// A small deterministic generator (xorshift), so a failing run replays from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// Ids that break naive implementations: prefixes of each other, regex metacharacters, a
/// dot, a dollar, non-ASCII.
const IDS: &[&str] = &[
    "Book", "Books", "Bo", "a.b", "axb", "(", "*", "[x]", "$a", "é", "a|b", "^", "k",
];

/// The oracle: a plain map from node to parent.
#[derive(Default, Clone)]
struct Oracle {
    parent: BTreeMap<String, Option<String>>,
}

impl Oracle {
    fn ancestors(&self, id: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = self.parent[id].clone();
        while let Some(p) = cur {
            cur = self.parent[&p].clone();
            out.push(p);
        }
        out.reverse();
        out
    }
    fn children(&self, id: &str) -> BTreeSet<String> {
        self.parent
            .iter()
            .filter(|(_, p)| p.as_deref() == Some(id))
            .map(|(c, _)| c.clone())
            .collect()
    }
    fn descendants(&self, id: &str) -> BTreeSet<String> {
        self.parent
            .keys()
            .filter(|n| self.ancestors(n).iter().any(|a| a == id))
            .cloned()
            .collect()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert { id: String, parent: Option<String> },
    Move { id: String, to: Option<String> },
    DeleteSubtree(String),
    DeleteNode(String),
}

/// What an operation returned, as comparable across models: `Ok` or the error's kind.
fn outcome<T>(r: &Result<T, Error>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(Error::UnknownNode { .. }) => "unknown",
        Err(Error::Cycle { .. }) => "cycle",
        Err(Error::Store(store::Error::DuplicateKey { .. })) => "duplicate",
        Err(e) => panic!("unexpected error: {e}"),
    }
}

impl Oracle {
    fn apply(&mut self, op: &Op) -> &'static str {
        let known = |o: &Oracle, id: &str| o.parent.contains_key(id);
        match op {
            Op::Insert { id, parent } => {
                if let Some(p) = parent {
                    if !known(self, p) {
                        return "unknown";
                    }
                }
                if known(self, id) {
                    return "duplicate";
                }
                self.parent.insert(id.clone(), parent.clone());
                "ok"
            }
            Op::Move { id, to } => {
                if !known(self, id) || to.as_ref().is_some_and(|t| !known(self, t)) {
                    return "unknown";
                }
                if let Some(t) = to {
                    if t == id || self.ancestors(t).contains(id) {
                        return "cycle";
                    }
                }
                self.parent.insert(id.clone(), to.clone());
                "ok"
            }
            Op::DeleteSubtree(id) => {
                if !known(self, id) {
                    return "unknown";
                }
                for d in self.descendants(id) {
                    self.parent.remove(&d);
                }
                self.parent.remove(id);
                "ok"
            }
            Op::DeleteNode(id) => {
                if !known(self, id) {
                    return "unknown";
                }
                let up = self.parent.remove(id).flatten();
                for c in self.children(id) {
                    self.parent.insert(c, up.clone());
                }
                "ok"
            }
        }
    }

    fn random_op(&self, rng: &mut Rng) -> Op {
        let existing: Vec<String> = self.parent.keys().cloned().collect();
        let any_id = |rng: &mut Rng| -> String {
            if !existing.is_empty() && rng.below(4) > 0 {
                rng.pick(&existing).clone()
            } else {
                (*rng.pick(IDS)).to_owned()
            }
        };
        let maybe = |rng: &mut Rng| (rng.below(5) > 0).then(|| any_id(rng));
        match rng.below(10) {
            0..=4 => Op::Insert {
                id: (*rng.pick(IDS)).to_owned(),
                parent: maybe(rng),
            },
            5..=7 => Op::Move {
                id: any_id(rng),
                to: maybe(rng),
            },
            8 => Op::DeleteNode(any_id(rng)),
            _ => Op::DeleteSubtree(any_id(rng)),
        }
    }
}

fn ids(docs: &[Document]) -> Vec<String> {
    docs.iter()
        .map(|d| d.get_str("_id").expect("string id").to_owned())
        .collect()
}

async fn apply(store: &AnyStore, spec: &TreeSpec, op: &Op) -> &'static str {
    let b = |s: &str| Bson::String(s.to_owned());
    match op {
        Op::Insert { id, parent } => {
            let node = doc! {"_id": id};
            let r = match parent {
                None => raw::insert_root(store, spec, node).await,
                Some(p) => raw::insert_child(store, spec, node, &b(p)).await,
            };
            outcome(&r)
        }
        Op::Move { id, to } => {
            outcome(&raw::move_to(store, spec, &b(id), to.as_deref().map(b).as_ref()).await)
        }
        Op::DeleteSubtree(id) => outcome(&raw::delete_subtree(store, spec, &b(id)).await),
        Op::DeleteNode(id) => outcome(&raw::delete_node(store, spec, &b(id)).await),
    }
}

/// Every answer of the stored tree equals the oracle's, and `verify` is clean.
async fn check(store: &AnyStore, spec: &TreeSpec, oracle: &Oracle, what: &str) {
    let m = spec.model;
    let defects = raw::verify(store, spec).await.unwrap().defects;
    assert_eq!(defects, vec![], "{m:?} {what}");
    let walked = raw::walk(store, spec).await.unwrap();
    let all: BTreeSet<String> = walked
        .iter()
        .map(|(_, d)| d.get_str("_id").unwrap().to_owned())
        .collect();
    assert_eq!(all.len(), walked.len(), "{m:?} {what}: a node twice");
    assert_eq!(all, oracle.parent.keys().cloned().collect(), "{m:?} {what}");
    for id in oracle.parent.keys() {
        let b = Bson::String(id.clone());
        let parent = raw::parent(store, spec, &b).await.unwrap();
        assert_eq!(
            parent.map(|p| p.get_str("_id").unwrap().to_owned()),
            oracle.parent[id],
            "{m:?} {what}: parent of {id}"
        );
        let kids: BTreeSet<String> = ids(&raw::children(store, spec, &b).await.unwrap())
            .into_iter()
            .collect();
        assert_eq!(kids, oracle.children(id), "{m:?} {what}: children of {id}");
        let anc = ids(&raw::ancestors(store, spec, &b).await.unwrap());
        assert_eq!(anc, oracle.ancestors(id), "{m:?} {what}: ancestors of {id}");
        let below = raw::descendants(store, spec, &b, None).await.unwrap();
        let below_ids: Vec<String> = below
            .iter()
            .map(|(_, d)| d.get_str("_id").unwrap().to_owned())
            .collect();
        let below_set: BTreeSet<String> = below_ids.iter().cloned().collect();
        assert_eq!(below_set.len(), below_ids.len(), "{m:?} {what}");
        assert_eq!(
            below_set,
            oracle.descendants(id),
            "{m:?} {what}: below {id}"
        );
        // Pre-order: each node comes after its parent.
        for (i, (depth, d)) in below.iter().enumerate() {
            let did = d.get_str("_id").unwrap();
            let want = oracle.ancestors(did).len() - oracle.ancestors(id).len();
            assert_eq!(
                *depth as usize, want,
                "{m:?} {what}: depth of {did} below {id}"
            );
            if let Some(Some(p)) = oracle.parent.get(did) {
                if p != id {
                    assert!(below_ids[..i].contains(p), "{m:?} {what}: pre-order");
                }
            }
        }
        let depth = raw::depth(store, spec, &b).await.unwrap();
        assert_eq!(depth as usize, oracle.ancestors(id).len(), "{m:?} {what}");
    }
}

fn spec(model: TreeModel) -> TreeSpec {
    let coll: &'static str = match model {
        TreeModel::ParentRefs => "o_parent_refs",
        TreeModel::ChildRefs => "o_child_refs",
        TreeModel::Ancestors => "o_ancestors",
        TreeModel::MaterializedPath => "o_paths",
        TreeModel::NestedSet => "o_nested",
    };
    TreeSpec::new(coll, model)
}

/// The same tree with every model field renamed (odd cases of the oracle run use it).
fn renamed(model: TreeModel) -> TreeSpec {
    TreeSpec {
        fields: pattern_core::spec::TreeFields {
            parent: "up",
            children: "kids",
            ancestors: "line",
            path: "trail",
            left: "lft",
            right: "rgt",
        },
        ..spec(model)
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One random sequence per case through five models on both stores (ten trees), each answer
/// against the oracle after every step; odd cases with every model field renamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_trees_agree_with_the_oracle() {
    let mongo = AnyStore::Mongo(mongo_store("tree_oracle").await);
    let stores = [memory_store(), mongo.clone()];
    let cases = env_u64("PATTERN_TREE_CASES", 4);
    let seed0 = env_u64("PATTERN_TREE_SEED", 0x5eed_7e3e);
    for case in 0..cases {
        let seed = seed0.wrapping_add(case.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
        let mut rng = Rng(seed);
        let mut oracle = Oracle::default();
        let specs = TreeModel::ALL.map(|m| if case % 2 == 1 { renamed(m) } else { spec(m) });
        for store in &stores {
            for spec in &specs {
                store.drop_collection(spec.collection).await.unwrap();
            }
        }
        for step in 0..14 {
            let op = oracle.random_op(&mut rng);
            let want = oracle.apply(&op);
            let what = format!("seed {seed:#x} step {step} {op:?}");
            for store in &stores {
                for spec in &specs {
                    let got = apply(store, spec, &op).await;
                    assert_eq!(got, want, "{} {:?} {what}", store.kind(), spec.model);
                    check(store, spec, &oracle, &what).await;
                }
            }
            if case % 2 == 1 {
                // The renamed trees hold no field under a seed name.
                for store in &stores {
                    for spec in &specs {
                        for d in pattern_tests::documents(store, spec.collection).await {
                            for seed_name in
                                ["parent", "children", "ancestors", "path", "left", "right"]
                            {
                                assert!(!d.contains_key(seed_name), "{:?}: {d}", spec.model);
                            }
                        }
                    }
                }
            }
        }
    }
    pattern_tests::drop_db(&mongo).await;
}

/// Two concurrent moves, A under B and B under A: each alone is valid, together they would
/// make a cycle. Never both commit; the tree stays sound.
async fn write_skew(store: AnyStore) {
    let rounds = if store.kind() == "in-memory" { 60 } else { 25 };
    for model in TreeModel::ALL {
        let spec = spec(model);
        let b = |s: &str| Bson::String(s.to_owned());
        raw::insert_root(&store, &spec, doc! {"_id": "R"})
            .await
            .unwrap();
        raw::insert_child(&store, &spec, doc! {"_id": "A"}, &b("R"))
            .await
            .unwrap();
        raw::insert_child(&store, &spec, doc! {"_id": "B"}, &b("R"))
            .await
            .unwrap();
        let mut both_ok = 0;
        for _ in 0..rounds {
            let (s1, s2) = (store.clone(), store.clone());
            let one =
                tokio::spawn(async move { raw::move_to(&s1, &spec, &b("A"), Some(&b("B"))).await });
            let two =
                tokio::spawn(async move { raw::move_to(&s2, &spec, &b("B"), Some(&b("A"))).await });
            let (one, two) = (one.await.unwrap(), two.await.unwrap());
            match (&one, &two) {
                (Ok(()), Ok(())) => both_ok += 1,
                (Ok(()), Err(Error::Cycle { .. })) | (Err(Error::Cycle { .. }), Ok(())) => {}
                other => panic!("{model:?}: {other:?}"),
            }
            assert_eq!(
                raw::verify(&store, &spec).await.unwrap().defects,
                vec![],
                "{model:?}"
            );
            // Back under R for the next round.
            raw::move_to(&store, &spec, &b("A"), Some(&b("R")))
                .await
                .unwrap();
            raw::move_to(&store, &spec, &b("B"), Some(&b("R")))
                .await
                .unwrap();
        }
        assert_eq!(both_ok, 0, "{model:?}: both moves committed");
    }
}

/// 16 tasks insert and move nodes at once in one tree per model: afterwards the tree is
/// sound and every node whose insert returned Ok is present exactly once. A write that gave
/// up with `Contention` (its transaction kept conflicting: on a loaded 2-core machine, 16
/// writers on one tree can outlast the retries) must have kept nothing; most writes succeed.
async fn concurrent_inserts_and_moves(store: AnyStore) {
    for model in TreeModel::ALL {
        let spec = spec(model);
        raw::insert_root(&store, &spec, doc! {"_id": "root"})
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for t in 0..16u64 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let mut rng = Rng(0x1234_5678 + t * 7919);
                let mut mine: Vec<String> = vec!["root".into()];
                let mut inserted = Vec::new();
                for i in 0..6 {
                    let id = format!("t{t}.{i}");
                    let parent = rng.pick(&mine).clone();
                    let r =
                        raw::insert_child(&store, &spec, doc! {"_id": &id}, &parent.clone().into())
                            .await;
                    match r {
                        Ok(()) => {
                            inserted.push(id.clone());
                            mine.push(id);
                        }
                        Err(Error::UnknownNode { .. })
                        | Err(Error::Store(store::Error::Contention { .. })) => {}
                        Err(e) => panic!("{model:?} insert: {e}"),
                    }
                    let (x, to) = (rng.pick(&mine).clone(), rng.pick(&mine).clone());
                    match raw::move_to(&store, &spec, &x.into(), Some(&to.into())).await {
                        Ok(())
                        | Err(Error::Cycle { .. })
                        | Err(Error::UnknownNode { .. })
                        | Err(Error::Store(store::Error::Contention { .. })) => {}
                        Err(e) => panic!("{model:?} move: {e}"),
                    }
                }
                inserted
            }));
        }
        let mut inserted = Vec::new();
        for t in tasks {
            inserted.extend(t.await.unwrap());
        }
        assert!(
            inserted.len() >= 48,
            "{model:?}: {} of 96 inserts",
            inserted.len()
        );
        assert_eq!(
            raw::verify(&store, &spec).await.unwrap().defects,
            vec![],
            "{model:?}"
        );
        let walked = raw::walk(&store, &spec).await.unwrap();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (_, d) in &walked {
            *seen
                .entry(d.get_str("_id").unwrap().to_owned())
                .or_default() += 1;
        }
        assert_eq!(seen.len(), inserted.len() + 1, "{model:?}");
        for id in &inserted {
            assert_eq!(seen.get(id), Some(&1), "{model:?}: {id}");
        }
    }
}

/// Defects written by hand are reported by `verify`, and `repair` fixes what the parent
/// links determine and reports the rest.
async fn verify_and_repair(store: AnyStore) {
    let kinds = |defects: &[Defect]| -> Vec<&'static str> {
        let mut k: Vec<&'static str> = defects
            .iter()
            .map(|d| match d {
                Defect::Malformed { .. } => "malformed",
                Defect::Orphan { .. } => "orphan",
                Defect::Cycle { .. } => "cycle",
                Defect::TwoParents { .. } => "two parents",
                Defect::MissingChild { .. } => "missing child",
                Defect::WrongAncestors { .. } => "ancestors",
                Defect::WrongPath { .. } => "path",
                Defect::WrongBounds { .. } => "bounds",
                _ => "other",
            })
            .collect();
        k.sort();
        k.dedup();
        k
    };
    for (model, docs, found, left) in [
        (
            TreeModel::ParentRefs,
            vec![
                doc! {"_id": "r", "parent": null},
                doc! {"_id": "o", "parent": "ghost"},
                doc! {"_id": "x", "parent": "y"},
                doc! {"_id": "y", "parent": "x"},
            ],
            vec!["cycle", "orphan"],
            vec!["cycle", "orphan"],
        ),
        (
            TreeModel::ChildRefs,
            vec![
                doc! {"_id": "r", "children": ["a", "ghost"]},
                doc! {"_id": "s", "children": ["a"]},
                doc! {"_id": "a", "children": []},
            ],
            vec!["missing child", "two parents"],
            vec!["two parents"],
        ),
        (
            TreeModel::Ancestors,
            vec![
                doc! {"_id": "r", "ancestors": [], "parent": null},
                doc! {"_id": "a", "ancestors": ["r"], "parent": "r"},
                doc! {"_id": "b", "ancestors": ["x", "a"], "parent": "a"},
                doc! {"_id": "c", "ancestors": "r", "parent": "r"},
            ],
            vec!["ancestors", "malformed"],
            vec!["malformed"],
        ),
        (
            TreeModel::MaterializedPath,
            vec![
                doc! {"_id": "r", "path": null},
                doc! {"_id": "a", "path": ",r,"},
                doc! {"_id": "b", "path": ",q,a,"},
                doc! {"_id": "o", "path": ",ghost,"},
            ],
            vec!["orphan", "path"],
            vec!["orphan"],
        ),
        (
            TreeModel::NestedSet,
            vec![
                doc! {"_id": "r", "parent": 0, "left": 1, "right": 6},
                doc! {"_id": "a", "parent": "r", "left": 2, "right": 5},
                doc! {"_id": "b", "parent": "r", "left": 4, "right": 9},
            ],
            vec!["bounds"],
            vec![],
        ),
    ] {
        let spec = spec(model);
        for d in docs {
            store.insert_one(spec.collection, d).await.unwrap();
        }
        let defects = raw::verify(&store, &spec).await.unwrap().defects;
        assert_eq!(kinds(&defects), found, "{model:?}: {defects:?}");
        let report = raw::repair(&store, &spec).await.unwrap();
        assert_eq!(kinds(&report.unrepaired), left, "{model:?}: {report:?}");
        let after = raw::verify(&store, &spec).await.unwrap().defects;
        assert_eq!(kinds(&after), left, "{model:?}: {after:?}");
        assert!(after.iter().all(|d| !d.repairable()), "{model:?}");
    }
}

/// On MongoDB the descendants query of the paths model is answered from the index: an
/// anchored prefix, keys examined close to the results, and `Book` never scans `Books`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongo_paths_descendants_use_the_index() {
    let store = mongo_store("tree_explain").await;
    let spec = TreeSpec::new("explained", TreeModel::MaterializedPath);
    let b = |s: &str| Bson::String(s.to_owned());
    raw::insert_root(&store, &spec, doc! {"_id": "Book"})
        .await
        .unwrap();
    raw::insert_root(&store, &spec, doc! {"_id": "Books"})
        .await
        .unwrap();
    for i in 0..200 {
        let parent = if i % 2 == 0 { "Books" } else { "Book" };
        raw::insert_child(&store, &spec, doc! {"_id": format!("n{i}")}, &b(parent))
            .await
            .unwrap();
    }
    let below = raw::descendants(&store, &spec, &b("Book"), None)
        .await
        .unwrap();
    assert_eq!(below.len(), 100);
    let explain = explain_find(&store, "explained", doc! {"path": {"$regex": "^,Book,"}}).await;
    let (keys, returned) = explain;
    assert_eq!(returned, 100);
    assert!(
        keys <= returned + 2,
        "keys examined {keys} for {returned} results"
    );
    AnyStore::Mongo(store.clone())
        .drop_collection("explained")
        .await
        .unwrap();
    let _ = store.database().drop().await;
}

/// `(totalKeysExamined, nReturned)` of a find's `executionStats`.
async fn explain_find(store: &MongoStore, coll: &str, filter: Document) -> (i64, i64) {
    let cmd = doc! {
        "explain": {"find": coll, "filter": filter},
        "verbosity": "executionStats",
    };
    let out = store.database().run_command(cmd).await.expect("explain");
    let stats = out.get_document("executionStats").expect("executionStats");
    let n = |k: &str| match stats.get(k) {
        Some(Bson::Int32(x)) => i64::from(*x),
        Some(Bson::Int64(x)) => *x,
        Some(Bson::Double(x)) => *x as i64,
        other => panic!("{k}: {other:?} in {stats}"),
    };
    (n("totalKeysExamined"), n("nReturned"))
}

on_both_stores!(write_skew, concurrent_inserts_and_moves, verify_and_repair);
