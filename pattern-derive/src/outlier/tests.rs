//! Parser tests: `parse_quote!` input in, the model or every error message out.

use syn::{parse_quote, DeriveInput};

use super::{expand, fallback, Container};
use crate::ast::vec_arg;
use crate::attr::outlier::ITEMS;
use crate::check::outlier as check;
use crate::{checked as parse, read};

fn errors(input: DeriveInput) -> Vec<String> {
    crate::errors(&input, check)
}

/// The model's stored names: the flag, owner, extra, count and seq fields' and the items
/// field's.
fn names(o: &Container) -> [String; 6] {
    let (a, items) = (&o.attrs, o.marked(ITEMS).unwrap());
    [
        a.flag.name_or("has_extras").value,
        a.owner(o.ident).value,
        a.extra(Some(items)).unwrap().value,
        a.count.name_or("count").value,
        a.seq.name_or("seq").value,
        items.bson.value.clone(),
    ]
}

#[test]
fn reads_the_model_with_defaults() {
    let input: DeriveInput = parse_quote! {
        #[outlier(collection = "sales", threshold = 50, overflow = "extra_sales")]
        struct Book {
            #[outlier(id)]
            #[serde(rename = "_id")]
            id: i64,
            title: String,
            #[outlier(items)]
            customers_purchased: Vec<String>,
        }
    };
    let o = parse(&input, check);
    let a = &o.attrs;
    assert_eq!(
        (
            a.collection.value().unwrap().value.as_str(),
            a.overflow.value().unwrap().value.as_str(),
            a.threshold.value(),
            a.chunk.value()
        ),
        ("sales", "extra_sales", Some(&50), None)
    );
    assert_eq!(
        names(&o),
        [
            "has_extras",
            "book_id",
            "customers_purchased_extra",
            "count",
            "seq",
            "customers_purchased"
        ]
    );
    let code = expand(&o).to_string();
    let parts = [
        "impl :: pattern_core :: Outlier for Book",
        "type Id = i64",
        "type Item = String",
        "size : :: pattern_core :: outlier :: DEFAULT_CHUNK",
        "SeriesOrder :: Seq (\"seq\")",
        "pub async fn save",
        "pub async fn push <",
        "pub async fn push_many <",
        "pub async fn all_items <",
        "pub fn items <",
        "pub async fn counts <",
    ];
    crate::assert_contains(&code, &parts);
}

#[test]
fn every_key() {
    let input: DeriveInput = parse_quote! {
        #[outlier(collection = "c", overflow = "o", threshold = 3, chunk = 7)]
        #[outlier(flag = "f", owner = "r", extra = "e", count = "n", seq = "s")]
        #[serde(rename_all = "camelCase")]
        struct TradeHistory {
            #[outlier(id)]
            #[serde(rename = "_id")]
            id: String,
            #[outlier(items)]
            all_trades: Vec<u8>,
        }
    };
    let o = parse(&input, check);
    assert_eq!(o.attrs.chunk.value(), Some(&7));
    assert_eq!(names(&o), ["f", "r", "e", "n", "s", "allTrades"]);
}

#[test]
fn default_owner_is_the_snake_case_name() {
    let input: DeriveInput = parse_quote! {
        #[outlier(collection = "c", overflow = "o", threshold = 3)]
        struct TradeHistory {
            #[outlier(id)]
            #[serde(rename = "_id")]
            id: i64,
            #[outlier(items)]
            trades: Vec<u8>,
        }
    };
    assert_eq!(names(&parse(&input, check))[1], "trade_history_id");
}

#[test]
fn every_mistake_arrives_at_once() {
    let input: DeriveInput = parse_quote! {
        #[outlier(collection = "sales", overflow = "sales", threshold = 0, chunk = "big", limit = 3)]
        #[outlier(threshold = 5, flag = "title", owner = "count", seq = "_id")]
        struct Book {
            #[outlier(id, items)]
            id: i64,
            title: String,
            #[outlier(items)]
            customers: Option<String>,
        }
    };
    assert_eq!(
        errors(input),
        [
            "threshold must be at least 1",
            "chunk must be an integer, like `chunk = 10`",
            "unknown key `limit` in #[outlier(...)]; expected one of: `collection`, `overflow`, `threshold`, `chunk`, \
             `flag`, `owner`, `extra`, `count`, `seq`, `validate`",
            "duplicate key `threshold`",
            "overflow must differ from the main collection",
            "a field cannot be both #[outlier(id)] and #[outlier(items)]",
            "the #[outlier(items)] field must be a `Vec<T>`",
            "the flag field \"title\" is also the name of field `title`; choose another with #[outlier(flag = \"...\")]",
            "the owner field and the count field are both stored as \"count\"",
            "the seq field cannot be stored as `_id` (the pattern owns `_id`)",
        ]
    );
}

#[test]
fn id_must_be_stored_as_id() {
    let input: DeriveInput = parse_quote! {
        #[outlier(collection = "c", overflow = "o", threshold = 3)]
        struct Book {
            #[outlier(id)]
            id: i64,
            has_extras: bool,
            #[outlier(items)]
            v: Vec<u8>,
        }
    };
    assert_eq!(
        errors(input),
        [
            "the id field must be stored as `_id`: add #[serde(rename = \"_id\")]",
            "the flag field \"has_extras\" is also the name of field `has_extras`; choose another with #[outlier(flag = \"...\")]",
        ]
    );
}

#[test]
fn collection_names() {
    for (name, problem) in [
        ("", "it must not be empty"),
        ("a$b", "it must not contain `$`"),
        ("a\0b", "it must not contain a NUL character"),
        (
            "system.x",
            "it must not start with `system.` (reserved by MongoDB)",
        ),
    ] {
        let input: DeriveInput = parse_quote! {
            #[outlier(collection = "c", overflow = #name, threshold = 3)]
            struct Book {
                #[outlier(id)]
                #[serde(rename = "_id")]
                id: i64,
                #[outlier(items)]
                v: Vec<u8>,
            }
        };
        assert_eq!(
            errors(input),
            [format!(
                "invalid MongoDB collection name {name:?}: {problem}"
            )]
        );
    }
}

#[test]
fn checks_that_need_no_items_field_still_run() {
    let input: DeriveInput = parse_quote! {
        #[outlier(collection = "c", overflow = "o", threshold = 3, flag = "title", owner = "seq")]
        struct Book {
            #[outlier(id)]
            #[serde(rename = "_id")]
            id: i64,
            title: String,
        }
    };
    assert_eq!(
        errors(input),
        [
            "no field is marked #[outlier(items)]",
            "the flag field \"title\" is also the name of field `title`; choose another with #[outlier(flag = \"...\")]",
            "the owner field and the seq field are both stored as \"seq\"",
        ]
    );
}

#[test]
fn fallback_stubs_every_method() {
    let input: DeriveInput = parse_quote! {
        #[outlier(collection = "sales", threshold = 0, overflow = "extra_sales")]
        struct Book {
            #[outlier(id)]
            #[serde(rename = "_id")]
            id: i64,
            #[outlier(items)]
            r#customers_purchased: Vec<String>,
        }
    };
    assert_eq!(errors(input.clone()), ["threshold must be at least 1"]);
    let code = fallback(&read(&input, check).0).to_string();
    let parts = [
        "impl :: pattern_core :: Outlier for Book",
        "impl Book",
        "pub async fn save < __PatternS > (& self , store : & __PatternS)",
        "# [doc (hidden)] # [allow (unused_variables)] pub async fn push < __PatternS , __PatternQ > \
         (store : & __PatternS , id : & __PatternQ , item : String ,)",
        "pub async fn push_many <",
        "items : & [String] ,",
        "pub async fn typical <",
        "Option < :: pattern_core :: outlier :: Typical < Self >>",
        "pub async fn full <",
        "pub async fn all_items <",
        "Option < :: std :: vec :: Vec < String >>",
        "pub fn items <",
        "pub async fn counts <",
        "pub async fn is_outlier <",
        "pub async fn delete <",
        "pub async fn ensure_indexes <",
    ];
    crate::assert_contains(&code, &parts);
    // The stubs name the module's types (`Typical`, `Counts`), never call its functions.
    let calls = code
        .replace(":: pattern_core :: outlier :: Typical", "")
        .replace(":: pattern_core :: outlier :: Counts", "");
    assert!(
        !calls.contains(":: pattern_core :: outlier ::"),
        "a stub calls: {code}"
    );
    assert!(!code.contains("# [doc ="), "a stub is documented: {code}");
}

#[test]
fn fallback_stubs_without_the_items_field_take_any_item() {
    let input: DeriveInput = parse_quote! {
        struct Book {
            #[outlier(id)]
            id: i64,
            customers: Vec<String>,
        }
    };
    let (s, _) = read(&input, check);
    assert!(s.marked(ITEMS).and_then(|f| vec_arg(f.ty)).is_none());
    let code = fallback(&s).to_string();
    let parts = [
        "pub async fn save",
        "pub async fn push <",
        "item : impl :: core :: marker :: Sized ,",
        "pub async fn typical",
        "pub async fn full",
        "pub async fn all_items <",
        "pub async fn is_outlier",
    ];
    crate::assert_contains(&code, &parts);
    // Named, but not a `Vec`: any item in, `()` out.
    let input: DeriveInput = parse_quote! {
        struct Book {
            #[outlier(id)]
            id: i64,
            #[outlier(items)]
            customers: std::collections::HashSet<String>,
        }
    };
    let code = fallback(&read(&input, check).0).to_string();
    let parts = [
        "pub async fn push <",
        "item : impl :: core :: marker :: Sized ,",
        "Option < :: std :: vec :: Vec < () >>",
    ];
    crate::assert_contains(&code, &parts);
}

#[test]
fn validate_sets_the_trait_constant() {
    let input: DeriveInput = parse_quote! {
        #[outlier(collection = "sales", overflow = "extra_sales", threshold = 50, validate)]
        struct Book {
            #[outlier(id)]
            #[serde(rename = "_id")]
            id: i64,
            #[outlier(items)]
            customers_purchased: Vec<String>,
        }
    };
    let o = parse(&input, check);
    assert!(o.attrs.validate.value().is_some());
    let code = expand(&o).to_string();
    assert!(code.contains("const VALIDATE : bool = true ;"), "{code}");
    assert!(code.contains(
        ":: pattern_core :: outlier :: ensure_validator :: < Self , __PatternS > (store) . await"
    ));
}
