//! Money on both stores: `Decimal` fields stored exactly as Decimal128 and read back, and the
//! article's conversions of the seed's `clothes` (scaled longs, display strings) run, killed
//! and resumed, run dry, run beside a writer, and verified, with the values `f64` would round
//! and the values that must be refused.

use std::sync::atomic::{AtomicBool, Ordering};

use bson::{doc, Bson, Decimal128, Document};
use pattern_core::adopt::{
    self, convert_money, verify_money, Finish, MoneyConversion, MoneyDefect, Options,
};
use pattern_core::money::{self, Decimal, Form, Scaled};
use pattern_core::store::query::{Filter, Update};
use pattern_core::{store::Store, AnyStore};
use pattern_tests::{documents, on_both_stores, read_back};
use serde::{Deserialize, Serialize};

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse::<Decimal128>().unwrap())
}

/// The seed's `clothes`, with `price` as given (a `NumberLong` or a string per garment).
fn clothes(prices: [Bson; 5]) -> Vec<Document> {
    let rows = [
        (1, "T-Shirt", "M"),
        (2, "Jeans", "36"),
        (3, "Shorts", "32"),
        (4, "Cool T-Shirt", "L"),
        (5, "Designer Jeans", "30"),
    ];
    rows.iter()
        .zip(prices)
        .map(|((id, description, size), price)| {
            doc! {"_id": id, "description": description, "size": size, "price": price}
        })
        .collect()
}

fn scaled_clothes() -> Vec<Document> {
    clothes([1999, 3999, 2999, 2495, 8000].map(|n: i64| Bson::Int64(n)))
}

fn string_clothes() -> Vec<Document> {
    clothes(["19.99", "39.99", "29.99", "24.95", "80.00"].map(|s| Bson::String(s.into())))
}

/// The seed's decimals: 19.99, 39.99, 29.99, 24.95, 80.00.
fn seed_decimals() -> [Bson; 5] {
    ["19.99", "39.99", "29.99", "24.95", "80.00"].map(dec)
}

/// `docs` with `field` set to each of `values`, in order.
fn with_field(mut docs: Vec<Document>, field: &str, values: [Bson; 5]) -> Vec<Document> {
    for (d, v) in docs.iter_mut().zip(values) {
        d.insert(field, v);
    }
    docs
}

async fn seed(store: &AnyStore, docs: &[Document]) {
    store
        .insert_many("clothes", docs.to_vec())
        .await
        .expect("seed the clothes");
}

const SCALED: MoneyConversion<'static> = MoneyConversion {
    collection: "clothes",
    from: "price",
    form: Form::Scaled(2),
    to: "priceDec",
    finish: Finish::KeepBoth,
};

/// The scaled conversion that moves the decimal into `price`.
const INTO_OLD: MoneyConversion<'static> = MoneyConversion {
    finish: Finish::IntoOld,
    ..SCALED
};

const TEXT: MoneyConversion<'static> = MoneyConversion {
    form: Form::Text,
    ..SCALED
};

fn quiet() -> Options<'static> {
    Options::default()
}

// ---------------------------------------------------------------------------------------------
// The seed's conversions

async fn seed_scaled_longs_gain_their_decimals(store: AnyStore) {
    seed(&store, &scaled_clothes()).await;
    let report = convert_money(&store, &SCALED, &quiet()).await.unwrap();
    assert_eq!(
        (report.converted, report.replaced, report.refused.len()),
        (5, 0, 0)
    );
    let v = report.verified.expect("verified");
    assert!(v.is_clean(), "{v:?}");
    assert_eq!((v.documents, v.converted), (5, 5));
    // The seed's `db.clothes.find()` after the aggregation, byte for byte: 8000 is 80.00.
    let want = with_field(scaled_clothes(), "priceDec", seed_decimals());
    assert_eq!(documents(&store, "clothes").await, want);
    // Again: nothing left to do, nothing written.
    let again = convert_money(&store, &SCALED, &quiet()).await.unwrap();
    assert!(again.already_finished);
    assert_eq!((again.converted, again.batches), (0, 0));
    assert_eq!(documents(&store, "clothes").await, want);
}

async fn seed_strings_gain_their_decimals(store: AnyStore) {
    seed(&store, &string_clothes()).await;
    let report = convert_money(&store, &TEXT, &quiet()).await.unwrap();
    assert_eq!(report.converted, 5);
    assert!(report.verified.unwrap().is_clean());
    let want = with_field(string_clothes(), "priceDec", seed_decimals());
    assert_eq!(documents(&store, "clothes").await, want);
}

/// Converts the seed's `source` with `conv` (which finishes), expecting `want` stored, then
/// runs again: nothing left to write.
async fn finishes(
    store: &AnyStore,
    source: &[Document],
    conv: MoneyConversion<'_>,
    want: &[Document],
) {
    seed(store, source).await;
    let report = convert_money(store, &conv, &quiet()).await.unwrap();
    assert_eq!((report.converted, report.replaced), (5, 5));
    assert_eq!(report.finish_skipped, None);
    let v = report.verified.unwrap();
    assert!(v.is_clean() && v.converted == 5, "{v:?}");
    assert_eq!(documents(store, "clothes").await, want);
    let again = convert_money(store, &conv, &quiet()).await.unwrap();
    assert_eq!((again.converted, again.replaced), (0, 0));
    assert!(again.verified.unwrap().is_clean());
    assert_eq!(documents(store, "clothes").await, want);
}

async fn into_old_gives_the_articles_overwrite(store: AnyStore) {
    let conv = INTO_OLD;
    // The `$mul: {price: NumberDecimal("0.01")}` result of the seed.
    let want = with_field(scaled_clothes(), "price", seed_decimals());
    finishes(&store, &scaled_clothes(), conv, &want).await;
}

async fn drop_old_keeps_only_the_decimal(store: AnyStore) {
    let conv = MoneyConversion {
        finish: Finish::DropOld,
        ..TEXT
    };
    let mut want = with_field(string_clothes(), "priceDec", seed_decimals());
    want.iter_mut().for_each(|d| {
        d.remove("price");
    });
    finishes(&store, &string_clothes(), conv, &want).await;
}

// ---------------------------------------------------------------------------------------------
// Exactness and refusals

async fn scaled_edge_values_convert_exactly_or_are_refused(store: AnyStore) {
    let cases: Vec<(Bson, Option<&str>)> = vec![
        (Bson::Int64(-1999), Some("-19.99")),
        (Bson::Int64(0), Some("0.00")),
        (Bson::Int32(5), Some("0.05")),
        (Bson::Int64(i64::MAX), Some("92233720368547758.07")),
        (Bson::Int64(i64::MIN), Some("-92233720368547758.08")),
        // 2^53 + 1: as a double it would be 2^53, and /100 would round again.
        (
            Bson::Int64(9_007_199_254_740_993),
            Some("90071992547409.93"),
        ),
        // The legacy shell's numbers are doubles: an integral one is exact.
        (Bson::Double(1999.0), Some("19.99")),
        (Bson::Double(19.99), None),
        (Bson::Double(f64::INFINITY), None),
        (Bson::String("19.99".into()), None),
        (Bson::Null, None),
        (dec("NaN"), None),
    ];
    let docs: Vec<Document> = cases
        .iter()
        .enumerate()
        .map(|(i, (v, _))| doc! {"_id": i as i32, "price": v.clone()})
        .chain([doc! {"_id": 100, "description": "no price"}])
        .collect();
    seed(&store, &docs).await;
    let conv = MoneyConversion {
        finish: Finish::DropOld,
        ..SCALED
    };
    let report = convert_money(&store, &conv, &quiet()).await.unwrap();
    let refused_ids: Vec<Bson> = report.refused.iter().map(defect_id).collect();
    let want_refused: Vec<Bson> = cases
        .iter()
        .enumerate()
        .filter(|(_, (_, w))| w.is_none())
        .map(|(i, _)| Bson::Int32(i as i32))
        .collect();
    assert_eq!(refused_ids, want_refused, "{:#?}", report.refused);
    assert!(
        report
            .finish_skipped
            .as_deref()
            .unwrap()
            .contains("5 defect"),
        "{report:?}"
    );
    assert_eq!(
        report.replaced, 0,
        "nothing is dropped while a value is refused"
    );
    let v = report.verified.unwrap();
    assert_eq!((v.documents, v.converted, v.without_amount), (13, 7, 1));
    assert_eq!(
        v.defects.iter().map(defect_id).collect::<Vec<_>>(),
        want_refused
    );
    let reason = |i: usize| match &report.refused[i] {
        MoneyDefect::Unconvertible { reason, .. } => reason.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        reason(0),
        "a BSON double (19.99) is not an amount scaled by 10^2"
    );
    assert_eq!(reason(2), "a BSON string is not an amount scaled by 10^2");
    assert_eq!(reason(3), "a BSON null is not an amount scaled by 10^2");
    assert!(
        matches!(&report.refused[4], MoneyDefect::NotDecimal { field, .. } if field == "price")
    );
    // What converted is exact; what was refused is as it was.
    let stored = documents(&store, "clothes").await;
    for (i, (v, want)) in cases.iter().enumerate() {
        let d = &stored[i];
        assert_eq!(d.get("price"), Some(v), "{d}");
        assert_eq!(d.get("priceDec"), want.map(dec).as_ref(), "{d}");
    }
    // Fixed by hand, the next run finishes: the old fields go.
    for i in want_refused.iter() {
        let mut fix = Update {
            set: vec![("price".into(), Bson::Int64(100))],
            ..Update::default()
        };
        store
            .update_one(
                "clothes",
                &Filter::Eq("_id".into(), i.clone()),
                &mut fix,
                false,
            )
            .await
            .unwrap();
    }
    let report = convert_money(&store, &conv, &quiet()).await.unwrap();
    assert_eq!((report.converted, report.replaced), (5, 12));
    assert!(report.verified.unwrap().is_clean());
    let stored = documents(&store, "clothes").await;
    assert!(stored.iter().all(|d| !d.contains_key("price")));
    assert_eq!(stored[7].get("priceDec"), Some(&dec("1.00")));
}

async fn strings_convert_exactly_or_are_refused(store: AnyStore) {
    let cases: Vec<(&str, Option<&str>)> = vec![
        ("-0.50", Some("-0.50")),
        ("0", Some("0")),
        ("+3", Some("3")),
        ("19.999", Some("19.999")),
        ("90071992547409.93", Some("90071992547409.93")),
        (
            "0.1000000000000000000000000001",
            Some("0.1000000000000000000000000001"),
        ),
        ("1e3", None),
        (" 24.95", None),
        ("24.95 ", None),
        ("abc", None),
        ("1,000.00", None),
        ("", None),
        ("79228162514264337593543950336", None),
        ("0.00000000000000000000000000001", None),
    ];
    let docs: Vec<Document> = cases
        .iter()
        .enumerate()
        .map(|(i, (s, _))| doc! {"_id": i as i32, "price": *s})
        .collect();
    seed(&store, &docs).await;
    let report = convert_money(&store, &TEXT, &quiet()).await.unwrap();
    assert_eq!(report.converted, 6);
    assert_eq!(report.refused.len(), 8);
    let stored = documents(&store, "clothes").await;
    for (i, (_, want)) in cases.iter().enumerate() {
        assert_eq!(
            stored[i].get("priceDec"),
            want.map(dec).as_ref(),
            "{}",
            stored[i]
        );
    }
    let reasons: Vec<String> = report
        .refused
        .iter()
        .map(|d| match d {
            MoneyDefect::Unconvertible { reason, .. } => reason.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        reasons[..3],
        [
            "\"1e3\" is not a display amount (an exponent is not a display form)",
            "\" 24.95\" is not a display amount (spaces)",
            "\"24.95 \" is not a display amount (spaces)",
        ]
    );
    assert!(
        reasons[6].contains("does not fit a Decimal"),
        "{}",
        reasons[6]
    );
    assert!(reasons[7].contains("more decimal places"), "{}", reasons[7]);
}

/// The id of a defect.
fn defect_id(d: &MoneyDefect) -> Bson {
    match d {
        MoneyDefect::Unconvertible { id, .. }
        | MoneyDefect::NotConverted { id, .. }
        | MoneyDefect::Mismatch { id, .. }
        | MoneyDefect::NotDecimal { id, .. } => id.clone(),
        other => panic!("{other:?}"),
    }
}

async fn verify_finds_every_defect(store: AnyStore) {
    let docs = vec![
        doc! {"_id": 1, "price": 1999_i64, "priceDec": dec("19.99")},
        // Equal in value: 19.990 is the same amount.
        doc! {"_id": 2, "price": 1999_i64, "priceDec": dec("19.990")},
        doc! {"_id": 3, "price": 1999_i64, "priceDec": dec("19.98")},
        doc! {"_id": 4, "price": 1999_i64, "priceDec": 19.99},
        doc! {"_id": 5, "price": 1999_i64},
        doc! {"_id": 6, "price": "19.99"},
        doc! {"_id": 7, "priceDec": dec("5")},
        doc! {"_id": 8, "priceDec": "5"},
        doc! {"_id": 9, "price": dec("Infinity")},
        doc! {"_id": 10, "price": dec("1E-40")},
        doc! {"_id": 11},
    ];
    seed(&store, &docs).await;
    let v = verify_money(&store, &SCALED, &quiet()).await.unwrap();
    assert_eq!((v.documents, v.converted, v.without_amount), (11, 3, 1));
    let want = vec![
        MoneyDefect::Mismatch {
            id: Bson::Int32(3),
            old: Bson::Int64(1999),
            new: dec("19.98"),
            expected: dec("19.99"),
        },
        MoneyDefect::NotDecimal {
            id: Bson::Int32(4),
            field: "priceDec".into(),
            value: Bson::Double(19.99),
        },
        MoneyDefect::NotConverted {
            id: Bson::Int32(5),
            expected: dec("19.99"),
        },
        MoneyDefect::Unconvertible {
            id: Bson::Int32(6),
            value: Bson::String("19.99".into()),
            reason: "a BSON string is not an amount scaled by 10^2".into(),
        },
        MoneyDefect::NotDecimal {
            id: Bson::Int32(8),
            field: "priceDec".into(),
            value: Bson::String("5".into()),
        },
        MoneyDefect::NotDecimal {
            id: Bson::Int32(9),
            field: "price".into(),
            value: dec("Infinity"),
        },
        MoneyDefect::NotDecimal {
            id: Bson::Int32(10),
            field: "price".into(),
            value: dec("1E-40"),
        },
    ];
    assert_eq!(v.defects, want);
    // The conversion leaves the mismatch and the wrong types alone, and converts #5.
    let report = convert_money(&store, &SCALED, &quiet()).await.unwrap();
    assert_eq!(report.converted, 1);
    let stored = documents(&store, "clothes").await;
    assert_eq!(stored[2].get("priceDec"), Some(&dec("19.98")));
    assert_eq!(stored[4].get("priceDec"), Some(&dec("19.99")));
    // A bad specification is refused before anything is read.
    for bad in [
        MoneyConversion {
            to: "price",
            ..SCALED
        },
        MoneyConversion {
            from: "a.b",
            ..SCALED
        },
        MoneyConversion {
            to: "_id",
            ..SCALED
        },
        MoneyConversion {
            form: Form::Decimal128,
            ..SCALED
        },
        MoneyConversion {
            form: Form::Scaled(29),
            ..SCALED
        },
    ] {
        assert!(
            convert_money(&store, &bad, &quiet()).await.is_err(),
            "{bad:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Resumable, dry, live

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

// ---------------------------------------------------------------------------------------------
// Typed fields through the stores

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Garment {
    #[serde(rename = "_id")]
    id: i32,
    #[serde(with = "money::decimal128")]
    price: Decimal,
    #[serde(default, with = "money::decimal128::option")]
    sale: Option<Decimal>,
    #[serde(with = "money::text")]
    label: Decimal,
    mills: Scaled<3>,
}

async fn decimal_fields_round_trip_through_the_store(store: AnyStore) {
    let amounts = [
        "19.99",
        "80.00",
        "-0.01",
        "0",
        "79228162514264337593543950335",
        "0.0000000000000000000000000001",
        "90071992547409.93",
    ];
    let garments: Vec<Garment> = amounts
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let d: Decimal = a.parse().unwrap();
            Garment {
                id: i as i32,
                price: d,
                sale: (i % 2 == 0).then_some(d),
                label: d,
                mills: Scaled("9.99".parse().unwrap()),
            }
        })
        .collect();
    for g in &garments {
        store
            .insert_one("garments", bson::to_document(g).unwrap())
            .await
            .unwrap();
    }
    // Stored as the article's types: Decimal128, a string, a scaled long.
    let stored = documents(&store, "garments").await;
    for (d, a) in stored.iter().zip(amounts) {
        assert_eq!(d.get("price"), Some(&dec(a)), "{d}");
        assert_eq!(d.get_str("label").unwrap(), a);
        assert_eq!(d.get("mills"), Some(&Bson::Int64(9990)));
    }
    // Read back: from documents and from raw bytes, each value with its places.
    let back: Vec<Garment> = stored
        .into_iter()
        .map(|d| bson::from_document(d).unwrap())
        .collect();
    assert_eq!(back, garments);
    let raw = store
        .find_raw("garments", &Filter::and([]), &read_back())
        .await
        .unwrap();
    let back: Vec<Garment> = raw
        .iter()
        .map(|r| bson::from_slice(r.as_bytes()).unwrap())
        .collect();
    assert_eq!(back, garments);
    assert_eq!(back[1].price.to_string(), "80.00");
    // Queried by exact value, as `find({price: NumberDecimal("19.99")})`.
    let found = store
        .find(
            "garments",
            &Filter::eq("price", dec("19.990")),
            &read_back(),
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    // Server arithmetic is decimal: 0.1 + 0.2 is 0.3 exactly ($inc on Decimal128).
    store
        .insert_one("garments", doc! {"_id": 99, "total": dec("0.1")})
        .await
        .unwrap();
    let mut add = Update {
        sum: vec![("total".into(), dec("0.2"))],
        ..Update::default()
    };
    store
        .update_one("garments", &Filter::eq("_id", 99), &mut add, false)
        .await
        .unwrap();
    let total = store
        .find("garments", &Filter::eq("_id", 99), &read_back())
        .await
        .unwrap();
    assert_eq!(total[0].get("total"), Some(&dec("0.3")));
    // A stored value a Decimal cannot hold is a decode error, never a rounded amount.
    store
        .insert_one(
            "garments",
            doc! {"_id": 100, "price": dec("1E-40"), "label": "1", "mills": 1_i64},
        )
        .await
        .unwrap();
    let bad = store
        .find("garments", &Filter::eq("_id", 100), &read_back())
        .await
        .unwrap();
    let err = bson::from_document::<Garment>(bad[0].clone()).unwrap_err();
    assert!(err.to_string().contains("more decimal places"), "{err}");
}

on_both_stores!(
    seed_scaled_longs_gain_their_decimals,
    seed_strings_gain_their_decimals,
    into_old_gives_the_articles_overwrite,
    drop_old_keeps_only_the_decimal,
    scaled_edge_values_convert_exactly_or_are_refused,
    strings_convert_exactly_or_are_refused,
    verify_finds_every_defect,
    conversion_resumes_after_dying,
    dry_run_writes_nothing,
    writers_of_the_old_form_are_caught_up,
    decimal_fields_round_trip_through_the_store,
);
