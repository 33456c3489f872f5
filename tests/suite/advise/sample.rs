//! `Store::sample`'s contract, on both stores: at most `size` documents of the collection,
//! each at most once; every document when the collection holds no more than `size`.

use std::collections::BTreeSet;

use futures::TryStreamExt;
use pattern_core::adopt::advise::ADVISE_READ;
use pattern_core::store::AnyStore;
use pattern_core::store::Store;
use pattern_tests::on_both_stores;

async fn sampled(store: &AnyStore, coll: &str, size: u32) -> Vec<i64> {
    let docs: Vec<bson::RawDocumentBuf> = store
        .sample(coll, size, 7, ADVISE_READ)
        .try_collect()
        .await
        .expect("sample");
    docs.iter()
        .map(|d| d.get_i64("_id").expect("an _id"))
        .collect()
}

async fn a_sample_is_distinct_documents_of_the_collection(store: AnyStore) {
    let docs: Vec<bson::Document> = (0..300_i64)
        .map(|i| bson::doc! {"_id": i, "n": i})
        .collect();
    store.insert_many("things", docs).await.unwrap();
    for size in [1, 17, 299, 300, 1_000] {
        let got = sampled(&store, "things", size).await;
        let distinct: BTreeSet<i64> = got.iter().copied().collect();
        assert_eq!(got.len(), (size as usize).min(300), "size {size}");
        assert_eq!(distinct.len(), got.len(), "size {size}: a document twice");
        assert!(distinct.iter().all(|i| (0..300).contains(i)));
    }
    // Two samples of 30 of 300 are not the same documents every time.
    let mut seen = BTreeSet::new();
    for _ in 0..4 {
        seen.extend(sampled(&store, "things", 30).await);
    }
    assert!(seen.len() > 30, "four samples picked the same 30 documents");
    assert!(sampled(&store, "none", 10).await.is_empty());
}

on_both_stores!(a_sample_is_distinct_documents_of_the_collection);
