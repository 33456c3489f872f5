//! `advise` on four collections of MongoDB's published sample datasets
//! (`tests/data/mongodb-sample/`, loaded as `mongoimport` loads them), on both stores: real data
//! with no schema change in it gets no schema versioning finding, whatever the sample.

use std::collections::BTreeMap;

use pattern_core::adopt::advise::{advise, Pattern, DEFAULT_SAMPLE, MAX_SAMPLE};
use pattern_core::adopt::Options;
use pattern_core::store::AnyStore;
use pattern_tests::advise as seed;
use pattern_tests::on_both_stores;

/// `sample_mflix.users` holds `preferences` in one document of 185 (a test user's empty one),
/// among the ten newest `_id`s: a field a few of the newest documents hold is no change of
/// shape. Nor do the other three collections change shape.
async fn no_versioning_in_mongodb_s_samples(store: AnyStore) {
    let mut loaded = BTreeMap::new();
    for (db, coll) in seed::MONGODB_SAMPLES {
        loaded.insert(coll, seed::mongodb_sample(&store, db, coll).await);
    }
    let want: [(&str, usize); 4] = [
        ("accounts", 1_746),
        ("customers", 500),
        ("theaters", 1_564),
        ("users", 185),
    ];
    assert_eq!(loaded.into_iter().collect::<Vec<_>>(), want);
    // The data as the issue saw it: one user with `preferences`, among the newest.
    let mut users = pattern_tests::documents(&store, "users").await;
    users.sort_by_key(|d| d.get_object_id("_id").expect("ObjectId _ids"));
    let holding: Vec<usize> = (users.iter().enumerate())
        .filter(|(_, d)| d.contains_key("preferences"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(holding.len(), 1);
    assert!(holding[0] >= 185 - 10, "{holding:?}");
    let names: Vec<&str> = want.iter().map(|(c, _)| *c).collect();
    // The whole of each collection, then the default sample (a part of the two larger ones).
    for sample in [MAX_SAMPLE, DEFAULT_SAMPLE] {
        let a = advise(&store, &names, sample, &Options::default())
            .await
            .expect("advise");
        for c in &a.collections {
            if sample == MAX_SAMPLE {
                assert!(c.whole, "{}", c.collection);
            }
            let versioning: Vec<&str> = (c.findings.iter())
                .filter(|f| f.pattern == Pattern::SchemaVersioning)
                .map(|f| f.reason.as_str())
                .collect();
            assert!(
                versioning.is_empty(),
                "`{}` (sample {sample}): {versioning:?}",
                c.collection
            );
        }
    }
}

on_both_stores!(no_versioning_in_mongodb_s_samples);
