//! Conflicts: the first writer wins, `transaction()` retries and gives up with contention, borrows
//! its context, and write skew and its cure.

use super::*;
use pattern_core::store;

/// Goes off call and bumps the shift's version, in `t`.
async fn off(t: &AnyTxn, who: &str) -> Result<(), store::Error> {
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

fn is_conflict<T: std::fmt::Debug>(r: &Result<T, store::Error>) -> bool {
    matches!(r, Err(e) if e.is_transient() && matches!(e, store::Error::WriteConflict { .. }))
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
/// `TRANSACTION_ATTEMPTS` attempts with `store::Error::Contention`, keeping nothing.
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
        matches!(r, Err(Error::Store(store::Error::Contention { attempts: n, .. })) if n == pattern_core::store::TRANSACTION_ATTEMPTS),
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
    pattern_core::store::transaction_with(
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
        Box::pin(async move { Ok(inner.insert_one(C, doc! {"_id": "inner"}).await?) })
    })
    .await
    .unwrap();
    assert!(matches!(
        tx.start_transaction().await,
        Err(store::Error::InvalidInput(_))
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

// The store contract's own operations, as the tests call them: not checked against the
// targeting rule (the patterns that use them are, in their suites).
/// An update that changes nothing (a `$set` of the value in place, same type, same bytes,
/// a document's fields in the same order) is not written: it holds the document against no
/// other writer, and a transaction's no-op of a document changed after its snapshot is no
/// conflict (MongoDB: SERVER-77616). Its outcome is matched, not modified; a document set
/// to the same fields in another order is modified.
async fn an_update_that_changes_nothing_holds_nothing(store: AnyStore) {
    insert_all(
        &store,
        vec![
            doc! {"_id": "a", "n": 1, "d": {"x": 1, "y": 2}},
            doc! {"_id": "b", "n": 1},
        ],
    )
    .await;
    let (a, b) = (Filter::eq("_id", "a"), Filter::eq("_id", "b"));
    let t1 = store.start_transaction().await.unwrap();
    let noop = t1.update_one(C, &a, &mut set("n", 1), false).await.unwrap();
    assert!(noop.matched && !noop.modified, "{noop:?}");
    let t2 = store.start_transaction().await.unwrap();
    t2.update_one(C, &a, &mut inc("n", 1), false).await.unwrap();
    t2.commit().await.unwrap();
    t1.commit().await.unwrap();
    assert_eq!(get(&store, "a").await.unwrap().get_i32("n"), Ok(2));

    let t = store.start_transaction().await.unwrap();
    assert_eq!(get(&t, "b").await.unwrap().get_i32("n"), Ok(1));
    store
        .update_one(C, &b, &mut inc("n", 1), false)
        .await
        .unwrap();
    let stale = t.update_one(C, &b, &mut set("n", 1), false).await;
    assert!(matches!(&stale, Ok(o) if !o.modified), "{stale:?}");
    t.commit().await.unwrap();
    assert_eq!(get(&store, "b").await.unwrap().get_i32("n"), Ok(2));

    let reordered = Bson::Document(doc! {"y": 2, "x": 1});
    let mut u = Update {
        set: vec![("d".into(), reordered)],
        ..Update::default()
    };
    let o = store.update_one(C, &a, &mut u, false).await.unwrap();
    assert!(o.matched && o.modified, "{o:?}");
    let long = store
        .update_one(C, &a, &mut set("n", 2_i64), false)
        .await
        .unwrap();
    assert!(
        long.matched && long.modified,
        "an Int64 over an Int32: {long:?}"
    );
}

on_both_stores!(
    untargeted:
    first_writer_wins,
    transaction_retries_conflicts,
    transaction_gives_up_with_contention,
    transaction_with_borrows_its_context,
    write_skew_and_its_cure,
    an_update_that_changes_nothing_holds_nothing,
);
