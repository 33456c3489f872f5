//! Extended references on MongoDB alone: the commands of each write, and the targeting check.

use super::*;

/// The commands of each write on MongoDB (asserted; the round-trip table in BENCHMARKS.md
/// gives the same), and the targeting check seeing the propagation cross shards: a source's
/// write touches the source's shard, its entry's (the primary shard) and its copies'; the
/// check classifies that transaction as an extended reference's, and a transaction of the same
/// shape the library did not send fails it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_and_targeting_on_mongo() {
    let (m, log) = pattern_tests::targeted_mongo_store("reference_round_trips").await;
    let store = AnyStore::Mongo(m.clone());
    Film::ensure_indexes(&store).await.unwrap();
    director(1, "Varda").insert(&store).await.unwrap();
    director(2, "Ozu").insert(&store).await.unwrap();
    let names = |log: &pattern_tests::Recorder| -> Vec<String> {
        let mut l = log.lock().unwrap();
        let out = l
            .iter()
            .map(|(n, c)| {
                format!("{n} {}", c.get_str(n).unwrap_or(""))
                    .trim()
                    .to_owned()
            })
            .collect();
        l.clear();
        out
    };
    names(&log);
    film(0, 1).insert(&store).await.unwrap();
    assert_eq!(
        names(&log),
        [
            "find directors",
            "update pattern_references",
            "insert films",
            "commitTransaction"
        ],
        "a referencing insert: the source read, its entry bumped, the insert"
    );
    for id in 1..3 {
        film(id, 1).insert(&store).await.unwrap();
    }
    names(&log);
    let rename = |name: &str| Update::new().set(Director::NAME, name.to_owned());
    Director::update_one(&store, Director::ID.eq(1), rename("Agnès Varda"))
        .await
        .unwrap();
    let source_write = names(&log);
    assert_eq!(
        source_write,
        ["findAndModify directors", "bulkWrite", "commitTransaction"],
        "a source update that changes copied fields: the source as it is after the update, \
         then its entry bumped and the stale copies of every referencing collection updated \
         by filter in one bulkWrite, whatever their number up to the fan-out"
    );
    Director::update_one(
        &store,
        Director::ID.eq(1),
        Update::new().set(Director::BORN, 1928),
    )
    .await
    .unwrap();
    assert_eq!(
        names(&log),
        ["update directors"],
        "a source update that writes no copied field touches no copy: one command, no \
         transaction"
    );
    // The check sees the propagation's transaction cross shards, and classifies it.
    Director::update_one(&store, Director::ID.eq(1), rename("Varda"))
        .await
        .unwrap();
    let recorded = log.lock().unwrap().clone();
    let t = pattern_tests::targeting(m.database().name(), &[], &recorded);
    assert!(t.offenders.is_empty(), "{:?}", t.offenders);
    let reference: Vec<&String> = (t.cross_shard.iter())
        .filter(|(class, _)| *class == "reference")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(reference.len(), 1, "{:?}", t.cross_shard);
    // The copies are updated by filter (`director._id`), which reaches every shard of a
    // collection sharded by `_id`, as the reads of the copies always did.
    for shard in ["directors 1", "films (every shard)", "the primary shard"] {
        assert!(reference[0].contains(shard), "{shard}: {}", reference[0]);
    }
    // The same shards written by hand, without the library's markers: an offender.
    log.lock().unwrap().clear();
    let mut ctx = ();
    pattern_core::store::transaction_with(&store, &mut ctx, |tx, ()| {
        Box::pin(async move {
            let by_id = |id: i64| query::Filter::Eq("_id".into(), Bson::Int64(id));
            let mut set = query::Update {
                set: vec![("title".into(), Bson::String("by hand".into()))],
                ..query::Update::default()
            };
            tx.update_one("films", &by_id(0), &mut set, false).await?;
            let mut set = query::Update {
                set: vec![("born".into(), Bson::Int32(1929))],
                ..query::Update::default()
            };
            tx.update_one("directors", &by_id(1), &mut set, false)
                .await?;
            Ok(())
        })
    })
    .await
    .unwrap();
    let recorded = log.lock().unwrap().clone();
    let t = pattern_tests::targeting(m.database().name(), &[], &recorded);
    assert_eq!(t.offenders.len(), 1, "{:?}", t.offenders);
    pattern_tests::drop_db(&store).await;
}

/// Past the fan-out on MongoDB not behind a router: the batches update the copies' `_id`
/// ranges (behind one, the conformance tests' `$in`), each copy written once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_fan_out_unrouted() {
    for (name, run) in [
        ("fan_out_update_unrouted", 0),
        ("fan_out_killed_unrouted", 1),
        ("fan_out_save_unrouted", 2),
    ] {
        let store = AnyStore::Mongo(pattern_tests::mongo_store(name).await);
        match run {
            0 => an_update_past_the_fan_out_commits_the_fan_out(store.clone()).await,
            1 => a_killed_propagation_resumes_exactly(store.clone()).await,
            _ => past_the_fan_out_in_batches(store.clone()).await,
        }
        pattern_tests::drop_db(&store).await;
    }
}
