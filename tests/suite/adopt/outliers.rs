//! Outlier migrations in place: each tail moved in order, a run that dies resumed, live pushes
//! kept, a dry run, the analysis, and `verify` finding every injected defect.

use super::*;

async fn outlier_migration_moves_each_tail_in_order(store: AnyStore) {
    let lens = [0, 3, 50, 51, 120, 49, 200];
    let original = seed_books(&store, 40, &lens).await;
    // A document in the seed's layout already: flagged, 60 items in the main array (a push
    // raced), and a seed-layout overflow document.
    store
        .update_many(
            "books",
            &pattern_core::store::query::Filter::eq("_id", 6),
            &pattern_core::store::query::Update {
                set: vec![("has_extras".into(), Bson::Boolean(true))],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    store
        .insert_one(
            "books_extra",
            doc! {"book_id": 6, "buyers_extra": [1, 2, 3]},
        )
        .await
        .unwrap();
    let mut expected = original.clone();
    expected.get_mut(&6).unwrap().extend([1, 2, 3]);
    let untouched_before: Vec<Document> = documents(&store, "books")
        .await
        .into_iter()
        .filter(|d| d.get_array("buyers").unwrap().len() <= 50)
        .collect();

    let opts = Options {
        batch_items: 150,
        ..Options::default()
    };
    let report = migrate_outlier(&store, &Book::SPEC, &opts).await.unwrap();
    let over = original.values().filter(|v| v.len() > 50).count() as u64;
    assert_eq!(report.changed, over, "{report:?}");
    let moved: u64 = original
        .values()
        .map(|v| v.len().saturating_sub(50) as u64)
        .sum();
    assert_eq!(report.moved_items, moved);
    assert!(report.batches > 1, "small batches: {report:?}");
    assert!(report.verified.as_ref().unwrap().is_clean(), "{report:?}");
    for (id, items) in &expected {
        assert_eq!(&book_items(&store, *id).await, items, "book {id}");
    }
    // Documents under the threshold are untouched, byte for byte.
    let after = documents(&store, "books").await;
    for d in &untouched_before {
        assert!(after.contains(d), "{d}");
    }
    // Chunks of 20, numbered from 1.
    let chunks = documents(&store, "books_extra").await;
    assert!(chunks
        .iter()
        .all(|c| c.get_i32("count").unwrap() <= 20 && c.get_i64("seq").is_ok()));
    // A second run changes nothing.
    let before = (
        documents(&store, "books").await,
        documents(&store, "books_extra").await,
    );
    let again = migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert_eq!(
        (again.changed, again.batches, again.written),
        (0, 0, 0),
        "{again:?}"
    );
    assert!(again.already_finished);
    assert_eq!(
        before,
        (
            documents(&store, "books").await,
            documents(&store, "books_extra").await
        )
    );
}

async fn outlier_migration_resumes_after_dying(store: AnyStore) {
    // One per run: this test's runs on the two stores may overlap.
    let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let original = seed_books(&store, 30, &[10, 75, 130]).await;
    armed.store(true, Ordering::SeqCst);
    let s = store.clone();
    let died =
        tokio::spawn(async move { migrate_outlier(&s, &Book::SPEC, &dying(3, armed)).await }).await;
    assert!(died.is_err(), "the first run dies");
    let half: Vec<Document> = documents(&store, "books").await;
    assert!(
        half.iter()
            .any(|d| d.get_bool("has_extras").unwrap_or(false)),
        "some batches committed"
    );
    let report = migrate_outlier(
        &store,
        &Book::SPEC,
        &Options {
            batch_items: 35,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    assert!(report.resumed_from.is_some(), "{report:?}");
    assert!(report.verified.unwrap().is_clean());
    for (id, items) in &original {
        assert_eq!(&book_items(&store, *id).await, items, "book {id}");
    }
}

async fn outlier_migration_keeps_live_pushes(store: AnyStore) {
    let original = seed_books(&store, 20, &[80, 10, 300]).await;
    let stop = Arc::new(AtomicBool::new(false));
    let pusher = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut pushed: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) || n < 60 {
                let id = (n * 7) % 20;
                let item = -(n + 1);
                outlier::push::<Book, _, _>(&store, &id, &item)
                    .await
                    .unwrap();
                pushed.entry(id).or_default().push(item);
                n += 1;
                tokio::task::yield_now().await;
            }
            pushed
        })
    };
    // A reader beside them never sees an item twice or misses one: each read is the original
    // array followed by some of the pushes, in order.
    let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reader = {
        let (store, stop, original) = (store.clone(), stop.clone(), original.clone());
        let started = started.clone();
        tokio::spawn(async move {
            let mut reads = 0;
            while !stop.load(Ordering::SeqCst) {
                for (id, items) in &original {
                    let got = book_items(&store, *id).await;
                    assert_eq!(&got[..items.len()], &items[..], "book {id} read {reads}");
                    let rest = &got[items.len()..];
                    assert!(
                        rest.iter().all(|i| *i < 0) && rest.windows(2).all(|w| w[0] > w[1]),
                        "book {id}: after the original, {} items not all pushes in order: {:?}...",
                        rest.len(),
                        &rest[..rest.len().min(8)]
                    );
                    let n = outlier::counts::<Book, _, _>(&store, id)
                        .await
                        .unwrap()
                        .items;
                    assert!(
                        n >= got.len() as u64,
                        "book {id}: count {n} < {} read before",
                        got.len()
                    );
                    reads += 1;
                    started.store(reads, Ordering::SeqCst);
                }
            }
            reads
        })
    };
    // The migration starts once the reader has read: on the in-memory store it may otherwise
    // finish before the reader's task first runs.
    while started.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    let report = migrate_outlier(
        &store,
        &Book::SPEC,
        &Options {
            batch_items: 40,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    let pushed = pusher.await.unwrap();
    let reads = reader.await.unwrap();
    assert!(reads > 0);
    for (id, items) in &original {
        let mut want = items.clone();
        want.extend(pushed.get(id).cloned().unwrap_or_default());
        assert_eq!(
            book_items(&store, *id).await,
            want,
            "book {id} ({report:?})"
        );
    }
    assert!(verify_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap()
        .is_clean());
}

async fn outlier_dry_run_writes_nothing(store: AnyStore) {
    seed_books(&store, 10, &[10, 70]).await;
    let before = documents(&store, "books").await;
    let opts = Options {
        dry_run: true,
        ..Options::default()
    };
    let report = migrate_outlier(&store, &Book::SPEC, &opts).await.unwrap();
    assert_eq!(
        (report.changed, report.moved_items, report.written),
        (5, 100, 5),
        "{report:?}"
    );
    assert_eq!(documents(&store, "books").await, before);
    assert!(documents(&store, "books_extra").await.is_empty());
    assert!(documents(&store, adopt::CHECKPOINTS).await.is_empty());
}

async fn outlier_analysis_reports_the_distribution(store: AnyStore) {
    // 100 books: 95 with 1..=19 items, 5 with 500.
    let lens: Vec<usize> = (0..100)
        .map(|i| if i % 20 == 7 { 500 } else { 1 + i % 19 })
        .collect();
    seed_books(&store, 100, &lens).await;
    let a = analyze_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert_eq!(a.documents, 100);
    assert_eq!(a.over_threshold, 5);
    assert_eq!(a.lengths.max, 500);
    assert_eq!(a.lengths.p50, 10, "{:?}", a.lengths);
    assert_eq!(a.lengths.p90, 18);
    assert_eq!(a.lengths.p99, 500);
    assert!(a.largest.as_ref().unwrap().bytes > 500 * 7);
    assert_eq!(a.lengths.bars.iter().map(|b| b.count).sum::<u64>(), 100);
    // 5% are outliers: p99 is one of them, so the suggestion keeps 99% whole at 500.
    assert_eq!(a.suggestion.value, 500, "{}", a.suggestion.reason);
    // Migrated, the flagged documents' overflow still counts.
    migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    let b = analyze_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert_eq!((b.lengths.max, b.flagged, b.over_threshold), (500, 5, 5));
}

async fn outlier_verify_finds_each_defect(store: AnyStore) {
    seed_books(&store, 6, &[10, 120]).await;
    migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert!(verify_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap()
        .is_clean());
    let f = |id: i32| pattern_core::store::query::Filter::eq("_id", id);
    let set = |k: &'static str, v: Bson| pattern_core::store::query::Update {
        set: vec![(k.into(), v)],
        ..Default::default()
    };
    // Book 0: 60 items in the main array. Book 2: flagged without overflow. Book 1: its
    // overflow's flag removed. Book 3: chunk 2 renumbered 5, chunk 1's count wrong.
    store
        .update_many(
            "books",
            &f(0),
            &set("buyers", Bson::Array((0..60).map(Bson::Int32).collect())),
        )
        .await
        .unwrap();
    store
        .update_many("books", &f(2), &set("has_extras", Bson::Boolean(true)))
        .await
        .unwrap();
    store
        .update_many("books", &f(1), &set("has_extras", Bson::Boolean(false)))
        .await
        .unwrap();
    let f3 = |seq: i64| {
        pattern_core::store::query::Filter::and([
            pattern_core::store::query::Filter::eq("book_id", 3),
            pattern_core::store::query::Filter::eq("seq", seq),
        ])
    };
    store
        .update_many("books_extra", &f3(2), &set("seq", Bson::Int64(5)))
        .await
        .unwrap();
    store
        .update_many("books_extra", &f3(1), &set("count", Bson::Int32(7)))
        .await
        .unwrap();
    // An orphan chunk.
    store
        .insert_one(
            "books_extra",
            doc! {"book_id": 99, "count": 1, "buyers_extra": [1], "seq": 1i64},
        )
        .await
        .unwrap();
    let v = verify_outlier(&store, &Book::SPEC, &quiet()).await.unwrap();
    let kinds: Vec<String> = v.defects.iter().map(|d| format!("{d:?}")).collect();
    let has = |pred: &dyn Fn(&LayoutDefect) -> bool| v.defects.iter().any(pred);
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::OverThreshold {
                id: Bson::Int32(0),
                items: 60,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::FlagWithoutOverflow {
                id: Bson::Int32(2),
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::OverflowWithoutFlag {
                id: Bson::Int32(1),
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::NotDense {
                key: Bson::Int32(3),
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
            LayoutDefect::CountMismatch {
                count: 7,
                items: 20,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert!(
        has(&|d| matches!(
            d,
            LayoutDefect::OrphanOverflow {
                parent: Bson::Int32(99),
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert_eq!(v.defects.len(), 6, "{kinds:#?}");
}

on_both_stores!(
    outlier_migration_moves_each_tail_in_order,
    outlier_migration_resumes_after_dying,
    outlier_migration_keeps_live_pushes,
    outlier_dry_run_writes_nothing,
    outlier_analysis_reports_the_distribution,
    outlier_verify_finds_each_defect,
);
