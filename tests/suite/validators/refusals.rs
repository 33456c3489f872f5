//! Raw writes that break a layout, refused with each layout's validator installed.

use super::*;

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

// These tests write foreign documents by `_id` on purpose (what other tools do): not checked
// against the targeting rule; the library's operations they also run are, in their own suites.
on_both_stores!(
    untargeted:
    bucket_refusals,
    outlier_refusals,
    tree_refusals,
);
