//! `pattern migrate`: dry runs, and a migration the data stops.

use bson::{doc, DateTime};
use pattern_core::store::Store;
use serde_json::Value;

use crate::support::data::{books_1_to_100, trades_10_customers};
use crate::support::{show, stdout, u, Db, Rng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_runs_write_nothing_and_report_the_counts() {
    let db = Db::new("cli_dry_run").await;
    let mut rng = Rng::seeded();
    db.insert("books", books_1_to_100()).await;
    db.insert("trades", trades_10_customers(&mut rng)).await;
    let books_before = db.raw("books", &["_id"]).await;
    let trades_before = db.raw("trades", &["_id"]).await;
    let trade_indexes = db.store.index_names("trades").await.unwrap();

    let r = db.json(
        &[
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
            "--sum",
            "qty",
            "--dry-run",
        ],
        0,
    );
    assert_eq!(r["dry_run"], Value::Bool(true));
    assert_eq!(u(&r, "/scanned"), 550);
    assert_eq!(u(&r, "/moved_items"), 550);
    assert_eq!(u(&r, "/changed"), 10);
    assert_eq!(u(&r, "/written"), 30);
    assert_eq!(u(&r, "/batches"), 0);
    assert_eq!(r["verified"], Value::Null);

    let r = db.json(
        &[
            "migrate",
            "outlier",
            "--collection",
            "books",
            "--array",
            "customers_purchased",
            "--threshold",
            "50",
            "--overflow",
            "extra_books",
            "--owner",
            "book_id",
            "--chunk",
            "20",
            "--dry-run",
        ],
        0,
    );
    assert_eq!(r["dry_run"], Value::Bool(true));
    assert_eq!(u(&r, "/changed"), 50);
    assert_eq!(
        u(&r, "/moved_items"),
        (51..=100u64).map(|i| i - 50).sum::<u64>()
    );
    assert_eq!(
        u(&r, "/written"),
        (51..=100u64).map(|i| (i - 50).div_ceil(20)).sum::<u64>()
    );

    // The human report says it is a dry run.
    let out = db.run(&[
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
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).contains("dry run: nothing written"),
        "{}",
        show(&out)
    );

    assert_eq!(db.count("trade_history").await, 0);
    assert_eq!(db.count("extra_books").await, 0);
    assert_eq!(db.count(pattern_core::adopt::CHECKPOINTS).await, 0);
    assert_eq!(db.raw("books", &["_id"]).await, books_before);
    assert_eq!(db.raw("trades", &["_id"]).await, trades_before);
    assert_eq!(db.store.index_names("trades").await.unwrap(), trade_indexes);
    db.drop().await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_stopped_by_the_data_exits_5() {
    let db = Db::new("cli_stopped").await;
    // 100 items of 200 KB: their bucket of 100 would be 20 MB, over the 16 MiB limit.
    let base = DateTime::parse_rfc3339_str("2024-01-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    let docs = (0..100i64)
        .map(|i| doc! {"customerId": 1, "date": DateTime::from_millis(base + i * 1000), "blob": "x".repeat(200_000)})
        .collect();
    db.insert("trades", docs).await;
    let args = [
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
        "100",
    ];
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: the migration stopped: "), "{err}");
    assert!(err.contains("would exceed 16 MiB"), "{err}");
    assert!(
        err.contains("running the same command again resumes"),
        "{err}"
    );
    let r = db.json(&args, 5);
    assert_eq!(r["code"], 5);
    assert_eq!(db.count("trade_history").await, 0);
    db.drop().await;
}
