//! MongoDB's 16 MiB document limit, enforced the same way by both stores: an item too large by
//! itself is refused before anything is sent; an item that does not fit in the document it
//! would go to is refused by the write; either way `store::Error::TooLarge`, and nothing is lost.

use futures::TryStreamExt;
use pattern_core::bucket::Counts;
use pattern_core::store;
use pattern_core::store::AnyStore;
use pattern_core::{Bucket, Error, Outlier};
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
    matches!(r, Err(Error::Store(store::Error::TooLarge { .. })))
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
    assert!(too_large(Post::push(&store, &1, blob(0, 17)).await));
    assert!(too_large(Post::push_many(&store, &1, &[blob(0, 17)]).await));
    assert!(too_large(
        Post {
            id: 2,
            attachments: vec![blob(0, 17)]
        }
        .save(&store)
        .await
    ));
    assert_eq!(Post::all_items(&store, &1).await.unwrap(), Some(vec![]));
    // A save whose overflow item is too large is refused before the saved document and its
    // overflow are touched.
    let small: Vec<Blob> = (0..60).map(|n| blob(n, 0)).collect();
    Post {
        id: 4,
        attachments: small.clone(),
    }
    .save(&store)
    .await
    .unwrap();
    let mut big = small[..50].to_vec();
    big.push(blob(50, 17));
    assert!(too_large(
        Post {
            id: 4,
            attachments: big
        }
        .save(&store)
        .await
    ));
    assert_eq!(Post::all_items(&store, &4).await.unwrap(), Some(small));
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
    assert!(too_large(Post::push(&store, &3, blob(2, 6)).await));
    let all = Post::all_items(&store, &3).await.unwrap().unwrap();
    assert_eq!(all.iter().map(|b| b.n).collect::<Vec<_>>(), [0, 1]);
    assert!(!Post::is_outlier(&store, &3).await.unwrap());
}

/// Specs written by hand (not by the derives, which check these numbers at compile time) with
/// numbers out of range: every call is `store::Error::InvalidInput`, nothing is sent or written, and
/// nothing panics (a threshold of 0 once underflowed).
mod hand_written {
    use super::*;
    use pattern_core::outlier::DEFAULT_CHUNK;
    use pattern_core::spec::BucketSpec;
    use pattern_core::spec::OutlierSpec;
    use pattern_core::spec::{SeriesOrder, SeriesSpec};

    pub(super) struct Sized<const N: u32>;
    impl<const N: u32> Bucket for Sized<N> {
        type Key = i64;
        type Item = u32;
        type Summary = pattern_core::bucket::Totals;
        const SPEC: BucketSpec<'static> = BucketSpec {
            collection: "hand",
            key_field: "k",
            items_field: "items",
            count_field: "count",
            page_field: "page",
            size: N,
            keeps: pattern_core::spec::Keeps::NONE,
        };
        fn item_millis(_: &u32) -> Option<i64> {
            Some(0)
        }
    }

    #[derive(Clone, Debug, Serialize, Deserialize)]
    pub(super) struct Capped<const T: u32, const C: u32> {
        #[serde(rename = "_id")]
        id: i64,
        items: Vec<u32>,
    }
    impl<const T: u32, const C: u32> Outlier for Capped<T, C> {
        type Id = i64;
        type Item = u32;
        const SPEC: OutlierSpec<'static> = OutlierSpec {
            collection: "hand_main",
            items_field: "items",
            threshold: T,
            flag_field: "has_extras",
            overflow: SeriesSpec {
                collection: "hand_extra",
                key_field: "capped_id",
                items_field: "items_extra",
                count_field: "count",
                size: C,
                order: SeriesOrder::Seq("seq"),
                keeps: pattern_core::spec::Keeps::NONE,
            },
        };
    }

    fn invalid<T: std::fmt::Debug>(r: pattern_core::Result<T>) {
        assert!(
            matches!(r, Err(Error::Store(store::Error::InvalidInput(_)))),
            "{r:?}"
        );
    }

    pub(super) async fn out_of_range_numbers(store: AnyStore) {
        const TOO_BIG: u32 = i32::MAX as u32 + 1;
        use pattern_core::{bucket, outlier};
        invalid(bucket::push::<Sized<0>, _, _>(&store, &1, &5).await);
        invalid(bucket::push::<Sized<TOO_BIG>, _, _>(&store, &1, &5).await);
        invalid(bucket::push_many::<Sized<TOO_BIG>, _, _>(&store, &1, &[5, 6]).await);
        invalid(bucket::page::<Sized<TOO_BIG>, _, _>(&store, &1, 1).await);
        let doc = Capped::<0, DEFAULT_CHUNK> {
            id: 1,
            items: vec![1, 2],
        };
        invalid(outlier::save(&store, &doc).await);
        invalid(outlier::push::<Capped<0, DEFAULT_CHUNK>, _, _>(&store, &1, &5).await);
        invalid(outlier::push_many::<Capped<TOO_BIG, DEFAULT_CHUNK>, _, _>(&store, &1, &[5]).await);
        invalid(outlier::push::<Capped<2, 0>, _, _>(&store, &1, &5).await);
        invalid(
            outlier::save(
                &store,
                &Capped::<2, TOO_BIG> {
                    id: 1,
                    items: vec![1, 2, 3],
                },
            )
            .await,
        );
        for coll in ["hand", "hand_main", "hand_extra"] {
            assert!(documents(&store, coll).await.is_empty(), "{coll} written");
        }
    }
}
use hand_written::out_of_range_numbers;

on_both_stores!(
    out_of_range_numbers,
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
