//! An update pipeline's expressions (`Rewrite::Expr`: a computed parent's values from the
//! child it gains), the `TypeOrMissing` guard, rewrites under a condition
//! (`Update::rewrite_if`, with the outcome's `modified`), and updates under a required
//! condition (`Update::require`: an ingest's fill): the same values on both stores, as
//! MongoDB computes them (number types, overflow, null and missing fields, comparisons in BSON
//! order).

use super::*;
use pattern_core::store;
use pattern_core::store::query::Expr;

fn f(name: &str) -> Box<Expr> {
    Box::new(Expr::Field(name.into()))
}

fn lit(v: impl Into<Bson>) -> Box<Expr> {
    Box::new(Expr::Literal(v.into()))
}

/// Each expression written into its own field of document `d`, then the document read back.
async fn rewritten(store: &AnyStore, d: Document, exprs: Vec<(&str, Expr)>) -> Document {
    let id = d.get("_id").cloned().unwrap();
    store.insert_one(C, d).await.unwrap();
    let mut update = Update {
        rewrite: (exprs.into_iter())
            .map(|(field, expr)| Rewrite::Expr {
                field: field.into(),
                expr,
            })
            .collect(),
        ..Update::default()
    };
    let filter = Filter::Eq("_id".into(), id);
    assert!(
        store
            .update_one(C, &filter, &mut update, false)
            .await
            .unwrap()
            .matched
    );
    let mut found = store
        .find(C, &filter, &FindOptions::default())
        .await
        .unwrap();
    found.pop().unwrap()
}

async fn expressions_compute_as_mongodb(store: AnyStore) {
    let d = doc! {
        "_id": 1, "i": 7, "l": 5_i64, "x": 0.5, "big": i32::MAX, "huge": i64::MAX, "n": null,
    };
    let got = rewritten(
        &store,
        d,
        vec![
            ("int_int", Expr::Add(vec![*f("i"), *lit(1)])),
            ("int_long", Expr::Add(vec![*f("i"), *lit(1_i64)])),
            ("int_double", Expr::Add(vec![*f("i"), *f("x")])),
            ("past_int", Expr::Add(vec![*f("big"), *lit(1)])),
            ("past_long", Expr::Add(vec![*f("huge"), *lit(1_i64)])),
            ("with_null", Expr::Add(vec![*f("i"), *f("n")])),
            ("with_missing", Expr::Add(vec![*f("i"), *f("nothing")])),
            ("if_null", Expr::IfNull(f("n"), lit(3_i64))),
            ("if_missing", Expr::IfNull(f("nothing"), lit(4_i64))),
            ("if_present", Expr::IfNull(f("l"), lit(4_i64))),
            ("quotient", Expr::Divide(f("l"), lit(2_i64))),
            ("quotient_null", Expr::Divide(f("n"), lit(2))),
            (
                "null_vs_number",
                Expr::Cond {
                    test: Box::new(Expr::Gte(f("n"), lit(0))),
                    then: lit("ge"),
                    otherwise: lit("lt"),
                },
            ),
            (
                "long_vs_double",
                Expr::Cond {
                    test: Box::new(Expr::Lte(f("l"), lit(5.0))),
                    then: lit("le"),
                    otherwise: lit("gt"),
                },
            ),
            (
                "zero_is_false",
                Expr::Cond {
                    test: lit(0),
                    then: lit("true"),
                    otherwise: lit("false"),
                },
            ),
            // Computed from the document as it was: `i` is 7 here, whatever is written to it.
            ("i", Expr::Add(vec![*f("i"), *lit(100)])),
            ("i_seen", Expr::Add(vec![*f("i"), *lit(0)])),
        ],
    )
    .await;
    let want = doc! {
        "int_int": 8, "int_long": 8_i64, "int_double": 7.5, "past_int": i64::from(i32::MAX) + 1,
        "past_long": i64::MAX as f64 + 1.0, "with_null": null, "with_missing": null,
        "if_null": 3_i64, "if_missing": 4_i64, "if_present": 5_i64, "quotient": 2.5,
        "quotient_null": null, "null_vs_number": "lt", "long_vs_double": "le",
        "zero_is_false": "false", "i": 107, "i_seen": 7,
    };
    for (k, v) in &want {
        assert_eq!(got.get(k), Some(v), "{k}: {got}");
    }
    // Division by zero refuses the update, and writes nothing.
    let mut update = Update {
        rewrite: vec![Rewrite::Expr {
            field: "q".into(),
            expr: Expr::Divide(f("l"), lit(0)),
        }],
        ..Update::default()
    };
    let one = Filter::eq("_id", 1);
    assert!(store.update_one(C, &one, &mut update, false).await.is_err());
    let after = store.find(C, &one, &FindOptions::default()).await.unwrap();
    assert_eq!(after[0], got);
}

async fn type_or_missing_guards_by_type(store: AnyStore) {
    use pattern_core::spec::BsonType as T;
    insert_all(
        &store,
        vec![
            doc! {"_id": "int", "v": 1},
            doc! {"_id": "long", "v": 1_i64},
            doc! {"_id": "double", "v": 1.5},
            doc! {"_id": "null", "v": null},
            doc! {"_id": "missing"},
            doc! {"_id": "string", "v": "1"},
            doc! {"_id": "ints", "v": [1, 2]},
            doc! {"_id": "decimal", "v": Bson::Decimal128("1".parse().unwrap())},
        ],
    )
    .await;
    let cases: [(Vec<T>, &[&str]); 4] = [
        (vec![T::Int, T::Long], &["int", "long", "missing"]),
        (
            vec![T::Int, T::Long, T::Double, T::Null],
            &["double", "int", "long", "missing", "null"],
        ),
        (
            vec![T::Number],
            &["decimal", "double", "int", "long", "missing"],
        ),
        // An array never matches (MongoDB's `$type` would look at its elements).
        (vec![T::Array, T::Int], &["int", "missing"]),
    ];
    for (types, want) in cases {
        let filter = Filter::TypeOrMissing("v".into(), types.clone());
        let mut ids: Vec<String> = find_ids(&store, &filter)
            .await
            .into_iter()
            .map(|b| b.as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        assert_eq!(ids, want, "{types:?}");
    }
}

/// `Expr::OfType` and `Expr::And` as values, and `rewrite_if`: a condition that does not hold
/// leaves the document as it was (matched, not modified) without computing a rewrite that
/// would refuse the update; one that holds writes, modified; values equal to those stored
/// leave it not modified.
async fn rewrites_under_a_condition(store: AnyStore) {
    use pattern_core::spec::BsonType as T;
    let of = |v: &str, kinds: Vec<T>| Expr::OfType {
        value: f(v),
        kinds,
        or_missing: true,
    };
    let d = doc! {"_id": 1, "i": 7, "l": 5_i64, "x": 0.5, "s": "7", "n": null, "a": [1]};
    let got = rewritten(
        &store,
        d,
        vec![
            ("i_int", of("i", vec![T::Int])),
            ("i_long", of("i", vec![T::Long])),
            ("x_number", of("x", vec![T::Number])),
            ("s_number", of("s", vec![T::Number])),
            ("n_null", of("n", vec![T::Null])),
            ("missing", of("nothing", vec![T::Int])),
            (
                "missing_refused",
                Expr::OfType {
                    value: f("nothing"),
                    kinds: vec![T::Int],
                    or_missing: false,
                },
            ),
            ("a_int", of("a", vec![T::Int])),
            ("a_array", of("a", vec![T::Array])),
            ("and_none", Expr::And(vec![])),
            ("and_true", Expr::And(vec![*lit(true), *lit(1)])),
            ("and_zero", Expr::And(vec![*lit(true), *lit(0)])),
            ("and_null", Expr::And(vec![*f("n")])),
            ("and_missing", Expr::And(vec![*f("nothing")])),
        ],
    )
    .await;
    let want = doc! {
        "i_int": true, "i_long": false, "x_number": true, "s_number": false, "n_null": true,
        "missing": true, "missing_refused": false, "a_int": false, "a_array": true,
        "and_none": true, "and_true": true, "and_zero": false, "and_null": false,
        "and_missing": false,
    };
    for (k, v) in &want {
        assert_eq!(got.get(k), Some(v), "{k}: {got}");
    }
    let one = Filter::eq("_id", 1);
    let read = || async {
        let found = store.find(C, &one, &FindOptions::default()).await.unwrap();
        found.into_iter().next().unwrap()
    };
    let conditional = |test: Expr, expr: Expr| Update {
        set: vec![("mark".into(), Bson::from("set"))],
        rewrite: vec![Rewrite::Expr {
            field: "i".into(),
            expr,
        }],
        rewrite_if: Some(test),
        ..Update::default()
    };
    // Does not hold: nothing written, not even the literal `set`, and the `$add` of a string
    // that would refuse the update is never computed.
    let before = read().await;
    let mut update = conditional(of("s", vec![T::Number]), Expr::Add(vec![*f("s"), *lit(1)]));
    let done = store.update_one(C, &one, &mut update, false).await.unwrap();
    assert!(done.matched && !done.modified && !done.upserted, "{done:?}");
    assert_eq!(read().await, before);
    // Holds: written, modified.
    let mut update = conditional(
        Expr::And(vec![of("i", vec![T::Int]), *lit(true)]),
        Expr::Add(vec![*f("i"), *lit(1)]),
    );
    let done = store.update_one(C, &one, &mut update, false).await.unwrap();
    assert!(done.matched && done.modified, "{done:?}");
    let after = read().await;
    assert_eq!(after.get("i"), Some(&Bson::Int32(8)), "{after}");
    assert_eq!(after.get("mark"), Some(&Bson::from("set")), "{after}");
    // Holds, and writes what is stored: matched, not modified.
    let mut update = conditional(of("i", vec![T::Int]), *f("i"));
    let done = store.update_one(C, &one, &mut update, false).await.unwrap();
    assert!(done.matched && !done.modified, "{done:?}");
    assert_eq!(read().await, after);
    // A plain update's `modified` too: a `$max` that does not pass the value, then one that does.
    let mut update = Update {
        max: vec![("i".into(), Bson::Int32(1))],
        ..Update::default()
    };
    let done = store.update_one(C, &one, &mut update, false).await.unwrap();
    assert!(done.matched && !done.modified, "{done:?}");
    update.max = vec![("i".into(), Bson::Int32(100))];
    let done = store.update_one(C, &one, &mut update, false).await.unwrap();
    assert!(done.matched && done.modified, "{done:?}");
    // A condition without a rewrite is refused before anything is sent.
    let mut update = Update {
        rewrite_if: Some(*lit(true)),
        ..Update::default()
    };
    let refused = store.update_one(C, &one, &mut update, false).await;
    assert!(
        matches!(refused, Err(store::Error::InvalidInput { .. })),
        "{refused:?}"
    );
}

/// `Expr::Eq`, `Abs`, `Min`, `Max` and `Concat` as values, as MongoDB computes them; `$abs`
/// of a string refuses the update and writes nothing.
async fn expressions_of_required_updates(store: AnyStore) {
    let d = doc! {
        "_id": 1, "i": 7, "l": -5_i64, "x": -0.5, "s": "a", "n": null, "min": i32::MIN,
        "a": [1], "b": [2, 3],
    };
    let got = rewritten(
        &store,
        d,
        vec![
            ("eq_types", Expr::Eq(f("i"), lit(7_i64))),
            ("eq_string", Expr::Eq(f("s"), lit(7))),
            ("abs_long", Expr::Abs(f("l"))),
            ("abs_double", Expr::Abs(f("x"))),
            ("abs_int_min", Expr::Abs(f("min"))),
            ("abs_null", Expr::Abs(f("n"))),
            ("abs_missing", Expr::Abs(f("nothing"))),
            ("min_missing", Expr::Min(vec![*f("nothing"), *lit(3)])),
            ("min_null", Expr::Min(vec![*f("n"), *lit(3)])),
            ("min_types", Expr::Min(vec![*f("s"), *f("i")])),
            ("max_types", Expr::Max(vec![*f("s"), *f("i")])),
            ("max_none", Expr::Max(vec![*f("n"), *f("nothing")])),
            (
                "concat",
                Expr::Concat(vec![*f("a"), *f("b"), *lit(vec![4])]),
            ),
            ("concat_missing", Expr::Concat(vec![*f("a"), *f("nothing")])),
        ],
    )
    .await;
    let want = doc! {
        "eq_types": true, "eq_string": false, "abs_long": 5_i64, "abs_double": 0.5,
        "abs_int_min": 2_147_483_648_i64, "abs_null": null, "abs_missing": null,
        "min_missing": 3, "min_null": 3, "min_types": 7, "max_types": "a", "max_none": null,
        "concat": [1, 2, 3, 4], "concat_missing": null,
    };
    for (k, v) in &want {
        assert_eq!(got.get(k), Some(v), "{k}: {got}");
    }
    let one = Filter::eq("_id", 1);
    let before = store.find(C, &one, &FindOptions::default()).await.unwrap();
    let mut update = Update {
        rewrite: vec![Rewrite::Expr {
            field: "t".into(),
            expr: Expr::Abs(f("s")),
        }],
        ..Update::default()
    };
    let refused = store.update_one(C, &one, &mut update, false).await;
    assert!(refused.is_err(), "{refused:?}");
    let after = store.find(C, &one, &FindOptions::default()).await.unwrap();
    assert_eq!(after, before);
}

/// An update under a required condition (`Update::require`, an ingest's fill): where the
/// condition holds, the operators' values as the pipeline computes them (a null field as
/// missing, an Int64 sum past its range a Double); where it does not, or the update would
/// upsert a document on which it does not, `store::Error::Unmet` and nothing written; in a batch,
/// the batch stops there; beside `$setOnInsert`, refused before anything is sent.
async fn required_updates(store: AnyStore) {
    let date = |ms: i64| Bson::DateTime(bson::DateTime::from_millis(ms));
    let count_is = |c: i64| Some(Expr::Eq(f("count"), lit(c)));
    let fill = |c: i64| Update {
        set: vec![("mark".into(), Bson::from("x"))],
        inc: vec![("count".into(), 2)],
        sum: vec![("qty".into(), Bson::Int64(4))],
        min: vec![("lo".into(), date(1))],
        max: vec![("hi".into(), date(9))],
        push: vec![("items".into(), vec![Bson::Int32(4), Bson::Int32(5)])],
        require: count_is(c),
        ..Update::default()
    };
    let read = |id: i32| {
        let store = &store;
        async move {
            let found = (store.find(C, &Filter::eq("_id", id), &FindOptions::default())).await;
            found.unwrap().into_iter().next()
        }
    };
    let docs = vec![
        doc! {"_id": 1, "count": 3, "qty": 10_i64, "lo": date(5), "hi": date(5), "items": [1, 2, 3]},
        doc! {"_id": 2, "count": 0, "qty": null, "lo": null, "hi": null, "items": null},
        doc! {"_id": 3, "count": 0},
        doc! {"_id": 4, "count": 0, "qty": i64::MAX},
        doc! {"_id": 6, "count": 0, "qty": 0_i64, "lo": null, "hi": null},
    ];
    for d in docs {
        store.insert_one(C, d).await.unwrap();
    }
    // Holds: the operators' values.
    let done = (store.update_one(C, &Filter::eq("_id", 1), &mut fill(3), false)).await;
    assert!(
        done.as_ref().is_ok_and(|d| d.matched && d.modified),
        "{done:?}"
    );
    let want = doc! {
        "_id": 1, "count": 5, "qty": 14_i64, "lo": date(1), "hi": date(9),
        "items": [1, 2, 3, 4, 5], "mark": "x",
    };
    assert_same_documents(&[read(1).await.unwrap()], std::slice::from_ref(&want));
    // Does not hold (the count moved on): refused, nothing written.
    let refused = (store.update_one(C, &Filter::eq("_id", 1), &mut fill(3), false)).await;
    assert!(
        matches!(refused, Err(store::Error::Unmet { .. })),
        "{refused:?}"
    );
    assert_same_documents(&[read(1).await.unwrap()], &[want]);
    // Null fields taken as missing (6: where the operators would not refuse); missing fields
    // made.
    for id in [2, 3, 6] {
        let done = (store.update_one(C, &Filter::eq("_id", id), &mut fill(0), false)).await;
        assert!(done.is_ok(), "{done:?}");
        let want = doc! {
            "_id": id, "count": 2, "qty": 4_i64, "lo": date(1), "hi": date(9),
            "items": [4, 5], "mark": "x",
        };
        assert_same_documents(&[read(id).await.unwrap()], &[want]);
    }
    // An Int64 sum past its range: a Double, as `$add` gives; refused under a bound on it.
    let done = (store.update_one(C, &Filter::eq("_id", 4), &mut fill(0), false)).await;
    assert!(done.is_ok(), "{done:?}");
    let qty = read(4).await.unwrap().get("qty").cloned();
    assert_eq!(qty, Some(Bson::Double(i64::MAX as f64 + 4.0)));
    let mut bounded = fill(2);
    bounded.require = Some(Expr::And(vec![
        count_is(2).unwrap(),
        Expr::Lte(Box::new(Expr::Abs(f("qty"))), lit(i64::MAX - 4)),
    ]));
    let refused = (store.update_one(C, &Filter::eq("_id", 4), &mut bounded, false)).await;
    assert!(
        matches!(refused, Err(store::Error::Unmet { .. })),
        "{refused:?}"
    );
    // An upsert: the condition is tested on the document it would insert.
    let refused = (store.update_one(C, &Filter::eq("_id", 5), &mut fill(0), true)).await;
    assert!(
        matches!(refused, Err(store::Error::Unmet { .. })),
        "{refused:?}"
    );
    assert_eq!(read(5).await, None);
    let mut new = fill(0);
    new.require = Some(Expr::OfType {
        value: f("count"),
        kinds: vec![],
        or_missing: true,
    });
    let done = (store.update_one(C, &Filter::eq("_id", 5), &mut new, true)).await;
    assert!(done.as_ref().is_ok_and(|d| d.upserted), "{done:?}");
    let want = doc! {
        "_id": 5, "count": 2, "qty": 4_i64, "lo": date(1), "hi": date(9), "items": [4, 5],
        "mark": "x",
    };
    assert_same_documents(&[read(5).await.unwrap()], &[want]);
    // In an ordered batch: applied up to the refused write, which stops it.
    let op = |id: i32, c: i64| pattern_core::store::WriteOp::Update {
        filter: Filter::eq("_id", id),
        update: Box::new(fill(c)),
        upsert: true,
    };
    let batch = vec![op(2, 2), op(3, 0), op(3, 4)];
    let done = store.write_batch(C, batch).await;
    assert_eq!(done.applied, 1, "{:?}", done.error);
    assert!(
        matches!(done.error, Some(store::Error::Unmet { .. })),
        "{:?}",
        done.error
    );
    assert_eq!(read(2).await.unwrap().get("count"), Some(&Bson::Int32(4)));
    assert_eq!(read(3).await.unwrap().get("count"), Some(&Bson::Int32(2)));
    // Beside an operator a pipeline does not carry: refused before anything is sent.
    let mut update = fill(4);
    update.set_on_insert = vec![("k".into(), Bson::Int32(1))];
    let refused = (store.update_one(C, &Filter::eq("_id", 2), &mut update, false)).await;
    assert!(
        matches!(refused, Err(store::Error::InvalidInput(_))),
        "{refused:?}"
    );
}

on_both_stores!(
    untargeted:
    expressions_compute_as_mongodb,
    type_or_missing_guards_by_type,
    rewrites_under_a_condition,
    expressions_of_required_updates,
    required_updates,
);
