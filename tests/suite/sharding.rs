//! The targeting check (issue 18, first part): every command the bucket and outlier patterns
//! send, recorded with the driver's command monitoring on MongoDB, checked against MongoDB's
//! rule for collections sharded as `BucketSpec::shard_key` and `OutlierSpec::shard_keys` say.
//! Per-key operations must reach one shard; the collection-wide ones (analyze, verify,
//! migrate's scans, backfill) are scatter-gather by nature and are listed as such. Every
//! unique index the library creates must have the shard key as its prefix.

use std::collections::BTreeMap;

use bson::{doc, Bson, DateTime, Document};
use futures::TryStreamExt;
use pattern_core::adopt::{self, Options};
use pattern_core::{store::Store, Bucket, Outlier};
use pattern_tests::{command_targets, drop_db, recording_mongo_store, Targets};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    qty: i64,
    date: DateTime,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 5, time = "date", summary(sum = "qty"))]
#[allow(dead_code)]
struct History {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(
    collection = "books",
    threshold = 3,
    overflow = "books_extra",
    chunk = 2
)]
struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i64,
    #[outlier(items)]
    buyers: Vec<i64>,
}

fn trade(i: i64) -> Trade {
    Trade {
        qty: i,
        date: DateTime::from_millis(1_700_000_000_000 + i * 1000),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_per_key_operation_reaches_one_shard() {
    let (store, log) = recording_mongo_store("sharding_targets").await;
    // As behind a `mongos`: what a sharded cluster is sent (elsewhere an ingest's fill names
    // its bucket by `_id` alone, which no shard key routes).
    let store = store.with_routing(true);
    // The generated shard keys, as data.
    assert_eq!(
        (
            History::shard_keys()[0].collection,
            History::shard_keys()[0].field
        ),
        ("trades", "customerId")
    );
    let [main, overflow] = Book::shard_keys();
    assert_eq!(
        [
            (main.collection, main.field),
            (overflow.collection, overflow.field)
        ],
        [("books", "_id"), ("books_extra", "book_id")]
    );
    assert_eq!(
        History::shard_keys()[0].shard_collection_command("shop"),
        doc! {"shardCollection": "shop.trades", "key": {"customerId": 1}}
    );
    let keys: Vec<(String, String)> = (History::shard_keys().into_iter())
        .chain(Book::shard_keys())
        .map(|k| (k.collection.to_owned(), k.field.to_owned()))
        .collect();
    // What each operation's commands reach, worst first.
    let mut seen: BTreeMap<&str, Targets> = BTreeMap::new();
    let mut uniques: Vec<Document> = Vec::new();
    let mut offenders: Vec<String> = Vec::new();
    macro_rules! op {
        ($name:expr, $call:expr) => {{
            log.lock().unwrap().clear();
            $call;
            let mut worst = Targets::One;
            for (name, cmd) in log.lock().unwrap().iter() {
                if name == "createIndexes" {
                    for i in cmd
                        .get_array("indexes")
                        .into_iter()
                        .flatten()
                        .filter_map(Bson::as_document)
                    {
                        if i.get_bool("unique").unwrap_or(false) {
                            let mut i = i.clone();
                            i.insert("collection", cmd.get_str("createIndexes").unwrap_or(""));
                            uniques.push(i);
                        }
                    }
                }
                for (coll, t) in command_targets(name, cmd, &keys) {
                    if t == Targets::All {
                        offenders.push(format!("{}: {name} on {coll}: {cmd}", $name));
                    }
                    worst = worst.max(t);
                }
            }
            seen.insert($name, worst);
        }};
    }
    let k = 7i64;
    op!(
        "bucket push",
        History::push(&store, &k, trade(1)).await.unwrap()
    );
    op!(
        "bucket push_many",
        History::push_many(&store, &k, &(2..14).map(trade).collect::<Vec<_>>())
            .await
            .unwrap()
    );
    op!("bucket page", History::page(&store, &k, 2).await.unwrap());
    op!("bucket items", {
        let _: Vec<Trade> = History::items(&store, &k).try_collect().await.unwrap();
    });
    op!("bucket counts", History::counts(&store, &k).await.unwrap());
    op!("bucket range", {
        let _: Vec<Trade> = History::range(&store, &k, DateTime::from_millis(1_700_000_003_000)..)
            .try_collect()
            .await
            .unwrap();
    });
    op!(
        "bucket latest",
        History::latest(&store, &k, 3).await.unwrap()
    );
    op!(
        "bucket summary",
        History::summary(&store, &k, ..).await.unwrap()
    );
    let many: Vec<(i64, Trade)> = (0..40).map(|i| (i % 8, trade(100 + i))).collect();
    op!(
        "bucket ingest",
        History::ingest(&store, &many).await.unwrap()
    );
    op!("bucket backfill", History::backfill(&store).await.unwrap());
    op!("bucket verify", History::verify(&store).await.unwrap());
    let book = Book {
        id: 1,
        buyers: vec![1, 2],
    };
    op!("outlier save", book.save(&store).await.unwrap());
    op!(
        "outlier push",
        for b in 3..9 {
            Book::push(&store, &1, b).await.unwrap();
        }
    );
    op!("outlier typical", Book::typical(&store, &1).await.unwrap());
    op!("outlier full", Book::full(&store, &1).await.unwrap());
    op!(
        "outlier all items",
        Book::all_items(&store, &1).await.unwrap()
    );
    op!(
        "outlier count",
        Book::counts(&store, &1).await.map(|c| c.items).unwrap()
    );
    store
        .insert_one("books", doc! {"_id": 2i64, "buyers": [1i64, 2, 3, 4, 5, 6]})
        .await
        .unwrap();
    op!(
        "outlier migrate",
        adopt::migrate_outlier(
            &store,
            &Book::SPEC,
            &Options {
                verify: false,
                ..Options::default()
            }
        )
        .await
        .unwrap()
    );
    op!("outlier delete", Book::delete(&store, &1).await.unwrap());

    let table: Vec<String> = seen
        .iter()
        .map(|(op, t)| format!("{op:>20}: {t:?}"))
        .collect();
    eprintln!("{}", table.join("\n"));
    for o in &offenders {
        eprintln!("scatter: {}", &o[..o.len().min(400)]);
    }
    let scatter = ["bucket backfill", "bucket verify", "outlier migrate"];
    for (op, t) in &seen {
        if scatter.contains(op) {
            assert_eq!(
                *t,
                Targets::All,
                "{op} is documented as scatter-gather\n{}",
                table.join("\n")
            );
        } else if *op == "bucket ingest" {
            // Its find of the open buckets of the keys it has not seen lists them (`$in`);
            // every write of its bulk write carries one key.
            assert!(*t <= Targets::Listed, "{op}\n{}", table.join("\n"));
        } else {
            assert_eq!(
                *t,
                Targets::One,
                "{op} must reach one shard\n{}",
                table.join("\n")
            );
        }
    }
    // Every unique index has the shard key as its prefix.
    assert!(!uniques.is_empty());
    for i in &uniques {
        let coll = i.get_str("collection").unwrap();
        let (_, field) = keys
            .iter()
            .find(|(c, _)| c == coll)
            .expect("a sharded collection");
        let first = i.get_document("key").unwrap().keys().next().unwrap();
        assert_eq!(
            first, field,
            "unique index {i} does not start with the shard key"
        );
    }
    drop_db(&pattern_core::store::AnyStore::Mongo(store)).await;
}

/// Trees: the README recommends leaving a tree's collection unsharded (it lives on the
/// database's primary shard with `pattern_tree_versions`, so every operation and every
/// transaction reaches that one shard; the conformance suites check this on every command).
/// For a tree collection sharded on `_id` anyway, this is what each operation would reach, per
/// model: the table the README gives, checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_operations_on_a_tree_sharded_by_id() {
    use pattern_core::spec::{TreeModel, TreeSpec};
    use pattern_core::tree::raw;
    let (store, log) = recording_mongo_store("sharding_trees").await;
    assert!(TreeSpec::new("categories", TreeModel::ParentRefs)
        .shard_keys()
        .is_empty());
    let models = [
        ("parent_refs", TreeModel::ParentRefs),
        ("child_refs", TreeModel::ChildRefs),
        ("ancestors", TreeModel::Ancestors),
        ("paths", TreeModel::MaterializedPath),
        ("nested_set", TreeModel::NestedSet),
    ];
    let mut table: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (coll, model) in models {
        let spec = TreeSpec::new(coll, model);
        let keys = vec![(coll.to_owned(), "_id".to_owned())];
        let id = |s: &str| Bson::String(s.to_owned());
        let mut row: Vec<String> = Vec::new();
        macro_rules! op {
            ($name:expr, $call:expr) => {{
                log.lock().unwrap().clear();
                $call;
                let mut worst = Targets::One;
                // Shards a transaction touches: the node documents' `_id`s, and the primary
                // shard for the (unsharded) version document.
                let mut shards = std::collections::BTreeSet::new();
                for (name, cmd) in log.lock().unwrap().iter() {
                    for (c, r) in pattern_tests::command_reach(name, cmd, &keys) {
                        worst = worst.max(r.targets());
                        if cmd.get_bool("autocommit") == Ok(false) {
                            shards.insert(format!("{c} {r:?}"));
                        }
                    }
                }
                let txn = if shards.is_empty() {
                    String::new()
                } else if shards.len() == 1 {
                    " (txn: 1 shard)".to_owned()
                } else {
                    " (txn: several shards)".to_owned()
                };
                row.push(format!("{}: {worst:?}{txn}", $name));
            }};
        }
        op!(
            "insert_root",
            raw::insert_root(&store, &spec, doc! {"_id": "Books"})
                .await
                .unwrap()
        );
        for (child, parent) in [
            ("Programming", "Books"),
            ("Languages", "Programming"),
            ("Databases", "Programming"),
            ("MongoDB", "Databases"),
        ] {
            raw::insert_child(&store, &spec, doc! {"_id": child}, &id(parent))
                .await
                .unwrap();
        }
        op!(
            "insert_child",
            raw::insert_child(&store, &spec, doc! {"_id": "dbm"}, &id("Databases"))
                .await
                .unwrap()
        );
        op!(
            "get",
            raw::get(&store, &spec, &id("Databases")).await.unwrap()
        );
        op!(
            "parent",
            raw::parent(&store, &spec, &id("Databases")).await.unwrap()
        );
        op!(
            "children",
            raw::children(&store, &spec, &id("Programming"))
                .await
                .unwrap()
        );
        op!(
            "ancestors",
            raw::ancestors(&store, &spec, &id("MongoDB")).await.unwrap()
        );
        op!(
            "descendants",
            raw::descendants(&store, &spec, &id("Programming"), None)
                .await
                .unwrap()
        );
        op!(
            "depth",
            raw::depth(&store, &spec, &id("MongoDB")).await.unwrap()
        );
        op!("roots", raw::roots(&store, &spec).await.unwrap());
        op!(
            "move_to",
            raw::move_to(&store, &spec, &id("Databases"), Some(&id("Books")))
                .await
                .unwrap()
        );
        op!(
            "delete_node",
            raw::delete_node(&store, &spec, &id("dbm")).await.unwrap()
        );
        op!(
            "delete_subtree",
            raw::delete_subtree(&store, &spec, &id("Databases"))
                .await
                .unwrap()
        );
        table.insert(coll, row);
    }
    let shown: Vec<String> = table
        .iter()
        .map(|(m, row)| format!("{m:>12}: {}", row.join(", ")))
        .collect();
    eprintln!("{}", shown.join("\n"));
    // One: one shard. Listed: the shards of the values named (a `$graphLookup` on `_id`: one
    // per level). All: every shard. Every write's transaction spans the version document and
    // several nodes: on a tree sharded by `_id`, a cross-shard commit.
    let expected = [
        "   ancestors: insert_root: One, insert_child: One (txn: several shards), get: One, parent: Listed, children: All, ancestors: Listed, descendants: All, depth: One, roots: All, move_to: All (txn: several shards), delete_node: All (txn: several shards), delete_subtree: All (txn: several shards)",
        "  child_refs: insert_root: One, insert_child: One (txn: several shards), get: One, parent: All, children: Listed, ancestors: All, descendants: Listed, depth: All, roots: All, move_to: All (txn: several shards), delete_node: All (txn: several shards), delete_subtree: All (txn: several shards)",
        "  nested_set: insert_root: All (txn: several shards), insert_child: All (txn: several shards), get: One, parent: Listed, children: All, ancestors: Listed, descendants: All, depth: Listed, roots: All, move_to: All (txn: several shards), delete_node: All (txn: several shards), delete_subtree: All (txn: several shards)",
        " parent_refs: insert_root: One, insert_child: One (txn: several shards), get: One, parent: Listed, children: All, ancestors: Listed, descendants: All, depth: Listed, roots: All, move_to: Listed (txn: several shards), delete_node: All (txn: several shards), delete_subtree: All (txn: several shards)",
        "       paths: insert_root: One, insert_child: One (txn: several shards), get: One, parent: One, children: All, ancestors: Listed, descendants: All, depth: One, roots: All, move_to: All (txn: several shards), delete_node: All (txn: several shards), delete_subtree: All (txn: several shards)",
    ];
    assert_eq!(
        shown, expected,
        "sharding.md's table of tree operations on a tree sharded by _id"
    );
    drop_db(&pattern_core::store::AnyStore::Mongo(store)).await;
}

/// The check the conformance suites run on every command fails on what breaks the rule: a
/// write addressed by `_id` alone to a bucket collection, an undocumented collection-wide
/// read, a committed transaction over two keys' buckets, a unique index not led by the key. It passes the documented
/// collection-wide reads, aborted transactions and a migration batch's transaction.
#[tokio::test]
async fn the_suite_check_fails_on_a_command_that_breaks_the_rule() {
    use pattern_tests::check_suite_targeting;
    // The store served the bucket layout (its first use created the series' indexes): `trades`
    // is sharded on `customerId`.
    let created = History::SPEC.series().indexes();
    let indexes: Vec<Document> = (created.iter())
        .map(|i| {
            let key: Document = (i.keys.iter())
                .map(|(k, d)| (k.clone(), Bson::Int32(*d)))
                .collect();
            doc! {"key": key, "name": &i.name}
        })
        .collect();
    let served = doc! {"createIndexes": "trades", "indexes": indexes};
    let fails = |log: Vec<(&str, Document)>| {
        let log: Vec<(String, Document)> = std::iter::once(("createIndexes", served.clone()))
            .chain(log)
            .map(|(n, c)| (n.into(), c))
            .collect();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_suite_targeting("self-test", "db", &[], &log)
        }))
        .is_err()
    };
    let push =
        doc! {"update": "trades", "updates": [{"q": {"customerId": 1, "count": {"$lt": 5}}}]};
    assert!(!fails(vec![("update", push.clone())]));
    let by_id = doc! {"update": "trades", "updates": [{"q": {"_id": "1_1700000001", "count": 5}}]};
    assert!(fails(vec![("update", by_id)]), "a write by _id alone");
    let scan = doc! {"find": "trades", "filter": {}};
    assert!(fails(vec![("find", scan.clone())]), "an undocumented scan");
    let mut verify = scan;
    verify.insert("comment", "pattern scatter: verify");
    assert!(!fails(vec![("find", verify)]), "a documented scan");
    let index = |first: &str| {
        doc! {"createIndexes": "trades", "indexes": [{"key": {first: 1, "page": 1}, "name": "p", "unique": true}]}
    };
    assert!(!fails(vec![("createIndexes", index("customerId"))]));
    assert!(
        fails(vec![("createIndexes", index("page"))]),
        "a unique index without the shard key first"
    );
    let listed = doc! {"find": "trades", "filter": {"customerId": {"$in": [1, 2]}}};
    assert!(!fails(vec![("find", listed)]), "a $in on the key");
    let in_txn = |cmd: &Document, n: i64| {
        let mut c = cmd.clone();
        c.insert("lsid", doc! {"id": 7});
        c.insert("txnNumber", n);
        c.insert("autocommit", false);
        c
    };
    let other = doc! {"update": "trades", "updates": [{"q": {"customerId": 2}}]};
    let commit = doc! {"commitTransaction": 1};
    let abort = doc! {"abortTransaction": 1};
    assert!(
        fails(vec![
            ("update", in_txn(&push, 1)),
            ("update", in_txn(&other, 1)),
            ("commitTransaction", in_txn(&commit, 1)),
        ]),
        "a committed transaction over two keys"
    );
    assert!(!fails(vec![
        ("update", in_txn(&push, 2)),
        ("update", in_txn(&other, 2)),
        ("abortTransaction", in_txn(&abort, 2)),
    ]));
    assert!(!fails(vec![
        ("update", in_txn(&push, 3)),
        ("update", in_txn(&push, 3)),
        ("commitTransaction", in_txn(&commit, 3)),
    ]));
    let checkpoint = doc! {"update": "pattern_migrations", "updates": [{"q": {"_id": "m"}}]};
    assert!(
        !fails(vec![
            ("update", in_txn(&push, 4)),
            ("update", in_txn(&other, 4)),
            ("update", in_txn(&checkpoint, 4)),
            ("commitTransaction", in_txn(&commit, 4)),
        ]),
        "a migration batch (documented)"
    );
}
