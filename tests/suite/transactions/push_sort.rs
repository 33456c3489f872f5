//! A `$push` that keeps its array sorted and bounded (`$sort`/`$slice`, a subset's one-update
//! insert): the same array on both stores, MongoDB's order of values, a refusal that leaves
//! the document as it was, and an aborted transaction that leaves nothing.

use super::*;
use pattern_core::store;
use pattern_core::store::query::PushSort;

/// The sorted push of `items` into `top`, newest first by `t` then `_id`, keeping `keep`.
fn sorted_push(items: Vec<Document>, keep: u32) -> Update {
    Update {
        push: vec![(
            "top".into(),
            items.into_iter().map(Bson::Document).collect(),
        )],
        push_sort: vec![PushSort {
            field: "top".into(),
            by: vec![("t".into(), -1), ("_id".into(), -1)],
            keep,
        }],
        ..Update::default()
    }
}

async fn top_of(store: &impl Store, id: &str) -> Option<Bson> {
    let found = store
        .find(C, &Filter::eq("_id", id), &FindOptions::default())
        .await
        .unwrap();
    found.first().and_then(|d| d.get("top").cloned())
}

async fn keeps_the_first_sorted(store: AnyStore) {
    insert_all(
        &store,
        vec![
            doc! {"_id": "p", "top": [{"_id": 5, "t": 50}, {"_id": 3, "t": 30}, {"_id": 2, "t": 20}]},
            doc! {"_id": "q"},
            doc! {"_id": "s", "top": "not an array"},
        ],
    )
    .await;
    // Ranks second: in, the last one out.
    let p = Filter::eq("_id", "p");
    let mut u = sorted_push(vec![doc! {"_id": 4, "t": 40}], 3);
    assert!(
        store
            .update_one(C, &p, &mut u, false)
            .await
            .unwrap()
            .matched
    );
    let want = bson::bson!([{"_id": 5, "t": 50}, {"_id": 4, "t": 40}, {"_id": 3, "t": 30}]);
    assert_eq!(top_of(&store, "p").await, Some(want.clone()));
    // Ranks last: the array as it was.
    let mut u = sorted_push(vec![doc! {"_id": 1, "t": 10}], 3);
    store.update_one(C, &p, &mut u, false).await.unwrap();
    assert_eq!(top_of(&store, "p").await, Some(want));
    // A tie on `t` goes by `_id`; a number of another type compares by value; a missing `t`
    // sorts as null, after every number (descending).
    let mut u = sorted_push(
        vec![
            doc! {"_id": 6, "t": 50_i64},
            doc! {"_id": 7},
            doc! {"_id": 8, "t": 45.5},
        ],
        4,
    );
    store.update_one(C, &p, &mut u, false).await.unwrap();
    let want = bson::bson!([
        {"_id": 6, "t": 50_i64},
        {"_id": 5, "t": 50},
        {"_id": 8, "t": 45.5},
        {"_id": 4, "t": 40},
    ]);
    assert_eq!(top_of(&store, "p").await, Some(want));
    // A missing field: created, sorted, cut.
    let q = Filter::eq("_id", "q");
    let mut u = sorted_push(vec![doc! {"_id": 1, "t": 1}, doc! {"_id": 2, "t": 2}], 1);
    store.update_one(C, &q, &mut u, false).await.unwrap();
    assert_eq!(
        top_of(&store, "q").await,
        Some(bson::bson!([{"_id": 2, "t": 2}]))
    );
    // Not an array: refused, the document as it was.
    let s = Filter::eq("_id", "s");
    let mut u = sorted_push(vec![doc! {"_id": 1, "t": 1}], 3);
    assert!(store.update_one(C, &s, &mut u, false).await.is_err());
    assert_eq!(top_of(&store, "s").await, Some(Bson::from("not an array")));
}

async fn an_aborted_sorted_push_leaves_nothing(store: AnyStore) {
    let items = bson::bson!([{"_id": 2, "t": 20}, {"_id": 1, "t": 10}]);
    insert_all(&store, vec![doc! {"_id": "p", "top": items.clone()}]).await;
    let tx = store.start_transaction().await.unwrap();
    let mut u = sorted_push(vec![doc! {"_id": 3, "t": 30}], 2);
    tx.update_one(C, &Filter::eq("_id", "p"), &mut u, false)
        .await
        .unwrap();
    tx.abort().await.unwrap();
    assert_eq!(top_of(&store, "p").await, Some(items));
}

async fn a_sort_without_its_push_is_refused(store: AnyStore) {
    insert_all(&store, vec![doc! {"_id": "p", "top": []}]).await;
    let mut u = sorted_push(vec![], 2);
    u.push.clear();
    let refused = store
        .update_one(C, &Filter::eq("_id", "p"), &mut u, false)
        .await;
    assert!(
        matches!(refused, Err(store::Error::InvalidInput(_))),
        "{refused:?}"
    );
    assert_eq!(top_of(&store, "p").await, Some(bson::bson!([])));
}

on_both_stores!(
    untargeted:
    keeps_the_first_sorted,
    an_aborted_sorted_push_leaves_nothing,
    a_sort_without_its_push_is_refused,
);
