//! Tests of the in-memory store's snapshot transactions: isolation, abort, the conflicts
//! (first writer wins, writes after the snapshot), plain writes waiting, no lost update, the
//! retrying helper, write skew, unique indexes at the write and at the commit.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document};

use crate::tests::index;
use crate::*;
use pattern_store::Error;
use pattern_store::{run_transaction, BoxFuture, Transaction, TRANSACTION_ATTEMPTS};

/// `work` in a transaction of `store`, retried on conflicts, with the store's error.
async fn transaction<S, T, F>(store: &S, mut work: F) -> Result<T>
where
    S: Store,
    F: for<'t> FnMut(&'t S::Txn) -> BoxFuture<'t, Result<T>> + Send,
    T: Send,
{
    run_transaction(store, TRANSACTION_ATTEMPTS, &mut (), |tx, _| work(tx)).await
}

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

// Transactions at commit: write skew and its cure, unique indexes at the write and at the
// commit, merges of concurrent commits.

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
    s.create_index("c", &index("k", &["k"], true))
        .await
        .unwrap();
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
    let ix = index("anc", &["ancestors"], false);
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
        rewrite: vec![pattern_store::query::Rewrite::ArrayPrefix {
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

/// Three pushes of one item each to `key` of `spec`'s series on `store` (its documents
/// `<prefix>_1`, holding two, and `<prefix>_2`).
async fn push_three<S: Store>(
    store: &S,
    spec: &crate::push::tests::TestSeries,
    key: i32,
    prefix: &str,
) {
    for (i, seq) in [(1, 1), (2, 1), (3, 2)] {
        let new_id = move || Bson::String(format!("{prefix}_{seq}"));
        let mut items = vec![Bson::Int32(i)];
        let (key, marks) = (Bson::Int32(key), || spec.marks());
        let push = spec.open_push(
            &key,
            &crate::push::tests::TestKept::NONE,
            seq,
            &new_id,
            &marks,
        );
        store.push_open(&push, &mut items).await.unwrap();
    }
}

/// Work inside a transaction: the series push (the contract's default, through the
/// transaction's conditional upsert), graph lookups and raw finds of its own writes.
#[tokio::test]
async fn the_whole_contract_inside_a_transaction() {
    let spec = crate::push::tests::TestSeries {
        collection: "s",
        key_field: "k",
        items_field: "items",
        count_field: "count",
        size: 2,
        order: crate::push::tests::TestOrder::Seq("seq"),
        keeps: crate::push::tests::TestKeeps::NONE,
    };
    let s = MemoryStore::new();
    spec.ensure_indexes(&s).await.unwrap();
    let t = s.start_transaction().await.unwrap();
    push_three(&t, &spec, 7, "k").await;
    // The store does the same natively while the transaction holds nothing of its key.
    push_three(&s, &spec, 8, "j").await;
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
    let ix = index("p", &["parent"], true);
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
    mixed.rewrite = vec![pattern_store::query::Rewrite::Shift {
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

/// An update that changes nothing (a `$set` of the value in place) writes nothing, as on
/// MongoDB (SERVER-77616: a no-op `findOneAndUpdate` in a transaction takes no write
/// conflict): it claims no document, so another transaction's write and a plain write go
/// ahead; it leaves no stamp, so a transaction that read the document before still writes
/// it; and a transaction's no-op of a document changed after its snapshot is no conflict.
#[tokio::test]
async fn an_update_that_changes_nothing_writes_nothing() {
    let s = store_with(&[doc! {"_id": "a", "v": 1, "d": {"x": 1, "y": 2.5}, "z": 0.0}]).await;
    let a = by_id("a");
    let one = |v: UpdateOutcome| (v.matched, v.modified);

    // Another transaction, then a plain write, over a transaction's no-op.
    let t1 = s.start_transaction().await.unwrap();
    let noop = t1.update_one("c", &a, &mut set("v", 1), false).await;
    assert_eq!(one(noop.unwrap()), (true, false));
    let t2 = s.start_transaction().await.unwrap();
    t2.update_one("c", &a, &mut set("v", 2), false)
        .await
        .unwrap();
    t2.commit().await.unwrap();
    let mut plus_one = inc("v", 1);
    let plain = s.update_one("c", &a, &mut plus_one, false);
    tokio::time::timeout(Duration::from_secs(5), plain)
        .await
        .expect("no claim to wait for")
        .unwrap();
    t1.commit().await.unwrap();
    assert_eq!(get(&s, "c", "a").await.unwrap().get_i32("v"), Ok(3));

    // A plain no-op leaves no stamp: a transaction that started before it still writes.
    let t = s.start_transaction().await.unwrap();
    let noop = s.update_one("c", &a, &mut set("v", 3), false).await;
    assert_eq!(one(noop.unwrap()), (true, false));
    t.update_one("c", &a, &mut inc("v", 1), false)
        .await
        .unwrap();
    t.commit().await.unwrap();

    // A transaction's no-op of a document changed after its snapshot: the document as the
    // transaction reads it is unchanged by the update, so nothing conflicts.
    let t = s.start_transaction().await.unwrap();
    s.update_one("c", &a, &mut set("v", 10), false)
        .await
        .unwrap();
    let stale = t.update_one("c", &a, &mut set("v", 4), false).await;
    assert_eq!(one(stale.unwrap()), (true, false));
    let many = t.update_many("c", &a, &set("v", 4)).await;
    assert_eq!(many.unwrap(), 1, "matched, though not written");
    t.commit().await.unwrap();
    assert_eq!(get(&s, "c", "a").await.unwrap().get_i32("v"), Ok(10));

    // The same value is the same type and the same bytes, a document's fields in order.
    let t = s.start_transaction().await.unwrap();
    for (field, value, changes) in [
        ("v", Bson::Int32(10), false),
        ("v", Bson::Int64(10), true),
        ("d", Bson::Document(doc! {"x": 1, "y": 2.5}), false),
        ("d", Bson::Document(doc! {"y": 2.5, "x": 1}), true),
        ("z", Bson::Double(0.0), false),
        ("z", Bson::Double(-0.0), true),
        ("v", Bson::Double(10.0), true),
    ] {
        let u = t
            .update_one("c", &a, &mut set(field, value.clone()), false)
            .await;
        assert_eq!(one(u.unwrap()), (true, changes), "{field}: {value:?}");
    }
    let mut unset = Update {
        unset: vec!["nothing".into()],
        ..Update::default()
    };
    let u = t.update_one("c", &a, &mut unset, false).await;
    assert_eq!(one(u.unwrap()), (true, false), "$unset of a missing field");
    drop(t);
}
