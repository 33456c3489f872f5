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
    // Decimal128 by exact value: 19.99 is 19.990 and not 19.98, nor the double 19.99; past
    // 2^53 an Int64 is not the double that rounds to it.
    let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
    let p = doc! {"p": dec("19.99"), "big": 9_007_199_254_740_993_i64};
    assert!(Filter::Eq("p".into(), dec("19.990")).matches(&p));
    assert!(!Filter::Eq("p".into(), dec("19.98")).matches(&p));
    assert!(!Filter::Eq("p".into(), Bson::Double(19.99)).matches(&p));
    assert!(Filter::Gt("p".into(), dec("19.98")).matches(&p));
    assert!(Filter::Lt("p".into(), Bson::Int32(20)).matches(&p));
    assert!(!Filter::eq("big", 9_007_199_254_740_992.0).matches(&p));
    assert!(Filter::Gt("big".into(), Bson::Double(9_007_199_254_740_992.0)).matches(&p));
}

#[test]
fn ranges_match_array_elements() {
    // As MongoDB: an element in range matches, of the same type bracket only, and an array
    // value compares with a whole array.
    let d = doc! {"a": [1, 7], "s": ["x", 3], "e": []};
    assert!(Filter::Gte("a".into(), Bson::Int32(5)).matches(&d));
    assert!(Filter::Lt("a".into(), Bson::Int32(2)).matches(&d));
    assert!(!Filter::Gt("a".into(), Bson::Int32(7)).matches(&d));
    assert!(!Filter::Lte("a".into(), Bson::Int32(0)).matches(&d));
    assert!(Filter::Lte("s".into(), Bson::Int64(3)).matches(&d));
    assert!(!Filter::Gt("s".into(), Bson::Int64(3)).matches(&d));
    assert!(Filter::Gt("s".into(), Bson::String("w".into())).matches(&d));
    assert!(!Filter::Gte("e".into(), Bson::Int32(0)).matches(&d));
    assert!(Filter::Gt("a".into(), Bson::Array(vec![Bson::Int32(1)])).matches(&d));
}

#[test]
fn eq_and_in_match_array_elements_and_missing_is_null() {
    let d = doc! {"ancestors": ["a", "b"], "n": 1, "nothing": null};
    assert!(Filter::eq("ancestors", "b").matches(&d));
    assert!(Filter::Eq(
        "ancestors".into(),
        Bson::Array(vec!["a".into(), "b".into()])
    )
    .matches(&d));
    assert!(!Filter::eq("ancestors", "c").matches(&d));
    assert!(Filter::Eq("missing".into(), Bson::Null).matches(&d));
    assert!(Filter::Eq("nothing".into(), Bson::Null).matches(&d));
    let any = |vs: Vec<Bson>| Filter::In("ancestors".into(), vs);
    assert!(any(vec!["x".into(), "a".into()]).matches(&d));
    assert!(!any(vec![]).matches(&d));
    assert!(Filter::In("missing".into(), vec![Bson::Null]).matches(&d));
    assert!(Filter::In("n".into(), vec![Bson::Double(1.0)]).matches(&d));
    assert!(!Filter::Or(vec![]).matches(&d));
    assert!(Filter::Or(vec![Filter::eq("n", 2), Filter::eq("n", 1)]).matches(&d));
}

#[test]
fn starts_with_is_a_literal_prefix() {
    let d = doc! {"path": ",a.b,(c),", "tags": ["x", "y*z"], "n": 3};
    let sw = |p: &str, prefix: &str| Filter::StartsWith(p.to_owned().into(), prefix.into());
    assert!(sw("path", ",a.b,").matches(&d));
    assert!(!sw("path", ",a_b,").matches(&d)); // `.` is itself, not any character
    assert!(sw("path", "").matches(&d));
    assert!(sw("tags", "y*").matches(&d));
    assert!(!sw("n", "3").matches(&d));
    assert_eq!(
        sw("path", ",a.b,").to_document(),
        doc! {"path": {"$regex": "^,a\\.b,"}}
    );
}

/// A clause is sent as an element of its own of `$and`, beside the merged conditions, and
/// matches as their conjunction: the push's filter (T21 of `TEST-SERVER.md`).
#[test]
fn a_clause_is_an_element_of_and() {
    let number = Filter::NumberOrMissing("page".into());
    let f = Filter::and([
        Filter::eq("k", 1),
        Filter::Lt("count".into(), Bson::Int32(10)),
        Filter::Clause(vec![
            Filter::Lt("count".into(), Bson::Int32(10)),
            number.clone(),
        ]),
        Filter::Clause(vec![Filter::eq("x", 2)]),
    ]);
    let not_number = number.to_document().get_document("page").unwrap().clone();
    assert_eq!(
        f.to_document(),
        doc! {"k": 1, "count": {"$lt": 10}, "$and": [
            {"count": {"$lt": 10}, "page": not_number},
            {"x": 2},
        ]}
    );
    for (d, want) in [
        (doc! {"k": 1, "count": 3, "page": 2_i64, "x": 2}, true),
        (doc! {"k": 1, "count": 3, "x": 2}, true),
        (doc! {"k": 1, "count": 3, "page": "2", "x": 2}, false),
        (doc! {"k": 1, "count": 3, "page": 2_i64, "x": 3}, false),
        (doc! {"k": 1, "count": 10, "page": 2_i64, "x": 2}, false),
    ] {
        assert_eq!(f.matches(&d), want, "{d}");
    }
}

#[test]
fn a_field_is_found_alike_in_small_and_large_documents() {
    // Up to 12 fields the names are compared one by one; past it, bson's hash table: the same
    // answers, names of one length told apart by their bytes.
    for n in [0, 1, 5, 12, 13, 30] {
        let mut doc = Document::new();
        for i in 0..n {
            doc.insert(format!("f{i:02}"), i as i64);
        }
        for i in 0..n + 2 {
            let name = format!("f{i:02}");
            assert_eq!(
                eval::field(&doc, &name),
                doc.get(&name),
                "{n} fields, {name}"
            );
            assert_eq!(
                eval::get_path(&doc, &name),
                doc.get(&name),
                "{n} fields, {name}"
            );
        }
        for missing in ["", "f", "f0", "f000", "g00"] {
            assert_eq!(eval::field(&doc, missing), None, "{n} fields, {missing:?}");
        }
        let nested = doc! {"a": Bson::Document(doc.clone())};
        if n > 0 {
            assert_eq!(eval::get_path(&nested, "a.f00"), Some(&Bson::Int64(0)));
        }
    }
}
