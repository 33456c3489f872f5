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
use pattern_core::{Bucket, Outlier, Store};
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
    let keys: Vec<(String, String)> = std::iter::once(History::SPEC.shard_key())
        .chain(Book::SPEC.shard_keys())
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
            Book::push_buyers(&store, &1, b).await.unwrap();
        }
    );
    op!("outlier typical", Book::typical(&store, &1).await.unwrap());
    op!("outlier full", Book::full(&store, &1).await.unwrap());
    op!(
        "outlier all items",
        Book::all_buyers(&store, &1).await.unwrap()
    );
    op!(
        "outlier count",
        Book::count_buyers(&store, &1).await.unwrap()
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
    drop_db(&pattern_core::AnyStore::Mongo(store)).await;
}
