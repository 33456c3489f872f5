//! Parser tests: `parse_quote!` input in, the model or every error message out.

use syn::{parse_quote, DeriveInput};

use super::{Container, Field};
use crate::attr::document::{const_name, Normalize};
use crate::check::document as check;
use crate::checked as parse;

fn errors(input: DeriveInput) -> Vec<String> {
    crate::errors(&input, check)
}

/// The fields serde stores.
fn stored<'s, 'a>(d: &'s Container<'a>) -> impl Iterator<Item = &'s Field<'a>> {
    d.fields().unwrap().iter().filter(|f| f.serde.stored)
}

#[test]
fn reads_names_ids_and_keywords() {
    let input: DeriveInput = parse_quote! {
        #[document(collection = "volumes")]
        #[serde(rename_all = "camelCase")]
        struct Volume {
            #[serde(rename = "_id")]
            id: i64,
            published_date: i32,
            r#type: String,
            #[document(keywords(lowercase))]
            topics: Vec<String>,
            #[document(keywords)]
            tags: std::vec::Vec<std::string::String>,
            #[serde(skip)]
            cache: u8,
        }
    };
    let d = parse(&input, check);
    assert_eq!(d.attrs.collection.value().unwrap().value, "volumes");
    let id = stored(&d).find(|f| f.bson.value == "_id").unwrap();
    assert_eq!(id.ident, "id");
    let names: Vec<(String, String)> = stored(&d)
        .map(|f| (const_name(f.ident).to_string(), f.bson.value.clone()))
        .collect();
    let want = [
        ("ID", "_id"),
        ("PUBLISHED_DATE", "publishedDate"),
        ("TYPE", "type"),
        ("TOPICS", "topics"),
        ("TAGS", "tags"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(names, want);
    let keywords: Vec<(String, Normalize)> = (d.fields().unwrap().iter())
        .filter_map(|f| Some((f.bson.value.clone(), f.attrs.keywords?)))
        .collect();
    assert_eq!(
        keywords,
        [
            ("topics".to_owned(), Normalize::Lowercase),
            ("tags".to_owned(), Normalize::AsIs)
        ]
    );
}

#[test]
fn every_mistake_is_reported() {
    let input: DeriveInput = parse_quote! {
        #[document(collection = "", size = 3)]
        struct Book {
            #[serde(rename = "_id")]
            id: i64,
            #[document(keywords)]
            title: String,
            #[document(keywords(uppercase), keywords)]
            topics: Vec<String>,
            #[serde(flatten)]
            extra: Extra,
            #[serde(rename = "title")]
            name: String,
        }
    };
    assert_eq!(
        errors(input),
        [
            "invalid MongoDB collection name \"\": it must not be empty",
            "unknown key `size` in #[document(...)]; expected one of: `collection`, `version`, \
             `previous`, `version_field`, `unversioned`, `write_back`, `history`, `computed`, \
             `subset`, `referenced_by`, `fan_out`, `deferred`, `variant_of`, `archive`",
            "unknown keywords option `uppercase`; expected `lowercase`",
            "duplicate key `keywords`",
            "#[derive(Document)] cannot type field `extra`: with #[serde(flatten)] serde stores \
             something else than its type; store it as its type or keep it out of this struct",
            "a #[document(keywords)] field must be a `Vec<String>` (an array of keyword strings)",
            "fields `title` and `name` are both stored as \"title\"",
        ]
    );
}

#[test]
fn an_id_is_required_and_keywords_not_on_it() {
    let input: DeriveInput = parse_quote! {
        struct Volume {
            #[document(keywords)]
            #[serde(rename = "_id")]
            topics: Vec<String>,
        }
    };
    assert_eq!(
        errors(input),
        [
            "missing #[document(collection = \"...\")]",
            "the `_id` cannot be a keyword array",
        ]
    );
    let none: DeriveInput = parse_quote! {
        #[document(collection = "v")]
        struct Volume { title: String }
    };
    assert_eq!(
        errors(none),
        ["a document needs its id stored as `_id`: add #[serde(rename = \"_id\")] to the id field"]
    );
}

#[test]
fn money_adapters_are_read_from_their_paths() {
    use crate::attr::document::money_form;
    use crate::attr::document::Money::*;
    let cases = [
        (
            "pattern_core::money::decimal128",
            true,
            Some(Decimal128 { option: false }),
        ),
        (
            "money::decimal128::option",
            true,
            Some(Decimal128 { option: true }),
        ),
        ("text", true, Some(Text { option: false })),
        ("money :: text :: option", true, Some(Text { option: true })),
        (
            "money::decimal128::serialize",
            false,
            Some(Decimal128 { option: false }),
        ),
        (
            "money::decimal128::option::serialize",
            false,
            Some(Decimal128 { option: true }),
        ),
        ("money::scaled::serialize::<2, _>", false, Some(Scaled(2))),
        (
            "pattern_core::money::scaled::serialize::<28,_>",
            false,
            Some(Scaled(28)),
        ),
        ("money::scaled::serialize::<29, _>", false, None),
        ("money::scaled", true, None),
        ("money::decimal128", false, None),
        ("money::any_form::deserialize::<2, _>", false, None),
        ("shout", false, None),
        ("my::module", true, None),
    ];
    for (path, with, want) in cases {
        assert_eq!(money_form(path, with), want, "{path} (with: {with})");
    }
}

#[test]
fn reads_versions_and_history() {
    let input: DeriveInput = parse_quote! {
        #[document(collection = "people", version = 3, previous(old::P2 = 2, P1 = 1),
                   version_field = "v", write_back, history = "people_history")]
        struct Person {
            #[serde(rename = "_id")]
            id: i64,
        }
    };
    let d = parse(&input, check);
    let v = d.attrs.versioning().unwrap();
    assert_eq!(
        (v.current, v.field.as_str(), v.unversioned, v.write_back),
        (3, "v", 1, true)
    );
    let previous: Vec<(u32, String)> = (v.previous.iter())
        .map(|(n, p)| (*n, quote::quote!(#p).to_string().replace(' ', "")))
        .collect();
    assert_eq!(previous, [(1, "P1".to_owned()), (2, "old::P2".to_owned())]);
    let history = d.attrs.history.value().map(|h| h.value.as_str());
    assert_eq!(history, Some("people_history"));
}

#[test]
fn every_versioning_mistake_is_reported() {
    let numbers: DeriveInput = parse_quote! {
        #[document(collection = "people", version = 4, previous(P1 = 0, P2 = 2, Q2 = 2, P5 = 5))]
        struct Person {
            #[serde(rename = "_id")]
            id: i64,
        }
    };
    assert_eq!(
        errors(numbers),
        [
            "the version of `P1`: version numbers start at 1",
            "two versions numbered 2: `P2` and `Q2`",
            "`P5` = 5: a previous version is below the current one (`version = 4`)",
        ]
    );
    let gap: DeriveInput = parse_quote! {
        #[document(collection = "people", version = 4, previous(P1 = 1, P3 = 3), unversioned = 2)]
        struct Person {
            #[serde(rename = "_id")]
            id: i64,
        }
    };
    assert_eq!(
        errors(gap),
        [
            "version 2 missing: every version from 1 to 4 needs its type in previous(...), so \
             that each converts to the next",
        ]
    );
    let zero: DeriveInput = parse_quote! {
        #[document(collection = "people", version = 0, unversioned = 7)]
        struct Person {
            #[serde(rename = "_id")]
            id: i64,
        }
    };
    assert_eq!(
        errors(zero),
        [
            "version: version numbers start at 1",
            "`unversioned` declares schema versioning: add `version = N` (the current version)",
        ]
    );
    let unversioned: DeriveInput = parse_quote! {
        #[document(collection = "people", version = 2, previous(P1 = 1), unversioned = 3)]
        struct Person {
            #[serde(rename = "_id")]
            id: i64,
        }
    };
    assert_eq!(
        errors(unversioned),
        ["unversioned = 3: not a declared version (1 to 2)"]
    );
    let kept: DeriveInput = parse_quote! {
        #[document(collection = "people", version = 1, history = "people", write_back = true)]
        struct Person {
            #[serde(rename = "_id")]
            id: i64,
            schema_version: u32,
            revision: u64,
        }
    };
    assert_eq!(
        errors(kept),
        [
            "`write_back` takes no value",
            "the history collection must be another collection than the documents'",
            "field `schema_version` is stored as `schema_version`, where the library keeps the \
             schema version (choose another with version_field = \"...\")",
            "field `revision` is stored as `revision`, where the library keeps the revision of a \
             document with history",
        ]
    );
}

#[test]
fn approximate_counters_and_their_mistakes() {
    let ok: DeriveInput = parse_quote! {
        #[document(collection = "films")]
        struct Film {
            #[serde(rename = "_id")]
            id: i64,
            #[document(approximate(every = 100))]
            views: i64,
        }
    };
    let d = parse(&ok, check);
    let counters: Vec<(String, u32)> = stored(&d)
        .filter_map(|f| Some((f.bson.value.clone(), f.attrs.approximate?.0)))
        .collect();
    assert_eq!(counters, [("views".to_owned(), 100)]);
    let bad: DeriveInput = parse_quote! {
        #[document(collection = "films", history = "films_history")]
        struct Film {
            #[serde(rename = "_id")]
            #[document(approximate(every = 2))]
            id: i64,
            #[document(approximate(every = 0))]
            a: i64,
            #[document(approximate)]
            b: i64,
            #[document(approximate(each = 3))]
            c: i64,
            #[document(approximate(every = 5))]
            title: String,
        }
    };
    assert_eq!(
        errors(bad),
        [
            "every must be at least 1",
            "`approximate` says how many increments make one write: #[document(approximate(every = 100))]",
            "unknown approximate option `each`; expected `every`",
            "`approximate` needs `every = N`: #[document(approximate(every = 100))]",
            "an approximate counter writes without a revision: a type with history cannot have one \
             (keep the counter in another type)",
            "an approximate counter writes without a revision: a type with history cannot have one \
             (keep the counter in another type)",
            "the `_id` cannot be an approximate counter",
            "an approximate counter must be an `i64` or `i32` field (it is written with `$inc`)",
        ]
    );
}

#[test]
fn an_average_needs_the_sum_and_the_count() {
    let input: DeriveInput = parse_quote! {
        #[document(collection = "reviews", computed(parent = Film, key = film_id, avg(rating = rating_avg)))]
        struct Review {
            #[serde(rename = "_id")]
            id: i64,
            film_id: i64,
            rating: i64,
        }
    };
    assert_eq!(
        errors(input),
        [
            "an average is kept from the sum and the count: declare `count = ...` and \
          `sum(rating = ...)` beside `avg(rating = rating_avg)`"
        ]
    );
}
