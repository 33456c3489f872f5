//! MongoDB's 16 MiB document limit, enforced the same way by both stores: an item too large by
//! itself is refused before anything is sent; an item that does not fit in the document it
//! would go to is refused by the write; either way `Error::TooLarge`, and nothing is lost.

use futures::TryStreamExt;
use pattern_core::{AnyStore, Bucket, Counts, Error, Outlier};
use pattern_tests::{counted_mongo_store, documents, on_both_stores};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Blob {
    n: u32,
    data: String,
}

#[derive(Bucket)]
#[bucket(collection = "blobs", size = 10)]
#[allow(dead_code)]
struct Blobs {
    #[bucket(key)]
    owner: i64,
    #[bucket(items)]
    blobs: Vec<Blob>,
}

#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(collection = "posts", threshold = 50, overflow = "posts_extra")]
struct Post {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i64,
    #[outlier(items)]
    attachments: Vec<Blob>,
}

const MIB: usize = 1024 * 1024;

fn blob(n: u32, mib: usize) -> Blob {
    Blob {
        n,
        data: "x".repeat(mib * MIB),
    }
}

fn too_large(r: pattern_core::Result<()>) -> bool {
    matches!(r, Err(Error::TooLarge { .. }))
}

async fn oversized_item_is_refused(store: AnyStore) {
    assert!(too_large(Blobs::push(&store, &1, blob(0, 17)).await));
    assert!(too_large(
        Blobs::push_many(&store, &1, &[blob(0, 1), blob(1, 17)]).await
    ));
    assert!(
        documents(&store, "blobs").await.is_empty(),
        "something was written"
    );
    Post {
        id: 1,
        attachments: vec![],
    }
    .save(&store)
    .await
    .unwrap();
    assert!(too_large(
        Post::push_attachments(&store, &1, blob(0, 17)).await
    ));
    assert!(too_large(
        Post::push_many_attachments(&store, &1, &[blob(0, 17)]).await
    ));
    assert!(too_large(
        Post {
            id: 2,
            attachments: vec![blob(0, 17)]
        }
        .save(&store)
        .await
    ));
    assert_eq!(
        Post::all_attachments(&store, &1).await.unwrap(),
        Some(vec![])
    );
}

async fn item_that_does_not_fit_loses_nothing(store: AnyStore) {
    Blobs::push(&store, &7, blob(0, 6)).await.unwrap();
    Blobs::push(&store, &7, blob(1, 6)).await.unwrap();
    assert!(too_large(Blobs::push(&store, &7, blob(2, 6)).await));
    assert_eq!(
        Blobs::counts(&store, &7).await.unwrap(),
        Counts { items: 2, pages: 1 }
    );
    let ns: Vec<u32> = Blobs::items(&store, &7)
        .map_ok(|b| b.n)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(ns, [0, 1]);
    // Small items still fit.
    Blobs::push(&store, &7, blob(3, 1)).await.unwrap();
    assert_eq!(Blobs::counts(&store, &7).await.unwrap().items, 3);

    Post {
        id: 3,
        attachments: vec![blob(0, 6), blob(1, 6)],
    }
    .save(&store)
    .await
    .unwrap();
    assert!(too_large(
        Post::push_attachments(&store, &3, blob(2, 6)).await
    ));
    let all = Post::all_attachments(&store, &3).await.unwrap().unwrap();
    assert_eq!(all.iter().map(|b| b.n).collect::<Vec<_>>(), [0, 1]);
    assert!(!Post::is_outlier(&store, &3).await.unwrap());
}

on_both_stores!(
    oversized_item_is_refused,
    item_that_does_not_fit_loses_nothing
);

/// The oversized item is refused before anything is sent.
#[tokio::test]
async fn mongo_refuses_oversized_items_without_a_round_trip() {
    let (store, log) = counted_mongo_store("limits_rt").await;
    Blobs::ensure_indexes(&store).await.unwrap();
    log.clear();
    assert!(too_large(Blobs::push(&store, &1, blob(0, 17)).await));
    assert!(log.is_empty(), "{:?}", log.names());
    let _ = store.database().drop().await;
}
