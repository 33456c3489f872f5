//! `pattern analyze outlier|bucket|versions`.

use bson::{doc, Document};
use serde_json::{json, Value};

use crate::support::data::{books_1_to_100, trades_10_customers};
use crate::support::{show, stdout, u, Db, Rng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_reports_distributions_and_suggestions() {
    let db = Db::new("cli_analyze").await;
    let mut rng = Rng::seeded();
    db.insert("books", books_1_to_100()).await;
    db.insert("trades", trades_10_customers(&mut rng)).await;

    // Outlier, JSON.
    let args = [
        "analyze",
        "outlier",
        "--collection",
        "books",
        "--array",
        "customers_purchased",
        "--threshold",
        "50",
    ];
    let r = db.json(&args, 0);
    assert_eq!(u(&r, "/documents"), 100);
    assert_eq!(u(&r, "/lengths/p50"), 50);
    assert_eq!(u(&r, "/lengths/max"), 100);
    assert_eq!(u(&r, "/over_threshold"), 50);
    assert_eq!(u(&r, "/flagged"), 0);
    // The 99th percentile, 99 items, rounded up.
    assert_eq!(u(&r, "/suggestion/value"), 100, "{r:#}");
    assert_eq!(r["largest"]["id"], Value::from(100));
    // Human.
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    for want in [
        "Collection `books`, array `customers_purchased`: 100 documents",
        "Items per document:",
        "p50 50",
        "max 100",
        "Over the threshold of 50: 50 documents",
        "Suggested threshold: 100",
        "#",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }

    // Bucket over the flat collection.
    let args = [
        "analyze",
        "bucket",
        "--collection",
        "trades",
        "--key",
        "customerId",
        "--size",
        "20",
    ];
    let r = db.json(&args, 0);
    assert_eq!(u(&r, "/documents"), 550);
    assert_eq!(u(&r, "/keys"), 10);
    assert_eq!(u(&r, "/items"), 550);
    assert_eq!(u(&r, "/per_key/p50"), 50);
    assert_eq!(u(&r, "/per_key/max"), 100);
    assert_eq!(u(&r, "/buckets_at_size"), 30);
    assert_eq!(u(&r, "/suggestion/value"), 50, "{r:#}");
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    for want in [
        "550 documents, 10 keys, 550 items",
        "Items per key:",
        "p50 50",
        "Buckets at size 20: 30",
        "Suggested bucket size: 50",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }

    // Migrated, then analyzed as a bucket collection.
    let migrate = [
        "--quiet",
        "migrate",
        "bucket",
        "--from",
        "trades",
        "--to",
        "trade_history",
        "--key",
        "customerId",
        "--time",
        "date",
        "--size",
        "20",
    ];
    let out = db.run(&migrate);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r = db.json(
        &[
            "analyze",
            "bucket",
            "--collection",
            "trade_history",
            "--key",
            "customerId",
            "--buckets",
            "--size",
            "20",
        ],
        0,
    );
    assert_eq!(u(&r, "/documents"), 30);
    assert_eq!(u(&r, "/keys"), 10);
    assert_eq!(u(&r, "/items"), 550);
    assert_eq!(u(&r, "/per_key/p50"), 50);
    assert_eq!(u(&r, "/per_key/max"), 100);
    assert_eq!(u(&r, "/buckets_at_size"), 30);
    db.drop().await;
}

/// `analyze versions`: the documents per schema version, those without the field and those
/// holding no number there, on any collection (no type needed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_versions_counts_each_schema_version() {
    let db = Db::new("cli_versions").await;
    let mut people: Vec<Document> = Vec::new();
    for (i, v) in [1, 2, 2, 3, 3, 3].into_iter().enumerate() {
        people.push(doc! {"_id": i as i32, "name": format!("p{i}"), "schema_version": v});
    }
    // An Int64 and an integral Double count as their version.
    people.push(doc! {"_id": 10, "name": "long", "schema_version": 2i64});
    people.push(doc! {"_id": 11, "name": "double", "schema_version": 3.0});
    people.push(doc! {"_id": 20, "name": "before versioning"});
    people.push(doc! {"_id": "s", "name": "typo", "schema_version": "2"});
    db.insert("people", people).await;

    let args = ["analyze", "versions", "--collection", "people"];
    let r = db.json(&args, 0);
    assert_eq!(r["collection"], "people");
    assert_eq!(r["field"], "schema_version");
    assert_eq!(u(&r, "/documents"), 10);
    assert_eq!(r["versions"], json!([[1, 1], [2, 3], [3, 4]]), "{r:#}");
    assert_eq!(u(&r, "/unversioned"), 1);
    assert_eq!(u(&r, "/not_numbers"), 1);
    assert_eq!(r["examples"], json!(["\"s\""]), "{r:#}");

    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    for want in [
        "Collection `people`, version field `schema_version`: 10 documents",
        "version 1                   1   10.0%",
        "version 2                   3   30.0%",
        "version 3                   4   40.0%",
        "unversioned                 1   10.0%",
        "not a number                1   10.0%  (_id \"s\")",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }

    // Another field: every document is unversioned there.
    let r = db.json(
        &[
            "analyze",
            "versions",
            "--collection",
            "people",
            "--field",
            "v",
        ],
        0,
    );
    assert_eq!(r["field"], "v");
    assert_eq!(r["versions"], json!([]));
    assert_eq!(u(&r, "/unversioned"), 10);
    assert_eq!(u(&r, "/not_numbers"), 0);
    db.drop().await;
}

/// A collection that is not there is a usage error (exit 2) naming the ones that are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_versions_refuses_a_missing_collection() {
    let db = Db::new("cli_versions_missing").await;
    db.insert("people", vec![doc! {"_id": 1, "schema_version": 1}])
        .await;
    let args = ["analyze", "versions", "--collection", "peple"];
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no collection `peple`") && err.contains("people"),
        "{err}"
    );
    let r = db.json(&args, 2);
    assert_eq!(u(&r, "/code"), 2);
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.contains("no collection `peple`")),
        "{r:#}"
    );
    db.drop().await;
}
