//! The layouts' validators (`ensure_validator`, `#[...(validate)]`), on both stores: writes that
//! break a layout are refused with `Error::SchemaViolation` (code 121 on MongoDB, from a raw
//! driver write too), the library's own writes all pass, "moderate" lets a foreign document
//! that fails the schema be repaired, and a refusal inside a transaction or a batch is reported
//! as the store reports its other per-document errors. Last, the differential corpus: both
//! stores decide alike on some 10,000 documents and updates under the same validators.

use bson::{doc, Bson, Document};
use pattern_core::adopt::{Options, Source};
use pattern_core::store::query::{Filter, Update};
use pattern_core::tree::{self, Tree};
use pattern_core::{
    bucket, outlier,
    store::{Store, WriteOp},
    transaction, AnyStore, Bucket, Error, Outlier,
};
use pattern_tests::{documents, on_both_stores};
use serde::{Deserialize, Serialize};

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
) -> pattern_core::Result<bool> {
    let done = store.update_one(coll, filter, &mut update, upsert).await;
    done.map(|o| o.matched)
}

/// The refusal is the typed error for `coll`.
#[track_caller]
fn assert_refused<T: std::fmt::Debug>(r: pattern_core::Result<T>, coll: &str) {
    match r {
        Err(Error::SchemaViolation { collection, .. }) if collection == coll => {}
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

/// The seed's buckets: a raw write of a bucket with `count: 11` at `size = 10`, or an array of
/// 11, or the key or count of another type, is refused; so is an update that would break a
/// valid bucket. The seed's own layout (no `page`) passes.
async fn bucket_refusals(store: AnyStore) {
    TradeHistory::ensure_validator(&store).await.unwrap();
    let base = doc! {"_id": "123_1698335223", "customerId": 123_i64, "count": 10, "history": trades(10), "page": 1_i64};
    let with = |k: &str, v: Bson| {
        let mut d = base.clone();
        d.insert(k, v);
        d
    };
    refused_insert(&store, "trades", with("count", Bson::Int32(11))).await;
    refused_insert(&store, "trades", with("count", Bson::Int64(-1))).await;
    refused_insert(&store, "trades", with("history", Bson::Array(trades(11)))).await;
    refused_insert(&store, "trades", with("count", Bson::Double(3.0))).await;
    refused_insert(
        &store,
        "trades",
        with("customerId", Bson::String("123".into())),
    )
    .await;
    refused_insert(&store, "trades", with("page", Bson::Int64(0))).await;
    let mut no_key = base.clone();
    no_key.remove("customerId");
    refused_insert(&store, "trades", no_key).await;
    // The seed's layout, no page, an Int32 key: accepted.
    let seed = doc! {"_id": "123_1698349623", "customerId": 123, "count": 2, "history": trades(2)};
    store.insert_one("trades", seed).await.unwrap();
    store.insert_one("trades", base.clone()).await.unwrap();
    // Updates of a valid bucket past the layout.
    let by_id = Filter::eq("_id", "123_1698335223");
    let past_size = update(&store, "trades", &by_id, inc("count", 1), false);
    assert_refused(past_size.await, "trades");
    let pushed = update(&store, "trades", &by_id, push("history", trades(1)), false);
    assert_refused(pushed.await, "trades");
    let replaced = with("count", Bson::Int32(12));
    assert_refused(
        store.replace_one("trades", &by_id, replaced, false).await,
        "trades",
    );
    // Nothing of them was written.
    let docs = documents(&store, "trades").await;
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0], base);
}

/// The outlier's main documents and overflow chunks.
async fn outlier_refusals(store: AnyStore) {
    Feed::ensure_validator(&store).await.unwrap();
    let main = doc! {"_id": 1_i64, "title": "t", "posts": ["a", "b", "c"], "has_extras": true};
    let with = |d: &Document, k: &str, v: Bson| {
        let mut d = d.clone();
        d.insert(k, v);
        d
    };
    refused_insert(
        &store,
        "feeds",
        with(&main, "posts", bson::bson!(["a", "b", "c", "d"])),
    )
    .await;
    refused_insert(
        &store,
        "feeds",
        with(&main, "has_extras", Bson::String("yes".into())),
    )
    .await;
    refused_insert(&store, "feeds", with(&main, "has_extras", Bson::Null)).await;
    refused_insert(
        &store,
        "feeds",
        with(&main, "_id", Bson::String("1".into())),
    )
    .await;
    refused_insert(
        &store,
        "feeds",
        with(&main, "posts", Bson::String("a".into())),
    )
    .await;
    store.insert_one("feeds", main.clone()).await.unwrap();
    let chunk = doc! {"_id": bson::oid::ObjectId::new(), "feed_id": 1_i64, "count": 4, "posts_extra": ["d", "e", "f", "g"], "seq": 1_i64};
    let ov = "feed_overflow";
    refused_insert(
        &store,
        ov,
        with(
            &chunk,
            "posts_extra",
            bson::bson!(["d", "e", "f", "g", "h"]),
        ),
    )
    .await;
    refused_insert(&store, ov, with(&chunk, "count", Bson::Int32(5))).await;
    refused_insert(
        &store,
        ov,
        with(&chunk, "feed_id", Bson::String("1".into())),
    )
    .await;
    refused_insert(&store, ov, with(&chunk, "seq", Bson::Int32(0))).await;
    let mut seed_layout = chunk.clone();
    seed_layout.remove("count");
    seed_layout.remove("seq");
    refused_insert(&store, ov, seed_layout).await;
    store.insert_one(ov, chunk).await.unwrap();
    // A push past the threshold straight into the main array.
    let by_id = Filter::eq("_id", 1_i64);
    let pushed = update(
        &store,
        "feeds",
        &by_id,
        push("posts", vec!["d".into()]),
        false,
    );
    assert_refused(pushed.await, "feeds");
}

/// Each tree model: a node whose model field has the wrong type is refused.
async fn tree_refusals(store: AnyStore) {
    ByParent::ensure_validator(&store).await.unwrap();
    ByChildren::ensure_validator(&store).await.unwrap();
    ByAncestors::ensure_validator(&store).await.unwrap();
    ByPath::ensure_validator(&store).await.unwrap();
    ByNestedSet::ensure_validator(&store).await.unwrap();
    Numbered::ensure_validator(&store).await.unwrap();
    let cases: Vec<(&str, Document)> = vec![
        ("by_parent", doc! {"_id": "a", "parent": 5}),
        ("by_parent", doc! {"_id": "a", "parent": ["b"]}),
        ("by_parent", doc! {"_id": 1, "parent": Bson::Null}),
        ("by_children", doc! {"_id": "a", "children": "b"}),
        ("by_children", doc! {"_id": "a", "children": [1]}),
        ("by_children", doc! {"_id": "a", "children": Bson::Null}),
        (
            "by_ancestors",
            doc! {"_id": "a", "ancestors": "Books", "parent": "Books"},
        ),
        (
            "by_ancestors",
            doc! {"_id": "a", "ancestors": ["Books"], "parent": true},
        ),
        ("by_path", doc! {"_id": "a", "path": 5}),
        ("by_path", doc! {"_id": 5, "path": Bson::Null}),
        (
            "by_nested_set",
            doc! {"_id": "a", "parent": Bson::Null, "right": 2},
        ),
        (
            "by_nested_set",
            doc! {"_id": "a", "parent": Bson::Null, "left": "1", "right": 2},
        ),
        (
            "by_nested_set",
            doc! {"_id": "a", "parent": Bson::Null, "left": 1.5, "right": 2},
        ),
        (
            "by_nested_set",
            doc! {"_id": "a", "parent": ["x"], "left": 1, "right": 2},
        ),
        (
            "numbered",
            doc! {"_id": 1, "parent": "x", "left": 1, "right": 2},
        ),
    ];
    for (coll, d) in cases {
        refused_insert(&store, coll, d).await;
    }
    let fine: Vec<(&str, Document)> = vec![
        ("by_parent", doc! {"_id": "MongoDB", "parent": "Databases"}),
        ("by_parent", doc! {"_id": "Books", "parent": Bson::Null}),
        (
            "by_children",
            doc! {"_id": "Databases", "children": ["MongoDB", "dbm"]},
        ),
        (
            "by_ancestors",
            doc! {"_id": "MongoDB", "ancestors": ["Books", "Programming", "Databases"], "parent": "Databases"},
        ),
        (
            "by_path",
            doc! {"_id": "MongoDB", "path": ",Books,Programming,Databases,"},
        ),
        // The seed's nested-set root: `parent: 0`.
        (
            "by_nested_set",
            doc! {"_id": "Books", "parent": 0, "left": 1, "right": 12},
        ),
        (
            "numbered",
            doc! {"_id": 7_i64, "parent": 0, "left": 1, "right": 2},
        ),
    ];
    for (coll, d) in fine {
        store.insert_one(coll, d).await.unwrap();
    }
}

/// With `validate`, every write of the library installs the validators first and passes them:
/// pushes, batches, ingest across keys, backfill, a migration from a flat collection; every
/// bucket written passes the schema.
async fn library_bucket_writes_pass(store: AnyStore) {
    for i in 0..25 {
        TradeHistory::push(&store, &1, trade(i)).await.unwrap();
    }
    let many: Vec<Trade> = (0..23).map(trade).collect();
    TradeHistory::push_many(&store, &2, &many).await.unwrap();
    let pairs: Vec<(i64, Trade)> = (0..60).map(|i| (i % 7, trade(i))).collect();
    assert_eq!(TradeHistory::ingest(&store, &pairs).await.unwrap(), 60);
    // The validator is installed: a raw bucket over the size is refused.
    let over = doc! {"customerId": 9_i64, "count": 11, "history": trades(11)};
    assert_refused(store.insert_one("trades", over).await, "trades");
    // A migration from a flat collection (Int32 keys, as a shell writes them).
    let flat: Vec<Document> = (0..35)
        .map(|i| doc! {"customerId": 100 + i % 3, "ticker": "MDB", "qty": i, "date": bson::DateTime::from_millis(1_700_000_000_000 + i64::from(i) * 1000)})
        .collect();
    store.insert_many("flat", flat).await.unwrap();
    let from = Source {
        collection: "flat",
        key_field: "customerId",
        time_field: "date",
    };
    let report = TradeHistory::migrate(&store, &from, &Options::default())
        .await
        .unwrap();
    assert_eq!(report.moved_items, 35);
    let checked = all_pass(&store, "trades", &bucket::schemas::<TradeHistory>()[0].1).await;
    assert!(checked > 10, "{checked} buckets");

    // Kept bounds and summaries: pushes, then a bucket of the seed's layout without them,
    // which backfill completes.
    for i in 0..9 {
        Ticks::push(&store, "MDB", trade(i)).await.unwrap();
    }
    Ticks::push_many(&store, "AAPL", &many).await.unwrap();
    let old = doc! {"_id": "OLD_1", "symbol": "OLD", "count": 2, "ticks": trades(2)};
    store.insert_one("ticks", old).await.unwrap();
    assert!(Ticks::backfill(&store).await.unwrap() >= 1);
    let checked = all_pass(&store, "ticks", &bucket::schemas::<Ticks>()[0].1).await;
    assert!(checked > 5);
    let completed = documents(&store, "ticks").await;
    let old = completed
        .iter()
        .find(|d| d.get_str("_id") == Ok("OLD_1"))
        .unwrap();
    assert_eq!(old.get_bool("bounded"), Ok(true), "{old}");
}

/// Outlier writes: save (over the threshold), pushes past it, batches, delete, and an
/// in-place migration of documents written over the threshold before the validator existed.
async fn library_outlier_writes_pass(store: AnyStore) {
    // Written before the validator, over the threshold: "moderate" lets the migration rewrite
    // them.
    for id in 10..13 {
        let raw = doc! {"_id": id, "title": "old", "posts": (0..9).map(|i| format!("p{i}")).collect::<Vec<_>>()};
        store.insert_one("feeds", raw).await.unwrap();
    }
    feed(1, 9).save(&store).await.unwrap();
    feed(2, 1).save(&store).await.unwrap();
    for i in 0..7 {
        Feed::push(&store, &2, format!("more{i}")).await.unwrap();
    }
    let batch: Vec<String> = (0..10).map(|i| format!("b{i}")).collect();
    Feed::push_many(&store, &2, &batch).await.unwrap();
    feed(3, 0).save(&store).await.unwrap();
    Feed::push_many(&store, &3, &batch).await.unwrap();
    assert!(Feed::delete(&store, &3).await.unwrap());
    let report = Feed::migrate(&store, &Options::default()).await.unwrap();
    assert_eq!(report.changed, 3);
    assert_eq!(Feed::counts(&store, &2).await.map(|c| c.items).unwrap(), 18);
    assert_eq!(Feed::counts(&store, &11).await.map(|c| c.items).unwrap(), 9);
    for (coll, schema) in outlier::schemas::<Feed>() {
        all_pass(&store, coll, &schema).await;
    }
    // Installed: a raw main document over the threshold is refused.
    let over = doc! {"_id": 99_i64, "posts": ["a", "b", "c", "d"]};
    assert_refused(store.insert_one("feeds", over).await, "feeds");
}

/// Every tree model: inserts, moves, saves, deletes and a repair all pass the validator.
async fn library_tree_writes_pass(store: AnyStore) {
    async fn ops<T: Named>(store: &AnyStore) {
        let root =
            |s: &'static str| async move { tree::insert_root::<T, _>(store, &T::named(s)).await };
        let child = |s: &'static str, p: &'static str| async move {
            tree::insert_child::<T, _, str>(store, p, &T::named(s)).await
        };
        root("Books").await.unwrap();
        child("Programming", "Books").await.unwrap();
        child("Databases", "Programming").await.unwrap();
        child("Languages", "Programming").await.unwrap();
        child("MongoDB", "Databases").await.unwrap();
        child("dbm", "Databases").await.unwrap();
        root("Other").await.unwrap();
        let move_to = |p: Option<&'static str>| tree::move_to::<T, _, str>(store, "Databases", p);
        move_to(Some("Other")).await.unwrap();
        move_to(None).await.unwrap();
        move_to(Some("Languages")).await.unwrap();
        tree::save::<T, _>(store, &T::named("dbm")).await.unwrap();
        tree::delete_node::<T, _, str>(store, "Programming")
            .await
            .unwrap();
        let deleted = tree::delete_subtree::<T, _, str>(store, "MongoDB").await;
        assert_eq!(deleted.unwrap(), 1);
        let repair = tree::repair::<T, _>(store).await.unwrap();
        assert!(repair.fixed.is_empty(), "{repair:?}");
        assert!(tree::verify::<T, _>(store)
            .await
            .unwrap()
            .defects
            .is_empty());
        let checked = all_pass(store, T::SPEC.collection, &tree::schemas::<T>()[0].1).await;
        assert_eq!(checked, 5, "{}", T::SPEC.collection);
        // Installed by the first write.
        let wrong = doc! {"_id": "x", "parent": 1, "children": 1, "ancestors": 1, "path": 1, "left": 1.5, "right": 2};
        assert_refused(
            store.insert_one(T::SPEC.collection, wrong).await,
            T::SPEC.collection,
        );
    }
    ops::<ByParent>(&store).await;
    ops::<ByChildren>(&store).await;
    ops::<ByAncestors>(&store).await;
    ops::<ByPath>(&store).await;
    ops::<ByNestedSet>(&store).await;
    for id in [1_i64, 2, 3] {
        let node = Numbered { id };
        match id {
            1 => node.insert_root(&store).await.unwrap(),
            _ => node.insert_child(&store, &1).await.unwrap(),
        }
    }
    Numbered::move_to(&store, &3, Some(&2)).await.unwrap();
    all_pass(&store, "numbered", &tree::schemas::<Numbered>()[0].1).await;
}

/// "Moderate": a bucket written over the layout before the validator existed can still be
/// updated or replaced (and so repaired); once repaired it is checked again. An insert (an
/// upsert's too) is always checked.
async fn moderate_repairs_foreign_documents(store: AnyStore) {
    let broken =
        doc! {"_id": "5_1", "customerId": 5_i64, "count": 15, "history": trades(15), "page": 1_i64};
    let other = doc! {"_id": "6_1", "customerId": 6_i64, "count": 20, "history": trades(20)};
    store.insert_one("trades", broken.clone()).await.unwrap();
    store.insert_one("trades", other.clone()).await.unwrap();
    TradeHistory::ensure_validator(&store).await.unwrap();
    let by_id = Filter::eq("_id", "5_1");
    // Still invalid after it: not checked.
    let note = set(vec![("note", "seen".into())]);
    assert!(update(&store, "trades", &by_id, note, false).await.unwrap());
    // The repair: the count set, the array cut to the size.
    let repair = set(vec![("count", 10.into()), ("history", trades(10).into())]);
    assert!(update(&store, "trades", &by_id, repair, false)
        .await
        .unwrap());
    // Valid now: an update or a replacement that breaks it again is refused.
    let past_size = update(&store, "trades", &by_id, inc("count", 1), false);
    assert_refused(past_size.await, "trades");
    assert_refused(
        store
            .replace_one("trades", &by_id, broken.clone(), false)
            .await,
        "trades",
    );
    // A replacement of a document that fails the schema is not checked either.
    let mut still_broken = other.clone();
    still_broken.insert("count", 19);
    let other_id = Filter::eq("_id", "6_1");
    let replaced = store
        .replace_one("trades", &other_id, still_broken, false)
        .await;
    assert!(replaced.unwrap().matched);
    // The broken documents, inserted again: refused.
    store
        .delete_many("trades", &Filter::And(vec![]))
        .await
        .unwrap();
    assert_refused(store.insert_one("trades", broken).await, "trades");
    assert_refused(store.insert_one("trades", other).await, "trades");
    // An upsert inserts: checked.
    let new = Filter::eq("_id", "7_1");
    let upsert = update(
        &store,
        "trades",
        &new,
        set(vec![("count", 11.into())]),
        true,
    );
    assert_refused(upsert.await, "trades");
    assert!(documents(&store, "trades").await.is_empty());
}

/// A refusal inside a transaction fails the transaction with the typed error and keeps
/// nothing of it; in an ordered batch it is the failed write's error, the writes before it
/// applied, none after.
async fn refusals_in_transactions_and_batches(store: AnyStore) {
    TradeHistory::ensure_validator(&store).await.unwrap();
    let good = |id: &str| doc! {"_id": id, "customerId": 1_i64, "count": 1, "history": trades(1)};
    let bad = |id: &str| doc! {"_id": id, "customerId": 1_i64, "count": 11, "history": trades(1)};
    let r = transaction(&store, |tx| {
        Box::pin(async move {
            tx.insert_one("trades", good("t1")).await?;
            tx.insert_one("trades", bad("t2")).await?;
            Ok(())
        })
    })
    .await;
    assert_refused(r, "trades");
    assert!(documents(&store, "trades").await.is_empty());
    let ops = vec![
        WriteOp::Insert(good("b1")),
        WriteOp::Insert(bad("b2")),
        WriteOp::Insert(good("b3")),
    ];
    let outcome = store.write_batch("trades", ops).await;
    assert_eq!(outcome.applied, 1);
    assert_refused(outcome.error.map_or(Ok(()), Err), "trades");
    let ids: Vec<Bson> = documents(&store, "trades")
        .await
        .iter()
        .map(|d| d.get("_id").unwrap().clone())
        .collect();
    assert_eq!(ids, [Bson::String("b1".into())]);
    // An update in a batch, past the layout.
    let ops = vec![WriteOp::Update {
        filter: Filter::eq("_id", "b1"),
        update: Box::new(inc("count", 10)),
        upsert: false,
    }];
    let outcome = store.write_batch("trades", ops).await;
    assert_eq!(outcome.applied, 0);
    assert_refused(outcome.error.map_or(Ok(()), Err), "trades");
    // An ingest whose fill of a foreign bucket (count 0, but ten items) would pass the size:
    // the refusal inside `Error::Ingest`, the items after it listed unwritten.
    let foreign =
        doc! {"_id": "x_1", "customerId": 77_i64, "count": 0, "history": trades(10), "page": 1_i64};
    store.insert_one("trades", foreign).await.unwrap();
    let pairs: Vec<(i64, Trade)> = (0..20).map(|i| (77, trade(i))).collect();
    match TradeHistory::ingest(&store, &pairs).await {
        Err(Error::Ingest {
            source, unwritten, ..
        }) => {
            assert!(
                matches!(*source, Error::SchemaViolation { .. }),
                "{source:?}"
            );
            assert_eq!(unwritten, (0..20).collect::<Vec<_>>());
        }
        other => panic!("{other:?}"),
    }
}

/// Installing again replaces the validator; the memo makes the lazy install once per store,
/// and a collection that did not exist is created with it.
async fn install_is_idempotent(store: AnyStore) {
    TradeHistory::ensure_validator(&store).await.unwrap();
    TradeHistory::ensure_validator(&store).await.unwrap();
    Feed::ensure_validator(&store).await.unwrap();
    let over = doc! {"customerId": 1_i64, "count": 11, "history": []};
    assert_refused(store.insert_one("trades", over).await, "trades");
    if let AnyStore::Mongo(m) = &store {
        let names = m.database().list_collection_names().await.unwrap();
        for c in ["trades", "feeds", "feed_overflow"] {
            assert!(names.iter().any(|n| n == c), "{c} not created: {names:?}");
        }
        let info = m
            .database()
            .run_command(doc! {"listCollections": 1, "filter": {"name": "trades"}})
            .await
            .unwrap();
        let first = &info
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()[0];
        let options = first
            .as_document()
            .unwrap()
            .get_document("options")
            .unwrap();
        assert_eq!(
            options.get_str("validationLevel"),
            Ok("moderate"),
            "{options}"
        );
        assert_eq!(
            options.get_str("validationAction"),
            Ok("error"),
            "{options}"
        );
        assert_eq!(
            options.get_document("validator").unwrap(),
            &doc! {"$jsonSchema": bucket::schemas::<TradeHistory>()[0].1.to_document()}
        );
    }
}

// These tests write foreign documents by `_id` on purpose (what other tools do): not checked
// against the targeting rule; the library's operations they also run are, in their own suites.
on_both_stores!(
    untargeted:
    bucket_refusals,
    outlier_refusals,
    tree_refusals,
    library_bucket_writes_pass,
    library_outlier_writes_pass,
    library_tree_writes_pass,
    moderate_repairs_foreign_documents,
    refusals_in_transactions_and_batches,
    install_is_idempotent,
);

/// A deterministic generator (xorshift64*), so that a run's corpus is the next run's.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse().expect("a decimal"))
}

/// The values a corpus sets a field to, around `n` (the layout's size, threshold or chunk):
/// each number type at -1, 0, 1, n-1, n, n+1 and at its extremes, fractions, -0, NaN and the
/// infinities (double and decimal), null, booleans, strings, dates, ObjectIds, documents, and
/// arrays of n-1, n and n+1 numbers or strings; `ids_only`: the scalars an `_id` may hold.
fn pool(n: i64, ids_only: bool) -> Vec<Bson> {
    let mut v = Vec::new();
    for x in [-1, 0, 1, n - 1, n, n + 1] {
        v.push(Bson::Int32(x as i32));
        v.push(Bson::Int64(x));
        v.push(Bson::Double(x as f64));
        v.push(dec(&x.to_string()));
    }
    v.extend([
        Bson::Int32(i32::MIN),
        Bson::Int32(i32::MAX),
        Bson::Int64(i64::MIN),
        Bson::Int64(i64::MAX),
        Bson::Double(n as f64 + 0.5),
        Bson::Double(n as f64 - 1e-9),
        Bson::Double(-0.0),
        Bson::Double(f64::NAN),
        Bson::Double(f64::INFINITY),
        Bson::Double(f64::NEG_INFINITY),
        Bson::Double(9.3e18),
        dec(&format!("{n}.0")),
        dec(&format!("{n}.000000000000000000000000001")),
        dec(&format!("{}E-1", n * 10 + 1)),
        dec("-0"),
        dec("NaN"),
        dec("Infinity"),
        dec("-Infinity"),
        Bson::Null,
        Bson::Boolean(true),
        Bson::Boolean(false),
        Bson::String(String::new()),
        Bson::String("x".into()),
        Bson::String(n.to_string()),
        Bson::String(",Books,".into()),
        Bson::DateTime(bson::DateTime::from_millis(1_698_335_223_434)),
        Bson::ObjectId(bson::oid::ObjectId::from_bytes([7; 12])),
        Bson::Document(doc! {}),
        Bson::Document(doc! {"a": 1}),
        Bson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes: vec![1, 2],
        }),
        Bson::Timestamp(bson::Timestamp {
            time: 1,
            increment: 1,
        }),
    ]);
    if ids_only {
        return v;
    }
    let ints = |k: i64| Bson::Array((0..k).map(Bson::Int64).collect());
    let strings = |k: i64| Bson::Array((0..k).map(|i| Bson::String(format!("s{i}"))).collect());
    v.extend([
        Bson::Array(vec![]),
        Bson::Array(vec![Bson::Null]),
        bson::bson!([1, "x"]),
        bson::bson!([[1]]),
        bson::bson!([{"a": 1}]),
        ints((n - 1).max(0)),
        ints(n),
        ints(n + 1),
        strings((n - 1).max(0)),
        strings(n),
        strings(n + 1),
    ]);
    v
}

/// One layout of the corpus: its collection, schema, a document it accepts, and the `n` its
/// boundaries are around.
struct Case {
    coll: &'static str,
    schema: pattern_core::store::query::Schema,
    base: Document,
    n: i64,
}

/// A schema that is none of the layouts', for the keywords' semantics beyond them: `minimum`
/// and `maximum` without a type (any number is compared, anything else passes), `number`,
/// `maxItems` without a type, `items` of several types, a nested object with its own
/// `required`.
fn probe() -> pattern_core::store::query::Schema {
    use pattern_core::spec::BsonType;
    use pattern_core::store::query::Schema;
    Schema::object()
        .require("r")
        .property("n", Schema::default().range(Some(0), Some(3)))
        .property("t", Schema::of(&[BsonType::Number]))
        .property(
            "a",
            Schema::default()
                .max_items(3)
                .items(Schema::of(&[BsonType::String, BsonType::Null])),
        )
        .property(
            "o",
            Schema::object()
                .require("x")
                .property("x", Schema::of(&[BsonType::Int]).range(None, Some(3))),
        )
}

fn cases() -> Vec<Case> {
    let date = Bson::DateTime(bson::DateTime::from_millis(1_698_335_223_434));
    let tree = |coll: &'static str, schema, fields: Document| {
        let mut base = doc! {"_id": "node", "label": "a node"};
        base.extend(fields);
        Case {
            coll,
            schema,
            base,
            n: 3,
        }
    };
    vec![
        Case {
            coll: "trades",
            schema: bucket::schemas::<TradeHistory>()[0].1.clone(),
            base: doc! {"_id": "1_1", "customerId": 1_i64, "count": 2, "history": trades(2), "page": 1_i64},
            n: 10,
        },
        Case {
            coll: "ticks",
            schema: bucket::schemas::<Ticks>()[0].1.clone(),
            base: doc! {"_id": "MDB_1", "symbol": "MDB", "count": 1, "ticks": trades(1), "page": 1_i64,
            "bounded": true, "date_min": date.clone(), "date_max": date, "summarized": ["qty_sum", "qty_max"],
            "qty_sum": 5_i64, "qty_max": 5_i64},
            n: 4,
        },
        Case {
            coll: "feeds",
            schema: outlier::schemas::<Feed>()[0].1.clone(),
            base: doc! {"_id": 1_i64, "title": "t", "posts": ["a"], "has_extras": true},
            n: 3,
        },
        Case {
            coll: "feed_overflow",
            schema: outlier::schemas::<Feed>()[1].1.clone(),
            base: doc! {"_id": 1, "feed_id": 1_i64, "count": 1, "posts_extra": ["x"], "seq": 1_i64},
            n: 4,
        },
        tree(
            "by_parent",
            tree::schemas::<ByParent>()[0].1.clone(),
            doc! {"parent": "Books"},
        ),
        tree(
            "by_children",
            tree::schemas::<ByChildren>()[0].1.clone(),
            doc! {"children": ["a", "b"]},
        ),
        tree(
            "by_ancestors",
            tree::schemas::<ByAncestors>()[0].1.clone(),
            doc! {"ancestors": ["Books"], "parent": "Books"},
        ),
        tree(
            "by_path",
            tree::schemas::<ByPath>()[0].1.clone(),
            doc! {"path": ",Books,"},
        ),
        tree(
            "by_nested_set",
            tree::schemas::<ByNestedSet>()[0].1.clone(),
            doc! {"parent": "Books", "left": 2, "right": 3},
        ),
        Case {
            coll: "numbered",
            schema: tree::schemas::<Numbered>()[0].1.clone(),
            base: doc! {"_id": 5_i64, "parent": 1_i64, "left": 2_i64, "right": 3_i64},
            n: 3,
        },
        Case {
            coll: "probe",
            schema: probe(),
            base: doc! {"_id": 1, "r": 1, "n": 2, "t": 1.5, "a": ["x"], "o": {"x": 1}},
            n: 3,
        },
    ]
}

/// The fields a case's corpus changes: `_id`, every field the schema names, one it does not.
fn fields_of(case: &Case) -> Vec<String> {
    let mut fields: Vec<String> = vec!["_id".into(), "other".into()];
    let named = (case.schema.properties.iter().map(|(k, _)| k)).chain(&case.schema.required);
    for f in named {
        if !fields.contains(f) {
            fields.push(f.clone());
        }
    }
    fields
}

/// `base` with `field` set to `value` (`None`: removed).
fn mutated(base: &Document, changes: &[(&str, Option<&Bson>)]) -> Document {
    let mut d = base.clone();
    for (field, value) in changes {
        match value {
            Some(v) => {
                d.insert(*field, (*v).clone());
            }
            None => {
                d.remove(*field);
            }
        }
    }
    d
}

/// SecantusDB's `minimum` and `maximum` let a Decimal128 or a NaN pass, which MongoDB
/// compares (a decimal by its value; NaN passes no bound): whether `doc` of the probe differs
/// only by that (the store refuses it, and accepts it with `n: 1`).
async fn secantus_bound_deviation(memory: &AnyStore, doc: &Document) -> bool {
    let decimal_or_nan = match doc.get("n") {
        Some(Bson::Decimal128(_)) => true,
        Some(Bson::Double(x)) => x.is_nan(),
        _ => false,
    };
    let mut fixed = doc.clone();
    fixed.insert("n", 1);
    memory.set_validator("probe_check", &probe()).await.unwrap();
    let ok = memory.insert_one("probe_check", fixed).await.is_ok();
    memory
        .delete_many("probe_check", &Filter::And(vec![]))
        .await
        .unwrap();
    decimal_or_nan && ok
}

/// Whether the server is SecantusDB (its `buildInfo` says `secantusVersion`).
async fn is_secantus(store: &AnyStore) -> bool {
    let AnyStore::Mongo(m) = store else {
        return false;
    };
    let info = m
        .database()
        .run_command(doc! {"buildInfo": 1})
        .await
        .unwrap();
    info.contains_key("secantusVersion")
}

/// Whether a store accepted a write: `Ok(true)`, refused by the validator: `Ok(false)`; any
/// other error is the corpus's mistake.
fn decision(r: pattern_core::Result<()>, doc: &Document) -> bool {
    match r {
        Ok(()) => true,
        Err(Error::SchemaViolation { .. }) => false,
        Err(e) => panic!("{e} for {doc}"),
    }
}

/// Both stores, under the same validators, decide alike on every document of the corpus: each
/// layout's valid document with one field set to every value of [`pool`] or removed (inserted,
/// and as an update of the valid document), then 300 documents per layout with one to four
/// fields changed at random (seeded). On SecantusDB, the probe's documents that differ only by
/// its known deviation ([`secantus_bound_deviation`]) are counted apart; on any other server,
/// and on every layout's schema, no document may differ.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn differential_corpus() {
    let mongo = AnyStore::Mongo(pattern_tests::mongo_store("differential_corpus").await);
    let memory = pattern_tests::memory_store();
    let mut rng = Rng(0x5eed_0fc0_ffee);
    let mut tally = Tally {
        secantus: is_secantus(&mongo).await,
        ..Tally::default()
    };
    for case in cases() {
        for s in [&memory, &mongo] {
            s.set_validator(case.coll, &case.schema).await.unwrap();
        }
        let (ids, values) = (pool(case.n, true), pool(case.n, false));
        let fields = fields_of(&case);
        let mut corpus: Vec<Vec<(&str, Option<&Bson>)>> = Vec::new();
        for f in &fields {
            let pool = if f == "_id" { &ids } else { &values };
            corpus.extend(pool.iter().map(|v| vec![(f.as_str(), Some(v))]));
            if f != "_id" {
                corpus.push(vec![(f.as_str(), None)]);
            }
        }
        let single = corpus.len();
        for _ in 0..300 {
            let changes = (0..1 + rng.below(4))
                .map(|_| {
                    let f = fields[rng.below(fields.len())].as_str();
                    match (f, rng.below(values.len() + 1)) {
                        ("_id", i) => (f, Some(&ids[i % ids.len()])),
                        (_, i) if i == values.len() => (f, None),
                        (_, i) => (f, Some(&values[i])),
                    }
                })
                .collect();
            corpus.push(changes);
        }
        let (accepted_before, total_before) = (tally.accepted, tally.total);
        for (i, changes) in corpus.iter().enumerate() {
            let doc = mutated(&case.base, changes);
            tally.insert(&case, &doc, [&memory, &mongo]).await;
            // The single changes again, as an update of the valid document.
            if let ([(field, value)], true) = (changes.as_slice(), i < single) {
                if *field != "_id" {
                    let change = match value {
                        Some(v) => set(vec![(field, (*v).clone())]),
                        None => Update {
                            unset: vec![field.to_string().into()],
                            ..Update::default()
                        },
                    };
                    tally.update(&case, &doc, change, [&memory, &mongo]).await;
                }
            }
        }
        println!(
            "{:>14}: {} documents inserted ({single} with one field changed, 300 at random) \
             and {} updates, {} writes accepted",
            case.coll,
            corpus.len(),
            tally.total - total_before - corpus.len(),
            tally.accepted - accepted_before,
        );
    }
    let Tally {
        total,
        accepted,
        differ,
        deviations,
        ..
    } = &tally;
    println!(
        "{total} writes, {accepted} accepted and {} refused by both stores alike, {} decided differently; \
         {deviations} probe documents refused by the in-memory store and accepted by SecantusDB (a Decimal128 \
         or NaN against minimum/maximum, which SecantusDB lets pass and MongoDB compares)",
        total - accepted - differ.len() - deviations,
        differ.len()
    );
    assert!(
        differ.is_empty(),
        "the stores decide differently:\n{}",
        differ.join("\n")
    );
    pattern_tests::drop_db(&mongo).await;
}

/// The differential corpus's decisions so far.
#[derive(Default)]
struct Tally {
    secantus: bool,
    total: usize,
    /// Writes the in-memory store accepted.
    accepted: usize,
    /// The writes the stores decided differently.
    differ: Vec<String>,
    /// Probe documents that differ only by SecantusDB's known deviation.
    deviations: usize,
}

impl Tally {
    /// Inserts `doc` into both stores (then deletes it where accepted) and records the
    /// decisions.
    async fn insert(&mut self, case: &Case, doc: &Document, stores: [&AnyStore; 2]) {
        let mut seen = [false; 2];
        for (s, ok) in stores.into_iter().zip(&mut seen) {
            *ok = decision(s.insert_one(case.coll, doc.clone()).await, doc);
            s.delete_many(case.coll, &Filter::And(vec![]))
                .await
                .unwrap();
        }
        self.record(case, "insert", doc, seen, stores[0]).await;
    }

    /// Applies `change` to the case's valid document in both stores and records the
    /// decisions (`doc`: what it makes of it).
    async fn update(
        &mut self,
        case: &Case,
        doc: &Document,
        change: Update,
        stores: [&AnyStore; 2],
    ) {
        let (mut seen, all) = ([false; 2], Filter::And(vec![]));
        for (s, ok) in stores.into_iter().zip(&mut seen) {
            s.insert_one(case.coll, case.base.clone()).await.unwrap();
            let r = update(s, case.coll, &all, change.clone(), false).await;
            *ok = decision(r.map(|_| ()), doc);
            s.delete_many(case.coll, &all).await.unwrap();
        }
        self.record(case, "update to", doc, seen, stores[0]).await;
    }

    async fn record(
        &mut self,
        case: &Case,
        what: &str,
        doc: &Document,
        seen: [bool; 2],
        memory: &AnyStore,
    ) {
        self.total += 1;
        self.accepted += usize::from(seen[0]);
        if seen[0] == seen[1] {
            return;
        }
        if self.secantus && case.coll == "probe" && secantus_bound_deviation(memory, doc).await {
            self.deviations += 1;
        } else {
            let [m, s] = seen;
            self.differ.push(format!(
                "{} {what} {doc}: memory {m}, MongoDB {s}",
                case.coll
            ));
        }
    }
}
