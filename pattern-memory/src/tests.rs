//! Unit tests of the in-memory store's indexes, planner and upserts.

use super::*;
use bson::doc;
use pattern_store::query::{Graph, GraphLookup};
use pattern_store::Error;

fn open_index() -> IndexSpec {
    IndexSpec {
        name: "open".into(),
        keys: vec![("k".into(), 1)],
        unique: true,
        partial: Some(Filter::Lt("count".into(), Bson::Int32(3))),
    }
}

#[tokio::test]
async fn partial_unique_index_admits_one_open_document_per_key() {
    let s = MemoryStore::new();
    s.create_index("c", &open_index()).await.unwrap();
    s.insert_one("c", doc! {"_id": 1, "k": "a", "count": 1})
        .await
        .unwrap();
    let dup = s
        .insert_one("c", doc! {"_id": 2, "k": "a", "count": 2})
        .await;
    assert!(matches!(dup, Err(Error::DuplicateKey { .. })));
    s.insert_one("c", doc! {"_id": 3, "k": "a", "count": 3})
        .await
        .unwrap(); // full: not indexed
    s.insert_one("c", doc! {"_id": 4, "k": "b", "count": 0})
        .await
        .unwrap();
    // An update that would make a second open document is refused and changes nothing.
    let f = Filter::eq("_id", 3);
    let u = Update {
        inc: vec![("count".into(), -1)],
        push: vec![("items".into(), vec![Bson::Int32(7)])],
        ..Update::default()
    };
    let mut refused = u.clone();
    assert!(matches!(
        s.update_one("c", &f, &mut refused, false).await,
        Err(Error::DuplicateKey { .. })
    ));
    assert_eq!(refused, u, "a refused update keeps its items");
    assert_eq!(s.dump("c")[1], doc! {"_id": 3, "k": "a", "count": 3});
    // Filling the open document frees the key.
    let mut fill = Update {
        inc: vec![("count".into(), 2)],
        ..Update::default()
    };
    s.update_one("c", &Filter::eq("_id", 1), &mut fill, false)
        .await
        .unwrap();
    s.insert_one("c", doc! {"_id": 5, "k": "a", "count": 0})
        .await
        .unwrap();
}

#[tokio::test]
async fn index_over_duplicates_is_refused() {
    let s = MemoryStore::new();
    s.insert_raw(
        "c",
        [
            doc! {"_id": 1, "k": "a", "count": 1},
            doc! {"_id": 2, "k": "a", "count": 1},
        ],
    )
    .unwrap();
    assert!(matches!(
        s.create_index("c", &open_index()).await,
        Err(Error::DuplicateKey { .. })
    ));
    assert_eq!(s.index_names("c").await.unwrap(), ["_id_"]);
}

#[tokio::test]
async fn upsert_builds_the_document_like_mongodb() {
    let s = MemoryStore::new();
    let f = Filter::and([
        Filter::eq("customerId", 123),
        Filter::Lt("count".into(), Bson::Int32(10)),
    ]);
    let u = Update {
        push: vec![("history".into(), vec![Bson::Int32(1)])],
        inc: vec![("count".into(), 1)],
        set_on_insert: vec![
            ("_id".into(), "123_5".into()),
            ("customerId".into(), Bson::Int32(123)),
        ],
        ..Update::default()
    };
    let r = s.update_one("t", &f, &mut u.clone(), true).await.unwrap();
    assert_eq!(
        r,
        UpdateOutcome {
            matched: false,
            upserted: true,
            modified: false,
        }
    );
    let d = &s.dump("t")[0];
    assert_eq!(
        d,
        &doc! {"_id": "123_5", "customerId": 123, "count": 1, "history": [1]}
    );
    assert_eq!(
        d.keys().collect::<Vec<_>>(),
        ["_id", "customerId", "count", "history"]
    );
    let r = s.update_one("t", &f, &mut u.clone(), true).await.unwrap();
    assert_eq!(
        r,
        UpdateOutcome {
            matched: true,
            upserted: false,
            modified: true,
        }
    );
    assert_eq!(s.dump("t")[0].get_i32("count"), Ok(2));
}

#[tokio::test]
async fn first_in_order_through_an_index_is_the_scan_s() {
    // The open-document index of a series, partial on `count < 3`, and a plain store.
    let open = IndexSpec {
        name: "open".into(),
        keys: vec![("k".into(), 1), ("page".into(), -1), ("_id".into(), -1)],
        unique: false,
        partial: Some(Filter::Lt("count".into(), Bson::Int32(3))),
    };
    let (indexed, plain) = (MemoryStore::new(), MemoryStore::new());
    indexed.create_index("c", &open).await.unwrap();
    for i in 0..24_i64 {
        let d = doc! {"_id": i, "k": i % 2, "page": i / 4, "count": (i % 5) as i32, "x": i % 3};
        indexed.insert_one("c", d.clone()).await.unwrap();
        plain.insert_one("c", d).await.unwrap();
    }
    let lt = || Filter::Lt("count".into(), Bson::Int32(3));
    let filters = [
        Filter::and([Filter::eq("k", 1_i64), lt()]),
        Filter::and([Filter::eq("k", 0_i32), lt()]),
        // Contradictory equalities on the key: nothing matches.
        Filter::and([Filter::eq("k", 1_i64), Filter::eq("k", 0_i64), lt()]),
        // A condition the index does not hold.
        Filter::and([Filter::eq("k", 1_i64), lt(), Filter::eq("x", 2_i64)]),
        Filter::and([
            Filter::eq("k", 1_i64),
            lt(),
            Filter::Gt("page".into(), 3_i64.into()),
        ]),
        Filter::and([Filter::eq("k", 7_i64), lt()]),
    ];
    let sorts: [Vec<(pattern_store::query::Path, i32)>; 2] = [
        vec![("page".into(), -1), ("_id".into(), -1)],
        vec![("page".into(), 1), ("_id".into(), 1)],
    ];
    for f in &filters {
        for sort in &sorts {
            let mut u = Update {
                inc: vec![("count".into(), 0)],
                ..Update::default()
            };
            let a = indexed
                .update_first("c", f, sort, "", &mut u.clone(), false, &["_id"])
                .await
                .unwrap();
            let b = plain
                .update_first("c", f, sort, "", &mut u, false, &["_id"])
                .await
                .unwrap();
            assert_eq!(a, b, "{f:?} sorted by {sort:?}");
        }
    }
}

#[tokio::test]
async fn secondary_index_narrows_and_sorts_like_a_scan() {
    let s = MemoryStore::new();
    s.create_index("c", &index("k_id", &["k", "_id"], false))
        .await
        .unwrap();
    for i in 0..50 {
        s.insert_one("c", doc! {"_id": format!("{:02}", 49 - i), "k": i % 3})
            .await
            .unwrap();
    }
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        skip: 2,
        limit: Some(3),
        ..FindOptions::default()
    };
    let got = s.find("c", &Filter::eq("k", 1_i64), &opts).await.unwrap();
    let ids: Vec<&str> = got.iter().map(|d| d.get_str("_id").unwrap()).collect();
    assert_eq!(ids, ["06", "09", "12"]);
}

/// Symbols and binary data are told apart by their contents, as MongoDB tells them: a unique
/// index holds two symbols of different texts, or two binaries of the same bytes and different
/// subtypes; a string finds the symbol of its text and no other.
#[tokio::test]
async fn symbols_and_binaries_are_told_apart_by_their_contents() {
    let s = MemoryStore::new();
    s.create_index("c", &index("a_1", &["a"], true))
        .await
        .unwrap();
    let bin = |subtype| {
        Bson::Binary(bson::Binary {
            subtype,
            bytes: vec![1, 2],
        })
    };
    let values = [
        Bson::Symbol("x".into()),
        Bson::Symbol("y".into()),
        bin(bson::spec::BinarySubtype::Generic),
        bin(bson::spec::BinarySubtype::Uuid),
    ];
    for (i, a) in values.iter().enumerate() {
        s.insert_one("c", doc! {"_id": i as i32, "a": a.clone()})
            .await
            .unwrap();
    }
    let dup = s.insert_one("c", doc! {"_id": 9, "a": "x"}).await;
    assert!(matches!(dup, Err(Error::DuplicateKey { .. })), "{dup:?}");
    let found = s
        .find("c", &Filter::eq("a", "y"), &FindOptions::default())
        .await
        .unwrap();
    let ids: Vec<_> = found.iter().map(|d| d.get("_id").cloned()).collect();
    assert_eq!(ids, [Some(Bson::Int32(1))]);
}

/// An index on `keys`, each ascending, not partial.
pub(crate) fn index(name: &str, keys: &[&str], unique: bool) -> IndexSpec {
    IndexSpec {
        name: name.into(),
        keys: keys.iter().map(|k| (k.to_string(), 1)).collect(),
        unique,
        partial: None,
    }
}

/// Documents of a tree stored several ways at once, with the odd values a foreign writer may
/// leave (arrays in arrays, empty arrays, nulls, numbers of several types).
fn tree_docs() -> Vec<Document> {
    vec![
        doc! {"_id": "a", "parent": null, "ancestors": [], "path": ",a,", "tags": ["x"], "n": 1},
        doc! {"_id": "b", "parent": "a", "ancestors": ["a"], "path": ",a,b,", "tags": ["x", "y"], "n": 2},
        doc! {"_id": "c", "parent": "b", "ancestors": ["a", "b"], "path": ",a,b,c,", "tags": [], "n": 3_i64},
        doc! {"_id": "d", "parent": "b", "ancestors": ["a", "b"], "path": ",a,b,d,", "tags": "x", "n": 2.0},
        doc! {"_id": "e", "parent": "c", "ancestors": ["a", "b", "c"], "path": ",a,b,c,e,", "n": 5},
        doc! {"_id": "日", "parent": "a", "ancestors": ["a", ["b"]], "path": ",a,日本,", "tags": [["x"]], "n": null},
        doc! {"_id": 7, "parent": 1, "ancestors": [1, 1.0, 2_i64], "path": 7, "tags": ["y", "y"]},
    ]
}

fn tree_filters() -> Vec<Filter> {
    let arr = |v: &[&str]| Bson::Array(v.iter().map(|s| Bson::from(*s)).collect());
    vec![
        Filter::eq("ancestors", "a"),
        Filter::eq("ancestors", "b"),
        Filter::eq("ancestors", 1),
        Filter::Eq("ancestors".into(), arr(&["a", "b"])),
        Filter::Eq("ancestors".into(), arr(&["b"])),
        Filter::Eq("ancestors".into(), arr(&[])),
        Filter::Eq("ancestors".into(), Bson::Null),
        Filter::In("ancestors".into(), vec!["c".into(), "b".into(), 2.into()]),
        Filter::In("ancestors".into(), vec![arr(&["b"]), "z".into()]),
        Filter::In(
            "_id".into(),
            vec!["e".into(), "a".into(), "zz".into(), 7.0.into(), "a".into()],
        ),
        Filter::In("parent".into(), vec!["b".into(), Bson::Null]),
        Filter::Gt("ancestors".into(), arr(&["a"])),
        Filter::Gte("ancestors".into(), "b".into()),
        Filter::StartsWith("path".into(), ",a,b,".into()),
        Filter::StartsWith("path".into(), ",a,日".into()),
        Filter::StartsWith("_id".into(), "日".into()),
        Filter::and([
            Filter::eq("tags", "x"),
            Filter::Gte("n".into(), Bson::Int32(2)),
        ]),
        Filter::and([Filter::eq("tags", "y"), Filter::eq("n", 2)]),
        Filter::eq("tags", "x"),
        Filter::Eq("tags".into(), arr(&["x"])),
        Filter::Or(vec![Filter::eq("ancestors", "c"), Filter::eq("_id", "a")]),
    ]
}

/// Multikey indexes: every query answers what a scan of the same documents answers, through
/// the index where one serves it, before and after updates that move array entries, and the
/// entries go with the documents.
#[tokio::test]
async fn multikey_indexes_answer_like_a_scan() {
    let (indexed, plain) = (MemoryStore::new(), MemoryStore::new());
    for ix in [
        index("anc", &["ancestors"], false),
        index("parent", &["parent"], false),
        index("path", &["path"], false),
        index("tags_n", &["tags", "n"], false),
    ] {
        indexed.create_index("t", &ix).await.unwrap();
    }
    for d in tree_docs() {
        indexed.insert_one("t", d.clone()).await.unwrap();
        plain.insert_one("t", d).await.unwrap();
    }
    let sorts: [Vec<(pattern_store::query::Path, i32)>; 4] = [
        vec![],
        vec![("_id".into(), -1)],
        vec![("n".into(), 1), ("_id".into(), 1)],
        vec![("path".into(), -1)],
    ];
    let compare = |round: &str| {
        let (indexed, plain) = (indexed.clone(), plain.clone());
        let (round, sorts) = (round.to_owned(), sorts.clone());
        async move {
            let mut checked = 0;
            for f in tree_filters() {
                for sort in &sorts {
                    for (skip, limit) in [(0, None), (1, Some(2)), (0, Some(1))] {
                        // Unsorted, the order is the plan's (as on MongoDB): compared as sets.
                        if sort.is_empty() && limit.is_some() {
                            continue;
                        }
                        let opts = FindOptions {
                            sort: sort.clone(),
                            skip,
                            limit,
                            ..FindOptions::default()
                        };
                        let mut a = indexed.find("t", &f, &opts).await.unwrap();
                        let mut b = plain.find("t", &f, &opts).await.unwrap();
                        if sort.is_empty() {
                            let by_id = [("_id".into(), 1)];
                            a.sort_by(|x, y| pattern_store::query::eval::compare_by(x, y, &by_id));
                            b.sort_by(|x, y| pattern_store::query::eval::compare_by(x, y, &by_id));
                        }
                        assert_eq!(a, b, "{round}: {f:?} {opts:?}");
                        checked += 1;
                    }
                }
            }
            checked
        }
    };
    assert!(compare("inserted").await > 150);
    // The array lookups go through the indexes.
    {
        let mut state = indexed.lock();
        let c = state.get("t").unwrap();
        for f in [
            Filter::eq("ancestors", "b"),
            Filter::In("ancestors".into(), vec!["c".into()]),
            Filter::StartsWith("path".into(), ",a,b".into()),
            Filter::In("_id".into(), vec!["a".into()]),
            Filter::eq("tags", "y"),
        ] {
            let plan = c.plan(&f);
            assert!(!matches!(plan.source, plan::Source::Scan(_)), "{f:?} scans");
            assert!(plan.estimate() <= 4, "{f:?}");
        }
        for ix in &c.indexes {
            let arrays = ["anc", "tags_n"].contains(&ix.spec.name.as_str());
            assert_eq!(ix.multikey, arrays, "{}", ix.spec.name);
        }
    }
    // Updates that move array entries: rewrites, pulls, pushes, sets.
    let moves = [
        Update {
            rewrite: vec![pattern_store::query::Rewrite::ArrayPrefix {
                field: "ancestors".into(),
                drop: 1,
                prefix: vec!["r".into(), "a".into()],
            }],
            ..Update::default()
        },
        Update {
            pull: vec![("tags".into(), "x".into())],
            ..Update::default()
        },
        Update {
            push: vec![("ancestors".into(), vec!["z".into(), "z".into()])],
            set: vec![("tags".into(), Bson::Array(vec!["q".into(), "x".into()]))],
            ..Update::default()
        },
    ];
    for (i, u) in moves.iter().enumerate() {
        let f = Filter::eq("ancestors", "b");
        let a = indexed.update_many("t", &f, u).await;
        let b = plain.update_many("t", &f, u).await;
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{u:?}");
        assert_eq!(indexed.dump("t"), plain.dump("t"));
        assert!(compare(&format!("after update {i}")).await > 150);
    }
    indexed
        .delete_many("t", &Filter::eq("ancestors", "a"))
        .await
        .unwrap();
    plain
        .delete_many("t", &Filter::eq("ancestors", "a"))
        .await
        .unwrap();
    assert!(compare("after a delete").await > 150);
    indexed
        .delete_many("t", &Filter::And(vec![]))
        .await
        .unwrap();
    let mut state = indexed.lock();
    for ix in &state.get("t").unwrap().indexes {
        assert!(
            ix.entries.is_empty(),
            "{} keeps {:?}",
            ix.spec.name,
            ix.entries
        );
    }
}

#[tokio::test]
async fn unique_multikey_index_refuses_a_shared_element() {
    let s = MemoryStore::new();
    s.create_index("u", &index("tags", &["tags"], true))
        .await
        .unwrap();
    s.insert_one("u", doc! {"_id": 1, "tags": ["a", "b", "a"]})
        .await
        .unwrap();
    let dup = s.insert_one("u", doc! {"_id": 2, "tags": ["c", "b"]}).await;
    assert!(matches!(dup, Err(Error::DuplicateKey { .. })), "{dup:?}");
    s.insert_one("u", doc! {"_id": 3, "tags": ["c"]})
        .await
        .unwrap();
    let mut u = Update {
        push: vec![("tags".into(), vec!["a".into()])],
        ..Update::default()
    };
    let dup = s
        .update_one("u", &Filter::eq("_id", 3), &mut u, false)
        .await;
    assert!(matches!(dup, Err(Error::DuplicateKey { .. })), "{dup:?}");
    assert_eq!(s.dump("u")[1], doc! {"_id": 3, "tags": ["c"]});
}

#[test]
fn after_prefix_bounds_every_string_with_the_prefix() {
    for prefix in [
        "a",
        ",a,b",
        "日本",
        "z\u{10FFFF}",
        "\u{D7FF}",
        "ab\u{10FFFF}\u{10FFFF}",
    ] {
        let after = plan::after_prefix(prefix).unwrap();
        assert!(prefix.as_bytes() < after.as_bytes());
        for tail in ["", "\u{10FFFF}\u{10FFFF}", "zzz", "\u{0}"] {
            let s = format!("{prefix}{tail}");
            assert!(s.as_bytes() < after.as_bytes(), "{s:?} {after:?}");
        }
    }
    assert_eq!(plan::after_prefix("\u{10FFFF}"), None);
}

// The in-memory store's multi-document updates, graph lookups and the plans of empty
// ranges and `$or`, against MongoDB's answers.

/// `update_many`: the matched count; refused whole when [`Update::check`] refuses; stopped by
/// the first document that refuses (in `_id` order), those before it updated.
#[tokio::test]
async fn update_many_updates_each_match() {
    let s = MemoryStore::new();
    s.create_index("t", &index("left", &["left"], true))
        .await
        .unwrap();
    for (id, left, path) in [
        (1, 1, ",a,"),
        (2, 2, ",a,b,"),
        (3, 3, ",a,b,c,"),
        (4, 4, ",x,"),
    ] {
        s.insert_one("t", doc! {"_id": id, "left": left, "path": path})
            .await
            .unwrap();
    }
    let u = Update {
        rewrite: vec![
            pattern_store::query::Rewrite::Shift {
                field: "left".into(),
                pieces: vec![pattern_store::query::Shift {
                    from: 2,
                    to: 3,
                    by: 10,
                }],
            },
            pattern_store::query::Rewrite::StringPrefix {
                field: "path".into(),
                drop: 3,
                prefix: ",r,".into(),
            },
        ],
        ..Update::default()
    };
    let f = Filter::StartsWith("path".into(), ",a,".into());
    assert_eq!(s.update_many("t", &f, &u).await.unwrap(), 3);
    let got: Vec<(i64, String)> = (s.dump("t").iter())
        .map(|d| {
            let left = match d.get("left") {
                Some(Bson::Int32(n)) => i64::from(*n),
                Some(Bson::Int64(n)) => *n,
                other => panic!("{other:?}"),
            };
            (left, d.get_str("path").unwrap().into())
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, ",r,".into()),
            (12, ",r,b,".into()),
            (13, ",r,b,c,".into()),
            (4, ",x,".into())
        ]
    );
    // The unique index moved with the values: 12 is taken now, 2 is free.
    s.insert_one("t", doc! {"_id": 5, "left": 2}).await.unwrap();
    assert!(s
        .insert_one("t", doc! {"_id": 6, "left": 12})
        .await
        .is_err());
    // Refused before anything is written.
    let mut bad = u.clone();
    bad.inc = vec![("n".into(), 1)];
    let before = s.dump("t");
    assert!(matches!(
        s.update_many("t", &Filter::And(vec![]), &bad).await,
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(s.dump("t"), before);
    // Document 5 has no path: it refuses the prefix, documents 1 to 4 stay updated.
    let prefix = Update {
        rewrite: vec![pattern_store::query::Rewrite::StringPrefix {
            field: "path".into(),
            drop: 0,
            prefix: "!".into(),
        }],
        ..Update::default()
    };
    assert!(s
        .update_many("t", &Filter::And(vec![]), &prefix)
        .await
        .is_err());
    let paths: Vec<Option<String>> = (s.dump("t").iter())
        .map(|d| d.get_str("path").ok().map(str::to_owned))
        .collect();
    assert_eq!(
        paths,
        [
            Some("!,r,".into()),
            Some("!,r,b,".into()),
            Some("!,r,b,c,".into()),
            Some("!,x,".into()),
            None
        ]
    );
    assert_eq!(
        s.update_many("none", &Filter::And(vec![]), &prefix)
            .await
            .unwrap(),
        0
    );
    assert!(s.index_names("none").await.unwrap().is_empty());
}

/// `$graphLookup`: breadth first, each document once at its smallest depth, arrays by
/// element, null and missing values connecting nothing, with and without an index on
/// `connect_to`.
#[tokio::test]
async fn graph_lookup_is_mongodb_s() {
    let with = MemoryStore::new();
    for ix in [
        index("parent", &["parent"], false),
        index("anc", &["ancestors"], false),
    ] {
        with.create_index("t", &ix).await.unwrap();
    }
    let without = MemoryStore::new();
    let mut docs = tree_docs();
    docs.push(doc! {"_id": "x", "parent": "y", "children": ["y"]});
    docs.push(doc! {"_id": "y", "parent": "x", "children": ["x", "missing"]});
    docs[0].insert("children", vec!["b", "日"]);
    docs[1].insert("children", vec!["c", "d"]);
    docs[2].insert("children", vec!["e"]);
    for s in [&with, &without] {
        for d in &docs {
            s.insert_one("t", d.clone()).await.unwrap();
        }
    }
    let q = |start: &str, from: &str, to: &str, with_: &str, max: Option<u32>| GraphLookup {
        start: start.into(),
        start_with: with_.to_owned().into(),
        connect_from: from.to_owned().into(),
        connect_to: to.to_owned().into(),
        max_depth: max,
    };
    let found = |g: &Graph| -> Vec<(String, u32)> {
        let mut f: Vec<(String, u32)> = (g.found.iter())
            .map(|(d, depth)| {
                (
                    pattern_store::error::display_bson(d.get("_id").unwrap()),
                    *depth,
                )
            })
            .collect();
        f.sort();
        f
    };
    let cases = [
        // Descendants through parent references.
        (
            q("a", "_id", "parent", "_id", None),
            vec![
                ("\"b\"", 0),
                ("\"c\"", 1),
                ("\"d\"", 1),
                ("\"e\"", 2),
                ("\"日\"", 0),
            ],
        ),
        (
            q("a", "_id", "parent", "_id", Some(0)),
            vec![("\"b\"", 0), ("\"日\"", 0)],
        ),
        // Ancestors: up the parents, the root's null parent ends it.
        (
            q("e", "parent", "_id", "parent", None),
            vec![("\"a\"", 2), ("\"b\"", 1), ("\"c\"", 0)],
        ),
        // Child references: arrays by element.
        (
            q("a", "children", "_id", "children", Some(1)),
            vec![("\"b\"", 0), ("\"c\"", 1), ("\"d\"", 1), ("\"日\"", 0)],
        ),
        // Descendants by the ancestors array, in one step.
        (
            q("b", "_id", "ancestors", "_id", Some(0)),
            vec![("\"c\"", 0), ("\"d\"", 0), ("\"e\"", 0)],
        ),
        // A cycle ends: the start is found again, once.
        (
            q("x", "parent", "_id", "parent", None),
            vec![("\"x\"", 1), ("\"y\"", 0)],
        ),
        // Null and missing values connect nothing.
        (q("a", "parent", "_id", "parent", None), vec![]),
        (q("d", "nothing", "_id", "nothing", None), vec![]),
    ];
    for (query, expected) in cases {
        let expected: Vec<(String, u32)> = expected
            .into_iter()
            .map(|(i, d)| (i.to_owned(), d))
            .collect();
        for s in [&with, &without] {
            let g = s.graph_lookup("t", &query).await.unwrap().unwrap();
            assert_eq!(g.start.get("_id"), Some(&query.start));
            assert_eq!(found(&g), expected, "{query:?}");
        }
    }
    assert_eq!(
        with.graph_lookup("t", &q("nope", "_id", "parent", "_id", None))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        with.graph_lookup("none", &q("a", "_id", "parent", "_id", None))
            .await
            .unwrap(),
        None
    );
}

/// Contradictory bounds (`$gte: 5, $lte: 3`) on `_id` or an indexed field match nothing, alone
/// or as a branch of an `$or` (planned as the union of its branches): no panic, and every `$or`
/// answers as a scan would.
#[tokio::test]
async fn empty_ranges_and_or_plans() {
    let s = MemoryStore::new();
    s.create_index("c", &index("k_1", &["k"], false))
        .await
        .unwrap();
    for i in 0..20_i64 {
        s.insert_one("c", doc! {"_id": i, "k": i % 7, "u": i % 2})
            .await
            .unwrap();
    }
    let range = |f: &str, lo: i64, hi: i64| {
        Filter::and([
            Filter::Gte(f.to_owned().into(), Bson::Int64(lo)),
            Filter::Lte(f.to_owned().into(), Bson::Int64(hi)),
        ])
    };
    let opts = FindOptions::default();
    for f in ["_id", "k"] {
        assert!(s
            .find("c", &range(f, 5, 3), &opts)
            .await
            .unwrap()
            .is_empty());
    }
    let ors = [
        Filter::Or(vec![range("k", 5, 3), Filter::eq("_id", 4_i64)]),
        Filter::Or(vec![range("k", 2, 3), range("_id", 15, 30)]),
        Filter::Or(vec![Filter::eq("k", 1_i64), Filter::eq("u", 1_i64)]),
        Filter::Or(vec![]),
    ];
    for f in ors {
        let got = s.find("c", &f, &opts).await.unwrap();
        let all = s.find("c", &Filter::And(vec![]), &opts).await.unwrap();
        let want: Vec<Document> = all.into_iter().filter(|d| f.matches(d)).collect();
        assert_eq!(got, want, "{f:?}");
    }
}

/// `update_returning`: the first match updated and returned as it is after, with its `_id`
/// and the fields asked for only, the same in a transaction; none matched, `None` and nothing
/// written. `write_across`: each write on its own collection, in order, with what each matched.
#[tokio::test]
async fn update_returning_and_write_across() {
    use pattern_store::{Transaction, WriteOp};
    let s = MemoryStore::new();
    s.insert_one("d", doc! {"_id": 1, "name": "Varda", "born": 1928})
        .await
        .unwrap();
    let mut rename = Update {
        set: vec![("name".into(), Bson::String("Agnès Varda".into()))],
        inc: vec![("born".into(), 0)],
        ..Update::default()
    };
    let by_id = Filter::Eq("_id".into(), Bson::Int32(1));
    let after = s
        .update_returning("d", &by_id, &mut rename.clone(), &["name"])
        .await
        .unwrap();
    assert_eq!(after, Some(doc! {"_id": 1, "name": "Agnès Varda"}));
    let none = Filter::Eq("_id".into(), Bson::Int32(2));
    assert_eq!(
        s.update_returning("d", &none, &mut rename, &["name"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        s.find("d", &Filter::And(vec![]), &FindOptions::default())
            .await
            .unwrap()
            .len(),
        1
    );
    let tx = s.start_transaction().await.unwrap();
    let mut born = Update {
        inc: vec![("born".into(), 1)],
        ..Update::default()
    };
    let after = tx
        .update_returning("d", &by_id, &mut born, &["born", "missing"])
        .await
        .unwrap();
    assert_eq!(after, Some(doc! {"_id": 1, "born": 1929}));
    let writes = vec![
        ("e", WriteOp::Insert(doc! {"_id": 1, "n": 0})),
        ("e", WriteOp::Insert(doc! {"_id": 2, "n": 0})),
        (
            "e",
            WriteOp::UpdateMany {
                filter: Filter::Eq("n".into(), Bson::Int32(0)),
                update: Box::new(Update {
                    inc: vec![("n".into(), 1)],
                    ..Update::default()
                }),
            },
        ),
        (
            "d",
            WriteOp::Update {
                filter: none.clone(),
                update: Box::new(born.clone()),
                upsert: false,
            },
        ),
    ];
    assert_eq!(tx.write_across(writes, None).await.unwrap(), [1, 1, 2, 0]);
    tx.commit().await.unwrap();
    let one = Filter::Eq("n".into(), Bson::Int32(1));
    let e = s.find("e", &one, &FindOptions::default()).await.unwrap();
    assert_eq!(e.len(), 2);
}
