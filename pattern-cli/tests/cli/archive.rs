//! `pattern archive bucket`: migrated buckets archived before a moment, a dry run first.

use pattern_core::store::query::{Filter, FindOptions};
use pattern_core::store::Store;

use crate::support::data::{trades_10_customers, MIGRATE_TRADES};
use crate::support::{show, u, Db, Rng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_moves_the_old_buckets_and_checks_both() {
    let db = Db::new("cli_archive").await;
    let mut rng = Rng::seeded();
    // Customer c: 10 (c + 1) trades, one a minute from 2024-01-01T00:00Z; 10 a bucket.
    db.insert("trades", trades_10_customers(&mut rng)).await;
    let mut migrate = vec!["--quiet"];
    migrate.extend_from_slice(&MIGRATE_TRADES);
    let out = db.run(&migrate);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let archive = |dry: bool| {
        let mut args = vec![
            "archive",
            "bucket",
            "--collection",
            "trade_history",
            "--to",
            "trade_archive",
            "--time",
            "date",
            "--before",
            "2024-01-01T00:30:00Z",
            "--key",
            "customerId",
            "--size",
            "10",
        ];
        if dry {
            args.push("--dry-run");
        }
        db.json(&args, 0)
    };
    // Buckets ending before minute 30: pages 1-3, but not a key's newest (customers 0, 1, 2
    // keep theirs): 0 + 1 + 2 + 7 x 3 = 24 move, 3 stay.
    let dry = archive(true);
    assert_eq!(
        (u(&dry, "/report/moved"), u(&dry, "/report/newest_kept")),
        (24, 3),
        "{dry:#}"
    );
    let all = FindOptions::default();
    let archived = db
        .store
        .find("trade_archive", &Filter::and([]), &all)
        .await
        .unwrap();
    assert!(archived.is_empty(), "a dry run writes nothing");
    let done = archive(false);
    assert_eq!(
        (u(&done, "/report/moved"), u(&done, "/report/items")),
        (24, 240),
        "{done:#}"
    );
    assert_eq!(
        done.pointer("/defects"),
        Some(&serde_json::json!([])),
        "{done:#}"
    );
    let archived = db
        .store
        .find("trade_archive", &Filter::and([]), &all)
        .await
        .unwrap();
    assert_eq!(archived.len(), 24);
    // Run again: nothing left to move.
    let again = archive(false);
    assert_eq!(u(&again, "/report/moved"), 0, "{again:#}");
    db.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_document_moves_old_unpinned_documents() {
    let db = Db::new("cli_archive_docs").await;
    let base = bson::DateTime::parse_rfc3339_str("2024-01-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    // 20 orders a day apart; every fifth pinned.
    let orders: Vec<bson::Document> = (0..20i64)
        .map(|i| {
            bson::doc! {
                "_id": i, "placed": bson::DateTime::from_millis(base + i * 86_400_000),
                "pinned": i % 5 == 0, "total": i,
            }
        })
        .collect();
    db.insert("orders", orders).await;
    let archive = |dry: bool| {
        let mut args = vec![
            "archive",
            "document",
            "--collection",
            "orders",
            "--to",
            "orders_2024",
            "--age",
            "placed",
            "--keep",
            "pinned",
            "--before",
            "2024-01-11T00:00:00Z",
        ];
        if dry {
            args.push("--dry-run");
        }
        db.json(&args, 0)
    };
    // Days 0-9 are old: 10, of which 0 and 5 pinned.
    let dry = archive(true);
    assert_eq!(u(&dry, "/report/moved"), 8, "{dry:#}");
    let all = FindOptions::default();
    let archived = db
        .store
        .find("orders_2024", &Filter::and([]), &all)
        .await
        .unwrap();
    assert!(archived.is_empty(), "a dry run writes nothing");
    let done = archive(false);
    assert_eq!(u(&done, "/report/moved"), 8, "{done:#}");
    assert_eq!(
        done.pointer("/defects"),
        Some(&serde_json::json!([])),
        "{done:#}"
    );
    let live = db
        .store
        .find("orders", &Filter::and([]), &all)
        .await
        .unwrap();
    let mut ids: Vec<i64> = live.iter().map(|d| d.get_i64("_id").unwrap()).collect();
    ids.sort();
    assert_eq!(ids, [0, 5, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    let bad = db.run(&[
        "archive",
        "document",
        "--collection",
        "orders",
        "--to",
        "x",
        "--age",
        "a.b",
        "--before",
        "2024-01-11T00:00:00Z",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", show(&bad));
    db.drop().await;
}
