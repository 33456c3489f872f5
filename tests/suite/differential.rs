//! Differential testing: random sequences of operations (pushes to several keys, including
//! string keys with `_`, `.`, `$`, regex metacharacters and unicode; page reads, counts, full
//! lists; size, threshold and chunk at their edge value 1) run against the in-memory store and
//! against MongoDB. Every read must return the same result on both, and at the end both must
//! hold the same documents (server-assigned ObjectId `_id`s of overflow chunks aside).
//!
//! `PROPTEST_CASES=1000 cargo test -p pattern-tests --test suite differential::` runs a longer
//! search; a failure shrinks to a minimal sequence, which proptest keeps in
//! `tests/proptest-regressions/differential.txt` and replays first on every later run.

use bson::{Bson, Document};
use futures::TryStreamExt;
use pattern_core::store::AnyStore;
use pattern_core::{Bucket, Outlier};
use pattern_tests::{canonical, documents};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Item {
    n: u32,
    at: i64,
}

#[derive(Bucket)]
#[bucket(collection = "series", size = 3, time = "at")]
#[allow(dead_code)]
struct Series {
    #[bucket(key)]
    key: String,
    #[bucket(items)]
    items: Vec<Item>,
}

/// `size = 1`: every push opens a bucket.
#[derive(Bucket)]
#[bucket(collection = "singles", size = 1, time = "at")]
#[allow(dead_code)]
struct Singles {
    #[bucket(key)]
    key: String,
    #[bucket(items)]
    items: Vec<Item>,
}

#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(
    collection = "parents",
    threshold = 2,
    overflow = "parents_extra",
    chunk = 2
)]
struct Parent {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: String,
    #[outlier(items)]
    items: Vec<Item>,
}

/// `threshold = 1`, `chunk = 1`.
#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(collection = "tiny", threshold = 1, overflow = "tiny_extra", chunk = 1)]
struct Tiny {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: String,
    #[outlier(items)]
    items: Vec<Item>,
}

const KEYS: [&str; 8] = [
    "12",
    "12_3",
    "a.b",
    "$where",
    "^x$",
    "{\"$gt\": \"\"}",
    "ключ 🔑",
    "",
];

#[derive(Clone, Debug)]
enum Op {
    Push { key: usize, at: i64, single: bool },
    PushMany { key: usize, count: usize, at: i64 },
    Page { key: usize, n: u64, single: bool },
    Counts { key: usize },
    Items { key: usize },
    Save { id: usize, count: usize, tiny: bool },
    PushItem { id: usize, tiny: bool },
    PushItems { id: usize, count: usize, tiny: bool },
    Typical { id: usize, tiny: bool },
    All { id: usize, tiny: bool },
    Count { id: usize, tiny: bool },
    Stream { id: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    // Few distinct seconds, so buckets often start in the same second.
    let at = 1_700_000_000i64..1_700_000_004;
    prop_oneof![
        4 => (key.clone(), at.clone(), any::<bool>()).prop_map(|(key, at, single)| Op::Push { key, at, single }),
        2 => (key.clone(), 0..8usize, at).prop_map(|(key, count, at)| Op::PushMany { key, count, at }),
        2 => (key.clone(), 0..5u64, any::<bool>()).prop_map(|(key, n, single)| Op::Page { key, n, single }),
        1 => key.clone().prop_map(|key| Op::Counts { key }),
        1 => key.clone().prop_map(|key| Op::Items { key }),
        1 => (key.clone(), 0..6usize, any::<bool>()).prop_map(|(id, count, tiny)| Op::Save { id, count, tiny }),
        3 => (key.clone(), any::<bool>()).prop_map(|(id, tiny)| Op::PushItem { id, tiny }),
        1 => (key.clone(), 0..7usize, any::<bool>()).prop_map(|(id, count, tiny)| Op::PushItems { id, count, tiny }),
        1 => (key.clone(), any::<bool>()).prop_map(|(id, tiny)| Op::Typical { id, tiny }),
        1 => (key.clone(), any::<bool>()).prop_map(|(id, tiny)| Op::All { id, tiny }),
        1 => (key.clone(), any::<bool>()).prop_map(|(id, tiny)| Op::Count { id, tiny }),
        1 => key.prop_map(|id| Op::Stream { id }),
    ]
}

/// Runs `ops` on `store`; returns what every operation returned, as text (errors by variant).
async fn run(store: &AnyStore, ops: &[Op]) -> Vec<String> {
    fn show<T: std::fmt::Debug>(r: pattern_core::Result<T>) -> String {
        match r {
            Ok(v) => format!("{v:?}"),
            Err(e) => format!(
                "error {}",
                format!("{e:?}")
                    .split([' ', '{', '('])
                    .next()
                    .unwrap_or_default()
            ),
        }
    }
    let mut next = 0u32;
    let mut item = |at: i64| {
        next += 1;
        Item { n: next, at }
    };
    let mut out = Vec::new();
    for op in ops {
        let s = match op.clone() {
            Op::Push {
                key,
                at,
                single: false,
            } => show(Series::push(store, KEYS[key], item(at)).await),
            Op::Push {
                key,
                at,
                single: true,
            } => show(Singles::push(store, KEYS[key], item(at)).await),
            Op::PushMany { key, count, at } => {
                let items: Vec<Item> = (0..count).map(|i| item(at + i as i64 % 2)).collect();
                show(Series::push_many(store, KEYS[key], &items).await)
            }
            Op::Page {
                key,
                n,
                single: false,
            } => show(Series::page(store, KEYS[key], n).await),
            Op::Page {
                key,
                n,
                single: true,
            } => show(Singles::page(store, KEYS[key], n).await),
            Op::Counts { key } => show(Series::counts(store, KEYS[key]).await),
            Op::Items { key } => show(
                Series::items(store, KEYS[key])
                    .try_collect::<Vec<_>>()
                    .await,
            ),
            Op::Save {
                id,
                count,
                tiny: false,
            } => {
                let items = (0..count).map(|_| item(0)).collect();
                show(
                    Parent {
                        id: KEYS[id].into(),
                        items,
                    }
                    .save(store)
                    .await,
                )
            }
            Op::Save {
                id,
                count,
                tiny: true,
            } => {
                let items = (0..count).map(|_| item(0)).collect();
                show(
                    Tiny {
                        id: KEYS[id].into(),
                        items,
                    }
                    .save(store)
                    .await,
                )
            }
            Op::PushItem { id, tiny: false } => show(Parent::push(store, KEYS[id], item(0)).await),
            Op::PushItem { id, tiny: true } => show(Tiny::push(store, KEYS[id], item(0)).await),
            Op::PushItems {
                id,
                count,
                tiny: false,
            } => {
                let items: Vec<Item> = (0..count).map(|_| item(0)).collect();
                show(Parent::push_many(store, KEYS[id], &items).await)
            }
            Op::PushItems {
                id,
                count,
                tiny: true,
            } => {
                let items: Vec<Item> = (0..count).map(|_| item(0)).collect();
                show(Tiny::push_many(store, KEYS[id], &items).await)
            }
            Op::Typical { id, tiny: false } => show(Parent::typical(store, KEYS[id]).await),
            Op::Typical { id, tiny: true } => show(Tiny::typical(store, KEYS[id]).await),
            Op::All { id, tiny: false } => show(Parent::all_items(store, KEYS[id]).await),
            Op::All { id, tiny: true } => show(Tiny::all_items(store, KEYS[id]).await),
            Op::Count { id, tiny: false } => {
                show(Parent::counts(store, KEYS[id]).await.map(|c| c.items))
            }
            Op::Count { id, tiny: true } => {
                show(Tiny::counts(store, KEYS[id]).await.map(|c| c.items))
            }
            Op::Stream { id } => show(Parent::items(store, KEYS[id]).try_collect::<Vec<_>>().await),
        };
        out.push(s);
    }
    out
}

/// The documents of every collection, canonical, with ObjectId `_id`s (assigned by whoever
/// inserts) removed and the documents sorted.
async fn stored(store: &AnyStore) -> Vec<(String, Vec<Document>)> {
    let mut out = Vec::new();
    for coll in [
        "series",
        "singles",
        "parents",
        "parents_extra",
        "tiny",
        "tiny_extra",
    ] {
        let mut docs: Vec<Document> = documents(store, coll)
            .await
            .iter()
            .map(|d| {
                let mut d = canonical(d);
                if matches!(d.get("_id"), Some(Bson::ObjectId(_))) {
                    d.remove("_id");
                }
                d
            })
            .collect();
        docs.sort_by_key(|d| Bson::Document(d.clone()).into_relaxed_extjson().to_string());
        out.push((coll.to_owned(), docs));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        // 48 unless `PROPTEST_CASES` says otherwise (an explicit count would override it).
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(48),
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Direct(
            "proptest-regressions/differential.txt",
        ))),
        ..ProptestConfig::default()
    })]
    #[test]
    fn both_stores_agree(ops in prop::collection::vec(op(), 1..40)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (mem, mongo, mem_docs, mongo_docs) = rt.block_on(async {
            let memory = pattern_tests::memory_store();
            let mongo = AnyStore::Mongo(pattern_tests::mongo_store("differential").await);
            let a = run(&memory, &ops).await;
            let b = run(&mongo, &ops).await;
            let (da, db) = (stored(&memory).await, stored(&mongo).await);
            pattern_tests::drop_db(&mongo).await;
            (a, b, da, db)
        });
        for (i, (a, b)) in mem.iter().zip(&mongo).enumerate() {
            prop_assert_eq!(a, b, "operation {} ({:?}) differs", i, ops[i]);
        }
        prop_assert_eq!(mem_docs, mongo_docs);
    }
}
