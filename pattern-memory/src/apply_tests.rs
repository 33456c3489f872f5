//! The update engine against MongoDB's semantics: in place is applying to a copy, and undoes;
//! each operator and rewrite as the server computes it.

use bson::{doc, Bson, Document};
use pattern_store::query::*;

use super::UpdateEngine;

/// The reference semantics: applies to a copy, kept when every operator applied.
fn apply_to_copy(u: &Update, doc: &mut Document, inserting: bool) -> Result<(), String> {
    let mut next = doc.clone();
    for (k, v) in &u.set {
        next.insert(k.clone(), v.clone());
    }
    if inserting {
        for (k, v) in &u.set_on_insert {
            next.insert(k.clone(), v.clone());
        }
    }
    for (k, n) in &u.inc {
        let new = match next.get(k) {
            None => Bson::Int32(*n),
            Some(Bson::Int32(x)) => match x.checked_add(*n) {
                Some(s) => Bson::Int32(s),
                None => Bson::Int64(*x as i64 + *n as i64),
            },
            Some(Bson::Int64(x)) => Bson::Int64(x.wrapping_add(*n as i64)),
            Some(Bson::Double(x)) => Bson::Double(x + *n as f64),
            Some(other) => {
                return Err(format!(
                    "cannot apply $inc to `{k}` of type {:?}",
                    other.element_type()
                ))
            }
        };
        next.insert(k.clone(), new);
    }
    for (k, items) in &u.push {
        match next.get_mut(k) {
            None => {
                next.insert(k.clone(), Bson::Array(items.clone()));
            }
            Some(Bson::Array(a)) => a.extend(items.iter().cloned()),
            Some(other) => {
                return Err(format!(
                    "cannot $push to `{k}` of type {:?}",
                    other.element_type()
                ))
            }
        }
    }
    for (k, v) in &u.pull {
        match next.get_mut(k) {
            None => {}
            Some(Bson::Array(a)) => a.retain(|e| !pattern_store::codec::order::values_equal(e, v)),
            Some(other) => {
                return Err(format!(
                    "cannot $pull from `{k}` of type {:?}: not an array",
                    other.element_type()
                ))
            }
        }
    }
    *doc = next;
    Ok(())
}

/// Fields and values in order (`Document`'s `==` ignores the order).
fn fields(d: &Document) -> Vec<(&String, &Bson)> {
    d.iter().collect()
}

#[test]
fn apply_in_place_is_applying_to_a_copy_and_undoes() {
    let pairs = |v: &[(&str, Bson)]| -> Vec<(Path, Bson)> {
        v.iter()
            .map(|(k, b)| (k.to_string().into(), b.clone()))
            .collect()
    };
    let arr = |v: &[i32]| Bson::Array(v.iter().map(|x| Bson::Int32(*x)).collect());
    let docs = [
        doc! {},
        doc! {"a": 1, "b": [1], "c": "x"},
        doc! {"a": i32::MAX, "b": "s", "c": [], "d": 1.5},
        doc! {"c": {"x": 1}, "a": 2_i64, "_id": 3},
    ];
    let sets = [
        vec![],
        pairs(&[("b", Bson::Int32(7))]),
        pairs(&[("c", arr(&[9])), ("e", "new".into())]),
    ];
    let on_insert = [
        vec![],
        pairs(&[("d", "v".into())]),
        pairs(&[("a", arr(&[])), ("b", Bson::Double(0.5))]),
    ];
    let incs: [Vec<(Path, i32)>; 5] = [
        vec![],
        vec![("a".into(), 1)],
        vec![("b".into(), 1)],
        vec![("a".into(), 1), ("a".into(), i32::MAX)],
        vec![("d".into(), -1), ("f".into(), 2)],
    ];
    let pushes: [Vec<(Path, Vec<Bson>)>; 6] = [
        vec![],
        vec![("b".into(), vec![Bson::Int32(1)])],
        vec![("c".into(), vec![Bson::Int32(1), "two".into()])],
        vec![
            ("c".into(), vec![Bson::Int32(1)]),
            ("c".into(), vec![arr(&[2])]),
        ],
        vec![("a".into(), vec![Bson::Int32(1)])],
        vec![("g".into(), vec![Bson::Int32(1)])],
    ];
    let pulls: [Vec<(Path, Bson)>; 4] = [
        vec![],
        vec![("b".into(), Bson::Int64(1))],
        vec![("c".into(), Bson::Int32(1)), ("g".into(), "x".into())],
        vec![("a".into(), Bson::Int32(1))],
    ];
    let mut applied = 0;
    for doc in &docs {
        for set in &sets {
            for set_on_insert in &on_insert {
                for inc in &incs {
                    for (push, pull) in pushes
                        .iter()
                        .flat_map(|p| pulls.iter().map(move |q| (p, q)))
                    {
                        let u = Update {
                            set: set.clone(),
                            set_on_insert: set_on_insert.clone(),
                            inc: inc.clone(),
                            push: push.clone(),
                            pull: pull.clone(),
                            ..Update::default()
                        };
                        for inserting in [false, true] {
                            let (mut a, mut b) = (doc.clone(), doc.clone());
                            let r = u.apply(&mut a, inserting);
                            assert_eq!(r, apply_to_copy(&u, &mut b, inserting), "{u:?}");
                            assert_eq!(fields(&a), fields(&b), "{u:?} on {doc:?}");
                            if r.is_err() {
                                continue;
                            }
                            applied += 1;
                            // Taking the pushed items: the same document; undone, the
                            // document as it was and the update whole again.
                            let (mut c, mut taking) = (doc.clone(), u.clone());
                            let undo = taking.undo_log(&c, inserting);
                            taking.apply_taking(&mut c, inserting).unwrap();
                            assert_eq!(fields(&c), fields(&a), "{u:?} on {doc:?}");
                            let size = |d: &Document| bson::to_vec(d).unwrap().len() as isize;
                            assert_eq!(
                                undo.size_change(&c, &taking),
                                Some(size(&c) - size(doc)),
                                "{u:?} on {doc:?}"
                            );
                            undo.restore(&mut c, &mut taking);
                            assert_eq!(fields(&c), fields(doc), "{u:?}");
                            assert_eq!(taking, u, "given back on {doc:?}");
                        }
                    }
                }
            }
        }
    }
    assert!(applied > 2000, "{applied}");
}

#[test]
fn inc_promotes_like_mongodb() {
    let mut d = doc! {"c": i32::MAX};
    let u = Update {
        inc: vec![("c".into(), 1)],
        ..Default::default()
    };
    u.apply(&mut d, false).unwrap();
    assert_eq!(d.get("c"), Some(&Bson::Int64(i32::MAX as i64 + 1)));
    let mut bad = doc! {"c": "x"};
    assert!(u.apply(&mut bad, false).is_err());
    assert_eq!(bad, doc! {"c": "x"});
}

/// `$pull: {field: {$in: [value]}}`: every element equal to the value goes (numbers across
/// types, documents field by field in order), a missing field stays missing, anything else
/// refuses the update and is left as it was.
#[test]
fn pull_removes_equal_elements_like_mongodb() {
    let pull = |k: &str, v: Bson| Update {
        pull: vec![(k.to_owned().into(), v)],
        ..Update::default()
    };
    let mut d = doc! {"a": [1, {"x": 1}, 2, {"x": 1}, "1", 1.0, 1_i64, [1]], "s": "x"};
    pull("a", doc! {"x": 1}.into())
        .apply(&mut d, false)
        .unwrap();
    assert_eq!(d, doc! {"a": [1, 2, "1", 1.0, 1_i64, [1]], "s": "x"});
    pull("a", Bson::Int32(1)).apply(&mut d, false).unwrap();
    // The array `[1]` is not equal to 1: `$in` compares elements whole.
    assert_eq!(d, doc! {"a": [2, "1", [1]], "s": "x"});
    // A document is equal only with its fields in the same order.
    let mut e = doc! {"a": [{"x": 1, "y": 2}]};
    pull("a", doc! {"y": 2, "x": 1}.into())
        .apply(&mut e, false)
        .unwrap();
    assert_eq!(e, doc! {"a": [{"x": 1, "y": 2}]});
    pull("a", doc! {"x": 1, "y": 2}.into())
        .apply(&mut e, false)
        .unwrap();
    assert_eq!(e, doc! {"a": []});
    let mut m = doc! {"b": 1};
    pull("a", Bson::Int32(1)).apply(&mut m, false).unwrap();
    assert_eq!(m, doc! {"b": 1});
    let refused = pull("s", "x".into()).apply(&mut d, false);
    assert!(refused.unwrap_err().contains("not an array"));
    let null = doc! {"a": null};
    assert!(pull("a", Bson::Int32(1))
        .apply(&mut null.clone(), false)
        .is_err());
    assert_eq!(
        pull("a", Bson::Int32(1)).to_document(),
        doc! {"$pull": {"a": {"$in": [1]}}}
    );
}

fn rewrite(r: Rewrite) -> Update {
    Update {
        rewrite: vec![r],
        ..Update::default()
    }
}

/// `{$concatArrays: [prefix, {$slice: ["$f", drop, {$max: [1, {$size: "$f"}]}]}]}` as MongoDB
/// computes it.
#[test]
fn array_prefix_is_concat_arrays_of_a_slice() {
    let prefix = |drop, prefix: Vec<Bson>| {
        rewrite(Rewrite::ArrayPrefix {
            field: "ancestors".into(),
            drop,
            prefix,
        })
    };
    let mut d = doc! {"_id": "e", "ancestors": ["a", "b", "c", "d"], "x": 1};
    prefix(2, vec!["r".into()]).apply(&mut d, false).unwrap();
    assert_eq!(d, doc! {"_id": "e", "ancestors": ["r", "c", "d"], "x": 1});
    prefix(0, vec!["s".into(), "t".into()])
        .apply(&mut d, false)
        .unwrap();
    assert_eq!(d.get_array("ancestors").unwrap().len(), 5);
    prefix(5 - 1, vec![]).apply(&mut d, false).unwrap();
    assert_eq!(d, doc! {"_id": "e", "ancestors": ["d"], "x": 1});
    // An array of `drop` elements or fewer: the prefix alone (`$slice` past the end is empty).
    for short in [doc! {"ancestors": ["a"]}, doc! {"ancestors": []}] {
        let mut copy = short.clone();
        prefix(1, vec!["r".into()]).apply(&mut copy, false).unwrap();
        assert_eq!(copy, doc! {"ancestors": ["r"]});
    }
    // Not an array: refused, the document as it was.
    for bad in [
        doc! {"ancestors": "a"},
        doc! {"y": 1},
        doc! {"ancestors": null},
    ] {
        let mut copy = bad.clone();
        let e = prefix(1, vec!["r".into()])
            .apply(&mut copy, false)
            .unwrap_err();
        assert!(e.contains("cannot rewrite `ancestors`"), "{e}");
        assert_eq!(copy, bad);
    }
    assert_eq!(
        prefix(2, vec!["r".into()]).to_pipeline(),
        Some(vec![doc! {"$set": {"ancestors": {"$concatArrays": [
            {"$literal": ["r"]},
            {"$slice": ["$ancestors", 2_i64, {"$max": [1, {"$size": "$ancestors"}]}]},
        ]}}}])
    );
}

/// `{$concat: [prefix, {$substrCP: ["$f", drop, {$strLenCP: "$f"}]}]}`: `drop` counts code
/// points, so multibyte characters are dropped whole.
#[test]
fn string_prefix_counts_code_points_like_substr_cp() {
    let prefix = |drop, prefix: &str| {
        rewrite(Rewrite::StringPrefix {
            field: "path".into(),
            drop,
            prefix: prefix.into(),
        })
    };
    let cases = [
        (",a,b,", 3, ",x,", ",x,b,"),
        (",日本,東京,", 4, ",中国,", ",中国,東京,"),
        ("😀,é,", 2, "", "é,"),
        ("ab", 5, ",r,", ",r,"), // past the end: the prefix alone
        ("", 0, "p", "p"),
    ];
    for (path, drop, new, expected) in cases {
        let mut d = doc! {"path": path};
        prefix(drop, new).apply(&mut d, false).unwrap();
        assert_eq!(d, doc! {"path": expected}, "{path} {drop} {new}");
    }
    for bad in [doc! {"path": 1}, doc! {"other": "x"}, doc! {"path": null}] {
        let mut copy = bad.clone();
        assert!(prefix(1, "x").apply(&mut copy, false).is_err());
        assert_eq!(copy, bad);
    }
}

/// `$switch` over the pieces, `$add` of the Int64 `by`: an Int32 or Int64 in a piece becomes
/// an Int64 (a Double past its range), a Double stays a Double, anything else stays as it is.
#[test]
fn shift_moves_values_in_their_piece_like_switch_and_add() {
    let pieces = vec![
        Shift {
            from: 1,
            to: 4,
            by: 2,
        },
        Shift {
            from: 3,
            to: 8,
            by: -4,
        },
        Shift {
            from: i64::MAX - 1,
            to: i64::MAX,
            by: 5,
        },
    ];
    let shift = rewrite(Rewrite::Shift {
        field: "left".into(),
        pieces,
    });
    let cases = [
        (Bson::Int32(3), Bson::Int64(5)), // the first piece holding it
        (Bson::Int32(6), Bson::Int64(2)),
        (Bson::Int32(9), Bson::Int32(9)),
        (Bson::Int32(0), Bson::Int32(0)),
        (Bson::Int64(4), Bson::Int64(6)),
        (Bson::Double(3.5), Bson::Double(5.5)),
        (Bson::Double(8.5), Bson::Double(8.5)),
        (Bson::Int64(i64::MAX), Bson::Double(i64::MAX as f64 + 5.0)),
        (Bson::String("3".into()), Bson::String("3".into())),
        (Bson::Null, Bson::Null),
    ];
    for (before, after) in cases {
        let mut d = doc! {"_id": 1, "left": before.clone(), "right": 10};
        shift.apply(&mut d, false).unwrap();
        assert_eq!(d.get("left"), Some(&after), "{before:?}");
        assert_eq!(d.keys().collect::<Vec<_>>(), ["_id", "left", "right"]);
    }
    let mut missing = doc! {"_id": 1};
    shift.apply(&mut missing, false).unwrap();
    assert_eq!(missing, doc! {"_id": 1});
    let mut decimal = doc! {"left": Bson::Decimal128(bson::Decimal128::from_bytes([0; 16]))};
    assert!(shift.apply(&mut decimal, false).is_err());
}

/// A pipeline's `$set` computes every expression from the document as it was: a rewrite of a
/// field `set` also writes is computed from the old value and wins, and one whose value is
/// missing leaves the field out.
#[test]
fn rewrites_read_the_document_as_it_was() {
    let u = Update {
        set: vec![
            ("left".into(), Bson::Int32(100)),
            ("v".into(), Bson::Int32(2)),
        ],
        rewrite: vec![Rewrite::Shift {
            field: "left".into(),
            pieces: vec![Shift {
                from: 0,
                to: 10,
                by: 1,
            }],
        }],
        ..Update::default()
    };
    let mut d = doc! {"left": 5, "v": 1};
    u.apply(&mut d, false).unwrap();
    assert_eq!(d, doc! {"left": 6_i64, "v": 2});
    let mut missing = doc! {"v": 1};
    u.apply(&mut missing, false).unwrap();
    assert_eq!(missing, doc! {"v": 2});
    // Rewrites travel with `set` alone.
    let mut mixed = u.clone();
    mixed.inc = vec![("v".into(), 1)];
    assert!(mixed.check().is_err());
    let before = d.clone();
    assert!(mixed.apply(&mut d, false).is_err());
    assert_eq!(d, before);
}

/// Rewrites and pulls in place: the same as on a copy, their size change exact, and undone
/// field for field.
#[test]
fn rewrites_and_pulls_undo_and_measure() {
    let docs = [
        doc! {"_id": 1, "anc": ["a", "b", "c"], "path": ",a,b,c,", "left": 4, "kids": ["x", "y", "x"]},
        doc! {"_id": 2, "anc": ["a"], "path": "日本", "left": 2.5, "kids": []},
        doc! {"_id": 3, "anc": "no", "path": 7, "kids": "no"},
    ];
    let updates = [
        rewrite(Rewrite::ArrayPrefix {
            field: "anc".into(),
            drop: 1,
            prefix: vec!["long prefix".into(), "z".into()],
        }),
        rewrite(Rewrite::StringPrefix {
            field: "path".into(),
            drop: 1,
            prefix: ",much,longer,".into(),
        }),
        Update {
            set: vec![("extra".into(), Bson::Int32(1))],
            rewrite: vec![Rewrite::Shift {
                field: "left".into(),
                pieces: vec![Shift {
                    from: 0,
                    to: 10,
                    by: 3,
                }],
            }],
            ..Update::default()
        },
        Update {
            pull: vec![("kids".into(), "x".into())],
            push: vec![("kids".into(), vec!["x".into(), "w".into()])],
            ..Update::default()
        },
    ];
    let mut applied = 0;
    for doc in &docs {
        for u in &updates {
            let mut a = doc.clone();
            let r = u.apply(&mut a, false);
            if r.is_err() {
                assert_eq!(fields(&a), fields(doc));
                continue;
            }
            applied += 1;
            let (mut c, mut taking) = (doc.clone(), u.clone());
            let undo = taking.undo_log(&c, false);
            taking.apply_taking(&mut c, false).unwrap();
            assert_eq!(fields(&c), fields(&a));
            let size = |d: &Document| bson::to_vec(d).unwrap().len() as isize;
            assert_eq!(undo.size_change(&c, &taking), Some(size(&c) - size(doc)));
            undo.restore(&mut c, &mut taking);
            assert_eq!(fields(&c), fields(doc));
            assert_eq!(&taking, u);
        }
    }
    assert!(applied >= 7, "{applied}");
    // `$push` then `$pull` of one field: pushed, then every equal element removed.
    let mut kids = docs[0].clone();
    updates[3].apply(&mut kids, false).unwrap();
    assert_eq!(
        kids.get_array("kids").unwrap(),
        &vec![Bson::from("y"), "w".into()]
    );
}

#[test]
fn truth_is_mongodb_s() {
    let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
    for falsy in [
        Bson::Boolean(false),
        Bson::Null,
        Bson::Int32(0),
        Bson::Int64(0),
        Bson::Double(0.0),
        Bson::Double(-0.0),
        dec("0"),
        dec("-0"),
        dec("0.000"),
    ] {
        assert!(!super::truthy(&falsy), "{falsy:?}");
    }
    for truthy in [
        Bson::Boolean(true),
        Bson::Int32(-1),
        Bson::Double(0.5),
        dec("0.001"),
        Bson::String(String::new()),
        Bson::Array(vec![]),
    ] {
        assert!(super::truthy(&truthy), "{truthy:?}");
    }
}
