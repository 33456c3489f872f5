//! The tree models on a 10,000-node tree (ids `n0`..`n9999`, node `i` under `(i - 1) / 10`:
//! ten children each, depth 4), per model and operation: commands sent, documents read and
//! written (from the server's replies, with the driver's command monitoring), and the median
//! time on MongoDB and in memory; the seed's own queries written by hand with the driver
//! beside them.
//!
//!     cargo bench -p pattern-bench --bench trees
//!
//! Needs `MONGODB_URI`. Under `cargo test` it runs on 1,000 nodes, 3 times each, and checks
//! that no operation's command count grows with the tree (the same counts at both sizes are
//! asserted: the numbers below are per operation, whatever the subtree).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use futures::TryStreamExt;
use mongodb::event::command::CommandEvent;
use pattern_bench::scale;
use pattern_core::store::{AnyStore, MongoStore};
use pattern_core::tree::raw;
use pattern_core::{
    spec::{TreeModel, TreeSpec},
    store::Store,
    MemoryStore,
};

/// Commands, documents read and documents written, from command monitoring.
#[derive(Clone, Default)]
struct Counter(Arc<Mutex<(Vec<String>, u64, u64)>>);

impl Counter {
    fn clear(&self) {
        *self.0.lock().unwrap() = Default::default();
    }
    fn take(&self) -> (Vec<String>, u64, u64) {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn reply_counts(name: &str, reply: &Document) -> (u64, u64) {
    let n = |k: &str| match reply.get(k) {
        Some(Bson::Int32(x)) => *x as u64,
        Some(Bson::Int64(x)) => *x as u64,
        _ => 0,
    };
    match name {
        "find" | "aggregate" | "getMore" => {
            let c = reply.get_document("cursor").ok();
            let batch = c.and_then(|c| {
                c.get_array("firstBatch")
                    .or_else(|_| c.get_array("nextBatch"))
                    .ok()
            });
            (batch.map_or(0, |b| b.len() as u64), 0)
        }
        "insert" | "delete" => (0, n("n")),
        "update" => (
            0,
            n("nModified") + reply.get_array("upserted").map_or(0, |u| u.len() as u64),
        ),
        _ => (0, 0),
    }
}

/// A store on a fresh database counting what its client sends and receives (the shared command
/// monitor: handshakes and monitoring aside).
async fn counted(db: &str) -> (MongoStore, Counter) {
    let counter = Counter::default();
    let sink = counter.clone();
    let store = pattern_tests::monitored_mongo_store(db, move |ev| {
        let mut c = sink.0.lock().unwrap();
        match ev {
            CommandEvent::Started(s) => c.0.push(s.command_name),
            CommandEvent::Succeeded(s) => {
                let (r, w) = reply_counts(&s.command_name, &s.reply);
                c.1 += r;
                c.2 += w;
            }
            _ => {}
        }
    })
    .await;
    (store, counter)
}

fn id(i: usize) -> String {
    format!("n{i}")
}

fn parent_of(i: usize) -> Option<usize> {
    (i > 0).then(|| (i - 1) / 10)
}

/// The tree's documents in `model`, as the library writes them.
fn documents(model: TreeModel, n: usize) -> Vec<Document> {
    let chain = |i: usize| {
        let mut a = Vec::new();
        let mut cur = parent_of(i);
        while let Some(p) = cur {
            a.push(id(p));
            cur = parent_of(p);
        }
        a.reverse();
        a
    };
    let kids = |i: usize| -> Vec<String> {
        (i * 10 + 1..=i * 10 + 10)
            .filter(|&c| c < n)
            .map(id)
            .collect()
    };
    let parent = |i: usize| parent_of(i).map_or(Bson::Null, |p| Bson::String(id(p)));
    // Nested-set numbers from a depth-first walk, children in order.
    let mut bounds = vec![(0i64, 0i64); n];
    if model == TreeModel::NestedSet {
        let mut k = 0i64;
        let mut stack = vec![(0usize, false)];
        while let Some((i, done)) = stack.pop() {
            k += 1;
            if done {
                bounds[i].1 = k;
            } else {
                bounds[i].0 = k;
                stack.push((i, true));
                for c in (i * 10 + 1..=i * 10 + 10).rev().filter(|&c| c < n) {
                    stack.push((c, false));
                }
            }
        }
    }
    (0..n)
        .map(|i| match model {
            TreeModel::ParentRefs => doc! {"_id": id(i), "parent": parent(i)},
            TreeModel::ChildRefs => doc! {"_id": id(i), "children": kids(i)},
            TreeModel::Ancestors => doc! {"_id": id(i), "ancestors": chain(i), "parent": parent(i)},
            TreeModel::MaterializedPath => {
                let a = chain(i);
                let path = if a.is_empty() {
                    Bson::Null
                } else {
                    Bson::String(format!(",{},", a.join(",")))
                };
                doc! {"_id": id(i), "path": path}
            }
            TreeModel::NestedSet => {
                doc! {"_id": id(i), "parent": parent(i), "left": bounds[i].0, "right": bounds[i].1}
            }
        })
        .collect()
}

fn is_below(mut i: usize, of: usize) -> bool {
    while let Some(p) = parent_of(i) {
        if p == of {
            return true;
        }
        i = p;
    }
    false
}

fn spec(model: TreeModel) -> TreeSpec {
    TreeSpec::new(
        match model {
            TreeModel::ParentRefs => "t_parent_refs",
            TreeModel::ChildRefs => "t_child_refs",
            TreeModel::Ancestors => "t_ancestors",
            TreeModel::MaterializedPath => "t_paths",
            TreeModel::NestedSet => "t_nested",
        },
        model,
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

type Op = fn(&AnyStore, TreeSpec, usize, usize) -> futures::future::BoxFuture<'_, ()>;

fn b(s: String) -> Bson {
    Bson::String(s)
}

/// The measured operations: name, and what it does on a tree of `n` nodes.
fn ops() -> Vec<(&'static str, Op)> {
    vec![
        ("parent of a leaf", |s, sp, n, _| {
            Box::pin(async move {
                raw::parent(s, &sp, &b(id(n - 1))).await.unwrap().unwrap();
            })
        }),
        ("children (10)", |s, sp, _, _| {
            Box::pin(async move {
                assert_eq!(raw::children(s, &sp, &b(id(1))).await.unwrap().len(), 10);
            })
        }),
        ("ancestors of a leaf", |s, sp, n, _| {
            Box::pin(async move {
                assert!(!raw::ancestors(s, &sp, &b(id(n - 1)))
                    .await
                    .unwrap()
                    .is_empty());
            })
        }),
        ("descendants of n1", |s, sp, _, _| {
            Box::pin(async move {
                assert!(
                    raw::descendants(s, &sp, &b(id(1)), None)
                        .await
                        .unwrap()
                        .len()
                        >= 110
                );
            })
        }),
        ("depth of a leaf", |s, sp, n, _| {
            Box::pin(async move {
                raw::depth(s, &sp, &b(id(n - 1))).await.unwrap();
            })
        }),
        ("insert a leaf", |s, sp, n, k| {
            Box::pin(async move {
                let new = doc! {"_id": format!("x{k}")};
                raw::insert_child(s, &sp, new, &b(id(n - 1))).await.unwrap();
            })
        }),
        ("delete that leaf (delete_node)", |s, sp, _, k| {
            Box::pin(async move {
                raw::delete_node(s, &sp, &b(format!("x{k}"))).await.unwrap();
            })
        }),
        ("move n10's subtree to n2, or back", |s, sp, _, _| {
            Box::pin(async move {
                // Alternates, so every run moves the same subtree the same distance.
                let there = !MOVED.fetch_xor(true, std::sync::atomic::Ordering::Relaxed);
                let to = if there { id(2) } else { id(1) };
                raw::move_to(s, &sp, &b(id(10)), Some(&b(to)))
                    .await
                    .unwrap();
            })
        }),
    ]
}

static MOVED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The seed's queries by hand with the driver, for the same answers.
async fn seed_query(
    coll: &mongodb::Collection<Document>,
    model: TreeModel,
) -> (&'static str, usize) {
    let all = |f: Document| async move {
        coll.find(f)
            .await
            .unwrap()
            .try_collect::<Vec<Document>>()
            .await
            .unwrap()
            .len()
    };
    match model {
        TreeModel::ParentRefs => ("children: find({parent})", all(doc! {"parent": "n1"}).await),
        TreeModel::ChildRefs => (
            "parent: find({children: X})",
            all(doc! {"children": "n1"}).await,
        ),
        TreeModel::Ancestors => (
            "descendants: find({ancestors: X})",
            all(doc! {"ancestors": "n1"}).await,
        ),
        TreeModel::MaterializedPath => (
            "descendants: find({path: /^,n0,n1,/})",
            all(doc! {"path": {"$regex": "^,n0,n1,"}}).await,
        ),
        TreeModel::NestedSet => {
            let n = coll.find_one(doc! {"_id": "n1"}).await.unwrap().unwrap();
            let (l, r) = (
                n.get("left").unwrap().clone(),
                n.get("right").unwrap().clone(),
            );
            (
                "descendants: findOne + find({left: {$gt}, right: {$lt}})",
                all(doc! {"left": {"$gt": l}, "right": {"$lt": r}}).await,
            )
        }
    }
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let n: usize = scale(10_000, 1_000);
    let times: usize = scale(21, 3);
    let (mongo, counter) = rt.block_on(counted("bench_trees"));
    let stores = [
        AnyStore::Memory(MemoryStore::new()),
        AnyStore::Mongo(mongo.clone()),
    ];
    let below_n1 = (1..n).filter(|&i| is_below(i, 1)).count();
    let below_n10 = (1..n).filter(|&i| is_below(i, 10)).count();
    println!(
        "\ntrees of {n} nodes (n1 has {below_n1} descendants, n10 {below_n10}), median of {times}:"
    );
    println!("| model | operation | commands (MongoDB) | docs read | docs written | median MongoDB | median memory |");
    println!("|---|---|---|---|---|---|---|");
    let mut counts: Vec<(TreeModel, &str, usize)> = Vec::new();
    for model in TreeModel::ALL {
        let sp = spec(model);
        rt.block_on(async {
            for store in &stores {
                store.drop_collection(sp.collection).await.unwrap();
                let docs = documents(model, n);
                match store {
                    AnyStore::Mongo(m) => {
                        let c = m.database().collection::<Document>(sp.collection);
                        for chunk in docs.chunks(1_000) {
                            c.insert_many(chunk.to_vec()).await.unwrap();
                        }
                    }
                    _ => {
                        for d in docs {
                            store.insert_one(sp.collection, d).await.unwrap();
                        }
                    }
                }
                // The indexes first (as the first write or read would), then check the
                // loaded tree is sound.
                raw::ensure_indexes(store, &sp).await.unwrap();
                assert!(
                    raw::verify(store, &sp).await.unwrap().is_clean(),
                    "{model:?}"
                );
            }
        });
        for (name, op) in ops() {
            let mut per_store = Vec::new();
            let mut measured = (Vec::new(), 0, 0);
            for store in &stores {
                let mut took = Vec::new();
                for k in 0..times {
                    counter.clear();
                    let t = Instant::now();
                    rt.block_on(op(store, sp, n, k));
                    took.push(t.elapsed());
                    if k == 0 && matches!(store, AnyStore::Mongo(_)) {
                        measured = counter.take();
                    }
                }
                per_store.push(median(took));
            }
            let (cmds, read, written) = measured;
            counts.push((model, name, cmds.len()));
            println!(
                "| {} | {name} | {} ({}) | {read} | {written} | {:.2?} | {:.2?} |",
                model.name(),
                cmds.len(),
                summary(&cmds),
                per_store[1],
                per_store[0]
            );
        }
        // The seed's own query, by hand.
        let coll = mongo.database().collection::<Document>(sp.collection);
        let mut took = Vec::new();
        let mut label = "";
        for _ in 0..times {
            let t = Instant::now();
            let (l, _) = rt.block_on(seed_query(&coll, model));
            took.push(t.elapsed());
            label = l;
        }
        println!(
            "| {} | seed's {label}, driver by hand | | | | {:.2?} | |",
            model.name(),
            median(took)
        );
    }
    // No command count grows with the tree: each operation's count is a small constant (a
    // move: the version, the node, the new parent, its ancestors, two writes, the commit).
    for (model, name, c) in &counts {
        assert!(*c <= 8, "{model:?} {name}: {c} commands");
    }
    rt.block_on(async { mongo.database().drop().await.unwrap() });
}

fn summary(cmds: &[String]) -> String {
    let mut names: Vec<(&str, usize)> = Vec::new();
    for c in cmds {
        match names.iter_mut().find(|(n, _)| *n == c) {
            Some((_, k)) => *k += 1,
            None => names.push((c, 1)),
        }
    }
    names
        .iter()
        .map(|(n, k)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
