//! The library's own writes pass the validators, and what they write passes the schema.

use super::*;

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

// These tests write foreign documents by `_id` on purpose (what other tools do): not checked
// against the targeting rule; the library's operations they also run are, in their own suites.
/// Buckets with roll-ups (`rollup`, `validate`): the buckets and the roll-ups, in their own
/// collection with its own validator, pass on every path that writes them (pushes, a push of
/// several, an ingest across keys, backfill); a roll-up written among the buckets (as an older
/// version kept them) is refused, and so is one in the roll-ups' collection whose count is not
/// a number or whose `_id` is not of the key's type.
async fn library_rollup_writes_pass(store: AnyStore) {
    #[allow(dead_code)] // the derive's layout; never built
    #[derive(Bucket)]
    #[bucket(
        collection = "rolled",
        size = 4,
        time = "date",
        summary(sum = "qty"),
        rollup,
        validate
    )]
    struct Rolled {
        #[bucket(key)]
        symbol: String,
        #[bucket(items)]
        ticks: Vec<Trade>,
    }
    for i in 0..9 {
        Rolled::push(&store, "MDB", trade(i)).await.unwrap();
    }
    let many: Vec<Trade> = (0..7).map(trade).collect();
    Rolled::push_many(&store, "AAPL", &many).await.unwrap();
    let pairs: Vec<(String, Trade)> = (0..12).map(|i| (format!("K{}", i % 3), trade(i))).collect();
    Rolled::ingest(&store, &pairs).await.unwrap();
    Rolled::backfill(&store).await.unwrap();
    assert_eq!(Rolled::summary(&store, "MDB", ..).await.unwrap().items, 9);
    let checked = all_pass(&store, "rolled", &bucket::schemas::<Rolled>()[0].1).await;
    assert_eq!(checked, 3 + 2 + 3, "{checked} buckets");
    let all = Filter::and([]);
    let rollups = store
        .find("rolled.rollups", &all, &Default::default())
        .await;
    assert_eq!(rollups.unwrap().len(), 5, "a roll-up a key");
    for bad in [
        doc! {"_id": "Y", "rollup_items": "many"},
        doc! {"_id": 5, "rollup_items": 1_i64},
        doc! {"_id": "Z", "qty_sum": "a lot"},
    ] {
        assert_refused(
            store.insert_one("rolled.rollups", bad).await,
            "rolled.rollups",
        );
    }
    let neither = doc! {"symbol": "X", "page": "rollup", "count": 1, "ticks": trades(1)};
    assert_refused(store.insert_one("rolled", neither).await, "rolled");
}

on_both_stores!(
    untargeted:
    library_bucket_writes_pass,
    library_outlier_writes_pass,
    library_tree_writes_pass,
    library_rollup_writes_pass,
);
