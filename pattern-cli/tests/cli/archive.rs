//! `pattern archive bucket`: migrated buckets archived before a moment, a dry run first.

use pattern_core::document::{self, ArchiveAt};
use pattern_core::store::query::{Filter, FindOptions};
use pattern_core::store::Store;

use crate::support::data::{trades_10_customers, MIGRATE_TRADES};
use crate::support::kill::kill_after_batches;
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

/// 20 orders a day apart from 2024-01-01 (its epoch milliseconds, returned); every fifth
/// pinned.
async fn seed_orders(db: &Db) -> i64 {
    let base = bson::DateTime::parse_rfc3339_str("2024-01-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    let orders: Vec<bson::Document> = (0..20i64)
        .map(|i| {
            bson::doc! {
                "_id": i, "placed": bson::DateTime::from_millis(base + i * 86_400_000),
                "pinned": i % 5 == 0, "total": i,
            }
        })
        .collect();
    db.insert("orders", orders).await;
    base
}

/// `archive document` of `orders` into `orders_2024` by `placed`, kept by `pinned`.
fn archive_orders(before: &str) -> Vec<&str> {
    vec![
        "archive",
        "document",
        "--collection",
        "orders",
        "--to",
        "orders_2024",
        "--age",
        "placed",
        "--pin",
        "pinned",
        "--before",
        before,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_document_moves_old_unpinned_documents() {
    let db = Db::new("cli_archive_docs").await;
    seed_orders(&db).await;
    let archive = |dry: bool| {
        let mut args = archive_orders("2024-01-11T00:00:00Z");
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

/// A run killed part-way (the library's, after one batch of 3): the command refuses another
/// `--before` while the pass is part-way (exit 2, nothing moved), resumes with the same one
/// and says so, with the pass's total; the checkpoint ends finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_document_resumes_a_killed_run() {
    let db = Db::new("cli_archive_resume").await;
    let base = seed_orders(&db).await;
    // Old: days 0-9 but the pinned 0 and 5, 8 documents; the killed run moves 1, 2, 3.
    let store = db.store.clone();
    let before = bson::DateTime::from_millis(base + 10 * 86_400_000);
    let died = tokio::spawn(async move {
        let to = ArchiveAt {
            store: &store,
            collection: "orders_2024",
        };
        let opts = pattern_tests::dying("archive", 3, 3);
        let fields = ("placed", Some("pinned"));
        document::archive_layout(&store, "orders", fields, to, before, &opts).await
    })
    .await;
    assert!(died.is_err(), "the run dies");
    let other = db.run(&archive_orders("2024-01-05T00:00:00Z"));
    assert_eq!(other.status.code(), Some(2), "{}", show(&other));
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(err.contains("is part-way with other settings"), "{err}");
    let all = FindOptions::default();
    let archived = (db.store.find("orders_2024", &Filter::and([]), &all)).await;
    assert_eq!(archived.unwrap().len(), 3, "nothing more moved");
    let mut quiet = vec!["--quiet"];
    quiet.extend(archive_orders("2024-01-11T00:00:00Z"));
    let done = db.run(&quiet);
    assert_eq!(done.status.code(), Some(0), "{}", show(&done));
    let text = String::from_utf8_lossy(&done.stdout);
    assert!(
        text.contains("5 documents old enough and not kept, moved 5"),
        "{text}"
    );
    assert!(text.contains("resumed after _id 3 "), "{text}");
    assert!(text.contains("moved 8 in all"), "{text}");
    assert!(
        text.contains("server session(s) of an earlier run's moves first"),
        "{text}"
    );
    let cp = pattern_tests::checkpoint(&db.store, "archive:orders:orders_2024").await;
    let cp = cp.expect("the checkpoint");
    assert_eq!(
        (cp.get_str("state"), cp.get_i64("moved")),
        (Ok("finished"), Ok(8))
    );
    db.drop().await;
}

/// A run stopped in its first batch, after its moves (1, 2, 4) and before its checkpoint
/// recorded them (a validator refuses the checkpoint's write: the store as a kill there
/// leaves it): the command resumes from the start, says so, and counts those 3 in the pass's
/// total.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_document_counts_a_first_batch_killed_before_its_checkpoint() {
    let db = Db::new("cli_archive_first").await;
    let base = seed_orders(&db).await;
    let store = pattern_core::store::AnyStore::Mongo(db.store.clone());
    pattern_tests::checkpoint_refuses_moved_past(&store, Some(0)).await;
    let to = ArchiveAt {
        store: &store,
        collection: "orders_2024",
    };
    let before = bson::DateTime::from_millis(base + 10 * 86_400_000);
    let opts = pattern_core::adopt::Options {
        batch_items: 3,
        ..pattern_core::adopt::Options::default()
    };
    let fields = ("placed", Some("pinned"));
    let stopped = document::archive_layout(&store, "orders", fields, to, before, &opts).await;
    assert!(stopped.is_err(), "{stopped:?}");
    pattern_tests::checkpoint_refuses_moved_past(&store, None).await;
    let mut quiet = vec!["--quiet"];
    quiet.extend(archive_orders("2024-01-11T00:00:00Z"));
    let done = db.run(&quiet);
    assert_eq!(done.status.code(), Some(0), "{}", show(&done));
    let text = String::from_utf8_lossy(&done.stdout);
    assert!(
        text.contains("5 documents old enough and not kept, moved 5"),
        "{text}"
    );
    assert!(
        text.contains(
            "resumed from the start (a killed run died in its first batch): moved 8 in all"
        ),
        "{text}"
    );
    db.drop().await;
}

/// Issue 42, defects 7 and 8: `pattern archive document` SIGKILLed again and again while it
/// moves dated documents (mostly inside a move's transaction, which the server keeps open,
/// holding its document, until it expires 60 s later), each next run started at once. Every
/// run gets past the killed one's transaction (it ends the sessions the killed run recorded)
/// and records a batch; none gives up on write conflicts (exit 5). The run that finishes
/// reports the pass's total equal to the documents archived (the moves of each killed run's
/// last batch counted), every old document archived exactly once, the new ones live, none in
/// both. 1,650 documents and 4 kills; 5,500 and 20 with `PATTERN_FULL=1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_document_resumes_at_once_after_kills() {
    let all = i64::from(pattern_tests::scale(1_650, 5_500));
    let kills = pattern_tests::scale(4, 20) as usize;
    let db = Db::new("cli_archive_kills").await;
    let mut rng = Rng::seeded();
    let at = |rfc: &str| {
        bson::DateTime::parse_rfc3339_str(rfc)
            .unwrap()
            .timestamp_millis()
    };
    let (old_from, new_from) = (at("2023-01-01T00:00:00Z"), at("2025-01-01T00:00:00Z"));
    // One in ten is new, the rest a minute apart through 2023.
    let is_new = |i: i64| i % 10 == 9;
    let docs: Vec<bson::Document> = (0..all)
        .map(|i| {
            let from = if is_new(i) { new_from } else { old_from };
            bson::doc! {"_id": i, "at": bson::DateTime::from_millis(from + i * 60_000), "n": i}
        })
        .collect();
    db.insert("events", docs).await;
    let args = [
        "archive",
        "document",
        "--collection",
        "events",
        "--to",
        "events_2023",
        "--age",
        "at",
        "--before",
        "2024-01-01T00:00:00Z",
    ];
    let mut quiet = vec!["--quiet"];
    quiet.extend(args);
    let ckpt = "archive:events:events_2023";
    let started = std::time::Instant::now();
    let killed = kill_after_batches(&db, &quiet, ckpt, kills, &mut rng).await;
    eprintln!("{killed} runs killed in {:?}", started.elapsed());
    assert!(killed >= 1, "no run was killed: nothing resumed");
    // The last run killed may have finished the pass before its kill arrived: the pass's
    // total is then its checkpoint's, and the run below starts a pass of its own (nothing
    // left to move).
    let cp = pattern_tests::checkpoint(&db.store, ckpt).await.unwrap();
    let finished_by_a_killed_run = cp.get_str("state") == Ok("finished");
    let started = std::time::Instant::now();
    let done = db.json(&args, 0);
    eprintln!("the run to completion: {:?}", started.elapsed());
    let old: Vec<i64> = (0..all).filter(|i| !is_new(*i)).collect();
    let new: Vec<i64> = (0..all).filter(|i| is_new(*i)).collect();
    if finished_by_a_killed_run {
        assert_eq!(cp.get_i64("moved"), Ok(old.len() as i64), "{cp:#}");
        assert_eq!(u(&done, "/report/moved"), 0, "{done:#}");
    } else {
        assert_eq!(
            u(&done, "/report/total_moved"),
            old.len() as u64,
            "{done:#}"
        );
        assert!(u(&done, "/report/ended_sessions") >= 1, "{done:#}");
    }
    assert_eq!(
        done.pointer("/defects"),
        Some(&serde_json::json!([])),
        "{done:#}"
    );
    let ids = |docs: Vec<bson::Document>| -> Vec<i64> {
        docs.iter().map(|d| d.get_i64("_id").unwrap()).collect()
    };
    assert_eq!(ids(db.docs("events_2023", &["_id"]).await), old);
    assert_eq!(ids(db.docs("events", &["_id"]).await), new);
    let cp = pattern_tests::checkpoint(&db.store, ckpt).await.unwrap();
    let total = if finished_by_a_killed_run {
        0
    } else {
        old.len() as i64
    };
    assert_eq!(
        (cp.get_str("state"), cp.get_i64("moved")),
        (Ok("finished"), Ok(total))
    );
    db.drop().await;
}
