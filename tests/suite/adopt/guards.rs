//! Guards: the settings a checkpoint pins, the data a first run checks.

use super::*;

/// What a refused run must leave as it was: the named collections' documents, the
/// checkpoints, and the database's collections.
async fn snapshot(store: &AnyStore, colls: &[&str]) -> (Vec<Vec<Document>>, Vec<String>) {
    let mut docs = Vec::new();
    for c in colls.iter().chain([&adopt::CHECKPOINTS]) {
        docs.push(documents(store, c).await);
    }
    (docs, store.collection_names().await.unwrap())
}

/// `r` is a refusal for other settings than the checkpoint's, naming `setting`.
fn refused_for<T: std::fmt::Debug>(r: Result<T, Error>, setting: &str, finished: bool) {
    match r {
        Err(Error::SettingsChanged {
            finished: f,
            stored,
            given,
            ..
        }) => {
            assert_eq!(f, finished, "{stored} {given}");
            assert!(
                stored.contains_key(setting) && given.contains_key(setting),
                "{setting}: {stored} vs {given}"
            );
            assert_ne!(stored.get(setting), given.get(setting));
        }
        other => panic!("{setting}: expected SettingsChanged, got {other:?}"),
    }
}

/// Book's layout with each setting that shapes an outlier migration changed in turn.
fn outlier_variants() -> Vec<(&'static str, OutlierSpec<'static>)> {
    let s = Book::SPEC;
    let ov = |o: SeriesSpec<'static>| OutlierSpec { overflow: o, ..s };
    vec![
        (
            "threshold",
            OutlierSpec {
                threshold: 100,
                ..s
            },
        ),
        (
            "array",
            OutlierSpec {
                items_field: "buyers2",
                ..s
            },
        ),
        (
            "flag",
            OutlierSpec {
                flag_field: "has_more",
                ..s
            },
        ),
        (
            "overflow",
            ov(SeriesSpec {
                collection: "books_more",
                ..s.overflow
            }),
        ),
        (
            "reference",
            ov(SeriesSpec {
                key_field: "sale_id",
                ..s.overflow
            }),
        ),
        (
            "extra",
            ov(SeriesSpec {
                items_field: "more",
                ..s.overflow
            }),
        ),
        (
            "chunk",
            ov(SeriesSpec {
                size: 7,
                ..s.overflow
            }),
        ),
        (
            "count",
            ov(SeriesSpec {
                count_field: "n",
                ..s.overflow
            }),
        ),
        (
            "seq",
            ov(SeriesSpec {
                order: SeriesOrder::Seq("number"),
                ..s.overflow
            }),
        ),
    ]
}

async fn outlier_settings_are_pinned_by_the_checkpoint(store: AnyStore) {
    // One per run: this test's runs on the two stores may overlap.
    let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let original = seed_books(&store, 30, &[10, 75, 130]).await;
    armed.store(true, Ordering::SeqCst);
    let s = store.clone();
    let died =
        tokio::spawn(async move { migrate_outlier(&s, &Book::SPEC, &dying(3, armed)).await }).await;
    assert!(died.is_err(), "the first run dies");
    let colls = ["books", "books_extra", "books_more"];
    let before = snapshot(&store, &colls).await;
    let part_way = before.0[3]
        .iter()
        .find(|d| d.get_str("_id") == Ok("outlier:books"));
    assert_eq!(part_way.unwrap().get_str("state"), Ok("running"));
    for (setting, spec) in outlier_variants() {
        refused_for(
            migrate_outlier(&store, &spec, &quiet()).await,
            setting,
            false,
        );
        let dry = Options {
            dry_run: true,
            ..quiet()
        };
        refused_for(migrate_outlier(&store, &spec, &dry).await, setting, false);
        assert!(
            snapshot(&store, &colls).await == before,
            "{setting}: data changed"
        );
    }
    // With its own settings it resumes and finishes; then every other layout is refused.
    let done = migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert!(done.resumed_from.is_some() && done.verified.unwrap().is_clean());
    let finished = snapshot(&store, &colls).await;
    for (setting, spec) in outlier_variants() {
        let r = migrate_outlier(&store, &spec, &quiet()).await;
        if let Err(e) = &r {
            assert!(
                e.to_string().contains("finished with other settings"),
                "{e}"
            );
            assert!(
                e.to_string()
                    .contains("deleteOne({_id: \"outlier:books\"})"),
                "{e}"
            );
        }
        refused_for(r, setting, true);
        assert!(
            snapshot(&store, &colls).await == finished,
            "{setting}: data changed"
        );
    }
    for (id, items) in &original {
        assert_eq!(&book_items(&store, *id).await, items, "book {id}");
    }
}

/// History's layout and source with each setting that shapes a bucket migration changed.
fn bucket_variants() -> Vec<(&'static str, BucketSpec<'static>, Source<'static>, bool)> {
    let (s, f) = (History::SPEC, FLAT);
    let spec = |b: BucketSpec<'static>| (b, f, false);
    let mut all = vec![
        ("size", spec(BucketSpec { size: 20, ..s })),
        (
            "items",
            spec(BucketSpec {
                items_field: "trades",
                ..s
            }),
        ),
        (
            "count",
            spec(BucketSpec {
                count_field: "n",
                ..s
            }),
        ),
        (
            "page",
            spec(BucketSpec {
                page_field: "number",
                ..s
            }),
        ),
        (
            "target_key",
            spec(BucketSpec {
                key_field: "customer",
                ..s
            }),
        ),
        (
            "bounds",
            spec(BucketSpec {
                keeps: Keeps {
                    bounds: None,
                    ..s.keeps
                },
                ..s
            }),
        ),
        (
            "summary",
            spec(BucketSpec {
                keeps: Keeps {
                    summary: &[],
                    ..s.keeps
                },
                ..s
            }),
        ),
        (
            "key",
            (
                s,
                Source {
                    key_field: "customer",
                    ..f
                },
                false,
            ),
        ),
        (
            "time",
            (
                s,
                Source {
                    time_field: "when",
                    ..f
                },
                false,
            ),
        ),
        ("remove_source", (s, f, true)),
    ];
    all.drain(..).map(|(n, (b, f, r))| (n, b, f, r)).collect()
}

/// Every variant of [`bucket_variants`] refused, `colls` and the checkpoints unchanged.
async fn bucket_variants_refused(store: &AnyStore, colls: &[&str], finished: bool) {
    let before = snapshot(store, colls).await;
    for (setting, spec, from, remove) in bucket_variants() {
        let opts = Options {
            remove_source: remove,
            ..quiet()
        };
        let r = migrate_bucket(store, &spec, &from, &opts).await;
        refused_for(r, setting, finished);
        assert!(
            snapshot(store, colls).await == before,
            "{setting}: data changed"
        );
    }
}

async fn bucket_settings_are_pinned_by_the_checkpoint(store: AnyStore) {
    // One per run: this test's runs on the two stores may overlap.
    let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let expected = seed_trades(&store, 8, 60, 11).await;
    armed.store(true, Ordering::SeqCst);
    let s = store.clone();
    let died =
        tokio::spawn(
            async move { migrate_bucket(&s, &History::SPEC, &FLAT, &dying(60, armed)).await },
        )
        .await;
    assert!(died.is_err(), "the run dies");
    let colls = ["trades", "trade_history"];
    bucket_variants_refused(&store, &colls, false).await;
    let done = migrate_bucket(&store, &History::SPEC, &FLAT, &quiet())
        .await
        .unwrap();
    assert!(done.resumed_from.is_some() && done.verified.unwrap().is_clean());
    bucket_variants_refused(&store, &colls, true).await;
    check_history(&store, &expected, &BTreeMap::new()).await;
}

/// The seed's clothes, 300 of them, prices as longs scaled by 100.
async fn seed_clothes(store: &AnyStore) {
    let docs: Vec<Document> = (0..300)
        .map(|i| doc! {"_id": i, "price": 1000 + i as i64})
        .collect();
    store.insert_many("clothes", docs).await.unwrap();
}

fn conversion(form: pattern_core::money::Form, finish: Finish) -> MoneyConversion<'static> {
    MoneyConversion {
        collection: "clothes",
        from: "price",
        form,
        to: "priceDec",
        finish,
    }
}

async fn money_settings_are_pinned_by_the_checkpoint(store: AnyStore) {
    use pattern_core::money::Form;
    // One per run: this test's runs on the two stores may overlap.
    let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    seed_clothes(&store).await;
    // A run that dies part-way through its finish step (the decimal moved into `price`).
    let die: &'static (dyn Fn(&adopt::Progress<'_>) + Send + Sync) =
        Box::leak(Box::new(move |p: &adopt::Progress<'_>| {
            if p.phase == "finish" && p.done >= 100 && armed.swap(false, Ordering::SeqCst) {
                panic!("killed by the test after {} documents", p.done);
            }
        }));
    let dying = Options {
        batch_items: 50,
        progress: Some(die),
        ..Options::default()
    };
    let into_old = conversion(Form::Scaled(2), Finish::IntoOld);
    armed.store(true, Ordering::SeqCst);
    let s = store.clone();
    let died = tokio::spawn(async move { convert_money(&s, &into_old, &dying).await }).await;
    assert!(died.is_err(), "the run dies");
    let before = snapshot(&store, &["clothes"]).await;
    let moved = |d: &&Document| matches!(d.get("price"), Some(Bson::Decimal128(_)));
    assert!(before.0[0].iter().filter(moved).count() >= 100, "part-way");
    let part_way = [
        ("form", conversion(Form::Scaled(3), Finish::IntoOld)),
        ("form", conversion(Form::Text, Finish::IntoOld)),
        ("finish", conversion(Form::Scaled(2), Finish::DropOld)),
        ("finish", conversion(Form::Scaled(2), Finish::KeepBoth)),
    ];
    for (setting, conv) in part_way {
        refused_for(convert_money(&store, &conv, &quiet()).await, setting, false);
        let same = snapshot(&store, &["clothes"]).await == before;
        assert!(same, "{setting}: data changed");
    }
    let done = convert_money(&store, &into_old, &quiet()).await.unwrap();
    assert!(done.resumed_from.is_some() && done.verified.unwrap().is_clean());
    // Finished: another form is refused; another finish step may follow.
    let finished = snapshot(&store, &["clothes"]).await;
    let other = conversion(Form::Scaled(3), Finish::IntoOld);
    refused_for(convert_money(&store, &other, &quiet()).await, "form", true);
    assert!(snapshot(&store, &["clothes"]).await == finished);
    let keep = conversion(Form::Scaled(2), Finish::KeepBoth);
    let r = convert_money(&store, &keep, &quiet()).await.unwrap();
    assert_eq!((r.converted, r.replaced), (0, 0), "{r:?}");
    let one = &documents(&store, "clothes").await[7];
    let want = doc! {"_id": 7, "price": Bson::Decimal128("10.07".parse().unwrap())};
    assert_eq!(one, &want);
}

/// `r` is a refusal of data that is not there: `missing`, with `found` among what it names.
fn not_found<T: std::fmt::Debug>(r: Result<T, Error>, missing: Missing, found: &str) {
    match r {
        Err(Error::SourceNotFound {
            missing: m,
            found: f,
            ..
        }) => {
            assert_eq!(*m, missing);
            assert!(f.iter().any(|x| x == found), "{found} not in {f:?}");
        }
        other => panic!("expected SourceNotFound {missing:?}, got {other:?}"),
    }
}

fn field(name: &str, holding: &str) -> Missing {
    Missing::Field {
        field: name.into(),
        holding: holding.into(),
    }
}

async fn a_typo_is_refused_before_anything_is_written(store: AnyStore) {
    use pattern_core::money::Form;
    seed_books(&store, 5, &[60]).await;
    seed_trades(&store, 3, 10, 5).await;
    store
        .insert_one("clothes", doc! {"_id": 1, "price": 1999_i64})
        .await
        .unwrap();
    let colls = ["books", "trades", "clothes"];
    let before = snapshot(&store, &colls).await;
    // Outlier: no such collection; no document with the array; an overflow collection whose
    // documents lack the reference.
    let spec = OutlierSpec {
        collection: "bokos",
        ..Book::SPEC
    };
    not_found(
        migrate_outlier(&store, &spec, &quiet()).await,
        Missing::Collection,
        "books",
    );
    let spec = OutlierSpec {
        items_field: "customers_purchased",
        ..Book::SPEC
    };
    let holding = "the array to cap";
    not_found(
        migrate_outlier(&store, &spec, &quiet()).await,
        field("customers_purchased", holding),
        "buyers",
    );
    let dry = Options {
        dry_run: true,
        ..quiet()
    };
    not_found(
        migrate_outlier(&store, &spec, &dry).await,
        field("customers_purchased", holding),
        "title",
    );
    let other = OutlierSpec {
        overflow: SeriesSpec {
            collection: "trades",
            ..Book::SPEC.overflow
        },
        ..Book::SPEC
    };
    let holding = "the reference to the main document";
    not_found(
        migrate_outlier(&store, &other, &quiet()).await,
        field("book_id", holding),
        "customerId",
    );
    // Bucket: no such source; no key; no time.
    let from = Source {
        collection: "trade",
        ..FLAT
    };
    not_found(
        migrate_bucket(&store, &History::SPEC, &from, &quiet()).await,
        Missing::Collection,
        "trades",
    );
    let from = Source {
        key_field: "customer_id",
        ..FLAT
    };
    not_found(
        migrate_bucket(&store, &History::SPEC, &from, &quiet()).await,
        field("customer_id", "the key"),
        "customerId",
    );
    let from = Source {
        time_field: "time",
        ..FLAT
    };
    not_found(
        migrate_bucket(&store, &History::SPEC, &from, &quiet()).await,
        field("time", "the item's time"),
        "date",
    );
    // Money: no such collection; neither field.
    let conv = MoneyConversion {
        collection: "cloths",
        ..conversion(Form::Scaled(2), Finish::KeepBoth)
    };
    not_found(
        convert_money(&store, &conv, &quiet()).await,
        Missing::Collection,
        "clothes",
    );
    let conv = MoneyConversion {
        from: "prix",
        to: "prixDec",
        ..conversion(Form::Scaled(2), Finish::KeepBoth)
    };
    not_found(
        convert_money(&store, &conv, &quiet()).await,
        field("prix` or `prixDec", "an amount"),
        "price",
    );
    // Nothing was created: no checkpoint, no overflow or bucket collection, no index.
    assert!(snapshot(&store, &colls).await == before);
    for c in ["books_extra", "trade_history", adopt::CHECKPOINTS] {
        assert!(
            store.index_names(c).await.unwrap().is_empty(),
            "{c} has indexes"
        );
    }
    // A run that moves nothing (every array within the threshold) creates nothing either.
    let high = OutlierSpec {
        threshold: 100,
        ..Book::SPEC
    };
    let r = migrate_outlier(&store, &high, &quiet()).await.unwrap();
    assert_eq!((r.changed, r.batches), (0, 0), "{r:?}");
    assert!(snapshot(&store, &colls).await == before);
}

on_both_stores!(
    outlier_settings_are_pinned_by_the_checkpoint,
    bucket_settings_are_pinned_by_the_checkpoint,
    money_settings_are_pinned_by_the_checkpoint,
    a_typo_is_refused_before_anything_is_written,
);
