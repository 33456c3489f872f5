//! Transactions at commit: write skew and its cure, unique indexes at the write and at the
//! commit, merges of concurrent commits.

use super::*;

/// Two doctors on call: each transaction reads both and takes one off call. Snapshot
/// isolation lets both commit (write skew); writing a common document (the roster) makes
/// them conflict.
#[tokio::test]
async fn write_skew_and_its_cure() {
    for roster in [false, true] {
        let s = store_with(&[
            doc! {"_id": "alice", "on_call": true},
            doc! {"_id": "bob", "on_call": true},
            doc! {"_id": "roster", "version": 0},
        ])
        .await;
        let (t1, t2) = (
            s.start_transaction().await.unwrap(),
            s.start_transaction().await.unwrap(),
        );
        let mut results = Vec::new();
        for (t, me) in [(&t1, "alice"), (&t2, "bob")] {
            let on_call = Filter::eq("on_call", true);
            let n = t
                .find("c", &on_call, &FindOptions::default())
                .await
                .unwrap()
                .len();
            assert_eq!(n, 2);
            let mut r = t
                .update_one("c", &by_id(me), &mut set("on_call", false), false)
                .await
                .map(drop);
            if roster && r.is_ok() {
                r = t
                    .update_one("c", &by_id("roster"), &mut inc("version", 1), false)
                    .await
                    .map(drop);
            }
            results.push(r);
        }
        let c1 = t1.commit().await;
        let c2 = t2.commit().await;
        let (on_call, opts) = (Filter::eq("on_call", true), FindOptions::default());
        let on_call = s.find("c", &on_call, &opts).await.unwrap().len();
        if roster {
            assert!(results[0].is_ok() && is_conflict(&results[1]));
            assert!(c1.is_ok() && is_conflict(&c2));
            assert_eq!(on_call, 1);
        } else {
            assert!(results.iter().all(Result::is_ok) && c1.is_ok() && c2.is_ok());
            assert_eq!(on_call, 0, "write skew: both went off call");
        }
    }
}

/// A unique index refuses a transaction's duplicate at its write; a duplicate a plain write
/// made meanwhile makes the commit conflict, and the commit then keeps nothing.
#[tokio::test]
async fn unique_indexes_at_the_write_and_at_the_commit() {
    let s = store_with(&[doc! {"_id": 1, "k": 1}, doc! {"_id": 2, "k": 2}]).await;
    let unique = IndexSpec {
        name: "k".into(),
        keys: vec![("k".into(), 1)],
        unique: true,
        partial: None,
    };
    s.create_index("c", &unique).await.unwrap();
    let bad = s.start_transaction().await.unwrap();
    let dup = bad.insert_one("c", doc! {"_id": 3, "k": 1}).await;
    assert!(matches!(dup, Err(Error::DuplicateKey { .. })), "{dup:?}");
    // Documents trading keys in one transaction do not collide at the commit.
    let t = s.start_transaction().await.unwrap();
    t.update_one("c", &by_id(1), &mut set("k", 10), false)
        .await
        .unwrap();
    t.update_one("c", &by_id(2), &mut set("k", 1), false)
        .await
        .unwrap();
    t.update_one("c", &by_id(1), &mut set("k", 2), false)
        .await
        .unwrap();
    t.insert_one("c", doc! {"_id": 4, "k": 5}).await.unwrap();
    // A plain write elsewhere in the collection: the commit merges.
    s.insert_one("c", doc! {"_id": 9, "k": 9}).await.unwrap();
    t.commit().await.unwrap();
    let ks: Vec<(i32, i32)> = (all(&s, "c").await.iter())
        .map(|d| (d.get_i32("_id").unwrap(), d.get_i32("k").unwrap()))
        .collect();
    assert_eq!(ks, [(1, 2), (2, 1), (4, 5), (9, 9)]);

    let t = s.start_transaction().await.unwrap();
    t.insert_one("c", doc! {"_id": 5, "k": 6}).await.unwrap();
    t.update_one("c", &by_id(9), &mut set("k", 90), false)
        .await
        .unwrap();
    t.insert_one("d", doc! {"_id": 1}).await.unwrap();
    // Not held by the transaction: a plain insert takes the key first.
    s.insert_one("c", doc! {"_id": 6, "k": 6}).await.unwrap();
    let before = (all(&s, "c").await, all(&s, "d").await);
    let r = t.commit().await;
    assert!(is_conflict(&r), "{r:?}");
    assert_eq!((all(&s, "c").await, all(&s, "d").await), before);
    // The indexes are as they were: key 90 is free, key 9 still taken.
    s.insert_one("c", doc! {"_id": 7, "k": 90}).await.unwrap();
    assert!(s.insert_one("c", doc! {"_id": 8, "k": 9}).await.is_err());
}

/// A commit into a collection others changed meanwhile merges: the documents and the index
/// entries are those a single store would have after both.
#[tokio::test]
async fn commit_merges_into_a_changed_collection() {
    let ix = IndexSpec {
        name: "anc".into(),
        keys: vec![("ancestors".into(), 1)],
        unique: false,
        partial: None,
    };
    let s = MemoryStore::new();
    s.create_index("t", &ix).await.unwrap();
    for i in 0..20 {
        let anc: Vec<Bson> = (0..i % 4).map(Bson::Int32).collect();
        s.insert_one("t", doc! {"_id": i, "ancestors": anc})
            .await
            .unwrap();
    }
    let t = s.start_transaction().await.unwrap();
    let moved = Update {
        rewrite: vec![crate::store::query::Rewrite::ArrayPrefix {
            field: "ancestors".into(),
            drop: 1,
            prefix: vec![Bson::Int32(7), Bson::Int32(8)],
        }],
        ..Update::default()
    };
    let n = t
        .update_many("t", &Filter::eq("ancestors", 1), &moved)
        .await
        .unwrap();
    assert_eq!(n, 10);
    t.delete_many("t", &Filter::eq("ancestors", 2))
        .await
        .unwrap();
    // Meanwhile, plain writes of documents it did not write.
    s.delete_many("t", &by_id(0)).await.unwrap();
    s.insert_one("t", doc! {"_id": 100, "ancestors": [0]})
        .await
        .unwrap();
    t.commit().await.unwrap();
    let docs = all(&s, "t").await;
    assert_eq!(docs.len(), 20 - 5 - 1 + 1);
    let check = MemoryStore::new();
    for d in &docs {
        check.insert_one("t", d.clone()).await.unwrap();
    }
    for v in [0, 1, 2, 3, 7, 8] {
        let f = Filter::eq("ancestors", v);
        let a = s.find("t", &f, &FindOptions::default()).await.unwrap();
        let b = check.find("t", &f, &FindOptions::default()).await.unwrap();
        assert_eq!(a, b, "{v}");
    }
    let eight = Filter::eq("ancestors", 8);
    let eight = s.find("t", &eight, &FindOptions::default()).await.unwrap();
    assert_eq!(eight.len(), 5);
}

/// Work inside a transaction: the series push (the contract's default, through the
/// transaction's conditional upsert), graph lookups and raw finds of its own writes.
#[tokio::test]
async fn the_whole_contract_inside_a_transaction() {
    let spec = crate::spec::SeriesSpec {
        collection: "s",
        key_field: "k",
        items_field: "items",
        count_field: "count",
        size: 2,
        order: crate::spec::SeriesOrder::Seq("seq"),
        keeps: crate::spec::Keeps::NONE,
    };
    let s = MemoryStore::new();
    spec.ensure_indexes(&s).await.unwrap();
    let t = s.start_transaction().await.unwrap();
    for (i, seq) in [(1, 1), (2, 1), (3, 2)] {
        let new_id = move || Bson::String(format!("k_{seq}"));
        let mut items = vec![Bson::Int32(i)];
        t.push_open(
            &spec,
            &Bson::Int32(7),
            &mut items,
            &crate::store::Kept::NONE,
            seq,
            &new_id,
        )
        .await
        .unwrap();
    }
    // The store does the same natively while the transaction holds nothing of its key.
    for (i, seq) in [(1, 1), (2, 1), (3, 2)] {
        let new_id = move || Bson::String(format!("j_{seq}"));
        let mut items = vec![Bson::Int32(i)];
        s.push_open(
            &spec,
            &Bson::Int32(8),
            &mut items,
            &crate::store::Kept::NONE,
            seq,
            &new_id,
        )
        .await
        .unwrap();
    }
    assert_eq!(all(&s, "s").await.len(), 2);
    assert_eq!(all(&t, "s").await.len(), 2);
    let raw = t
        .find_raw("s", &Filter::eq("k", 7), &FindOptions::default())
        .await
        .unwrap();
    assert_eq!(raw.len(), 2);
    t.insert_one("g", doc! {"_id": "r", "parent": null})
        .await
        .unwrap();
    t.insert_one("g", doc! {"_id": "x", "parent": "r"})
        .await
        .unwrap();
    let q = GraphLookup {
        start: "r".into(),
        start_with: "_id".into(),
        connect_from: "_id".into(),
        connect_to: "parent".into(),
        max_depth: None,
    };
    assert_eq!(
        t.graph_lookup("g", &q).await.unwrap().unwrap().found.len(),
        1
    );
    assert_eq!(s.graph_lookup("g", &q).await.unwrap(), None);
    // Index changes apply to the store at once and to the transaction's copies.
    let ix = IndexSpec {
        name: "p".into(),
        keys: vec![("parent".into(), 1)],
        unique: true,
        partial: None,
    };
    t.create_index("g", &ix).await.unwrap();
    assert_eq!(s.index_names("g").await.unwrap(), ["_id_", "p"]);
    // The transaction's copy has the index: a duplicate of its own document is refused, and
    // the transaction with it (as on MongoDB): nothing of it is kept.
    let dup = t.insert_one("g", doc! {"_id": "y", "parent": "r"}).await;
    assert!(matches!(dup, Err(Error::DuplicateKey { .. })), "{dup:?}");
    assert!(matches!(t.commit().await, Err(Error::Server { .. })));
    let kept: Vec<Document> = all(&s, "s").await;
    assert!(kept.iter().all(|d| d.get_i32("k") == Ok(8)) && kept.len() == 2);
    assert!(all(&s, "g").await.is_empty());
}

/// As on MongoDB, an operation that fails aborts the transaction: its documents are released
/// at once, what follows fails naming the first error (not a conflict: the helper does not
/// run the work again), and nothing is kept. Checks made before anything is sent (an update
/// with rewrites and `$inc`) leave it open.
#[tokio::test]
async fn an_error_aborts_the_transaction() {
    let s = store_with(&[doc! {"_id": "a", "v": 1}]).await;
    let t = s.start_transaction().await.unwrap();
    t.update_one("c", &by_id("a"), &mut inc("v", 1), false)
        .await
        .unwrap();
    let dup = t.insert_one("c", doc! {"_id": "a"}).await;
    assert!(matches!(dup, Err(Error::DuplicateKey { .. })), "{dup:?}");
    // Released: a plain write of `a` does not wait.
    let (a, mut ten) = (by_id("a"), inc("v", 10));
    let plain = s.update_one("c", &a, &mut ten, false);
    tokio::time::timeout(Duration::from_secs(5), plain)
        .await
        .expect("not blocked")
        .unwrap();
    for r in [
        t.find("c", &by_id("a"), &FindOptions::default())
            .await
            .map(drop),
        t.insert_one("c", doc! {"_id": "b"}).await,
        t.commit().await,
    ] {
        match r {
            Err(Error::Server { message, .. }) => assert!(message.contains("duplicate key")),
            other => panic!("{other:?}"),
        }
    }
    t.abort().await.unwrap();
    assert_eq!(all(&s, "c").await, [doc! {"_id": "a", "v": 11}]);
    // A work that swallows the error: the commit fails, once.
    let attempts = Arc::new(AtomicU32::new(0));
    let counted = attempts.clone();
    let r = transaction(&s, |tx| {
        let attempts = counted.clone();
        Box::pin(async move {
            attempts.fetch_add(1, Ordering::SeqCst);
            let _ = tx.insert_one("c", doc! {"_id": "a"}).await;
            Ok(())
        })
    })
    .await;
    assert!(matches!(r, Err(Error::Server { .. })), "{r:?}");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    // Refused before it is sent: the transaction goes on.
    let t = s.start_transaction().await.unwrap();
    let mut mixed = inc("v", 1);
    mixed.rewrite = vec![crate::store::query::Rewrite::Shift {
        field: "v".into(),
        pieces: vec![],
    }];
    let refused = t.update_many("c", &Filter::And(vec![]), &mixed).await;
    assert!(
        matches!(refused, Err(Error::InvalidInput(_))),
        "{refused:?}"
    );
    let refused = t.update_one("c", &by_id("a"), &mut mixed, false).await;
    assert!(
        matches!(refused, Err(Error::InvalidInput(_))),
        "{refused:?}"
    );
    t.update_one("c", &by_id("a"), &mut inc("v", 1), false)
        .await
        .unwrap();
    t.commit().await.unwrap();
    assert_eq!(all(&s, "c").await, [doc! {"_id": "a", "v": 12}]);
}
