//! The layouts' validators (`ensure_validator`, `#[...(validate)]`), on both stores: writes that
//! break a layout are refused with `store::Error::SchemaViolation` (code 121 on MongoDB, from a raw
//! driver write too), the library's own writes all pass, "moderate" lets a foreign document
//! that fails the schema be repaired, and a refusal inside a transaction or a batch is reported
//! as the store reports its other per-document errors. Last, the differential corpus: both
//! stores decide alike on some 10,000 documents and updates under the same validators.

use bson::{doc, Bson, Document};
use pattern_core::adopt::{Options, Source};
use pattern_core::store;
use pattern_core::store::query::{Filter, Update};
use pattern_core::store::{transaction, AnyStore};
use pattern_core::tree::{self, Tree};
use pattern_core::{
    bucket, outlier,
    store::{Store, WriteOp},
    Bucket, Error, Outlier,
};
use pattern_tests::{documents, on_both_stores};
use serde::{Deserialize, Serialize};

mod corpus;
mod library;
mod moderate;
mod refusals;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    ticker: String,
    qty: i64,
    date: bson::DateTime,
}

/// The seed's bucket layout: ten trades per bucket, integer customer ids.
#[allow(dead_code)] // the derive's layout; never built
#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, validate)]
struct TradeHistory {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

/// Buckets that keep time bounds and a summary: every kept field in the schema.
#[allow(dead_code)] // the derive's layout; never built
#[derive(Bucket)]
#[bucket(
    collection = "ticks",
    size = 4,
    time = "date",
    summary(sum = "qty", max = "qty"),
    validate
)]
struct Ticks {
    #[bucket(key)]
    symbol: String,
    #[bucket(items)]
    ticks: Vec<Trade>,
}

/// Small threshold and chunks.
#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(
    collection = "feeds",
    overflow = "feed_overflow",
    threshold = 3,
    chunk = 4,
    validate
)]
struct Feed {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[outlier(items)]
    posts: Vec<String>,
}

fn feed(id: i64, posts: usize) -> Feed {
    Feed {
        id,
        title: format!("feed {id}"),
        posts: (0..posts).map(|i| format!("post{i}")).collect(),
    }
}

macro_rules! category {
    ($name:ident, $coll:literal, $model:literal) => {
        #[derive(pattern_core::Tree, Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[tree(collection = $coll, model = $model, validate)]
        struct $name {
            #[serde(rename = "_id")]
            name: String,
            label: String,
        }
        impl Named for $name {
            fn named(name: &str) -> Self {
                $name {
                    name: name.to_owned(),
                    label: name.to_lowercase(),
                }
            }
        }
    };
}

/// A node type that can be made from its name.
trait Named: Tree<Id = String> {
    fn named(name: &str) -> Self;
}

category!(ByParent, "by_parent", "parent_refs");
category!(ByChildren, "by_children", "child_refs");
category!(ByAncestors, "by_ancestors", "ancestors");
category!(ByPath, "by_path", "materialized_path");
category!(ByNestedSet, "by_nested_set", "nested_set");

/// Integer ids in nested sets (the ids' types come from the id field).
#[derive(pattern_core::Tree, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[tree(collection = "numbered", model = "nested_set", validate)]
struct Numbered {
    #[serde(rename = "_id")]
    id: i64,
}

fn trade(i: i64) -> Trade {
    Trade {
        ticker: "MDB".into(),
        qty: i,
        date: bson::DateTime::from_millis(1_698_335_223_000 + i * 1000),
    }
}

fn trades(n: usize) -> Vec<Bson> {
    (0..n as i64)
        .map(|i| bson::to_bson(&trade(i)).unwrap())
        .collect()
}

/// `$set` of `fields`.
fn set(fields: Vec<(&str, Bson)>) -> Update {
    let set = fields.into_iter().map(|(k, v)| (k.to_owned().into(), v));
    Update {
        set: set.collect(),
        ..Update::default()
    }
}

/// `$inc` of `field` by `n`.
fn inc(field: &str, n: i32) -> Update {
    Update {
        inc: vec![(field.to_owned().into(), n)],
        ..Update::default()
    }
}

/// `$push` of `items` to `field`.
fn push(field: &str, items: Vec<Bson>) -> Update {
    Update {
        push: vec![(field.to_owned().into(), items)],
        ..Update::default()
    }
}

/// `update` of the first document of `coll` matching `filter` (an upsert with `upsert`):
/// whether one matched.
async fn update(
    store: &AnyStore,
    coll: &str,
    filter: &Filter,
    mut update: Update,
    upsert: bool,
) -> Result<bool, store::Error> {
    let done = store.update_one(coll, filter, &mut update, upsert).await;
    done.map(|o| o.matched)
}

/// The refusal is the typed error for `coll`.
#[track_caller]
fn assert_refused<T: std::fmt::Debug>(r: Result<T, impl Into<Error>>, coll: &str) {
    match r.map_err(Into::into) {
        Err(Error::Store(store::Error::SchemaViolation { collection, .. }))
            if collection == coll => {}
        other => panic!("expected a SchemaViolation on `{coll}`, got {other:?}"),
    }
}

/// On MongoDB, the same document written with the driver itself is refused by the server with
/// code 121 (DocumentValidationFailure).
async fn raw_driver_refuses(store: &AnyStore, coll: &str, doc: Document) {
    let AnyStore::Mongo(m) = store else { return };
    let e = (m.database().collection::<Document>(coll))
        .insert_one(doc)
        .await
        .expect_err("the server accepted a document its validator refuses");
    let code = match &*e.kind {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => w.code,
        other => panic!("not a write error: {other:?}"),
    };
    assert_eq!(code, 121, "{e}");
}

/// Inserts `doc` through the store (refused, typed) and through the driver (code 121).
async fn refused_insert(store: &AnyStore, coll: &str, doc: Document) {
    assert_refused(store.insert_one(coll, doc.clone()).await, coll);
    raw_driver_refuses(store, coll, doc).await;
}

/// Every document of `coll` passes `schema` as an insert would check it: copied into a
/// collection validated by the same schema, each one accepted.
async fn all_pass(
    store: &AnyStore,
    coll: &str,
    schema: &pattern_core::store::query::Schema,
) -> usize {
    let check = format!("{coll}_check");
    store.set_validator(&check, schema).await.unwrap();
    let docs = documents(store, coll).await;
    for d in &docs {
        if let Err(e) = store.insert_one(&check, d.clone()).await {
            panic!("a document the library wrote to `{coll}` fails its schema: {e}\n{d}");
        }
    }
    docs.len()
}
