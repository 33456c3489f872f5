//! The store contract's multi-document operations, the same on both stores: `update_many`
//! (plain, with `$pull`, and with each pipeline rewrite), the `$in`/`$or`/prefix filters,
//! `graph_lookup`, and snapshot transactions (commit, abort, snapshot reads, first-writer-wins
//! conflicts, the retrying `transaction()`, write skew).
//!
//! The work given to `transaction()` must return a future that owns what it uses besides the
//! transaction (`for<'t> FnMut(&'t Txn) -> BoxFuture<'t, _>` admits no other borrow), hence the
//! clones and `Arc`s moved into each attempt.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bson::{doc, Bson, Document};
use pattern_core::store::query::{
    Filter, FindOptions, Graph, GraphLookup, IndexSpec, Rewrite, Shift, Update,
};
use pattern_core::store::{transaction, AnyStore};
use pattern_core::{
    store::{AnyTxn, Store, Transaction},
    Error,
};
use pattern_tests::{assert_same_documents, documents, on_both_stores};

mod across;
mod batches;
mod conflicts;
mod expressions;
mod graph_lookup;
mod lifecycle;
mod push_sort;
mod update_many;

const C: &str = "things";

async fn insert_all(store: &impl Store, docs: Vec<Document>) {
    for d in docs {
        store.insert_one(C, d).await.expect("insert");
    }
}

async fn find_ids(store: &impl Store, filter: &Filter) -> Vec<Bson> {
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        ..FindOptions::default()
    };
    let docs = store.find(C, filter, &opts).await.expect("find");
    docs.iter()
        .map(|d| d.get("_id").cloned().unwrap())
        .collect()
}

async fn get(store: &impl Store, id: &str) -> Option<Document> {
    let docs = store
        .find(C, &Filter::eq("_id", id), &FindOptions::default())
        .await
        .expect("find");
    docs.into_iter().next()
}

fn ids(v: &[&str]) -> Vec<Bson> {
    v.iter().map(|s| Bson::String(s.to_string())).collect()
}

fn all() -> Filter {
    Filter::And(vec![])
}

fn set(field: &'static str, v: impl Into<Bson>) -> Update {
    Update {
        set: vec![(field.into(), v.into())],
        ..Update::default()
    }
}

fn inc(field: &'static str, by: i32) -> Update {
    Update {
        inc: vec![(field.into(), by)],
        ..Update::default()
    }
}

fn lookup(start: &str, with: &'static str, from: &'static str, to: &'static str) -> GraphLookup {
    GraphLookup {
        start: start.into(),
        start_with: with.into(),
        connect_from: from.into(),
        connect_to: to.into(),
        max_depth: None,
    }
}

/// The found documents' ids and depths, sorted.
fn found(g: &Graph) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = g
        .found
        .iter()
        .map(|(d, depth)| {
            let id = match d.get("_id") {
                Some(Bson::String(s)) => s.clone(),
                other => format!("{other:?}"),
            };
            (id, *depth)
        })
        .collect();
    v.sort();
    v
}

fn pairs(v: &[(&str, u32)]) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = v.iter().map(|(s, d)| (s.to_string(), *d)).collect();
    v.sort();
    v
}
