//! `graph_lookup`: both directions, arrays, cycles, a deep chain, null and unknown starts.

use super::*;

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

// The store contract's own operations, as the tests call them: not checked against the
// targeting rule (the patterns that use them are, in their suites).
on_both_stores!(
    untargeted:
    graph_lookup_both_directions,
    graph_lookup_arrays,
    graph_lookup_cycles,
    graph_lookup_deep_chain,
    graph_lookup_null_and_unknown_starts,
);
