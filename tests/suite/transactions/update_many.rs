//! `update_many`: plain, with `$pull`, each pipeline rewrite, and the `$in`/`$or`/prefix filters;
//! filters and sorts on dotted paths and arrays.

use super::*;
use pattern_core::store;

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
        Err(store::Error::InvalidInput(_))
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

/// A condition on a dotted path through an array of documents holds when it holds for one
/// element (two levels of arrays too), `$ne` and `$exists: false` when the condition holds for
/// none: MongoDB's query matching, which the in-memory store's filters follow.
async fn dotted_paths_through_arrays(store: AnyStore) {
    insert_all(
        &store,
        vec![
            doc! {"_id": "a", "items": [{"sku": "x", "qty": 1}, {"sku": "y", "qty": 5, "tags": ["t1", "t2"]}]},
            doc! {"_id": "b", "items": [{"sku": "z", "qty": 3}]},
            doc! {"_id": "c", "items": []},
            doc! {"_id": "d", "items": {"sku": "x", "qty": 9}},
            doc! {"_id": "e", "nested": [{"inner": [{"v": 1}, {"v": 2}]}, {"inner": [{"v": 3}]}]},
            doc! {"_id": "f"},
            doc! {"_id": "g", "items": [{"qty": 2}, "scalar"]},
        ],
    )
    .await;
    let s = |v: &str| Bson::String(v.into());
    let cases: Vec<(Filter, &[&str])> = vec![
        (Filter::eq("items.sku", "x"), &["a", "d"]),
        (Filter::eq("items.qty", 5), &["a"]),
        (Filter::Gt("items.qty".into(), Bson::Int32(4)), &["a", "d"]),
        (Filter::Lt("items.qty".into(), Bson::Int32(2)), &["a"]),
        (
            Filter::In("items.sku".into(), vec![s("y"), s("z")]),
            &["a", "b"],
        ),
        (
            Filter::All("items.sku".into(), vec![s("x"), s("y")]),
            &["a"],
        ),
        (
            Filter::Ne("items.sku".into(), s("x")),
            &["b", "c", "e", "f", "g"],
        ),
        (Filter::Exists("items.sku".into(), true), &["a", "b", "d"]),
        (
            Filter::Exists("items.sku".into(), false),
            &["c", "e", "f", "g"],
        ),
        (Filter::eq("items.tags", "t2"), &["a"]),
        (Filter::StartsWith("items.sku".into(), "y".into()), &["a"]),
        (Filter::eq("items.1.sku", "y"), &["a"]),
        (Filter::eq("nested.inner.v", 3), &["e"]),
        (Filter::Gte("nested.inner.v".into(), Bson::Int32(2)), &["e"]),
        (
            Filter::ElemMatch("nested.inner".into(), vec![Filter::eq("v", 3)]),
            &["e"],
        ),
        (
            Filter::Or(vec![
                Filter::eq("items.sku", "z"),
                Filter::eq("nested.inner.v", 1),
            ]),
            &["b", "e"],
        ),
    ];
    for (filter, want) in cases {
        assert_eq!(find_ids(&store, &filter).await, ids(want), "{filter:?}");
    }
    // An update selects by the same match.
    let flag = Update {
        set: vec![("flag".into(), Bson::Boolean(true))],
        ..Update::default()
    };
    let n = store
        .update_many(C, &Filter::eq("items.sku", "z"), &flag)
        .await
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        find_ids(&store, &Filter::eq("flag", true)).await,
        ids(&["b"])
    );
}

/// A sort on a field holding an array takes its least element ascending and its greatest
/// descending (a one-element array against a number compares the element), and a dotted path
/// through an array of documents what it reaches in the elements: MongoDB's order, which the
/// in-memory store's sorts follow.
async fn sorts_by_arrays(store: AnyStore) {
    insert_all(
        &store,
        vec![
            doc! {"_id": "a", "n": [3, 1], "s": [{"v": 7}, {"v": 2}]},
            doc! {"_id": "b", "n": [2], "s": [{"v": 4}]},
            doc! {"_id": "c", "n": 5, "s": {"v": 3}},
            doc! {"_id": "d", "n": 0.5, "s": [{"v": 5}, {"v": 6}]},
        ],
    )
    .await;
    let sorted = |path: &'static str, dir: i32| {
        let store = store.clone();
        async move {
            let opts = FindOptions {
                sort: vec![(path.into(), dir), ("_id".into(), 1)],
                ..FindOptions::default()
            };
            let docs = store.find(C, &Filter::And(vec![]), &opts).await.unwrap();
            docs.iter()
                .map(|d| d.get("_id").cloned().unwrap())
                .collect::<Vec<_>>()
        }
    };
    // Least elements 1, 2, 5, 0.5; greatest 3, 2, 5, 0.5.
    assert_eq!(sorted("n", 1).await, ids(&["d", "a", "b", "c"]));
    assert_eq!(sorted("n", -1).await, ids(&["c", "a", "b", "d"]));
    // Through the array of documents: least 2, 4, 3, 5; greatest 7, 4, 3, 6.
    assert_eq!(sorted("s.v", 1).await, ids(&["a", "c", "b", "d"]));
    assert_eq!(sorted("s.v", -1).await, ids(&["a", "d", "b", "c"]));
    // An empty array sorts before null and a missing field, which sort alike.
    insert_all(
        &store,
        vec![
            doc! {"_id": "e", "n": []},
            doc! {"_id": "f", "n": null},
            doc! {"_id": "g"},
        ],
    )
    .await;
    assert_eq!(
        sorted("n", 1).await,
        ids(&["e", "f", "g", "d", "a", "b", "c"])
    );
    assert_eq!(
        sorted("n", -1).await,
        ids(&["c", "a", "b", "d", "f", "g", "e"])
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
    dotted_paths_through_arrays,
    sorts_by_arrays,
);
