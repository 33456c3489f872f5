//! Tests of the in-memory store's snapshot transactions: isolation, abort, the conflicts
//! (first writer wins, writes after the snapshot), plain writes waiting, no lost update, the
//! retrying helper, write skew, unique indexes at the write and at the commit.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::*;
use crate::store::{transaction, Transaction};
use crate::Error;

fn by_id(id: impl Into<Bson>) -> Filter {
    Filter::Eq("_id".into(), id.into())
}

fn set(field: &str, v: impl Into<Bson>) -> Update {
    Update {
        set: vec![(field.to_owned().into(), v.into())],
        ..Update::default()
    }
}

fn inc(field: &str, n: i32) -> Update {
    Update {
        inc: vec![(field.to_owned().into(), n)],
        ..Update::default()
    }
}

async fn get<S: Store>(s: &S, coll: &str, id: impl Into<Bson>) -> Option<Document> {
    let found = s.find(coll, &by_id(id), &FindOptions::default()).await;
    found.unwrap().into_iter().next()
}

async fn all<S: Store>(s: &S, coll: &str) -> Vec<Document> {
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        ..FindOptions::default()
    };
    s.find(coll, &Filter::And(vec![]), &opts).await.unwrap()
}

fn is_conflict<T: std::fmt::Debug>(r: &Result<T>) -> bool {
    matches!(r, Err(Error::WriteConflict { .. }))
}

async fn store_with(docs: &[Document]) -> MemoryStore {
    let s = MemoryStore::new();
    for d in docs {
        s.insert_one("c", d.clone()).await.unwrap();
    }
    s
}

/// Reads see the snapshot plus the transaction's own writes; others see none of them until
/// the commit, then all of them; a transaction started before the commit keeps its snapshot.
#[tokio::test]
async fn snapshot_isolation() {
    let s = store_with(&[doc! {"_id": "a", "v": 1}, doc! {"_id": "b", "v": 1}]).await;
    let t = s.start_transaction().await.unwrap();
    assert!(t.current_transaction().is_some());
    t.update_one("c", &by_id("a"), &mut set("v", 2), false)
        .await
        .unwrap();
    t.insert_one("c", doc! {"_id": "n", "v": 9}).await.unwrap();
    t.delete_many("c", &by_id("b")).await.unwrap();
    // Its own writes, as one view.
    let mine = all(&t, "c").await;
    assert_eq!(mine, [doc! {"_id": "a", "v": 2}, doc! {"_id": "n", "v": 9}]);
    assert_eq!(
        t.array_stats("c", &Filter::And(vec![]), "x")
            .await
            .unwrap()
            .documents,
        2
    );
    // Nobody else's.
    let before = [doc! {"_id": "a", "v": 1}, doc! {"_id": "b", "v": 1}];
    assert_eq!(all(&s, "c").await, before);
    let other = s.start_transaction().await.unwrap();
    assert_eq!(all(&other, "c").await, before);
    // A plain write of another document is not in the snapshot.
    s.insert_one("c", doc! {"_id": "p", "v": 0}).await.unwrap();
    assert_eq!(get(&t, "c", "p").await, None);
    t.commit().await.unwrap();
    let after = [
        doc! {"_id": "a", "v": 2},
        doc! {"_id": "n", "v": 9},
        doc! {"_id": "p", "v": 0},
    ];
    assert_eq!(all(&s, "c").await, after);
    // Started before the commit: still the snapshot.
    assert_eq!(all(&other, "c").await, before);
    other.abort().await.unwrap();
    let later = s.start_transaction().await.unwrap();
    assert_eq!(all(&later, "c").await, after);
    // A commit again is taken; other operations after it are refused.
    t.commit().await.unwrap();
    assert!(matches!(
        t.find("c", &by_id("a"), &FindOptions::default()).await,
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(t.abort().await, Err(Error::InvalidInput(_))));
    assert!(matches!(
        t.start_transaction().await,
        Err(Error::InvalidInput(_))
    ));
}

/// An abort, or a drop without a commit, discards everything and releases the documents.
#[tokio::test]
async fn abort_and_drop_discard() {
    let s = store_with(&[doc! {"_id": "a", "v": 1}]).await;
    let t = s.start_transaction().await.unwrap();
    t.update_one("c", &by_id("a"), &mut set("v", 2), false)
        .await
        .unwrap();
    t.insert_one("other", doc! {"_id": 1}).await.unwrap();
    t.abort().await.unwrap();
    t.abort().await.unwrap();
    // Using it after its owner aborted it is a mistake (as MongoTxn reports it), not a conflict.
    let r = t
        .update_one("c", &by_id("a"), &mut set("v", 3), false)
        .await;
    assert!(matches!(r, Err(Error::InvalidInput(_))), "{r:?}");
    assert!(matches!(t.commit().await, Err(Error::InvalidInput(_))));
    assert_eq!(all(&s, "c").await, [doc! {"_id": "a", "v": 1}]);
    assert!(all(&s, "other").await.is_empty());
    {
        let dropped = s.start_transaction().await.unwrap();
        dropped
            .update_one("c", &by_id("a"), &mut set("v", 4), false)
            .await
            .unwrap();
    }
    assert_eq!(all(&s, "c").await, [doc! {"_id": "a", "v": 1}]);
    // Released: another transaction and a plain write take the document at once.
    let t = s.start_transaction().await.unwrap();
    t.update_one("c", &by_id("a"), &mut inc("v", 1), false)
        .await
        .unwrap();
    t.commit().await.unwrap();
    s.update_one("c", &by_id("a"), &mut inc("v", 1), false)
        .await
        .unwrap();
    assert_eq!(all(&s, "c").await, [doc! {"_id": "a", "v": 3}]);
    assert!(s.lock().claims.is_empty() && s.lock().txns.is_empty());
}

/// The first writer wins: the second transaction to write a document fails at its write and
/// is aborted (every further operation fails too, reads included); the first commits.
#[tokio::test]
async fn first_writer_wins() {
    let s = store_with(&[doc! {"_id": "a", "v": 1}, doc! {"_id": "b", "v": 1}]).await;
    let (t1, t2) = (
        s.start_transaction().await.unwrap(),
        s.start_transaction().await.unwrap(),
    );
    t1.update_one("c", &by_id("a"), &mut inc("v", 1), false)
        .await
        .unwrap();
    t2.update_one("c", &by_id("b"), &mut inc("v", 10), false)
        .await
        .unwrap();
    let mut refused = inc("v", 10);
    let r = t2.update_one("c", &by_id("a"), &mut refused, false).await;
    assert!(is_conflict(&r), "{r:?}");
    assert_eq!(refused, inc("v", 10));
    assert!(is_conflict(
        &t2.find("c", &by_id("a"), &FindOptions::default()).await
    ));
    assert!(is_conflict(&t2.commit().await));
    t1.commit().await.unwrap();
    assert_eq!(
        all(&s, "c").await,
        [doc! {"_id": "a", "v": 2}, doc! {"_id": "b", "v": 1}]
    );

    // Every kind of write conflicts: deletes, replacements, many-document updates, and
    // inserts of an `_id` another open transaction inserted.
    let (t1, t2) = (
        s.start_transaction().await.unwrap(),
        s.start_transaction().await.unwrap(),
    );
    t1.insert_one("c", doc! {"_id": "n"}).await.unwrap();
    assert!(is_conflict(&t2.insert_one("c", doc! {"_id": "n"}).await));
    let t3 = s.start_transaction().await.unwrap();
    t1.delete_many("c", &by_id("b")).await.unwrap();
    assert!(is_conflict(
        &t3.replace_one("c", &by_id("b"), doc! {"v": 0}, false).await
    ));
    let t4 = s.start_transaction().await.unwrap();
    let everything = Filter::And(vec![]);
    assert!(is_conflict(
        &t4.update_many("c", &everything, &set("w", 1)).await
    ));
    t1.commit().await.unwrap();
    assert_eq!(
        all(&s, "c").await,
        [doc! {"_id": "a", "v": 2}, doc! {"_id": "n"}]
    );
}

/// A document changed after the transaction's snapshot (by a plain write, or by a
/// transaction that committed) conflicts at the transaction's write; so does an `_id`
/// inserted after the snapshot, and one deleted after it.
#[tokio::test]
async fn writes_after_the_snapshot_conflict() {
    let s = store_with(&[doc! {"_id": "a", "v": 1}, doc! {"_id": "b", "v": 1}]).await;
    let t = s.start_transaction().await.unwrap();
    s.update_one("c", &by_id("a"), &mut inc("v", 1), false)
        .await
        .unwrap();
    assert!(is_conflict(
        &t.update_one("c", &by_id("a"), &mut inc("v", 1), false)
            .await
    ));

    let t = s.start_transaction().await.unwrap();
    let u = s.start_transaction().await.unwrap();
    u.update_one("c", &by_id("b"), &mut inc("v", 1), false)
        .await
        .unwrap();
    u.commit().await.unwrap();
    assert!(is_conflict(&t.delete_many("c", &by_id("b")).await));

    let t = s.start_transaction().await.unwrap();
    s.insert_one("c", doc! {"_id": "new"}).await.unwrap();
    // Not a duplicate key: the transaction does not see it; a conflict.
    assert!(is_conflict(&t.insert_one("c", doc! {"_id": "new"}).await));

    let t = s.start_transaction().await.unwrap();
    s.delete_many("c", &by_id("new")).await.unwrap();
    assert!(is_conflict(
        &t.update_one("c", &by_id("new"), &mut set("v", 1), false)
            .await
    ));

    // A collection dropped and made again after the snapshot.
    let t = s.start_transaction().await.unwrap();
    s.drop_collection("c");
    s.insert_one("c", doc! {"_id": "a", "v": 100})
        .await
        .unwrap();
    assert!(is_conflict(
        &t.update_one("c", &by_id("a"), &mut inc("v", 1), false)
            .await
    ));
    assert_eq!(all(&s, "c").await, [doc! {"_id": "a", "v": 100}]);
}

/// A plain write of a document an open transaction wrote waits for the transaction to end,
/// then applies to what it left: nothing is lost either way.
#[tokio::test]
async fn plain_writes_wait_for_the_transaction() {
    let s = store_with(&[doc! {"_id": "a", "v": 1}]).await;
    for commit in [true, false] {
        let t = s.start_transaction().await.unwrap();
        t.update_one("c", &by_id("a"), &mut inc("v", 10), false)
            .await
            .unwrap();
        let plain = s.clone();
        let waiting = tokio::spawn(async move {
            plain
                .update_one("c", &by_id("a"), &mut inc("v", 1), false)
                .await
        });
        // Another document is not held.
        s.insert_one("c", doc! {"_id": format!("other {commit}")})
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        assert_eq!(
            get(&s, "c", "a").await.unwrap().get_i32("v"),
            Ok(if commit { 1 } else { 12 })
        );
        if commit {
            t.commit().await.unwrap();
        } else {
            drop(t);
        }
        waiting.await.unwrap().unwrap();
    }
    assert_eq!(get(&s, "c", "a").await.unwrap().get_i32("v"), Ok(13));
}

/// A transaction that blocks a plain write past its lifetime is aborted by it.
#[tokio::test]
async fn a_blocking_transaction_is_aborted_past_its_lifetime() {
    let s = store_with(&[doc! {"_id": "a", "v": 1}]).await;
    s.set_transaction_lifetime(Duration::from_millis(30));
    let t = s.start_transaction().await.unwrap();
    t.update_one("c", &by_id("a"), &mut inc("v", 10), false)
        .await
        .unwrap();
    // Blocked by the transaction, in the transaction's own task: it would wait forever.
    s.update_one("c", &by_id("a"), &mut inc("v", 1), false)
        .await
        .unwrap();
    assert!(is_conflict(
        &t.find("c", &by_id("a"), &FindOptions::default()).await
    ));
    assert!(is_conflict(&t.commit().await));
    assert_eq!(get(&s, "c", "a").await.unwrap().get_i32("v"), Ok(2));
}

/// Read-modify-write in transactions, concurrently with plain increments: every increment
/// is kept (no lost update), through the retrying helper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_lost_update() {
    let s = store_with(&[doc! {"_id": "counter", "n": 0, "plain": 0}]).await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                transaction(&s, |tx| {
                    Box::pin(async move {
                        let d = get(tx, "c", "counter").await.unwrap();
                        let n = d.get_i32("n").unwrap();
                        tokio::task::yield_now().await;
                        let mut next = d.clone();
                        next.insert("n", n + 1);
                        tx.replace_one("c", &by_id("counter"), next, false).await?;
                        Ok(())
                    })
                })
                .await
                .unwrap();
            }
        }));
    }
    let plain = s.clone();
    tasks.push(tokio::spawn(async move {
        for _ in 0..50 {
            plain
                .update_one("c", &by_id("counter"), &mut inc("plain", 1), false)
                .await
                .unwrap();
            tokio::task::yield_now().await;
        }
    }));
    for t in tasks {
        t.await.unwrap();
    }
    let d = get(&s, "c", "counter").await.unwrap();
    assert_eq!((d.get_i32("n"), d.get_i32("plain")), (Ok(80), Ok(50)));
}

/// `transaction()` runs a conflicting closure again until it commits; nested, it runs the
/// work in the transaction it is in.
#[tokio::test]
async fn transaction_retries_until_it_commits() {
    let s = store_with(&[doc! {"_id": "a", "v": 0}]).await;
    let first = s.start_transaction().await.unwrap();
    first
        .update_one("c", &by_id("a"), &mut inc("v", 1), false)
        .await
        .unwrap();
    let attempts = Arc::new(AtomicU32::new(0));
    let (s2, attempts2) = (s.clone(), attempts.clone());
    let retrying = tokio::spawn(async move {
        transaction(&s2, |tx| {
            let attempts = attempts2.clone();
            Box::pin(async move {
                attempts.fetch_add(1, Ordering::SeqCst);
                tx.update_one("c", &by_id("a"), &mut inc("v", 10), false)
                    .await?;
                // Nested: the same transaction.
                transaction(tx, |inner| {
                    Box::pin(async move { inner.insert_one("c", doc! {"_id": "b"}).await })
                })
                .await
            })
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(15)).await;
    first.commit().await.unwrap();
    retrying.await.unwrap().unwrap();
    assert!(attempts.load(Ordering::SeqCst) > 1);
    assert_eq!(
        all(&s, "c").await,
        [doc! {"_id": "a", "v": 11}, doc! {"_id": "b"}]
    );
    // An error that is not a conflict ends it at once, nothing kept.
    let r: Result<()> = transaction(&s, |tx| {
        Box::pin(async move {
            tx.insert_one("c", doc! {"_id": "z"}).await?;
            tx.insert_one("c", doc! {"_id": "a"}).await
        })
    })
    .await;
    assert!(matches!(r, Err(Error::DuplicateKey { .. })), "{r:?}");
    assert_eq!(get(&s, "c", "z").await, None);
}

mod commits;
