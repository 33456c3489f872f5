//! Unit tests of the query language and its evaluation.

use super::*;
use bson::doc;

#[test]
fn filter_document_keeps_values_values() {
    // A scalar alone on its path is bare, and means itself: the text of an operator is a
    // string, not an operator.
    let f = Filter::and([
        Filter::eq("k", "{\"$gt\": \"\"}"),
        Filter::eq("op", "$gt"),
        Filter::Lt("count".into(), Bson::Int32(10)),
    ]);
    assert_eq!(
        f.to_document(),
        doc! {"k": "{\"$gt\": \"\"}", "op": "$gt", "count": {"$lt": 10}}
    );
    // Documents, arrays and regexes would be read as operators, element matches or
    // patterns: behind `$eq`.
    let d = doc! {"$gt": ""};
    let re = Bson::RegularExpression(bson::Regex {
        pattern: "^x$".into(),
        options: String::new(),
    });
    for v in [Bson::Document(d), Bson::Array(vec![1.into()]), re] {
        assert!(!is_plain_scalar(&v));
        assert_eq!(
            Filter::Eq("k".into(), v.clone()).to_document(),
            doc! {"k": {"$eq": v}}
        );
    }
    // An equality sharing its path with another condition merges into its operators.
    let both = Filter::and([Filter::eq("k", 3), Filter::Exists("k".into(), true)]);
    assert_eq!(both.to_document(), doc! {"k": {"$eq": 3, "$exists": true}});
}

#[test]
fn one_item_is_pushed_as_itself() {
    let push = |items: Vec<Bson>| {
        Update {
            push: vec![("a".into(), items)],
            ..Update::default()
        }
        .to_document()
    };
    assert_eq!(push(vec![Bson::Int32(1)]), doc! {"$push": {"a": 1}});
    assert_eq!(
        push(vec![doc! {"x": 1}.into()]),
        doc! {"$push": {"a": {"x": 1}}}
    );
    // An array item is one element either way.
    assert_eq!(
        push(vec![Bson::Array(vec![1.into()])]),
        doc! {"$push": {"a": [1]}}
    );
    // `$` fields, and several items, go behind `$each`.
    let modifiers = doc! {"$each": [1, 2], "$slice": 1};
    assert_eq!(
        push(vec![modifiers.clone().into()]),
        doc! {"$push": {"a": {"$each": [modifiers]}}}
    );
    assert_eq!(
        push(vec![1.into(), 2.into()]),
        doc! {"$push": {"a": {"$each": [1, 2]}}}
    );
}

#[test]
fn positional_exists() {
    let d = doc! {"a": [1, 2, 3]};
    assert!(Filter::Exists("a.2".into(), true).matches(&d));
    assert!(Filter::Exists("a.3".into(), false).matches(&d));
}

#[test]
fn numbers_compare_across_types() {
    let d = doc! {"c": 3_i64};
    assert!(Filter::Lt("c".into(), Bson::Int32(10)).matches(&d));
    assert!(Filter::eq("c", 3.0).matches(&d));
    assert!(!Filter::Lt("c".into(), Bson::String("z".into())).matches(&d));
    assert!(Filter::Ne("missing".into(), Bson::Boolean(true)).matches(&d));
}

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
    let mut applied = 0;
    for doc in &docs {
        for set in &sets {
            for set_on_insert in &on_insert {
                for inc in &incs {
                    for push in &pushes {
                        let u = Update {
                            set: set.clone(),
                            set_on_insert: set_on_insert.clone(),
                            inc: inc.clone(),
                            push: push.clone(),
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
    assert!(applied > 500, "{applied}");
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
