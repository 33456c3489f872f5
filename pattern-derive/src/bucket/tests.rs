//! Parser tests: `parse_quote!` input in, the model or every error message out.

use syn::{parse_quote, DeriveInput};

use super::expand::{expand, fallback};
use super::parse::{parse, stubs};
use crate::ctxt::messages;

fn errors(input: DeriveInput) -> Vec<String> {
    messages(parse(&input))
}

#[test]
fn reads_the_model() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "trades", size = 10, time = "date")]
        struct TradeHistory {
            #[bucket(key)]
            #[serde(rename = "customerId")]
            customer_id: i64,
            #[bucket(items)]
            history: Vec<Trade>,
        }
    };
    let b = parse(&input).unwrap();
    assert_eq!((b.collection.as_str(), b.size), ("trades", 10));
    assert_eq!(
        (
            b.key_field.as_str(),
            b.items_field.as_str(),
            b.count_field.as_str()
        ),
        ("customerId", "history", "count")
    );
    assert!(b.time.is_some());
    let code = expand(&b).to_string();
    for part in [
        "impl :: pattern_core :: Bucket for TradeHistory",
        "type Key = i64",
        "type Item = Trade",
        "key_field : \"customerId\"",
        "page_field : \"page\"",
        "size : 10u32",
        "__epoch_seconds (& (* __pattern_item) . date)",
        "pub async fn push_many",
        "pub fn items",
    ] {
        assert!(code.contains(part), "{part} not in {code}");
    }
}

#[test]
fn rename_all_and_count() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "r", size = 5, count = "n", page = "p")]
        #[serde(rename_all = "SCREAMING-KEBAB-CASE")]
        struct Readings {
            #[bucket(key)]
            sensor_name: String,
            #[bucket(items)]
            r#all_values: ::std::vec::Vec<f64>,
        }
    };
    let b = parse(&input).unwrap();
    assert_eq!(
        (b.key_field.as_str(), b.items_field.as_str()),
        ("SENSOR-NAME", "ALL-VALUES")
    );
    assert_eq!((b.count_field.as_str(), b.page_field.as_str()), ("n", "p"));
    assert!(b.time.is_none());
}

#[test]
fn every_mistake_arrives_at_once() {
    let input: DeriveInput = parse_quote! {
        #[bucket(size = 0, colour = "red", size = 3, count = "a.b", time = 5)]
        #[bucket(collection = "$x")]
        struct TradeHistory {
            #[bucket(key)]
            customer_id: i64,
            name: String,
            #[bucket(items, items)]
            history: Trade,
        }
    };
    assert_eq!(
        errors(input),
        [
            "size must be at least 1",
            "unknown key `colour` in #[bucket(...)]; expected one of: `collection`, `size`, `time`, `count`, `page`",
            "duplicate key `size`",
            "invalid MongoDB field name \"a.b\": it must not contain `.`",
            "time must be a string, like `time = \"...\"`",
            "invalid MongoDB collection name \"$x\": it must not contain `$`",
            "duplicate key `items`",
            "field `name` is not stored by the bucket pattern; mark it #[bucket(key)] or #[bucket(items)], or remove it",
            "the #[bucket(items)] field must be a `Vec<T>`",
        ]
    );
}

#[test]
fn missing_keys_and_fields() {
    let input: DeriveInput = parse_quote! {
        struct TradeHistory {
            customer_id: i64,
        }
    };
    assert_eq!(
        errors(input),
        [
            "missing #[bucket(collection = \"...\")]",
            "missing #[bucket(size = ...)]",
            "no field is marked #[bucket(key)]",
            "no field is marked #[bucket(items)]",
            "field `customer_id` is not stored by the bucket pattern; mark it #[bucket(key)] or #[bucket(items)], or remove it",
        ]
    );
}

#[test]
fn malformed_values_do_not_stop_the_parser() {
    let input: DeriveInput = parse_quote! {
        #[bucket(size, collection(x), time = "not a field", count =, size = 99999999999, nested::key = 1)]
        #[bucket]
        struct T {
            #[bucket(key = 1)]
            k: i64,
            #[bucket(items)]
            v: Vec<u8>,
        }
    };
    assert_eq!(
        errors(input),
        [
            "expected a value: `size = ...`",
            "expected a value: `collection = ...`",
            "time must name a field of the item type, like `time = \"date\"`",
            "expected a value after `count =`",
            "duplicate key `size`",
            "size must be at most 2147483647",
            "unknown key `nested::key` in #[bucket(...)]; expected one of: `collection`, `size`, `time`, `count`, `page`",
            "expected attribute arguments in parentheses: #[bucket(...)]",
            "`key` takes no value",
            "no field is marked #[bucket(key)]",
            "field `k` is not stored by the bucket pattern; mark it #[bucket(key)] or #[bucket(items)], or remove it",
        ]
    );
}

#[test]
fn names_must_be_distinct_and_not_id() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "c", size = 1, count = "_id")]
        struct T {
            #[bucket(key)]
            #[serde(rename = "v")]
            k: i64,
            #[bucket(items)]
            v: Vec<u8>,
        }
    };
    assert_eq!(
        errors(input),
        [
            "the key field and the items field are both stored as \"v\"",
            "the count field cannot be stored as `_id` (the pattern owns `_id`)",
        ]
    );
}

#[test]
fn shapes() {
    let cases: [(DeriveInput, &str); 5] = [
        (parse_quote!(enum E { A }), "#[derive(Bucket)] works on structs, not enums"),
        (parse_quote!(union U { a: u8 }), "#[derive(Bucket)] works on structs, not unions"),
        (parse_quote!(struct T(i64);), "#[derive(Bucket)] needs a struct with named fields: `struct Name { field: Type, ... }`"),
        (parse_quote!(struct T;), "#[derive(Bucket)] needs a struct with named fields: `struct Name { field: Type, ... }`"),
        (parse_quote!(struct T<'a> { x: &'a str }), "#[derive(Bucket)] does not support generic types"),
    ];
    for (input, want) in cases {
        let got = errors(input);
        assert!(got.contains(&want.to_owned()), "{want:?} not in {got:?}");
    }
}

#[test]
fn fallback_stubs_every_method() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "trades", size = 0)]
        struct TradeHistory {
            #[bucket(key)]
            customer_id: i64,
            #[bucket(items)]
            history: Vec<Trade>,
        }
    };
    assert_eq!(errors(input.clone()), ["size must be at least 1"]);
    let code = fallback(&stubs(&input)).to_string();
    for part in [
        "impl :: pattern_core :: Bucket for TradeHistory",
        "type Item = ()",
        "impl TradeHistory",
        "# [doc (hidden)] # [allow (unused_variables)] pub async fn push < __PatternS , __PatternQ > \
         (store : & __PatternS , key : & __PatternQ , item : Trade ,)",
        "pub async fn push_many < __PatternS , __PatternQ > (store : & __PatternS , key : & __PatternQ , items : & [Trade] ,)",
        "pub async fn page <",
        "Result < :: core :: option :: Option < :: pattern_core :: Page < Trade >> >",
        "pub fn pages <",
        "pub fn items <",
        "pub async fn counts <",
        "pub async fn ensure_indexes < __PatternS > (store : & __PatternS)",
        ":: core :: unreachable ! ()",
    ] {
        assert!(code.contains(part), "{part} not in {code}");
    }
    assert!(
        !code.contains(":: pattern_core :: bucket ::"),
        "a stub calls: {code}"
    );
    assert!(!code.contains("# [doc ="), "a stub is documented: {code}");
}

#[test]
fn fallback_stubs_take_any_item_when_it_cannot_be_read() {
    let cases: [DeriveInput; 3] = [
        parse_quote!(
            struct T {
                #[bucket(key)]
                k: i64,
                #[bucket(items)]
                v: f64,
            }
        ),
        parse_quote!(
            struct T {
                #[bucket(key)]
                k: i64,
                v: Vec<u8>,
            }
        ),
        parse_quote!(
            enum T {
                A,
            }
        ),
    ];
    for input in cases {
        let s = stubs(&input);
        assert!(s.item_ty.is_none());
        let code = fallback(&s).to_string();
        for part in [
            "item : impl :: core :: marker :: Sized ,",
            "items : & [impl :: core :: marker :: Sized] ,",
            ":: pattern_core :: Page < () >",
        ] {
            assert!(code.contains(part), "{part} not in {code}");
        }
    }
}
