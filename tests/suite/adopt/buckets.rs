//! Bucket migrations from a flat collection: each key's order kept, a run that dies resumed (with
//! and without removing the source), live pushes kept, a dry run, the analysis, `verify` finding
//! every injected defect, the index report, and two runs at once.

use super::*;
use pattern_core::store;

async fn bucket_migration_keeps_each_keys_order(store: AnyStore) {
    let expected = seed_trades(&store, 12, 40, 7).await;
    let source_before = documents(&store, "trades").await;
    let indexes_before = store.index_names("trades").await.unwrap();
    let opts = Options {
        batch_items: 35,
        ..Options::default()
    };
    let report = migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
        .await
        .unwrap();
    let items: usize = expected.values().map(Vec::len).sum();
    assert_eq!(report.moved_items, items as u64, "{report:?}");
    assert_eq!(report.changed, 12);
    assert!(report.batches > 5);
    assert!(report.verified.as_ref().unwrap().is_clean(), "{report:?}");
    check_history(&store, &expected, &BTreeMap::new()).await;
    // The source is as it was, its indexes too.
    assert_eq!(documents(&store, "trades").await, source_before);
    assert_eq!(store.index_names("trades").await.unwrap(), indexes_before);
    // Bounds and summaries as the push keeps them.
    for (k, items) in &expected {
        let s = bucket::summary::<History, _, _>(&store, k, ..)
            .await
            .unwrap();
        assert_eq!(s.items, items.len() as u64);
        let sum: i64 = items.iter().map(|t| t.qty).sum();
        assert_eq!(
            s.values[0],
            Some(bucket::Number::Int64(sum)),
            "customer {k}"
        );
        let day: Vec<Trade> = bucket::range::<History, _, _>(
            &store,
            k,
            DateTime::from_millis(1_700_001_000_000)..DateTime::from_millis(1_700_002_000_000),
        )
        .try_collect()
        .await
        .unwrap();
        let want: Vec<Trade> = items
            .iter()
            .filter(|t| (1_700_001_000_000..1_700_002_000_000).contains(&t.date.timestamp_millis()))
            .cloned()
            .collect();
        assert_eq!(day, want, "customer {k}");
    }
    // Pages 1..n, `_id`s `<key>_<seconds of the first item>`.
    for d in documents(&store, "trade_history").await {
        let first = d.get_array("history").unwrap()[0]
            .as_document()
            .unwrap()
            .get_datetime("date")
            .unwrap();
        let id = d.get_str("_id").unwrap();
        let secs = first.timestamp_millis().div_euclid(1000);
        assert!(
            id.starts_with(&format!("{}_", d.get_i32("customerId").unwrap())),
            "{id}"
        );
        let at: i64 = id.split('_').nth(1).unwrap().parse().unwrap();
        assert!(at >= secs, "{id} vs {secs}");
    }
    // A second run changes nothing.
    let before = documents(&store, "trade_history").await;
    let again = migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
        .await
        .unwrap();
    assert!(again.already_finished && again.batches == 0, "{again:?}");
    assert_eq!(documents(&store, "trade_history").await, before);
    // Other settings than the checkpoint's are refused.
    let mut other = History::SPEC;
    other.size = 20;
    let err = migrate_bucket(&store, &other, &FLAT, &opts)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("other settings"), "{err}");
    // So are other kept values (buckets without the summary would follow buckets with it).
    let mut other = History::SPEC;
    other.keeps.summary = &[];
    let err = migrate_bucket(&store, &other, &FLAT, &opts)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("other settings"), "{err}");
}

async fn bucket_migration_resumes_after_dying(store: AnyStore) {
    // One per run: this test's runs on the two stores may overlap.
    let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let expected = seed_trades(&store, 8, 60, 11).await;
    for kill_after in [60u64, 60] {
        armed.store(true, Ordering::SeqCst);
        let s = store.clone();
        let died = tokio::spawn(async move {
            migrate_bucket(&s, &History::SPEC, &FLAT, &dying(kill_after, armed)).await
        })
        .await;
        assert!(died.is_err(), "the run dies");
    }
    let report = migrate_bucket(
        &store,
        &History::SPEC,
        &FLAT,
        &Options {
            batch_items: 35,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    assert!(report.resumed_from.is_some(), "{report:?}");
    assert!(report.verified.as_ref().unwrap().is_clean(), "{report:?}");
    check_history(&store, &expected, &BTreeMap::new()).await;
}

/// Cut by span (10 minutes, seed trades over 83): a run dies, the next resumes, and every bucket
/// holds items of one window, at most one not full per key and window; each key's items in
/// time order.
async fn bucket_migration_cuts_by_window(store: AnyStore) {
    // One per run: this test's runs on the two stores may overlap.
    let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    const SPAN: i64 = 600_000;
    const SPEC: BucketSpec<'static> = BucketSpec {
        keeps: Keeps {
            span: Some(SPAN),
            ..History::SPEC.keeps
        },
        ..History::SPEC
    };
    let expected = seed_trades(&store, 8, 60, 13).await;
    armed.store(true, Ordering::SeqCst);
    let s = store.clone();
    let died =
        tokio::spawn(async move { migrate_bucket(&s, &SPEC, &FLAT, &dying(60, armed)).await })
            .await;
    assert!(died.is_err(), "the run dies");
    let opts = Options {
        batch_items: 35,
        ..Options::default()
    };
    let report = migrate_bucket(&store, &SPEC, &FLAT, &opts).await.unwrap();
    assert!(report.resumed_from.is_some(), "{report:?}");
    assert!(report.verified.as_ref().unwrap().is_clean(), "{report:?}");
    check_history(&store, &expected, &BTreeMap::new()).await;
    let window = |d: &Document, f: &str| {
        d.get_datetime(f)
            .unwrap()
            .timestamp_millis()
            .div_euclid(SPAN)
    };
    let mut open = std::collections::HashSet::new();
    let docs = documents(&store, "trade_history").await;
    for d in &docs {
        assert_eq!(window(d, "date_min"), window(d, "date_max"), "{d}");
        if d.get_i32("count").unwrap() < 10 {
            let key = d.get_i32("customerId").unwrap();
            assert!(open.insert((key, window(d, "date_min"))), "{d}");
        }
    }
    let per_window: usize = (expected.values())
        .map(|items| {
            let w: std::collections::HashSet<i64> = (items.iter())
                .map(|t| t.date.timestamp_millis().div_euclid(SPAN))
                .collect();
            w.len()
        })
        .sum();
    assert!(
        docs.len() >= per_window,
        "{} buckets for {per_window} windows",
        docs.len()
    );
}

async fn bucket_migration_can_remove_the_source(store: AnyStore) {
    // One per run: this test's runs on the two stores may overlap.
    let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let expected = seed_trades(&store, 6, 50, 3).await;
    armed.store(true, Ordering::SeqCst);
    let s = store.clone();
    let mut dies = dying(120, armed);
    dies.remove_source = true;
    assert!(
        tokio::spawn(async move { migrate_bucket(&s, &History::SPEC, &FLAT, &dies).await })
            .await
            .is_err()
    );
    let left = documents(&store, "trades").await.len();
    let total: usize = expected.values().map(Vec::len).sum();
    assert!(left < total && left > 0, "{left} of {total}");
    let opts = Options {
        batch_items: 35,
        remove_source: true,
        ..Options::default()
    };
    migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
        .await
        .unwrap();
    assert!(documents(&store, "trades").await.is_empty());
    check_history(&store, &expected, &BTreeMap::new()).await;
}

async fn bucket_migration_keeps_live_pushes(store: AnyStore) {
    let expected = seed_trades(&store, 10, 60, 5).await;
    let stop = Arc::new(AtomicBool::new(false));
    let pusher = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut pushed: BTreeMap<i32, Vec<Trade>> = BTreeMap::new();
            let mut n = 0i64;
            while !stop.load(Ordering::SeqCst) || n < 60 {
                let key = (n % 10) as i32;
                let t = Trade {
                    ticker: "LIVE".into(),
                    kind: "buy".into(),
                    qty: n,
                    date: DateTime::from_millis(1_800_000_000_000 + n),
                };
                bucket::push::<History, _, _>(&store, &key, &t)
                    .await
                    .unwrap();
                pushed.entry(key).or_default().push(t);
                n += 1;
                // An application's pace, not a hot loop: back to back (a few µs apart on the
                // in-memory store), every batch transaction of the migration found one of its
                // ten keys pushed to since it began and gave up after 100 attempts (CHANGELOG).
                tokio::time::sleep(std::time::Duration::from_micros(200)).await;
            }
            pushed
        })
    };
    let report = migrate_bucket(
        &store,
        &History::SPEC,
        &FLAT,
        &Options {
            batch_items: 25,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    let pushed = pusher.await.unwrap();
    check_history(&store, &expected, &pushed).await;
    let v = verify_bucket(&store, &History::SPEC, &quiet())
        .await
        .unwrap();
    assert!(v.is_clean(), "{v:?} {report:?}");
}

/// A key's open bucket written by the application before its migration keeps its `_id` when
/// the migrated series has a bucket of its number: a push waiting on it during the batch finds
/// it again (test server T17), and it holds the series' last items.
async fn bucket_migration_writes_over_the_open_bucket(store: AnyStore) {
    // Customer 0: 3 source items; 15 pushed before the migration (buckets 1 full, 2 open).
    let source: Vec<Document> = (0..3)
        .map(|i| doc! {"customerId": 0, "ticker": "MDB", "type": "buy", "qty": i, "date": DateTime::from_millis(1_700_000_000_000 + i)})
        .collect();
    store.insert_many("trades", source).await.unwrap();
    let live = |n: i64| Trade {
        ticker: "LIVE".into(),
        kind: "buy".into(),
        qty: 100 + n,
        date: DateTime::from_millis(1_800_000_000_000 + n * 1000),
    };
    for n in 0..15 {
        bucket::push::<History, _, _>(&store, &0, &live(n))
            .await
            .unwrap();
    }
    let number = |d: &Document| d.get("page").and_then(Bson::as_i64);
    let before = documents(&store, "trade_history").await;
    let open = before.iter().find(|d| number(d) == Some(2)).unwrap();
    assert_eq!(open.get_i32("count").unwrap(), 5, "{before:?}");
    migrate_bucket(&store, &History::SPEC, &FLAT, &quiet())
        .await
        .unwrap();
    // 18 items: bucket 1 (3 source, 7 pushed), bucket 2 (8 pushed) over the open one.
    let after = documents(&store, "trade_history").await;
    assert_eq!(after.len(), 2, "{after:?}");
    let second = after.iter().find(|d| number(d) == Some(2)).unwrap();
    assert_eq!(second.get("_id"), open.get("_id"));
    let qty = |d: &Document| -> Vec<i64> {
        (d.get_array("history").unwrap().iter())
            .map(|i| i.as_document().unwrap().get_i64("qty").unwrap())
            .collect()
    };
    assert_eq!(qty(second), (107..115).collect::<Vec<_>>());
    assert_eq!(second.get_i32("count").unwrap(), 8);
    let first = after.iter().find(|d| number(d) == Some(1)).unwrap();
    assert_eq!(first.get_str("_id").unwrap(), "0_1700000000");
    // Pushes go on into it.
    bucket::push::<History, _, _>(&store, &0, &live(15))
        .await
        .unwrap();
    let mut want: Vec<i64> = (0..3).collect();
    want.extend(100..116);
    let got: Vec<i64> = history(&store, 0).await.iter().map(|t| t.qty).collect();
    assert_eq!(got, want);
    assert!(verify_bucket(&store, &History::SPEC, &quiet())
        .await
        .unwrap()
        .is_clean());
    assert_eq!(documents(&store, "trade_history").await.len(), 2);
}

async fn bucket_dry_run_writes_nothing(store: AnyStore) {
    let expected = seed_trades(&store, 5, 30, 9).await;
    let opts = Options {
        dry_run: true,
        ..Options::default()
    };
    let report = migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
        .await
        .unwrap();
    let items: usize = expected.values().map(Vec::len).sum();
    let buckets: usize = expected.values().map(|v| v.len().div_ceil(10)).sum();
    assert_eq!(
        (report.moved_items, report.changed, report.written),
        (items as u64, 5, buckets as u64)
    );
    assert!(documents(&store, "trade_history").await.is_empty());
    assert!(documents(&store, adopt::CHECKPOINTS).await.is_empty());
    // Not even the target's indexes.
    assert!(store.index_names("trade_history").await.unwrap().is_empty());
}

async fn bucket_analysis_reports_items_per_key(store: AnyStore) {
    // 10 customers with 5 items, 1 with 500.
    let mut docs = Vec::new();
    for c in 0..11 {
        let n = if c == 10 { 500 } else { 5 };
        for i in 0..n {
            docs.push(doc! {"customerId": c, "ticker": "MDB", "type": "buy", "qty": i, "date": DateTime::from_millis(i * 1000)});
        }
    }
    docs.push(doc! {"ticker": "no key"});
    store.insert_many("trades", docs).await.unwrap();
    let a = analyze_bucket(&store, &History::SPEC, Some(&FLAT), &quiet())
        .await
        .unwrap();
    assert_eq!(
        (a.documents, a.keys, a.items, a.without_key),
        (551, 11, 550, 1)
    );
    assert_eq!((a.per_key.p50, a.per_key.max), (5, 500));
    assert_eq!(a.buckets_at_size, 10 + 50);
    assert_eq!(a.suggestion.value, 10, "{}", a.suggestion.reason);
    // The bucket collection itself, once migrated.
    migrate_bucket(&store, &History::SPEC, &FLAT, &quiet())
        .await
        .unwrap();
    let b = analyze_bucket(&store, &History::SPEC, None, &quiet())
        .await
        .unwrap();
    assert_eq!((b.keys, b.items, b.documents), (11, 550, 60));
}

async fn bucket_verify_finds_each_defect(store: AnyStore) {
    seed_trades(&store, 4, 40, 1).await;
    migrate_bucket(&store, &History::SPEC, &FLAT, &quiet())
        .await
        .unwrap();
    assert!(verify_bucket(&store, &History::SPEC, &quiet())
        .await
        .unwrap()
        .is_clean());
    use pattern_core::store::query::{Filter, Update};
    let page = |k: i32, p: i64| Filter::and([Filter::eq("customerId", k), Filter::eq("page", p)]);
    let set = |k: &'static str, v: Bson| Update {
        set: vec![(k.into(), v)],
        ..Default::default()
    };
    // Customer 0: page 1's count wrong. Customer 1: page 2 renumbered 7. Customer 2: page 1
    // holds 11 items. Customer 3: page 1 opened (9 items) beside its open last page.
    store
        .update_many("trade_history", &page(0, 1), &set("count", Bson::Int32(3)))
        .await
        .unwrap();
    store
        .update_many("trade_history", &page(1, 2), &set("page", Bson::Int64(7)))
        .await
        .unwrap();
    let eleven: Vec<Bson> = (0..11)
        .map(|i| {
            Bson::Document(
                doc! {"ticker": "X", "type": "buy", "qty": i, "date": DateTime::from_millis(0)},
            )
        })
        .collect();
    store
        .update_many(
            "trade_history",
            &page(2, 1),
            &Update {
                set: vec![
                    ("history".into(), Bson::Array(eleven)),
                    ("count".into(), Bson::Int32(11)),
                ],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let nine: Vec<Bson> = (0..9)
        .map(|i| {
            Bson::Document(
                doc! {"ticker": "X", "type": "buy", "qty": i, "date": DateTime::from_millis(0)},
            )
        })
        .collect();
    store
        .update_many(
            "trade_history",
            &page(3, 1),
            &Update {
                set: vec![
                    ("history".into(), Bson::Array(nine)),
                    ("count".into(), Bson::Int32(9)),
                ],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let v = verify_bucket(&store, &History::SPEC, &quiet())
        .await
        .unwrap();
    let kinds: Vec<String> = v.defects.iter().map(|d| format!("{d:?}")).collect();
    let has = |pred: &dyn Fn(&LayoutDefect) -> bool| v.defects.iter().any(pred);
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::CountMismatch {
                count: 3,
                items: 10,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::NotDense {
                key: Bson::Int32(1),
                expected: 2,
                found: 3,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::OverSize {
                items: 11,
                size: 10,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::SeveralOpen {
                key: Bson::Int32(3),
                ..
            }
        )),
        "{kinds:#?}"
    );
}

async fn index_reports_sort_needed_stale_and_users(store: AnyStore) {
    use pattern_core::adopt::{index_report_bucket, index_report_outlier, index_report_tree};
    use pattern_core::store::query::IndexSpec;
    // Nothing yet: every needed index missing.
    let r = &index_report_bucket(&store, &History::SPEC).await.unwrap()[0];
    assert!(
        !r.exists && r.present.is_empty() && r.missing.len() == 4,
        "{r:?}"
    );
    bucket::ensure_indexes::<History, _>(&store).await.unwrap();
    let r = &index_report_bucket(&store, &History::SPEC).await.unwrap()[0];
    assert!(r.is_complete() && r.present.len() == 4, "{r:?}");
    // A user's index and a stale one of the library (an earlier version's `{key, _id}`).
    let index = |name: &str, field: &str| IndexSpec {
        name: name.into(),
        keys: vec![(field.into(), 1)],
        unique: false,
        partial: None,
    };
    store
        .create_index("trade_history", &index("by_ticker", "history.ticker"))
        .await
        .unwrap();
    store
        .create_index(
            "trade_history",
            &index("pattern_customerId_1__id_1", "customerId"),
        )
        .await
        .unwrap();
    let r = &index_report_bucket(&store, &History::SPEC).await.unwrap()[0];
    assert_eq!(r.stale, ["pattern_customerId_1__id_1"], "{r:?}");
    assert!(
        r.users.contains(&"by_ticker".to_string()) && !r.is_complete(),
        "{r:?}"
    );
    // The same layout without `time`: the bounds index is the library's, stale for it.
    let mut plain = History::SPEC;
    plain.keeps = Keeps::NONE;
    let r = &index_report_bucket(&store, &plain).await.unwrap()[0];
    assert!(r.stale.iter().any(|n| n.contains("bounded")), "{r:?}");
    // Outlier: nothing needed on the main collection, the series' on the overflow.
    seed_books(&store, 3, &[60]).await;
    let r = index_report_outlier(&store, &Book::SPEC).await.unwrap();
    assert!(r[0].missing.is_empty() && r[0].exists, "{r:?}");
    assert_eq!(r[1].missing.len(), 3, "{r:?}");
    migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    let r = index_report_outlier(&store, &Book::SPEC).await.unwrap();
    assert!(r.iter().all(|x| x.is_complete()), "{r:?}");
    // A tree: the model's indexes by the seed's names.
    let tree =
        pattern_core::spec::TreeSpec::new("categories", pattern_core::spec::TreeModel::Ancestors);
    let r = &index_report_tree(&store, &tree).await.unwrap()[0];
    assert_eq!(r.missing, ["ancestors_1", "parent_1"], "{r:?}");
    pattern_core::tree::raw::ensure_indexes(&store, &tree)
        .await
        .unwrap();
    let r = &index_report_tree(&store, &tree).await.unwrap()[0];
    assert!(r.is_complete() && r.present.len() == 2, "{r:?}");
}

async fn two_runs_at_once_stay_exact(store: AnyStore) {
    let expected = seed_trades(&store, 10, 60, 21).await;
    let opts = Options {
        batch_items: 30,
        verify: false,
        ..Options::default()
    };
    let (a, b) = tokio::join!(
        migrate_bucket(&store, &History::SPEC, &FLAT, &opts),
        migrate_bucket(&store, &History::SPEC, &FLAT, &opts)
    );
    // One finishes; the other finishes too (the first was done before it started) or stops
    // when it finds the checkpoint moved by the other, with nothing of its batch kept.
    let stopped = [&a, &b]
        .iter()
        .filter(|r| match r {
            Ok(_) => false,
            Err(pattern_core::Error::Store(store::Error::Contention { what, .. })) => {
                assert!(what.contains("another run"), "{what}");
                true
            }
            Err(e) => panic!("unexpected error: {e}"),
        })
        .count();
    eprintln!(
        "two runs: {} stopped; a: {:?}; b: {:?}",
        stopped,
        a.as_ref().map(|r| (r.batches, r.already_finished)),
        b.as_ref().map(|r| (r.batches, r.already_finished))
    );
    assert!(stopped <= 1, "{a:?} {b:?}");
    // Running it again completes whatever the stopped run left, exactly.
    let last = migrate_bucket(&store, &History::SPEC, &FLAT, &Options::default())
        .await
        .unwrap();
    assert!(last.verified.unwrap().is_clean());
    check_history(&store, &expected, &BTreeMap::new()).await;
}

on_both_stores!(
    two_runs_at_once_stay_exact,
    index_reports_sort_needed_stale_and_users,
    bucket_migration_keeps_each_keys_order,
    bucket_migration_resumes_after_dying,
    bucket_migration_cuts_by_window,
    bucket_migration_can_remove_the_source,
    bucket_migration_keeps_live_pushes,
    bucket_migration_writes_over_the_open_bucket,
    bucket_dry_run_writes_nothing,
    bucket_analysis_reports_items_per_key,
    bucket_verify_finds_each_defect,
);
