//! Exactness and refusals.

use super::*;

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

on_both_stores!(
    scaled_edge_values_convert_exactly_or_are_refused,
    strings_convert_exactly_or_are_refused,
    verify_finds_every_defect,
);
