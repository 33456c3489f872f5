//! Parser tests: `parse_quote!` input in, the model or every error message out.

use syn::{parse_quote, DeriveInput};

use super::{expand, fallback, Container};
use crate::ast::vec_arg;
use crate::attr::bucket::{Op, ITEMS, KEY};
use crate::check::bucket as check;
use crate::{checked as parse, read};

fn errors(input: DeriveInput) -> Vec<String> {
    crate::errors(&input, check)
}

/// The model's stored names: the key, items, count and page fields'.
fn names(b: &Container) -> [String; 4] {
    [
        b.marked(KEY).unwrap().bson.value.clone(),
        b.marked(ITEMS).unwrap().bson.value.clone(),
        b.attrs.count.name_or("count").value,
        b.attrs.page.name_or("page").value,
    ]
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
    let b = parse(&input, check);
    let collection = &b.attrs.collection.value().unwrap().value;
    assert_eq!(
        (collection.as_str(), b.attrs.size.value()),
        ("trades", Some(&10))
    );
    assert_eq!(names(&b)[..3], ["customerId", "history", "count"]);
    assert!(b.attrs.time.value().is_some());
    let code = expand(&b).to_string();
    let parts = [
        "impl :: pattern_core :: Bucket for TradeHistory",
        "type Key = i64",
        "type Item = Trade",
        "key_field : \"customerId\"",
        "page_field : \"page\"",
        "size : 10u32",
        "__epoch_millis (& (* __pattern_item) . date)",
        "pub async fn push_many",
        "pub fn items",
    ];
    crate::assert_contains(&code, &parts);
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
    let b = parse(&input, check);
    assert_eq!(names(&b), ["SENSOR-NAME", "ALL-VALUES", "n", "p"]);
    assert!(b.attrs.time.value().is_none());
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
            "unknown key `colour` in #[bucket(...)]; expected one of: `collection`, `size`, `time`, `count`, `page`, `summary`, `validate`, `span`, `granularity`, `rollup`",
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
            "unknown key `nested::key` in #[bucket(...)]; expected one of: `collection`, `size`, `time`, `count`, `page`, `summary`, `validate`, `span`, `granularity`, `rollup`",
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
    let code = fallback(&read(&input, check).0).to_string();
    let parts = [
        "impl :: pattern_core :: Bucket for TradeHistory",
        "type Item = ()",
        "impl TradeHistory",
        "# [doc (hidden)] # [allow (unused_variables)] pub async fn push < __PatternS , __PatternQ > \
         (store : & __PatternS , key : & __PatternQ , item : Trade ,)",
        "pub async fn push_many < __PatternS , __PatternQ > (store : & __PatternS , key : & __PatternQ , items : & [Trade] ,)",
        "pub async fn page <",
        "Result < :: core :: option :: Option < :: pattern_core :: bucket :: Page < Trade >> >",
        "pub fn pages <",
        "pub fn items <",
        "pub async fn counts <",
        "pub fn range < 'a , __PatternS , __PatternQ , __PatternR > (store : & 'a __PatternS , key : & __PatternQ , range : __PatternR ,)",
        "pub async fn latest <",
        "pub async fn summary <",
        "Result < :: pattern_core :: bucket :: Totals >",
        "type Summary = :: pattern_core :: bucket :: Totals",
        "pub async fn ingest < __PatternS > (store : & __PatternS , items : & [(i64 , Trade)] ,)",
        "pub async fn backfill < __PatternS > (store : & __PatternS)",
        "pub async fn ensure_indexes < __PatternS > (store : & __PatternS)",
        ":: core :: unreachable ! ()",
    ];
    crate::assert_contains(&code, &parts);
    assert!(!code.contains(":: < Self ,"), "a stub calls: {code}");
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
        let (s, _) = read(&input, check);
        assert!(s.marked(ITEMS).and_then(|f| vec_arg(f.ty)).is_none());
        let code = fallback(&s).to_string();
        let parts = [
            "item : impl :: core :: marker :: Sized ,",
            "items : & [impl :: core :: marker :: Sized] ,",
            ", impl :: core :: marker :: Sized)] ,",
            ":: pattern_core :: bucket :: Page < () >",
        ];
        crate::assert_contains(&code, &parts);
    }
}

#[test]
fn reads_the_summary() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "trades", size = 10, time = "date")]
        #[bucket(summary(sum = "qty", min = "price", max = "price", sum = "fee", min = "unitPrice", max = "unit-price", sum = "1st"))]
        pub(crate) struct TradeHistory {
            #[bucket(key)]
            customer_id: i64,
            #[bucket(items)]
            history: Vec<Trade>,
        }
    };
    let b = parse(&input, check);
    let got: Vec<_> = (b.attrs.summary().iter())
        .map(|a| {
            (
                a.op,
                a.item_field.value.as_str(),
                a.field.as_str(),
                a.rust_field.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Op::Sum, "qty", "qty_sum", "qty_sum"),
            (Op::Min, "price", "price_min", "price_min"),
            (Op::Max, "price", "price_max", "price_max"),
            (Op::Sum, "fee", "fee_sum", "fee_sum"),
            (Op::Min, "unitPrice", "unitPrice_min", "unitPrice_min"),
            (Op::Max, "unit-price", "unit-price_max", "unit_price_max"),
            (Op::Sum, "1st", "1st_sum", "_1st_sum"),
        ]
    );
    let code = expand(&b).to_string();
    let parts = [
        "type Summary = TradeHistorySummary ;",
        "bounds : :: core :: option :: Option :: Some ((\"date_min\" , \"date_max\"))",
        "summary : & [:: pattern_core :: spec :: SummaryField { op : :: pattern_core :: spec :: SummaryOp :: Sum , \
         item_field : \"qty\" , field : \"qty_sum\" , } , :: pattern_core :: spec :: SummaryField { op : \
         :: pattern_core :: spec :: SummaryOp :: Min , item_field : \"price\" , field : \"price_min\" , } ,",
        "item_field : \"unit-price\" , field : \"unit-price_max\" ,",
        "# [derive (:: core :: clone :: Clone , :: core :: fmt :: Debug , :: core :: cmp :: PartialEq)] \
         # [allow (dead_code , non_snake_case)] pub (crate) struct TradeHistorySummary { \
         # [doc = r\" How many items it covers.\"] pub items : u64 ,",
        "pub qty_sum : :: pattern_core :: bucket :: Number ,",
        "pub price_min : :: core :: option :: Option < :: pattern_core :: bucket :: Number > ,",
        "pub unit_price_max : :: core :: option :: Option <",
        "pub _1st_sum : :: pattern_core :: bucket :: Number ,",
        " - `qty_sum`: the sum of the items' `qty`",
        "impl :: core :: convert :: From < :: pattern_core :: bucket :: Totals > for TradeHistorySummary",
        "qty_sum : :: core :: option :: Option :: unwrap_or (:: core :: option :: Option :: flatten \
         (:: core :: iter :: Iterator :: next (& mut __pattern_values)) , :: pattern_core :: bucket :: \
         Number :: Int32 (0)) ,",
        "pub fn range < 'a , __PatternS , __PatternQ , __PatternR > (store : & 'a __PatternS , key : \
         & __PatternQ , range : __PatternR ,)",
        "use < 'a , __PatternS , __PatternQ , __PatternR >",
        "__PatternR : :: core :: ops :: RangeBounds < :: pattern_core :: __private :: bson :: DateTime > ,",
        ":: pattern_core :: bucket :: range :: < Self , __PatternS , __PatternQ > (store , key , range ,)",
        "pub async fn latest < __PatternS , __PatternQ > (store : & __PatternS , key : & __PatternQ , n : usize ,) \
         -> :: pattern_core :: Result < :: std :: vec :: Vec < Trade > >",
        "pub async fn summary < __PatternS , __PatternQ > (store : & __PatternS , key : & __PatternQ , range : \
         impl :: core :: ops :: RangeBounds < :: pattern_core :: __private :: bson :: DateTime > ,) -> \
         :: pattern_core :: Result < TradeHistorySummary >",
        "pub async fn ingest < __PatternS > (store : & __PatternS , items : & [(i64 , Trade)] ,) -> \
         :: pattern_core :: Result < u64 > where __PatternS : :: pattern_core :: store :: Store , \
         { :: pattern_core :: bucket :: ingest :: < Self , __PatternS > (store , items ,) . await }",
        "pub async fn backfill < __PatternS > (store : & __PatternS) -> :: pattern_core :: Result < u64 >",
    ];
    crate::assert_contains(&code, &parts);
}

#[test]
fn no_summary_no_time() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "r", size = 5)]
        struct Readings {
            #[bucket(key)]
            sensor: String,
            #[bucket(items)]
            values: Vec<f64>,
        }
    };
    let b = parse(&input, check);
    assert!(b.attrs.summary().is_empty());
    let code = expand(&b).to_string();
    let parts = [
        "type Summary = :: pattern_core :: bucket :: Totals ;",
        "keeps : :: pattern_core :: spec :: Keeps { bounds : :: core :: option :: Option :: None , summary : & [] , span : :: core :: option :: Option :: None , rollup : :: core :: option :: Option :: None , }",
        "pub async fn latest <",
        "pub async fn ingest < __PatternS > (store : & __PatternS , items : & [(String , f64)] ,)",
        "pub async fn backfill <",
    ];
    crate::assert_contains(&code, &parts);
    for absent in [
        "pub fn range",
        "pub async fn summary",
        "struct ReadingsSummary",
    ] {
        assert!(!code.contains(absent), "{absent} in {code}");
    }
}

#[test]
fn summary_mistakes() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "c", size = 1, time = "date", summary(
            avg = "x", sum = 5, min = "", max = "a.b", sum = "$x", sum,
            sum = "qty", sum = "qty", min = "date", max = "date", a::b = 1
        ))]
        #[bucket(summary(sum = "y"))]
        #[bucket(summary())]
        struct T {
            #[bucket(key)]
            k: i64,
            #[bucket(items)]
            v: Vec<u8>,
        }
    };
    assert_eq!(
        errors(input),
        [
            "unknown key `avg` in summary(...); expected one of: `sum`, `min`, `max`",
            "sum must be a string, like `sum = \"...\"`",
            "invalid MongoDB field name \"\": it must not be empty",
            "invalid MongoDB field name \"a.b\": it must not contain `.`",
            "invalid MongoDB field name \"$x\": it must not start with `$`",
            "expected a value: `sum = ...`",
            "duplicate aggregate `sum = \"qty\"` in summary(...)",
            "unknown key `a::b` in summary(...); expected one of: `sum`, `min`, `max`",
            "duplicate key `summary`",
            "duplicate key `summary`",
            "summary(...) is empty; name at least one aggregate: \
             `summary(sum = \"qty\", min = \"price\", max = \"price\")`",
            "`min = \"date\"` would be stored as \"date_min\", where the time bounds \
             (`time = \"date\"`) already keep the time's min; remove it",
            "`max = \"date\"` would be stored as \"date_max\", where the time bounds \
             (`time = \"date\"`) already keep the time's max; remove it",
        ]
    );
}

#[test]
fn summary_needs_a_list() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "c", size = 1, summary = "x")]
        #[bucket(summary)]
        struct T {
            #[bucket(key)]
            k: i64,
            #[bucket(items)]
            v: Vec<u8>,
        }
    };
    let list = "summary takes a list of aggregates: \
                `summary(sum = \"qty\", min = \"price\", max = \"price\")`";
    assert_eq!(errors(input), [list, "duplicate key `summary`", list]);
}

#[test]
fn min_and_max_of_another_field_than_the_time() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "c", size = 1, time = "date", summary(min = "d", max = "d", sum = "date"))]
        struct T {
            #[bucket(key)]
            k: i64,
            #[bucket(items)]
            v: Vec<u8>,
        }
    };
    let b = parse(&input, check);
    let fields: Vec<_> = (b.attrs.summary().iter())
        .map(|a| a.field.as_str())
        .collect();
    assert_eq!(fields, ["d_min", "d_max", "date_sum"]);
}

#[test]
fn stored_names_must_be_distinct() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "c", size = 1, time = "date", count = "qty_sum", page = "date_min")]
        #[bucket(summary(sum = "qty", max = "a-b", max = "a_b"))]
        struct T {
            #[bucket(key)]
            #[serde(rename = "bounded")]
            k: i64,
            #[bucket(items)]
            #[serde(rename = "summarized")]
            v: Vec<u8>,
        }
    };
    assert_eq!(
        errors(input),
        [
            "`max = \"a_b\"` and `max = \"a-b\"` would both be the field `a_b_max` of `TSummary`",
            "the page field and the time bounds' min field are both stored as \"date_min\"",
            "the key field and the time bounds' mark field are both stored as \"bounded\"",
            "the items field and the summary's mark field are both stored as \"summarized\"",
            "the count field and the `sum = \"qty\"` field are both stored as \"qty_sum\"",
        ]
    );
    // The marks are stored only beside what they mark.
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "c", size = 1, count = "bounded", page = "summarized")]
        struct T {
            #[bucket(key)]
            k: i64,
            #[bucket(items)]
            v: Vec<u8>,
        }
    };
    assert_eq!(errors(input), Vec::<String>::new());
}

#[test]
fn fallback_keeps_the_summary_type() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "trades", size = 0, summary(sum = "qty", avg = "x", max = "a-b", max = "a_b"))]
        pub struct TradeHistory {
            #[bucket(key)]
            customer_id: i64,
            #[bucket(items)]
            history: Vec<Trade>,
        }
    };
    assert_eq!(errors(input.clone()).len(), 3);
    let code = fallback(&read(&input, check).0).to_string();
    let parts = [
        "type Summary = TradeHistorySummary ;",
        "pub struct TradeHistorySummary {",
        "pub qty_sum : :: pattern_core :: bucket :: Number ,",
        "pub a_b_max : :: core :: option :: Option < :: pattern_core :: bucket :: Number > ,",
        "Result < TradeHistorySummary >",
        "pub fn range <",
    ];
    crate::assert_contains(&code, &parts);
    assert_eq!(code.matches("pub a_b_max").count(), 1, "{code}");
}

#[test]
fn validate_sets_the_trait_constant() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "trades", size = 10, validate)]
        struct TradeHistory {
            #[bucket(key)]
            customer_id: i64,
            #[bucket(items)]
            history: Vec<Trade>,
        }
    };
    let b = parse(&input, check);
    assert!(b.attrs.validate.value().is_some());
    let code = expand(&b).to_string();
    assert!(code.contains("const VALIDATE : bool = true ;"), "{code}");
    assert!(code.contains(
        ":: pattern_core :: bucket :: ensure_validator :: < Self , __PatternS > (store) . await"
    ));
    let plain: DeriveInput = parse_quote! {
        #[bucket(collection = "trades", size = 10)]
        struct TradeHistory {
            #[bucket(key)]
            customer_id: i64,
            #[bucket(items)]
            history: Vec<Trade>,
        }
    };
    let code = expand(&parse(&plain, check)).to_string();
    assert!(!code.contains("VALIDATE"), "{code}");
    assert!(code.contains("pub async fn ensure_validator"));
}

#[test]
fn validate_takes_no_value_and_comes_once() {
    let input: DeriveInput = parse_quote! {
        #[bucket(collection = "trades", size = 10, validate = true, validate)]
        struct TradeHistory {
            #[bucket(key)]
            customer_id: i64,
            #[bucket(items)]
            history: Vec<Trade>,
        }
    };
    assert_eq!(
        errors(input),
        ["`validate` takes no value", "duplicate key `validate`"]
    );
}
