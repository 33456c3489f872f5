//! Snapshot transactions: commit, abort and failures, snapshot reads, indexes inside, finished
//! transactions; on MongoDB, an operation after a failure and the commands sent.

use super::*;
use pattern_core::store;

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
            Ok(tx.update_many(C, &all(), &set("done", true)).await?)
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
            Err(Error::Store(store::Error::InvalidInput(
                "changed my mind".into(),
            )))
        })
    })
    .await;
    assert!(
        matches!(r, Err(Error::Store(store::Error::InvalidInput(m))) if m == "changed my mind")
    );
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
    assert!(
        matches!(r, Err(Error::Store(store::Error::DuplicateKey { .. }))),
        "{r:?}"
    );
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
            Ok(tx.update_many(C, &all(), &rewrite).await?)
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
            Ok(tx.insert_one("fresh", doc! {"_id": 1, "k": 1}).await?)
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
        Box::pin(async move { Ok(tx.insert_one(C, doc! {"_id": "c", "k": 1}).await?) })
    })
    .await;
    assert!(
        matches!(r, Err(Error::Store(store::Error::DuplicateKey { .. }))),
        "{r:?}"
    );
}

async fn finished_transactions_refuse_work(store: AnyStore) {
    let tx = store.start_transaction().await.unwrap();
    tx.insert_one(C, doc! {"_id": "a"}).await.unwrap();
    tx.commit().await.unwrap();
    assert!(matches!(
        tx.insert_one(C, doc! {"_id": "b"}).await,
        Err(store::Error::InvalidInput(_))
    ));
    assert!(tx.abort().await.is_err());
    let tx = store.start_transaction().await.unwrap();
    tx.insert_one(C, doc! {"_id": "c"}).await.unwrap();
    tx.abort().await.unwrap();
    // Using an aborted transaction is a mistake on both stores.
    let r = tx.find(C, &all(), &FindOptions::default()).await;
    assert!(matches!(r, Err(store::Error::InvalidInput(_))), "{r:?}");
    let r = tx.commit().await;
    assert!(matches!(r, Err(store::Error::InvalidInput(_))), "{r:?}");
    tx.abort().await.unwrap();
    assert_eq!(find_ids(&store, &all()).await, ids(&["a"]));
}

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
    assert!(matches!(r, Err(store::Error::DuplicateKey { .. })), "{r:?}");
    let r = tx.insert_one(C, doc! {"_id": "b"}).await;
    match &r {
        Err(store::Error::Server { message, .. }) => {
            assert!(message.contains("duplicate key"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let r = tx.commit().await;
    assert!(matches!(r, Err(store::Error::Server { .. })), "{r:?}");
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
    assert!(
        matches!(r, Err(Error::Store(store::Error::Server { .. }))),
        "{r:?}"
    );
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

// The store contract's own operations, as the tests call them: not checked against the
// targeting rule (the patterns that use them are, in their suites).
on_both_stores!(
    untargeted:
    commit_makes_all_visible,
    abort_and_errors_discard_all,
    snapshot_isolation,
    indexes_inside_a_transaction,
    finished_transactions_refuse_work,
);
