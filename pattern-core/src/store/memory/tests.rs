//! Unit tests of the in-memory store's indexes, planner and upserts.

use super::*;
use bson::doc;

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
            upserted: true
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
            upserted: false
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
    let sorts: [Vec<(crate::query::Path, i32)>; 2] = [
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
    let ix = IndexSpec {
        name: "k_id".into(),
        keys: vec![("k".into(), 1), ("_id".into(), 1)],
        unique: false,
        partial: None,
    };
    s.create_index("c", &ix).await.unwrap();
    for i in 0..50 {
        s.insert_one("c", doc! {"_id": format!("{:02}", 49 - i), "k": i % 3})
            .await
            .unwrap();
    }
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        skip: 2,
        limit: Some(3),
    };
    let got = s.find("c", &Filter::eq("k", 1_i64), &opts).await.unwrap();
    let ids: Vec<&str> = got.iter().map(|d| d.get_str("_id").unwrap()).collect();
    assert_eq!(ids, ["06", "09", "12"]);
}
