//! The store contract's multi-document operations, the same on both stores: `update_many`
//! (plain, with `$pull`, and with each pipeline rewrite), the `$in`/`$or`/prefix filters,
//! `graph_lookup`, and snapshot transactions (commit, abort, snapshot reads, first-writer-wins
//! conflicts, the retrying `transaction()`, write skew).
//!
//! The work given to `transaction()` must return a future that owns what it uses besides the
//! transaction (`for<'t> FnMut(&'t Txn) -> BoxFuture<'t, _>` admits no other borrow), hence the
//! clones and `Arc`s moved into each attempt.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bson::{doc, Bson, Document};
use pattern_core::store::query::{
    Filter, FindOptions, Graph, GraphLookup, IndexSpec, Rewrite, Shift, Update,
};
use pattern_core::{
    store::{AnyTxn, Store, Transaction},
    transaction, AnyStore, Error,
};
use pattern_tests::{assert_same_documents, documents, on_both_stores};

const C: &str = "things";

async fn insert_all(store: &impl Store, docs: Vec<Document>) {
    for d in docs {
        store.insert_one(C, d).await.expect("insert");
    }
}

async fn find_ids(store: &impl Store, filter: &Filter) -> Vec<Bson> {
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        ..FindOptions::default()
    };
    let docs = store.find(C, filter, &opts).await.expect("find");
    docs.iter()
        .map(|d| d.get("_id").cloned().unwrap())
        .collect()
}

async fn get(store: &impl Store, id: &str) -> Option<Document> {
    let docs = store
        .find(C, &Filter::eq("_id", id), &FindOptions::default())
        .await
        .expect("find");
    docs.into_iter().next()
}

fn ids(v: &[&str]) -> Vec<Bson> {
    v.iter().map(|s| Bson::String(s.to_string())).collect()
}

fn all() -> Filter {
    Filter::And(vec![])
}

fn set(field: &'static str, v: impl Into<Bson>) -> Update {
    Update {
        set: vec![(field.into(), v.into())],
        ..Update::default()
    }
}

fn inc(field: &'static str, by: i32) -> Update {
    Update {
        inc: vec![(field.into(), by)],
        ..Update::default()
    }
}

// ---- update_many ----------------------------------------------------------------------------

async fn update_many_plain_and_pull(store: AnyStore) {
    insert_all(
        &store,
        vec![
            doc! {"_id": "a", "tags": ["x", "y", "x", 1], "n": 1},
            doc! {"_id": "b", "tags": ["y"], "n": 2},
            doc! {"_id": "c", "n": 3},
            doc! {"_id": "d", "tags": [], "n": 4},
        ],
    )
    .await;
    let pull = Update {
        pull: vec![("tags".into(), Bson::String("x".into()))],
        ..Update::default()
    };
    // Every document matches; `c` has no array and stays without one.
    assert_eq!(store.update_many(C, &all(), &pull).await.unwrap(), 4);
    let mut bump = inc("n", 10);
    bump.set = vec![("seen".into(), Bson::Boolean(true))];
    let matched = store
        .update_many(C, &Filter::In("_id".into(), ids(&["a", "c", "zz"])), &bump)
        .await
        .unwrap();
    assert_eq!(matched, 2);
    // Nothing matches: 0, nothing written.
    let none = Filter::In("_id".into(), vec![]);
    assert_eq!(store.update_many(C, &none, &inc("n", 1)).await.unwrap(), 0);
    assert_same_documents(
        &documents(&store, C).await,
        &[
            doc! {"_id": "a", "tags": ["y", 1], "n": 11, "seen": true},
            doc! {"_id": "b", "tags": ["y"], "n": 2},
            doc! {"_id": "c", "n": 13, "seen": true},
            doc! {"_id": "d", "tags": [], "n": 4},
        ],
    );
    // A pull of an element of `tags` filtered by that element ($in on an array matches by
    // element).
    let pull_y = Update {
        pull: vec![("tags".into(), Bson::String("y".into()))],
        ..Update::default()
    };
    let matched = store
        .update_many(C, &Filter::In("tags".into(), ids(&["y"])), &pull_y)
        .await
        .unwrap();
    assert_eq!(matched, 2);
    assert_eq!(
        find_ids(&store, &Filter::In("tags".into(), ids(&["y"]))).await,
        Vec::<Bson>::new()
    );
}

async fn update_many_array_prefix(store: AnyStore) {
    // A subtree moved: m (ancestors [r, a]) goes under b, so every node under m (ancestors
    // [r, a, m, ...]) has its first two ancestors replaced by [r, b].
    insert_all(
        &store,
        vec![
            doc! {"_id": "m", "ancestors": ["r", "a"]},
            doc! {"_id": "m1", "ancestors": ["r", "a", "m"]},
            doc! {"_id": "m2", "ancestors": ["r", "a", "m", "m1"]},
            doc! {"_id": "o", "ancestors": ["r", "a"]},
        ],
    )
    .await;
    let update = Update {
        set: vec![("moved".into(), Bson::Boolean(true))],
        rewrite: vec![Rewrite::ArrayPrefix {
            field: "ancestors".into(),
            drop: 2,
            prefix: vec!["r".into(), "b".into()],
        }],
        ..Update::default()
    };
    let under_m = Filter::In("ancestors".into(), ids(&["m"]));
    assert_eq!(store.update_many(C, &under_m, &update).await.unwrap(), 2);
    assert_same_documents(
        &documents(&store, C).await,
        &[
            doc! {"_id": "m", "ancestors": ["r", "a"]},
            doc! {"_id": "m1", "ancestors": ["r", "b", "m"], "moved": true},
            doc! {"_id": "m2", "ancestors": ["r", "b", "m", "m1"], "moved": true},
            doc! {"_id": "o", "ancestors": ["r", "a"]},
        ],
    );
    // A prefix of documents or `$`-strings is stored as it is, not evaluated.
    let literal = Update {
        rewrite: vec![Rewrite::ArrayPrefix {
            field: "ancestors".into(),
            drop: 1,
            prefix: vec![Bson::String("$r".into()), Bson::Document(doc! {"$x": 1})],
        }],
        ..Update::default()
    };
    let one = Filter::eq("_id", "o");
    assert_eq!(store.update_many(C, &one, &literal).await.unwrap(), 1);
    assert_same_documents(
        &[get(&store, "o").await.unwrap()],
        &[doc! {"_id": "o", "ancestors": ["$r", {"$x": 1}, "a"]}],
    );
    // Refused before anything is written: rewrites beside `$inc`.
    let mut bad = update.clone();
    bad.inc = vec![("n".into(), 1)];
    let before = documents(&store, C).await;
    assert!(matches!(
        store.update_many(C, &all(), &bad).await,
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(documents(&store, C).await, before);
    // A document whose field is not an array refuses the update.
    store
        .insert_one(C, doc! {"_id": "s", "ancestors": "r"})
        .await
        .unwrap();
    assert!(store
        .update_many(C, &Filter::eq("_id", "s"), &update)
        .await
        .is_err());
    assert_eq!(
        get(&store, "s").await.unwrap(),
        doc! {"_id": "s", "ancestors": "r"}
    );
}

async fn update_many_string_prefix(store: AnyStore) {
    // Materialized paths with multibyte characters: `drop` counts characters, not bytes.
    insert_all(
        &store,
        vec![
            doc! {"_id": "1", "path": ",é,日本,"},
            doc! {"_id": "2", "path": ",é,日本,x,"},
            doc! {"_id": "3", "path": ",é,日本,x,ü€,"},
            doc! {"_id": "4", "path": ",é,日,"},
            doc! {"_id": "5", "path": 7},
        ],
    )
    .await;
    let prefix = ",é,日本,";
    let update = Update {
        rewrite: vec![Rewrite::StringPrefix {
            field: "path".into(),
            drop: prefix.chars().count(),
            prefix: ",ö,$a,".into(),
        }],
        ..Update::default()
    };
    let filter = Filter::StartsWith("path".into(), prefix.into());
    assert_eq!(store.update_many(C, &filter, &update).await.unwrap(), 3);
    assert_same_documents(
        &documents(&store, C).await,
        &[
            doc! {"_id": "1", "path": ",ö,$a,"},
            doc! {"_id": "2", "path": ",ö,$a,x,"},
            doc! {"_id": "3", "path": ",ö,$a,x,ü€,"},
            doc! {"_id": "4", "path": ",é,日,"},
            doc! {"_id": "5", "path": 7},
        ],
    );
    // A document whose field is not a string refuses the update.
    assert!(store
        .update_many(C, &Filter::eq("_id", "5"), &update)
        .await
        .is_err());
}

async fn update_many_shift(store: AnyStore) {
    let mut docs: Vec<Document> = (1..=10)
        .map(|i| doc! {"_id": format!("n{i:02}"), "left": i})
        .collect();
    docs.push(doc! {"_id": "missing"});
    docs.push(doc! {"_id": "text", "left": "five"});
    docs.push(doc! {"_id": "null", "left": Bson::Null});
    docs.push(doc! {"_id": "long", "left": 7i64});
    insert_all(&store, docs).await;
    let update = Update {
        rewrite: vec![Rewrite::Shift {
            field: "left".into(),
            pieces: vec![
                Shift {
                    from: 3,
                    to: 5,
                    by: 100,
                },
                Shift {
                    from: 5,
                    to: 8,
                    by: -2,
                },
            ],
        }],
        ..Update::default()
    };
    assert_eq!(store.update_many(C, &all(), &update).await.unwrap(), 14);
    let stored = documents(&store, C).await;
    let left = |id: &str| {
        stored
            .iter()
            .find(|d| d.get_str("_id").unwrap() == id)
            .unwrap()
            .get("left")
            .cloned()
    };
    let as_i64 = |id: &str| left(id).and_then(|b| pattern_tests::as_int(&b));
    // The first piece holding the value moves it; values in no piece stay.
    let expected = [1, 2, 103, 104, 105, 4, 5, 6, 9, 10];
    for (i, e) in expected.iter().enumerate() {
        assert_eq!(as_i64(&format!("n{:02}", i + 1)), Some(*e), "n{:02}", i + 1);
    }
    assert_eq!(as_i64("long"), Some(5));
    assert_eq!(left("missing"), None);
    assert_eq!(left("text"), Some(Bson::String("five".into())));
    assert_eq!(left("null"), Some(Bson::Null));
}

async fn prefix_and_or_filters(store: AnyStore) {
    insert_all(
        &store,
        vec![
            doc! {"_id": 1, "p": "a.b", "k": 1},
            doc! {"_id": 2, "p": "axb", "k": 2},
            doc! {"_id": 3, "p": "a.bc", "k": 3},
            doc! {"_id": 4, "p": "Book", "k": 4},
            doc! {"_id": 5, "p": "Books", "k": 5},
            doc! {"_id": 6, "p": "book", "k": 6},
            doc! {"_id": 7, "p": "A Book", "k": 7},
            doc! {"_id": 8, "p": "(x)*+?[^$]{1}|\\ #-/", "k": 8},
            doc! {"_id": 9, "p": "日本語", "k": 9},
            doc! {"_id": 10, "p": ["Book", "x"], "k": 10},
            doc! {"_id": 11, "p": 12, "k": 11},
            doc! {"_id": 12, "p": "Boo\nk", "k": 12},
        ],
    )
    .await;
    let starts = |s: &str| Filter::StartsWith("p".into(), s.into());
    let int_ids = |v: &[i32]| v.iter().map(|i| Bson::Int32(*i)).collect::<Vec<_>>();
    assert_eq!(find_ids(&store, &starts("a.b")).await, int_ids(&[1, 3]));
    // An array field matches by element.
    assert_eq!(
        find_ids(&store, &starts("Book")).await,
        int_ids(&[4, 5, 10])
    );
    assert_eq!(
        find_ids(&store, &starts("(x)*+?[^$]{1}|\\ #-/")).await,
        int_ids(&[8])
    );
    assert_eq!(find_ids(&store, &starts("(x)")).await, int_ids(&[8]));
    assert_eq!(find_ids(&store, &starts("日本")).await, int_ids(&[9]));
    assert_eq!(
        find_ids(&store, &starts("Boo")).await,
        int_ids(&[4, 5, 10, 12])
    );
    // The empty prefix: every string (and array holding one).
    assert_eq!(
        find_ids(&store, &starts("")).await,
        int_ids(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12])
    );
    // $in: by value, or by array element; none matches nothing.
    let in_ = |v: Vec<Bson>| Filter::In("p".into(), v);
    assert_eq!(
        find_ids(
            &store,
            &in_(vec!["axb".into(), "x".into(), Bson::Int32(12)])
        )
        .await,
        int_ids(&[2, 10, 11])
    );
    assert_eq!(find_ids(&store, &in_(vec![])).await, Vec::<Bson>::new());
    // $or, alone, beside other conditions, and two of them.
    let or = Filter::Or(vec![starts("Book"), Filter::eq("k", 2)]);
    assert_eq!(find_ids(&store, &or).await, int_ids(&[2, 4, 5, 10]));
    let and = Filter::and([or.clone(), Filter::Gt("k".into(), Bson::Int32(4))]);
    assert_eq!(find_ids(&store, &and).await, int_ids(&[5, 10]));
    let two = Filter::and([or, Filter::Or(vec![Filter::eq("k", 4), Filter::eq("k", 2)])]);
    assert_eq!(find_ids(&store, &two).await, int_ids(&[2, 4]));
    assert_eq!(
        find_ids(&store, &Filter::Or(vec![])).await,
        Vec::<Bson>::new()
    );
    // The same filters select what update_many writes.
    let n = store
        .update_many(C, &starts("a.b"), &set("hit", true))
        .await
        .unwrap();
    assert_eq!(n, 2);
    let hit = find_ids(&store, &Filter::eq("hit", true)).await;
    assert_eq!(hit, int_ids(&[1, 3]));
}

// ---- graph_lookup ---------------------------------------------------------------------------

/// r
/// ├── a
/// │   └── c
/// │       └── d
/// └── b
async fn tree(store: &impl Store) {
    insert_all(
        store,
        vec![
            doc! {"_id": "r", "parent": Bson::Null, "children": ["a", "b"]},
            doc! {"_id": "a", "parent": "r", "children": ["c"]},
            doc! {"_id": "b", "parent": "r", "children": []},
            doc! {"_id": "c", "parent": "a", "children": ["d"], "ancestors": ["r", "a"]},
            doc! {"_id": "d", "parent": "c", "ancestors": ["r", "a", "c"]},
            // Other roots: parent null or missing, which a null must not connect to.
            doc! {"_id": "r2", "parent": Bson::Null},
            doc! {"_id": "r3"},
        ],
    )
    .await;
}

fn lookup(start: &str, with: &'static str, from: &'static str, to: &'static str) -> GraphLookup {
    GraphLookup {
        start: start.into(),
        start_with: with.into(),
        connect_from: from.into(),
        connect_to: to.into(),
        max_depth: None,
    }
}

/// The found documents' ids and depths, sorted.
fn found(g: &Graph) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = g
        .found
        .iter()
        .map(|(d, depth)| {
            let id = match d.get("_id") {
                Some(Bson::String(s)) => s.clone(),
                other => format!("{other:?}"),
            };
            (id, *depth)
        })
        .collect();
    v.sort();
    v
}

fn pairs(v: &[(&str, u32)]) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = v.iter().map(|(s, d)| (s.to_string(), *d)).collect();
    v.sort();
    v
}

async fn graph_lookup_both_directions(store: AnyStore) {
    tree(&store).await;
    // Down: the documents whose parent is r, then theirs...
    let down = store
        .graph_lookup(C, &lookup("r", "_id", "_id", "parent"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        down.start,
        doc! {"_id": "r", "parent": Bson::Null, "children": ["a", "b"]}
    );
    assert_eq!(
        found(&down),
        pairs(&[("a", 0), ("b", 0), ("c", 1), ("d", 2)])
    );
    // Found documents come back whole, without the depth.
    let c = down.found.iter().find(|(d, _)| d.get_str("_id") == Ok("c"));
    assert_same_documents(
        &[c.unwrap().0.clone()],
        &[doc! {"_id": "c", "parent": "a", "children": ["d"], "ancestors": ["r", "a"]}],
    );
    // Up: d's parent, its parent..., up to the root whose null parent connects nothing.
    let up = store
        .graph_lookup(C, &lookup("d", "parent", "parent", "_id"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(up.start.get_str("_id"), Ok("d"));
    assert_eq!(found(&up), pairs(&[("c", 0), ("a", 1), ("r", 2)]));
    // max_depth.
    let mut q = lookup("r", "_id", "_id", "parent");
    q.max_depth = Some(0);
    let g = store.graph_lookup(C, &q).await.unwrap().unwrap();
    assert_eq!(found(&g), pairs(&[("a", 0), ("b", 0)]));
    q.max_depth = Some(1);
    let g = store.graph_lookup(C, &q).await.unwrap().unwrap();
    assert_eq!(found(&g), pairs(&[("a", 0), ("b", 0), ("c", 1)]));
    let mut q = lookup("d", "parent", "parent", "_id");
    q.max_depth = Some(1);
    let g = store.graph_lookup(C, &q).await.unwrap().unwrap();
    assert_eq!(found(&g), pairs(&[("c", 0), ("a", 1)]));
}

async fn graph_lookup_arrays(store: AnyStore) {
    tree(&store).await;
    // Down through arrays of children.
    let g = store
        .graph_lookup(C, &lookup("r", "children", "children", "_id"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found(&g), pairs(&[("a", 0), ("b", 0), ("c", 1), ("d", 2)]));
    // Matching an array field by element: the documents whose ancestors hold a.
    let mut q = lookup("a", "_id", "_id", "ancestors");
    q.max_depth = Some(0);
    let g = store.graph_lookup(C, &q).await.unwrap().unwrap();
    assert_eq!(found(&g), pairs(&[("c", 0), ("d", 0)]));
    // Without a limit, c's and d's ids continue the search (d again: found once, at depth 0).
    q.max_depth = None;
    let g = store.graph_lookup(C, &q).await.unwrap().unwrap();
    assert_eq!(found(&g), pairs(&[("c", 0), ("d", 0)]));
    // Up through an array of ancestors, from d: r, a, c at depth 0.
    let g = store
        .graph_lookup(C, &lookup("d", "ancestors", "no_such_field", "_id"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found(&g), pairs(&[("r", 0), ("a", 0), ("c", 0)]));
}

async fn graph_lookup_cycles(store: AnyStore) {
    insert_all(
        &store,
        vec![
            doc! {"_id": "x", "next": "y"},
            doc! {"_id": "y", "next": "z"},
            doc! {"_id": "z", "next": "x"},
            doc! {"_id": "s", "next": "s"},
            doc! {"_id": "fan", "next": ["x", "y", "fan"]},
        ],
    )
    .await;
    let g = store
        .graph_lookup(C, &lookup("x", "next", "next", "_id"))
        .await
        .unwrap()
        .unwrap();
    // The start is found again when the search reaches it.
    assert_eq!(found(&g), pairs(&[("y", 0), ("z", 1), ("x", 2)]));
    let g = store
        .graph_lookup(C, &lookup("s", "next", "next", "_id"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found(&g), pairs(&[("s", 0)]));
    let g = store
        .graph_lookup(C, &lookup("fan", "next", "next", "_id"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        found(&g),
        pairs(&[("fan", 0), ("x", 0), ("y", 0), ("z", 1)])
    );
    // Backwards: who points at x (z, fan), who points at them...
    let g = store
        .graph_lookup(C, &lookup("x", "_id", "_id", "next"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        found(&g),
        pairs(&[("fan", 0), ("z", 0), ("y", 1), ("x", 2)])
    );
}

async fn graph_lookup_deep_chain(store: AnyStore) {
    // 300 documents in a chain: no depth limit unless asked for.
    let chain: Vec<Document> = (0..300)
        .map(
            |i| doc! {"_id": format!("{i:03}"), "parent": (i > 0).then(|| format!("{:03}", i - 1))},
        )
        .collect();
    insert_all(&store, chain).await;
    let mut q = lookup("000", "_id", "_id", "parent");
    let g = store.graph_lookup(C, &q).await.unwrap().unwrap();
    assert_eq!(g.found.len(), 299);
    assert_eq!(g.found.iter().map(|(_, d)| *d).max(), Some(298));
    q.max_depth = Some(150);
    let g = store.graph_lookup(C, &q).await.unwrap().unwrap();
    assert_eq!(g.found.len(), 151);
    let up = store
        .graph_lookup(C, &lookup("299", "parent", "parent", "_id"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(up.found.len(), 299);
}

async fn graph_lookup_null_and_unknown_starts(store: AnyStore) {
    tree(&store).await;
    store
        .insert_one(C, doc! {"_id": Bson::Null, "parent": "r"})
        .await
        .unwrap();
    store
        .insert_one(C, doc! {"_id": "n", "parent": [Bson::Null, "b"]})
        .await
        .unwrap();
    // r's parent is null: nothing (not the null-_id document, not the other roots).
    let up = lookup("r", "parent", "parent", "_id");
    let g = store.graph_lookup(C, &up).await.unwrap().unwrap();
    assert_eq!(found(&g), vec![]);
    assert_eq!(g.start.get_str("_id"), Ok("r"));
    // r3 has no parent: nothing either.
    let g = store
        .graph_lookup(C, &lookup("r3", "parent", "parent", "_id"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((found(&g), g.start), (vec![], doc! {"_id": "r3"}));
    // Down from r2 (parent null): the documents whose parent is r2, none; not the roots.
    let g = store
        .graph_lookup(C, &lookup("r2", "parent", "_id", "parent"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found(&g), vec![]);
    // An array holding null: only its other values connect.
    let g = store
        .graph_lookup(C, &lookup("n", "parent", "parent", "_id"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found(&g), pairs(&[("b", 0), ("r", 1)]));
    // A document whose connect_to array holds a null beside other values is found by them.
    store
        .insert_one(C, doc! {"_id": "m", "parents": [Bson::Null, "r"]})
        .await
        .unwrap();
    store
        .insert_one(
            C,
            doc! {"_id": "k", "parents": ["m"], "up": [Bson::Null, "m"]},
        )
        .await
        .unwrap();
    let g = store
        .graph_lookup(C, &lookup("r", "_id", "_id", "parents"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found(&g), pairs(&[("m", 0), ("k", 1)]));
    let g = store
        .graph_lookup(C, &lookup("k", "up", "up", "_id"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found(&g), pairs(&[("m", 0)]));
    // An unknown start: None.
    let q = lookup("nobody", "_id", "_id", "parent");
    assert_eq!(store.graph_lookup(C, &q).await.unwrap(), None);
    assert_eq!(store.graph_lookup("no_collection", &q).await.unwrap(), None);
}

// ---- transactions ---------------------------------------------------------------------------

async fn commit_makes_all_visible(store: AnyStore) {
    insert_all(
        &store,
        vec![
            doc! {"_id": "a", "n": 1, "tags": ["t"]},
            doc! {"_id": "gone", "n": 0},
        ],
    )
    .await;
    let before = documents(&store, C).await;
    let tx = store.start_transaction().await.unwrap();
    tx.insert_one(C, doc! {"_id": "b", "n": 2, "parent": "a"})
        .await
        .unwrap();
    tx.update_one(C, &Filter::eq("_id", "a"), &mut inc("n", 10), false)
        .await
        .unwrap();
    tx.replace_one(C, &Filter::eq("_id", "c"), doc! {"_id": "c", "n": 3}, true)
        .await
        .unwrap();
    assert_eq!(
        tx.delete_many(C, &Filter::eq("_id", "gone")).await.unwrap(),
        1
    );
    let pull = Update {
        pull: vec![("tags".into(), "t".into())],
        ..Update::default()
    };
    assert_eq!(tx.update_many(C, &all(), &pull).await.unwrap(), 3);
    // The transaction reads its own writes...
    let n = |d: Option<Document>| d.and_then(|d| d.get("n").and_then(pattern_tests::as_int));
    assert_eq!(n(get(&tx, "a").await), Some(11));
    assert_eq!(find_ids(&tx, &all()).await, ids(&["a", "b", "c"]));
    let raw = tx
        .find_raw(C, &all(), &FindOptions::default())
        .await
        .unwrap();
    assert_eq!(raw.len(), 3);
    let stats = tx.array_stats(C, &all(), "tags").await.unwrap();
    assert_eq!((stats.documents, stats.items), (3, 0));
    let g = tx
        .graph_lookup(C, &lookup("a", "_id", "_id", "parent"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found(&g), pairs(&[("b", 0)]));
    // ...which nobody else sees before the commit.
    assert_eq!(documents(&store, C).await, before);
    tx.commit().await.unwrap();
    assert_same_documents(
        &documents(&store, C).await,
        &[
            doc! {"_id": "a", "n": 11, "tags": []},
            doc! {"_id": "b", "n": 2, "parent": "a"},
            doc! {"_id": "c", "n": 3},
        ],
    );
    // Through the helper: the work's value, everything committed.
    let v = transaction(&store, |tx| {
        Box::pin(async move {
            tx.insert_one(C, doc! {"_id": "d"}).await?;
            tx.update_many(C, &all(), &set("done", true)).await
        })
    })
    .await
    .unwrap();
    assert_eq!(v, 4);
    assert_eq!(find_ids(&store, &Filter::eq("done", true)).await.len(), 4);
}

async fn abort_and_errors_discard_all(store: AnyStore) {
    insert_all(&store, vec![doc! {"_id": "a", "n": 1}]).await;
    let before = documents(&store, C).await;
    let tx = store.start_transaction().await.unwrap();
    tx.insert_one(C, doc! {"_id": "b"}).await.unwrap();
    tx.update_one(C, &Filter::eq("_id", "a"), &mut inc("n", 1), false)
        .await
        .unwrap();
    tx.delete_many(C, &Filter::eq("_id", "a")).await.unwrap();
    tx.abort().await.unwrap();
    assert_eq!(documents(&store, C).await, before);

    // An error returned by the work aborts: nothing kept, the error as it was.
    let r: pattern_core::Result<()> = transaction(&store, |tx| {
        Box::pin(async move {
            tx.insert_one(C, doc! {"_id": "c"}).await?;
            tx.update_many(C, &all(), &inc("n", 5)).await?;
            Err(Error::InvalidInput("changed my mind".into()))
        })
    })
    .await;
    assert!(matches!(r, Err(Error::InvalidInput(m)) if m == "changed my mind"));
    assert_eq!(documents(&store, C).await, before);

    // A store error inside (a duplicate key) aborts it too, and is returned as it is.
    let attempts = Arc::new(AtomicU32::new(0));
    let r: pattern_core::Result<()> = transaction(&store, |tx| {
        let attempts = attempts.clone();
        Box::pin(async move {
            attempts.fetch_add(1, Ordering::SeqCst);
            tx.insert_one(C, doc! {"_id": "d"}).await?;
            tx.insert_one(C, doc! {"_id": "a"}).await?;
            Ok(())
        })
    })
    .await;
    assert!(matches!(r, Err(Error::DuplicateKey { .. })), "{r:?}");
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "not retried");
    assert_eq!(documents(&store, C).await, before);

    // An update_many that fails part way inside a transaction leaves nothing.
    insert_all(&store, vec![doc! {"_id": "z", "ancestors": "not an array"}]).await;
    let before = documents(&store, C).await;
    let rewrite = Update {
        rewrite: vec![Rewrite::ArrayPrefix {
            field: "ancestors".into(),
            drop: 0,
            prefix: vec!["p".into()],
        }],
        ..Update::default()
    };
    let r = transaction(&store, |tx| {
        let rewrite = rewrite.clone();
        Box::pin(async move {
            tx.update_many(C, &all(), &set("ancestors", vec![Bson::from("q")]))
                .await?;
            tx.update_one(
                C,
                &Filter::eq("_id", "z"),
                &mut set("ancestors", "not an array"),
                false,
            )
            .await?;
            tx.update_many(C, &all(), &rewrite).await
        })
    })
    .await;
    assert!(r.is_err());
    assert_eq!(documents(&store, C).await, before);
}

async fn snapshot_isolation(store: AnyStore) {
    insert_all(&store, vec![doc! {"_id": "a", "n": 1}]).await;
    let tx = store.start_transaction().await.unwrap();
    // The first read (MongoDB takes the snapshot at the transaction's first operation).
    assert_eq!(get(&tx, "a").await.unwrap().get_i32("n"), Ok(1));
    // Others commit after it: the transaction keeps seeing its snapshot.
    store
        .update_one(C, &Filter::eq("_id", "a"), &mut set("n", 2), false)
        .await
        .unwrap();
    store.insert_one(C, doc! {"_id": "b"}).await.unwrap();
    let other = store.start_transaction().await.unwrap();
    other.insert_one(C, doc! {"_id": "c"}).await.unwrap();
    other.commit().await.unwrap();
    assert_eq!(get(&tx, "a").await.unwrap().get_i32("n"), Ok(1));
    assert_eq!(find_ids(&tx, &all()).await, ids(&["a"]));
    let stats = tx.array_stats(C, &all(), "x").await.unwrap();
    assert_eq!(stats.documents, 1);
    // Its own writes to other documents are seen beside the snapshot.
    tx.insert_one(C, doc! {"_id": "t"}).await.unwrap();
    assert_eq!(find_ids(&tx, &all()).await, ids(&["a", "t"]));
    tx.commit().await.unwrap();
    assert_eq!(find_ids(&store, &all()).await, ids(&["a", "b", "c", "t"]));
    assert_eq!(get(&store, "a").await.unwrap().get_i32("n"), Ok(2));
}

/// Goes off call and bumps the shift's version, in `t`.
async fn off(t: &AnyTxn, who: &str) -> pattern_core::Result<()> {
    t.update_one(
        C,
        &Filter::eq("_id", who),
        &mut set("on_call", false),
        false,
    )
    .await?;
    t.update_one(
        C,
        &Filter::eq("_id", "shift"),
        &mut inc("version", 1),
        false,
    )
    .await
    .map(drop)
}

fn is_conflict<T: std::fmt::Debug>(r: &pattern_core::Result<T>) -> bool {
    matches!(r, Err(e) if e.is_transient() && matches!(e, Error::WriteConflict { .. }))
}

async fn first_writer_wins(store: AnyStore) {
    insert_all(
        &store,
        vec![doc! {"_id": "a", "n": 0}, doc! {"_id": "b", "n": 0}],
    )
    .await;
    // Two open transactions write one document: the second fails at once.
    let t1 = store.start_transaction().await.unwrap();
    let t2 = store.start_transaction().await.unwrap();
    assert_eq!(get(&t2, "b").await.unwrap().get_i32("n"), Ok(0));
    t1.update_one(C, &Filter::eq("_id", "a"), &mut inc("n", 1), false)
        .await
        .unwrap();
    let r = t2
        .update_one(C, &Filter::eq("_id", "a"), &mut inc("n", 10), false)
        .await;
    assert!(is_conflict(&r), "{r:?}");
    let _ = t2.abort().await;
    t1.commit().await.unwrap();
    assert_eq!(get(&store, "a").await.unwrap().get_i32("n"), Ok(1));

    // A document another writer changed after the transaction's snapshot: a conflict too
    // (here a plain write outside any transaction), and a delete as well as an update.
    for write in ["update", "delete", "replace"] {
        let t = store.start_transaction().await.unwrap();
        assert!(get(&t, "b").await.is_some());
        store
            .update_one(C, &Filter::eq("_id", "b"), &mut inc("n", 1), false)
            .await
            .unwrap();
        let r = match write {
            "update" => t
                .update_one(C, &Filter::eq("_id", "b"), &mut inc("n", 10), false)
                .await
                .map(drop),
            "delete" => t.delete_many(C, &Filter::eq("_id", "b")).await.map(drop),
            _ => t
                .replace_one(C, &Filter::eq("_id", "b"), doc! {"_id": "b"}, false)
                .await
                .map(drop),
        };
        assert!(is_conflict(&r), "{write}: {r:?}");
        let _ = t.abort().await;
    }
    assert_eq!(get(&store, "b").await.unwrap().get_i32("n"), Ok(3));

    // Two transactions inserting one _id: the second conflicts (it cannot know yet whether
    // the first commits).
    let t1 = store.start_transaction().await.unwrap();
    let t2 = store.start_transaction().await.unwrap();
    t1.insert_one(C, doc! {"_id": "new", "by": 1})
        .await
        .unwrap();
    let r = t2.insert_one(C, doc! {"_id": "new", "by": 2}).await;
    assert!(is_conflict(&r), "{r:?}");
    let _ = t2.abort().await;
    t1.commit().await.unwrap();
    assert_eq!(get(&store, "new").await.unwrap().get_i32("by"), Ok(1));
}

/// A document held by an open transaction that never finishes: every attempt of another
/// transaction writing it conflicts at once, and the helper gives up after
/// `TRANSACTION_ATTEMPTS` attempts with `Error::Contention`, keeping nothing.
async fn transaction_gives_up_with_contention(store: AnyStore) {
    insert_all(&store, vec![doc! {"_id": "a", "n": 1}]).await;
    let holder = store.start_transaction().await.unwrap();
    holder
        .update_one(C, &Filter::eq("_id", "a"), &mut set("n", 2), false)
        .await
        .unwrap();
    let attempts = Arc::new(AtomicU32::new(0));
    let r: Result<(), Error> = transaction(&store, |tx| {
        let attempts = attempts.clone();
        Box::pin(async move {
            attempts.fetch_add(1, Ordering::SeqCst);
            tx.insert_one("side", doc! {"_id": 1}).await?;
            tx.update_one(C, &Filter::eq("_id", "a"), &mut set("n", 3), false)
                .await?;
            Ok(())
        })
    })
    .await;
    assert!(
        matches!(r, Err(Error::Contention { attempts: n, .. }) if n == pattern_core::store::TRANSACTION_ATTEMPTS),
        "{r:?}"
    );
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        pattern_core::store::TRANSACTION_ATTEMPTS
    );
    holder.abort().await.unwrap();
    assert_eq!(get(&store, "a").await.unwrap().get_i32("n"), Ok(1));
    assert!(documents(&store, "side").await.is_empty());
}

/// `transaction_with`: the work borrows local data (a slice to write, a counter it bumps)
/// across its attempts; a conflict on the first attempt runs it again with the same context.
async fn transaction_with_borrows_its_context(store: AnyStore) {
    insert_all(&store, vec![doc! {"_id": "a", "n": 1}]).await;
    let items = vec![doc! {"_id": "x"}, doc! {"_id": "y"}];
    let mut attempts = 0u32;
    let outside = store.clone();
    pattern_core::transaction_with(
        &store,
        &mut (&items, &mut attempts, &outside),
        |tx, (items, attempts, outside)| {
            Box::pin(async move {
                **attempts += 1;
                let n = get(tx, "a").await.unwrap().get_i32("n").unwrap();
                if **attempts == 1 {
                    outside
                        .update_one(C, &Filter::eq("_id", "a"), &mut inc("n", 10), false)
                        .await?;
                }
                for item in items.iter() {
                    tx.insert_one("items", item.clone()).await?;
                }
                tx.update_one(C, &Filter::eq("_id", "a"), &mut set("n", n + 1), false)
                    .await?;
                Ok(())
            })
        },
    )
    .await
    .unwrap();
    assert_eq!(attempts, 2);
    assert_eq!(get(&store, "a").await.unwrap().get_i32("n"), Ok(12));
    assert_eq!(documents(&store, "items").await, items);
}

async fn transaction_retries_conflicts(store: AnyStore) {
    insert_all(&store, vec![doc! {"_id": "a", "n": 1}]).await;
    // The first attempt reads, then another writer changes the document, so the attempt's
    // write conflicts: the helper runs the work again, on a fresh snapshot, and commits.
    let attempts = Arc::new(AtomicU32::new(0));
    let seen = transaction(&store, |tx| {
        let (attempts, outside) = (attempts.clone(), store.clone());
        Box::pin(async move {
            let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            let n = get(tx, "a").await.unwrap().get_i32("n").unwrap();
            if attempt == 1 {
                outside
                    .update_one(C, &Filter::eq("_id", "a"), &mut inc("n", 100), false)
                    .await?;
            }
            tx.update_one(C, &Filter::eq("_id", "a"), &mut set("n", n + 1), false)
                .await?;
            Ok(n)
        })
    })
    .await
    .unwrap();
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert_eq!(seen, 101);
    assert_eq!(get(&store, "a").await.unwrap().get_i32("n"), Ok(102));

    // Concurrent read-modify-write increments through the helper: none is lost.
    let tasks = 6;
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            transaction(&store, |tx| {
                Box::pin(async move {
                    let n = get(tx, "a").await.unwrap().get_i32("n").unwrap();
                    tx.update_one(C, &Filter::eq("_id", "a"), &mut set("n", n + 1), false)
                        .await?;
                    Ok(())
                })
            })
            .await
        }));
    }
    for h in handles {
        h.await.unwrap().unwrap();
    }
    assert_eq!(
        get(&store, "a").await.unwrap().get_i32("n"),
        Ok(102 + tasks)
    );

    // Inside a transaction already, the helper runs the work in it, once; nesting is refused.
    let tx = store.start_transaction().await.unwrap();
    transaction(&tx, |inner: &AnyTxn| {
        Box::pin(async move { inner.insert_one(C, doc! {"_id": "inner"}).await })
    })
    .await
    .unwrap();
    assert!(matches!(
        tx.start_transaction().await,
        Err(Error::InvalidInput(_))
    ));
    assert!(get(&store, "inner").await.is_none());
    tx.commit().await.unwrap();
    assert!(get(&store, "inner").await.is_some());
}

async fn write_skew_and_its_cure(store: AnyStore) {
    // Two doctors on call; each transaction checks that the other is, then goes off call.
    let reset = || async {
        store.delete_many(C, &all()).await.unwrap();
        insert_all(
            &store,
            vec![
                doc! {"_id": "alice", "on_call": true},
                doc! {"_id": "bob", "on_call": true},
                doc! {"_id": "shift", "version": 0},
            ],
        )
        .await;
    };
    let on_call = Filter::eq("on_call", true);
    reset().await;
    let t1 = store.start_transaction().await.unwrap();
    let t2 = store.start_transaction().await.unwrap();
    assert_eq!(find_ids(&t1, &on_call).await.len(), 2);
    assert_eq!(find_ids(&t2, &on_call).await.len(), 2);
    t1.update_one(
        C,
        &Filter::eq("_id", "alice"),
        &mut set("on_call", false),
        false,
    )
    .await
    .unwrap();
    t2.update_one(
        C,
        &Filter::eq("_id", "bob"),
        &mut set("on_call", false),
        false,
    )
    .await
    .unwrap();
    // Snapshot isolation lets both commit: nobody is on call.
    t1.commit().await.unwrap();
    t2.commit().await.unwrap();
    assert_eq!(find_ids(&store, &on_call).await.len(), 0);

    // Both also write a common document: exactly one commits, whichever order they run in.
    for t1_commits_first in [false, true] {
        reset().await;
        let t1 = store.start_transaction().await.unwrap();
        let t2 = store.start_transaction().await.unwrap();
        assert_eq!(find_ids(&t1, &on_call).await.len(), 2);
        assert_eq!(find_ids(&t2, &on_call).await.len(), 2);
        let (r1, r2) = if t1_commits_first {
            let r1 = match off(&t1, "alice").await {
                Ok(()) => t1.commit().await,
                Err(e) => Err(e),
            };
            let r2 = match off(&t2, "bob").await {
                Ok(()) => t2.commit().await,
                Err(e) => Err(e),
            };
            (r1, r2)
        } else {
            let w1 = off(&t1, "alice").await;
            let w2 = off(&t2, "bob").await;
            let r1 = match w1 {
                Ok(()) => t1.commit().await,
                Err(e) => Err(e),
            };
            let r2 = match w2 {
                Ok(()) => t2.commit().await,
                Err(e) => Err(e),
            };
            (r1, r2)
        };
        assert!(r1.is_ok(), "{r1:?}");
        assert!(is_conflict(&r2), "{r2:?}");
        let _ = t2.abort().await;
        let left = find_ids(&store, &on_call).await;
        assert_eq!(left, ids(&["bob"]));
        let shift = get(&store, "shift").await.unwrap();
        assert_eq!(
            shift.get("version").and_then(pattern_tests::as_int),
            Some(1)
        );
    }
}

async fn indexes_inside_a_transaction(store: AnyStore) {
    insert_all(&store, vec![doc! {"_id": "a", "k": 1}]).await;
    let index = IndexSpec {
        name: "k_1".into(),
        keys: vec![("k".into(), 1)],
        unique: true,
        partial: None,
    };
    // The patterns ensure their indexes lazily, possibly inside a transaction: it works there,
    // on an existing collection as on a new one.
    transaction(&store, |tx| {
        let index = index.clone();
        Box::pin(async move {
            tx.create_index(C, &index).await?;
            tx.create_index("fresh", &index).await?;
            assert!(tx.index_names(C).await?.contains(&"k_1".to_string()));
            tx.insert_one(C, doc! {"_id": "b", "k": 2}).await?;
            tx.insert_one("fresh", doc! {"_id": 1, "k": 1}).await
        })
    })
    .await
    .unwrap();
    assert!(store.index_names(C).await.unwrap().contains(&"k_1".into()));
    assert!(store
        .index_names("fresh")
        .await
        .unwrap()
        .contains(&"k_1".into()));
    assert_eq!(find_ids(&store, &all()).await, ids(&["a", "b"]));
    // The unique index holds inside transactions.
    let r = transaction(&store, |tx| {
        Box::pin(async move { tx.insert_one(C, doc! {"_id": "c", "k": 1}).await })
    })
    .await;
    assert!(matches!(r, Err(Error::DuplicateKey { .. })), "{r:?}");
}

async fn finished_transactions_refuse_work(store: AnyStore) {
    let tx = store.start_transaction().await.unwrap();
    tx.insert_one(C, doc! {"_id": "a"}).await.unwrap();
    tx.commit().await.unwrap();
    assert!(matches!(
        tx.insert_one(C, doc! {"_id": "b"}).await,
        Err(Error::InvalidInput(_))
    ));
    assert!(tx.abort().await.is_err());
    let tx = store.start_transaction().await.unwrap();
    tx.insert_one(C, doc! {"_id": "c"}).await.unwrap();
    tx.abort().await.unwrap();
    // Using an aborted transaction is a mistake on both stores.
    let r = tx.find(C, &all(), &FindOptions::default()).await;
    assert!(matches!(r, Err(Error::InvalidInput(_))), "{r:?}");
    let r = tx.commit().await;
    assert!(matches!(r, Err(Error::InvalidInput(_))), "{r:?}");
    tx.abort().await.unwrap();
    assert_eq!(find_ids(&store, &all()).await, ids(&["a"]));
}

/// An array no longer than `drop` becomes the prefix alone (`$slice` past the end is empty), an
/// empty one too; a field that is not an array refuses the update. Both stores alike.
async fn update_many_array_prefix_short_arrays(store: AnyStore) {
    insert_all(
        &store,
        vec![
            doc! {"_id": "one", "ancestors": ["x"]},
            doc! {"_id": "none", "ancestors": []},
        ],
    )
    .await;
    let update = Update {
        rewrite: vec![Rewrite::ArrayPrefix {
            field: "ancestors".into(),
            drop: 2,
            prefix: vec!["r".into()],
        }],
        ..Update::default()
    };
    let all = Filter::And(vec![]);
    assert_eq!(store.update_many(C, &all, &update).await.unwrap(), 2);
    assert_same_documents(
        &documents(&store, C).await,
        &[
            doc! {"_id": "none", "ancestors": ["r"]},
            doc! {"_id": "one", "ancestors": ["r"]},
        ],
    );
    insert_all(&store, vec![doc! {"_id": "text", "ancestors": "x"}]).await;
    let text = Filter::eq("_id", "text");
    assert!(store.update_many(C, &text, &update).await.is_err());
    assert_eq!(
        get(&store, "text").await,
        Some(doc! {"_id": "text", "ancestors": "x"})
    );
}

// The store contract's own operations, as the tests call them: not checked against the
// targeting rule (the patterns that use them are, in their suites).
on_both_stores!(
    untargeted:
    update_many_plain_and_pull,
    update_many_array_prefix,
    update_many_array_prefix_short_arrays,
    update_many_string_prefix,
    update_many_shift,
    prefix_and_or_filters,
    graph_lookup_both_directions,
    graph_lookup_arrays,
    graph_lookup_cycles,
    graph_lookup_deep_chain,
    graph_lookup_null_and_unknown_starts,
    commit_makes_all_visible,
    abort_and_errors_discard_all,
    snapshot_isolation,
    first_writer_wins,
    transaction_retries_conflicts,
    transaction_gives_up_with_contention,
    transaction_with_borrows_its_context,
    write_skew_and_its_cure,
    indexes_inside_a_transaction,
    finished_transactions_refuse_work,
);

/// MongoDB only: after a failed operation the server has aborted the transaction, so what
/// follows fails too, as a server error naming the first failure (not a conflict, which would
/// have the helper retry in vain).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mongo_operation_after_a_failure_in_the_transaction() {
    let _ = pattern_tests::mongo_uri();
    let store = AnyStore::Mongo(pattern_tests::mongo_store("after_failure").await);
    insert_all(&store, vec![doc! {"_id": "a"}]).await;
    let tx = store.start_transaction().await.unwrap();
    let r = tx.insert_one(C, doc! {"_id": "a"}).await;
    assert!(matches!(r, Err(Error::DuplicateKey { .. })), "{r:?}");
    let r = tx.insert_one(C, doc! {"_id": "b"}).await;
    match &r {
        Err(Error::Server { message, .. }) => {
            assert!(message.contains("duplicate key"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let r = tx.commit().await;
    assert!(matches!(r, Err(Error::Server { .. })), "{r:?}");
    let _ = tx.abort().await;
    assert_eq!(find_ids(&store, &all()).await, ids(&["a"]));
    // A work that swallows the error: the commit fails, without retries.
    let attempts = Arc::new(AtomicU32::new(0));
    let r = transaction(&store, |tx| {
        let attempts = attempts.clone();
        Box::pin(async move {
            attempts.fetch_add(1, Ordering::SeqCst);
            let _ = tx.insert_one(C, doc! {"_id": "a"}).await;
            Ok(())
        })
    })
    .await;
    assert!(matches!(r, Err(Error::Server { .. })), "{r:?}");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    pattern_tests::drop_db(&store).await;
}

/// MongoDB only: a graph lookup is one `aggregate` however many documents it returns (no
/// `getMore`), an `update_many` one `update`, and a transaction's operations are the same
/// commands, then one `commitTransaction` (starting it sends nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mongo_command_counts() {
    let _ = pattern_tests::mongo_uri();
    let (mongo, log) = pattern_tests::counted_mongo_store("command_counts").await;
    let store = AnyStore::Mongo(mongo);
    // A chain of 500 documents (past the default first batch of 101).
    let chain: Vec<Document> = (0..500)
        .map(
            |i| doc! {"_id": format!("{i:03}"), "parent": (i > 0).then(|| format!("{:03}", i - 1))},
        )
        .collect();
    insert_all(&store, chain).await;
    log.clear();
    let g = store
        .graph_lookup(C, &lookup("000", "_id", "_id", "parent"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(g.found.len(), 499);
    assert_eq!(g.found.iter().map(|(_, d)| *d).max(), Some(498));
    assert_eq!(log.names(), ["aggregate"]);
    log.clear();
    let shift = Update {
        rewrite: vec![Rewrite::StringPrefix {
            field: "_id".into(),
            drop: 0,
            prefix: String::new(),
        }],
        ..Update::default()
    };
    assert_eq!(store.update_many(C, &all(), &shift).await.unwrap(), 500);
    assert_eq!(log.names(), ["update"]);
    log.clear();
    let tx = store.start_transaction().await.unwrap();
    assert!(log.is_empty(), "{:?}", log.names());
    tx.graph_lookup(C, &lookup("000", "_id", "_id", "parent"))
        .await
        .unwrap();
    tx.update_many(C, &all(), &set("x", 1)).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(log.names(), ["aggregate", "update", "commitTransaction"]);
    pattern_tests::drop_db(&store).await;
}
