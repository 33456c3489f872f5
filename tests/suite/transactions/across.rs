//! `update_returning` (the document after an update, in one `findAndModify`) and
//! `write_across` (writes to several collections in order, one `bulkWrite` on MongoDB 8.0):
//! the same results on both stores, in a transaction and outside one; a refused write stops
//! the rest, names its collection, and an aborted transaction leaves nothing. `write_batch`
//! (writes to one collection in order) refuses an update the contract refuses where it stands.

use super::*;
use pattern_core::store;
use pattern_core::store::WriteOp;

const OTHER: &str = "others";

async fn the_document_after_an_update(store: AnyStore) {
    insert_all(&store, vec![doc! {"_id": "a", "n": 1, "name": "x"}]).await;
    let mut u = Update {
        inc: vec![("n".into(), 2)],
        set: vec![("name".into(), Bson::String("y".into()))],
        ..Update::default()
    };
    let after = store
        .update_returning(C, &Filter::eq("_id", "a"), &mut u, &["n"])
        .await
        .unwrap();
    assert_eq!(after, Some(doc! {"_id": "a", "n": 3}));
    let none = store
        .update_returning(C, &Filter::eq("_id", "b"), &mut inc("n", 1), &["n"])
        .await
        .unwrap();
    assert_eq!(none, None);
    assert_eq!(find_ids(&store, &all()).await, ids(&["a"]), "no upsert");
    // In a transaction, then aborted: nothing stays.
    let tx = store.start_transaction().await.unwrap();
    let after = tx
        .update_returning(
            C,
            &Filter::eq("_id", "a"),
            &mut inc("n", 10),
            &["n", "name"],
        )
        .await
        .unwrap();
    assert_eq!(after, Some(doc! {"_id": "a", "n": 13, "name": "y"}));
    tx.abort().await.unwrap();
    assert_eq!(get(&store, "a").await.unwrap().get_i32("n"), Ok(3));
}

async fn writes_across_collections(store: AnyStore) {
    insert_all(
        &store,
        vec![doc! {"_id": "a", "n": 0}, doc! {"_id": "b", "n": 0}],
    )
    .await;
    let tx = store.start_transaction().await.unwrap();
    let writes = vec![
        (OTHER, WriteOp::Insert(doc! {"_id": 1})),
        (
            C,
            WriteOp::UpdateMany {
                filter: Filter::eq("n", 0),
                update: Box::new(inc("n", 1)),
            },
        ),
        (
            OTHER,
            WriteOp::Update {
                filter: Filter::eq("_id", 2),
                update: Box::new(set("m", 1)),
                upsert: true,
            },
        ),
        (
            C,
            WriteOp::Update {
                filter: Filter::eq("_id", "z"),
                update: Box::new(set("m", 1)),
                upsert: false,
            },
        ),
    ];
    let matched = tx.write_across(writes, Some("test: across")).await.unwrap();
    assert_eq!(matched, [1, 2, 1, 0]);
    tx.commit().await.unwrap();
    assert_eq!(get(&store, "a").await.unwrap().get_i32("n"), Ok(1));
    let others = store
        .find(OTHER, &all(), &FindOptions::default())
        .await
        .unwrap();
    assert_eq!(others.len(), 2);
    // A duplicate `_id` stops the batch there and names its collection; the transaction
    // aborted, none of it stays.
    let tx = store.start_transaction().await.unwrap();
    let writes = vec![
        (
            C,
            WriteOp::Update {
                filter: Filter::eq("_id", "a"),
                update: Box::new(inc("n", 5)),
                upsert: false,
            },
        ),
        (OTHER, WriteOp::Insert(doc! {"_id": 1})),
        (C, WriteOp::Insert(doc! {"_id": "c"})),
    ];
    let refused = tx.write_across(writes, None).await;
    match refused {
        Err(store::Error::DuplicateKey { collection, .. }) => assert_eq!(collection, OTHER),
        other => panic!("{other:?}"),
    }
    let _ = tx.abort().await;
    assert_eq!(get(&store, "a").await.unwrap().get_i32("n"), Ok(1));
    assert_eq!(find_ids(&store, &all()).await, ids(&["a", "b"]));
}

/// An update the contract refuses (a rewrite beside an `$inc`) in an ordered batch: the
/// writes before it applied, it and those after it not, `InvalidInput`, on both stores alike
/// (the MongoDB store does not send it, which would drop the `$inc`).
async fn a_batch_refuses_an_invalid_update_where_it_stands(store: AnyStore) {
    let invalid = Update {
        inc: vec![("n".into(), 1)],
        rewrite: vec![Rewrite::Shift {
            field: "m".into(),
            pieces: vec![],
        }],
        ..Update::default()
    };
    let batch = vec![
        WriteOp::Insert(doc! {"_id": 1, "n": 0}),
        WriteOp::Update {
            filter: Filter::eq("_id", 1),
            update: Box::new(invalid),
            upsert: false,
        },
        WriteOp::Insert(doc! {"_id": 2, "n": 0}),
    ];
    let done = store.write_batch(C, batch).await;
    assert_eq!(done.applied, 1, "{:?}", done.error);
    assert!(
        matches!(done.error, Some(store::Error::InvalidInput(_))),
        "{:?}",
        done.error
    );
    assert_eq!(documents(&store, C).await, vec![doc! {"_id": 1, "n": 0}]);
}

on_both_stores!(
    untargeted: the_document_after_an_update,
    writes_across_collections,
    a_batch_refuses_an_invalid_update_where_it_stands,
);
