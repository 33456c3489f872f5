//! `pattern analyze outlier|bucket`.

use serde_json::Value;

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
