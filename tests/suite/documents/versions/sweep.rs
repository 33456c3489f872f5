//! The sweep (`migrate`) on both stores: dry run, batches, a kill and the resume, two runs at
//! once, and live readers and writers of both builds beside it.

use super::*;
use pattern_core::store;

async fn the_sweep_upgrades_each_document_once(store: AnyStore) {
    older_docs(&store, 40).await;
    // One that cannot be upgraded: reported, left as it is.
    store
        .insert_one(
            "people",
            doc! {"_id": 999_i64, "schema_version": 2, "full_name": "Mononym", "visits": 0_i64},
        )
        .await
        .unwrap();
    let before = documents(&store, "people").await;
    let dry = Person3::migrate(
        &store,
        &Options {
            dry_run: true,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(dry.found, [(1, 20), (2, 21)]);
    assert_eq!((dry.upgraded, dry.failed), (40, 1));
    assert_eq!(
        documents(&store, "people").await,
        before,
        "a dry run writes nothing"
    );
    // Killed part-way by its progress callback, then resumed.
    let killed = AtomicU64::new(0);
    let kill = |p: &pattern_core::adopt::Progress<'_>| {
        if p.done >= 14 {
            killed.fetch_add(1, Ordering::SeqCst);
            panic!("killed by the test after {} documents", p.done);
        }
    };
    let opts = Options {
        batch_items: 7,
        progress: Some(&kill),
        ..Options::default()
    };
    let run = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(Person3::migrate(
        &store, &opts,
    )))
    .await;
    assert!(run.is_err(), "the run was killed");
    let part = by_version(&documents(&store, "people").await);
    assert_eq!(part.get(&Some(3)), Some(&14), "{part:?}");
    let resumed = Person3::migrate(
        &store,
        &Options {
            batch_items: 7,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    assert!(resumed.resumed);
    assert_eq!((resumed.upgraded, resumed.failed), (26, 1));
    assert_eq!(resumed.failures[0].0, "999");
    let after = documents(&store, "people").await;
    assert_eq!(by_version(&after).get(&Some(3)), Some(&40));
    for d in &after {
        let id = d.get_i64("_id").unwrap();
        if id == 999 {
            assert_eq!(
                d,
                before.iter().find(|b| b.get_i64("_id") == Ok(999)).unwrap()
            );
            continue;
        }
        let i = id - 100;
        assert_eq!(d.get_str("first"), Ok(format!("First{i}").as_str()), "{d}");
        assert_eq!(d.get_i64("visits"), Ok(i), "{d}");
    }
    // A second run writes nothing.
    let again = Person3::migrate(&store, &Options::default()).await.unwrap();
    assert_eq!((again.upgraded, again.failed), (0, 1));
    assert_eq!(documents(&store, "people").await, after);
}

async fn two_sweeps_at_once_stay_exact(store: AnyStore) {
    older_docs(&store, 60).await;
    let opts = Options {
        batch_items: 5,
        ..Options::default()
    };
    let (a, b) = tokio::join!(
        Person3::migrate(&store, &opts),
        Person3::migrate(&store, &opts)
    );
    let done = |r: &pattern_core::Result<Sweep>| match r {
        Ok(s) => s.upgraded,
        Err(Error::Store(store::Error::Contention { .. })) => 0,
        Err(e) => panic!("unexpected error: {e}"),
    };
    let (na, nb) = (done(&a), done(&b));
    let rest = Person3::migrate(&store, &opts).await.unwrap();
    // A run stopped by the other keeps the batches it committed before, which its error does
    // not count: the sum is exact only when both ran to the end, and never more.
    let total = na + nb + rest.upgraded;
    let both_ok = a.is_ok() && b.is_ok();
    assert!(
        total == 60 || (!both_ok && total < 60),
        "each document upgraded once: {na} + {nb} + {}",
        rest.upgraded
    );
    let docs = documents(&store, "people").await;
    assert_eq!(by_version(&docs).get(&Some(3)), Some(&60));
}

/// The sweep beside live readers and writers of both builds: every read decodes (or is newer
/// than the reader's build), every increment acknowledged is kept, and a sweep after the old
/// writers stop leaves every document at version 3.
async fn the_sweep_runs_beside_live_writers(store: AnyStore) {
    older_docs(&store, 30).await;
    let acked = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let writers = (0..4).map(|t| {
        let (store, acked, stop) = (&store, &acked, &stop);
        async move {
            let mut r = 0i64;
            while !stop.load(Ordering::SeqCst) {
                let id = 100 + (t * 11 + r * 7) % 30;
                let done = visit(store, t % 2 == 0, id).await;
                match done {
                    Ok(true) => {
                        acked.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(false) => panic!("document {id} not found"),
                    Err(Error::NewerVersion { .. }) => {}
                    Err(e) => panic!("writer {t}: {e}"),
                }
                // And a reader of each build: every document reads, or is newer than the build.
                let other = 100 + (t * 5 + r * 3) % 30;
                if t % 2 == 0 {
                    match Person2::get(store, &other).await {
                        Ok(Some(p)) => assert!(p.full_name.starts_with("First")),
                        Err(Error::NewerVersion {
                            found: 3, known: 2, ..
                        }) => {}
                        other => panic!("reader {t}: {other:?}"),
                    }
                } else {
                    let p = Person3::get(store, &other).await.unwrap().unwrap();
                    assert!(p.first.starts_with("First") && p.last.starts_with("Last"));
                }
                r += 1;
                tokio::task::yield_now().await;
            }
        }
    });
    let sweep = async {
        let s = Person3::migrate(
            &store,
            &Options {
                batch_items: 4,
                ..Options::default()
            },
        )
        .await
        .unwrap();
        stop.store(true, Ordering::SeqCst);
        s
    };
    let (_, swept) = tokio::join!(futures::future::join_all(writers), sweep);
    assert!(swept.upgraded > 0);
    Person3::migrate(&store, &Options::default()).await.unwrap();
    let docs = documents(&store, "people").await;
    assert_eq!(by_version(&docs).keys().collect::<Vec<_>>(), [&Some(3)]);
    let visits: i64 = docs.iter().map(|d| d.get_i64("visits").unwrap()).sum();
    let start: i64 = (0..30).sum();
    assert_eq!(visits, start + acked.load(Ordering::SeqCst) as i64);
}

on_both_stores!(
    the_sweep_upgrades_each_document_once,
    two_sweeps_at_once_stay_exact,
    the_sweep_runs_beside_live_writers,
);
