//! The in-memory store's multi-document updates, graph lookups and the plans of empty
//! ranges and `$or`, against MongoDB's answers.

use super::*;

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
            crate::store::query::Rewrite::Shift {
                field: "left".into(),
                pieces: vec![crate::store::query::Shift {
                    from: 2,
                    to: 3,
                    by: 10,
                }],
            },
            crate::store::query::Rewrite::StringPrefix {
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
        rewrite: vec![crate::store::query::Rewrite::StringPrefix {
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
            .map(|(d, depth)| (crate::error::display_bson(d.get("_id").unwrap()), *depth))
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
    let ix = IndexSpec {
        name: "k_1".into(),
        keys: vec![("k".into(), 1)],
        unique: false,
        partial: None,
    };
    s.create_index("c", &ix).await.unwrap();
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
