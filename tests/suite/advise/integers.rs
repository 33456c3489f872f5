//! One integer mapping in every finding's code, as the chapter documents it: `int` → `i32`,
//! `long` → `i64`, keys, `_id`s and attribute values included. Every seed of one finding kind
//! (and `folders`, a tree of integer `_id`s) stored with all its integers as `int`, then as
//! `long`, on both stores: each finding's code names the one Rust integer and never the other.

use bson::{Bson, Document};
use pattern_core::adopt::advise::{advise, Pattern, DEFAULT_SAMPLE};
use pattern_core::adopt::Options;
use pattern_core::store::AnyStore;
use pattern_core::store::Store;
use pattern_tests::advise as seed;
use pattern_tests::on_both_stores;

#[derive(Clone, Copy, Debug)]
enum Width {
    Int32,
    Int64,
}

/// `b` with every integer, at any depth, stored as `width`.
fn stored_as(b: Bson, width: Width) -> Bson {
    let n = match b {
        Bson::Int32(n) => i64::from(n),
        Bson::Int64(n) => n,
        Bson::Document(d) => return Bson::Document(doc_as(d, width)),
        Bson::Array(a) => return Bson::Array(a.into_iter().map(|x| stored_as(x, width)).collect()),
        other => return other,
    };
    match width {
        Width::Int32 => Bson::Int32(i32::try_from(n).expect("the seeds' integers fit an int")),
        Width::Int64 => Bson::Int64(n),
    }
}

fn doc_as(d: Document, width: Width) -> Document {
    d.into_iter()
        .map(|(k, v)| (k, stored_as(v, width)))
        .collect()
}

/// The words of some code (identifiers and keywords, `i32` among them).
fn words(code: &str) -> Vec<&str> {
    code.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect()
}

async fn every_finding_types_integers_alike(store: AnyStore, width: Width) {
    let source = pattern_tests::memory_store();
    seed::seed_all(&source).await;
    seed::folders(&source).await;
    for c in source.collection_names().await.expect("names") {
        let docs: Vec<Document> = (pattern_tests::documents(&source, &c).await.into_iter())
            .map(|d| doc_as(d, width))
            .collect();
        store.insert_many(&c, docs).await.expect("copy");
    }
    let (rust, other) = match width {
        Width::Int32 => ("i32", "i64"),
        Width::Int64 => ("i64", "i32"),
    };
    let a = advise(&store, &[], DEFAULT_SAMPLE, &Options::default())
        .await
        .expect("advise");
    let mut typed: Vec<(&str, Pattern)> = Vec::new();
    for c in &a.collections {
        for f in &c.findings {
            let Some(code) = f.code.as_deref() else {
                continue;
            };
            let w = words(code);
            assert!(
                !w.contains(&other),
                "`{}` {:?} with every integer a {width:?}: {other} in\n{code}",
                c.collection,
                f.pattern
            );
            if w.contains(&rust) {
                typed.push((c.collection.as_str(), f.pattern));
            }
        }
    }
    use Pattern::*;
    // Every finding kind with code, each typing an integer (`categories`, a tree of string
    // `_id`s, has none).
    assert_eq!(
        typed,
        [
            ("customers", SchemaVersioning),
            ("folders", Tree),
            ("parts", Attribute),
            ("people", SchemaVersioning),
            ("products", Polymorphic),
            ("sales", Outlier),
            ("trades", Bucket),
        ]
    );
}

async fn int_is_i32_in_every_finding(store: AnyStore) {
    every_finding_types_integers_alike(store, Width::Int32).await;
}

async fn long_is_i64_in_every_finding(store: AnyStore) {
    every_finding_types_integers_alike(store, Width::Int64).await;
}

on_both_stores!(int_is_i32_in_every_finding, long_is_i64_in_every_finding);
