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

/// `analyze shapes`: a product catalogue written by another tool (`type` its discriminator,
/// two documents without one, a status field that also has two values but tells no shape
/// apart, cables' technical attributes as `{k, v}` pairs): the discriminator found, each
/// value's count and field set, the attribute keys with counts and value types.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_shapes_finds_the_discriminator_and_attribute_keys() {
    let db = Db::new("cli_shapes").await;
    let mut products: Vec<Document> = Vec::new();
    for i in 0..6 {
        let status = if i % 2 == 0 { "live" } else { "draft" };
        products.push(doc! {"_id": i, "type": "book", "status": status, "name": "b", "author": "a", "isbn": "x"});
    }
    for i in 6..9 {
        products.push(doc! {"_id": i, "type": "shirt", "status": "live", "name": "s", "size": "M", "colour": "red"});
    }
    products.push(
        doc! {"_id": 9, "type": "cable", "status": "live", "name": "c",
        "specs": [{"k": "amps", "v": 10}, {"k": "metres", "v": 2.5}]},
    );
    products.push(
        doc! {"_id": 10, "type": "cable", "status": "draft", "name": "c", "note": "n",
        "specs": [{"k": "amps", "v": 16}, {"k": "plug", "v": "EU"}]},
    );
    products.push(doc! {"_id": 11, "status": "live", "name": "untyped"});
    db.insert("products", products).await;

    let args = ["analyze", "shapes", "--collection", "products"];
    let r = db.json(&args, 0);
    assert_eq!(u(&r, "/documents"), 12);
    let d = &r["discriminator"];
    assert_eq!(d["field"], "type", "{r:#}");
    assert_eq!(d["found"], true);
    assert_eq!(u(d, "/missing"), 1);
    assert_eq!(d["values"][0]["value"], "book");
    assert_eq!(u(d, "/values/0/count"), 6);
    assert_eq!(
        d["values"][0]["always"],
        json!(["author", "isbn", "name", "status"])
    );
    assert_eq!(d["values"][2]["value"], "cable");
    assert_eq!(d["values"][2]["sometimes"], json!([["note", 1]]));
    let a = &r["attributes"][0];
    assert_eq!(a["field"], "specs");
    assert_eq!(u(a, "/documents"), 2);
    assert_eq!(
        a["keys"],
        json!([
            ["amps", 2, ["int"]],
            ["metres", 1, ["double"]],
            ["plug", 1, ["string"]]
        ])
    );

    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    for want in [
        "discriminator `type` (found)",
        "book                            6  fields: author, isbn, name, status",
        "attributes `specs`: 2 documents",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
    // Given: another field's values, counted as asked.
    let r = db.json(
        &[
            "analyze",
            "shapes",
            "--collection",
            "products",
            "--field",
            "status",
        ],
        0,
    );
    assert_eq!(r["discriminator"]["field"], "status");
    assert_eq!(r["discriminator"]["found"], false);
    assert_eq!(u(&r, "/discriminator/values/0/count"), 8);
    db.drop().await;
}
