//! An update pipeline's expressions (`Rewrite::Expr`: a computed parent's values from the
//! child it gains) and the `TypeOrMissing` guard: the same values on both stores, as MongoDB
//! computes them (number types, overflow, null and missing fields, comparisons in BSON order).

use super::*;
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

on_both_stores!(
    untargeted:
    expressions_compute_as_mongodb,
    type_or_missing_guards_by_type,
);
