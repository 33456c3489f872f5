//! Resumable, dry, live.

use super::*;

/// `n` garments `_id` 0..n priced `i * 101` cents (and 9007199254740993 for the last).
fn many(n: i64) -> Vec<Document> {
    (0..n)
        .map(|i| {
            let cents = if i == n - 1 {
                9_007_199_254_740_993
            } else {
                i * 101
            };
            doc! {"_id": i, "price": cents}
        })
        .collect()
}

fn expected(doc: &Document) -> Bson {
    let cents = doc.get_i64("price").unwrap();
    Bson::Decimal128(money::to_decimal128(&money::from_scaled(cents, 2).unwrap()))
}

/// Options whose progress callback panics once the convert phase passed `after` documents.
fn dying(after: u64) -> Options<'static> {
    let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(true)));
    let die: &'static (dyn Fn(&adopt::Progress<'_>) + Send + Sync) =
        Box::leak(Box::new(move |p: &adopt::Progress<'_>| {
            if p.phase == "convert" && p.done >= after && armed.swap(false, Ordering::SeqCst) {
                panic!("killed by the test after {} documents", p.done);
            }
        }));
    Options {
        batch_items: 7,
        progress: Some(die),
        ..Options::default()
    }
}

async fn conversion_resumes_after_dying(store: AnyStore) {
    let source = many(60);
    seed(&store, &source).await;
    let s = store.clone();
    let died = tokio::spawn(async move { convert_money(&s, &SCALED, &dying(20)).await }).await;
    assert!(died.is_err(), "the first run dies");
    let half = documents(&store, "clothes").await;
    let done = half.iter().filter(|d| d.contains_key("priceDec")).count();
    assert_eq!(done, 21, "three batches of 7 committed");
    let report = convert_money(
        &store,
        &MoneyConversion {
            finish: Finish::DropOld,
            ..SCALED
        },
        &Options {
            batch_items: 7,
            ..quiet()
        },
    )
    .await
    .unwrap();
    assert_eq!(report.resumed_from, Some(Bson::Int64(20)));
    // Every document converted once: 21 by the first run, 39 by the second.
    assert_eq!((report.converted, report.replaced), (39, 60));
    assert!(report.verified.unwrap().is_clean());
    let after = documents(&store, "clothes").await;
    for (src, now) in source.iter().zip(&after) {
        assert_eq!(
            now,
            &doc! {"_id": src.get("_id").unwrap(), "priceDec": expected(src)}
        );
    }
    assert_eq!(after[59].get("priceDec"), Some(&dec("90071992547409.93")));
}

async fn dry_run_writes_nothing(store: AnyStore) {
    let mut source = many(30);
    source[3].insert("price", "oops");
    seed(&store, &source).await;
    let report = convert_money(
        &store,
        &INTO_OLD,
        &Options {
            dry_run: true,
            ..quiet()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        (report.scanned, report.converted, report.replaced),
        (30, 29, 29)
    );
    assert_eq!(report.refused.len(), 1);
    assert!(report.finish_skipped.is_some());
    assert_eq!(report.verified, None);
    assert_eq!(documents(&store, "clothes").await, source);
    assert!(documents(&store, adopt::CHECKPOINTS).await.is_empty());
}

async fn writers_of_the_old_form_are_caught_up(store: AnyStore) {
    seed(&store, &many(20)).await;
    // A writer inserts old-form garments while the first round converts.
    let writer = store.clone();
    let once: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(true)));
    let write: &'static (dyn Fn(&adopt::Progress<'_>) + Send + Sync) =
        Box::leak(Box::new(move |p: &adopt::Progress<'_>| {
            if p.phase == "convert" && p.done > 0 && once.swap(false, Ordering::SeqCst) {
                let w = writer.clone();
                tokio::task::block_in_place(|| {
                    tokio::runtime::Handle::current().block_on(async move {
                        for id in [100_i64, 101] {
                            w.insert_one("clothes", doc! {"_id": id, "price": 4999_i64})
                                .await
                                .unwrap();
                        }
                    })
                });
            }
        }));
    let report = convert_money(
        &store,
        &INTO_OLD,
        &Options {
            batch_items: 5,
            progress: Some(write),
            ..quiet()
        },
    )
    .await
    .unwrap();
    assert_eq!((report.converted, report.replaced), (22, 22));
    assert!(report.verified.unwrap().is_clean());
    let stored = documents(&store, "clothes").await;
    assert_eq!(stored.len(), 22);
    assert_eq!(stored[21], doc! {"_id": 101_i64, "price": dec("49.99")});
}

on_both_stores!(
    conversion_resumes_after_dying,
    dry_run_writes_nothing,
    writers_of_the_old_form_are_caught_up,
);
