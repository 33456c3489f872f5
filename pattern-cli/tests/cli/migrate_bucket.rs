//! `pattern migrate bucket` killed repeatedly mid-run, resumed to an exact result.

use std::collections::HashMap;
use std::time::Instant;

use bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use serde_json::Value;

use crate::support::kill::{checkpoint, kill_repeatedly, refused_with_other_settings, run_timed};
use crate::support::{show, stdout, u, Db, Rng};

/// 40,000 trades (20 batches of 2,000; a killed run commits 1 to 5), 150,000 with
/// `PATTERN_FULL=1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_bucket_survives_kills_and_resumes() {
    let docs_n = pattern_tests::scale(40_000, 150_000) as usize;
    const CUSTOMERS: u64 = 300;
    let db = Db::new("cli_kill_bucket").await;
    let mut rng = Rng::seeded();
    let base = DateTime::parse_rfc3339_str("2024-01-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    let tickers = ["MDB", "AAPL", "GOOG", "MSFT"];
    // Dates drawn at random (whole seconds among 20,000: some items of a customer share one,
    // ordered then by _id), inserted in _id order: the time order is not the insertion order.
    let docs: Vec<Document> = (0..docs_n)
        .map(|_| {
            doc! {
                "_id": ObjectId::new(),
                "ticker": tickers[rng.range(0, 3) as usize],
                "customerId": rng.range(0, CUSTOMERS - 1) as i32,
                "type": if rng.next().is_multiple_of(2) { "buy" } else { "sell" },
                "qty": rng.range(1, 1000) as i32,
                "date": DateTime::from_millis(base + rng.range(0, 19_999) as i64 * 1000),
            }
        })
        .collect();
    let seeded = Instant::now();
    db.insert("trades", docs.clone()).await;
    eprintln!("seeded {docs_n} trades in {:?}", seeded.elapsed());

    // What each customer's history must be: its items by (date, _id), each once.
    let mut expected: HashMap<i32, Vec<(i64, ObjectId, Document)>> = HashMap::new();
    for d in &docs {
        let mut item = d.clone();
        let id = item.remove("_id").and_then(|b| b.as_object_id()).unwrap();
        let c = item.remove("customerId").and_then(|b| b.as_i32()).unwrap();
        let t = item.get_datetime("date").unwrap().timestamp_millis();
        expected.entry(c).or_default().push((t, id, item));
    }
    for items in expected.values_mut() {
        items.sort_by_key(|a| (a.0, a.1));
    }

    let args = [
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
        "100",
        "--batch",
        "2000",
        "--sum",
        "qty",
    ];
    let started = Instant::now();
    let kills = kill_repeatedly(&db, &args, "bucket:trades->trade_history", 3, 10, &mut rng).await;
    eprintln!("killed runs: {:?}", started.elapsed());
    assert!(
        kills.mid_migration >= 1,
        "no kill landed after a committed batch: nothing resumed"
    );
    // Part-way (or finished by a run killed in its verification): each setting that shapes the
    // buckets changed in turn is refused, and changes nothing.
    let (_, finished) = checkpoint(&db, "bucket:trades->trade_history").await;
    let changes = [
        ("--size", Some("50")),
        ("--items", Some("trades")),
        ("--count", Some("n")),
        ("--page", Some("number")),
        ("--time", Some("when")),
        ("--key", Some("customer")),
        ("--sum", None),
        ("--min", Some("qty")),
        ("--remove-source", Some("")),
    ];
    let colls = ["trades", "trade_history"];
    refused_with_other_settings(&db, &args, &changes, &colls, !finished).await;
    let mut last = vec!["--json"];
    last.extend_from_slice(&args);
    let out = run_timed(&db, &last, "the run to completion");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!(
        "the last run resumed after {}, ended {} session(s), moved {} items in {} batches",
        r["resumed_from"], r["ended_sessions"], r["moved_items"], r["batches"]
    );
    // It resumed (or a killed run had finished: killed during its final verification).
    assert!(
        r["resumed_from"] != Value::Null || r["already_finished"] == Value::Bool(true),
        "{r:#}"
    );
    assert_eq!(r["verified"]["defects"], serde_json::json!([]), "{r:#}");

    // Every bucket, by customer and page.
    let buckets = db.docs("trade_history", &["customerId", "page"]).await;
    let mut by_customer: HashMap<i32, Vec<Document>> = HashMap::new();
    for b in buckets {
        by_customer
            .entry(b.get_i32("customerId").unwrap())
            .or_default()
            .push(b);
    }
    assert_eq!(by_customer.len(), expected.len());
    for (c, items) in &expected {
        let buckets = &by_customer[c];
        assert_eq!(
            buckets.len(),
            items.len().div_ceil(100),
            "customer {c}: buckets"
        );
        let mut history = Vec::new();
        for (i, b) in buckets.iter().enumerate() {
            let page = b
                .get("page")
                .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)))
                .unwrap();
            assert_eq!(page, i as i64 + 1, "customer {c}: pages 1..n");
            let h = b.get_array("history").unwrap();
            let count = b
                .get("count")
                .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)))
                .unwrap();
            assert_eq!(count as usize, h.len(), "customer {c} page {page}: count");
            let full = if i + 1 < buckets.len() {
                100
            } else {
                items.len() - 100 * i
            };
            assert_eq!(h.len(), full, "customer {c} page {page}: items");
            let times: Vec<DateTime> = h
                .iter()
                .map(|i| *i.as_document().unwrap().get_datetime("date").unwrap())
                .collect();
            assert_eq!(
                b.get_datetime("date_min").unwrap(),
                times.iter().min().unwrap(),
                "customer {c} page {page}"
            );
            assert_eq!(
                b.get_datetime("date_max").unwrap(),
                times.iter().max().unwrap(),
                "customer {c} page {page}"
            );
            let qty: i64 = h
                .iter()
                .map(|i| i64::from(i.as_document().unwrap().get_i32("qty").unwrap()))
                .sum();
            let kept = b
                .get("qty_sum")
                .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)))
                .unwrap();
            assert_eq!(kept, qty, "customer {c} page {page}: qty_sum");
            history.extend(h.iter().cloned());
        }
        let want: Vec<Bson> = items
            .iter()
            .map(|(_, _, d)| Bson::Document(d.clone()))
            .collect();
        assert_eq!(
            history.len(),
            want.len(),
            "customer {c}: each item exactly once"
        );
        assert!(
            history == want,
            "customer {c}: the history is not the source's items by (date, _id)"
        );
    }

    let verify = [
        "verify",
        "bucket",
        "--collection",
        "trade_history",
        "--key",
        "customerId",
        "--size",
        "100",
    ];
    let out = db.run(&verify);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("no defects"), "{}", show(&out));

    // Once more: finished already, nothing changes.
    let before = db.raw("trade_history", &["_id"]).await;
    let mut again = vec!["--json"];
    again.extend_from_slice(&args);
    let out = run_timed(&db, &again, "the run after completion");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["already_finished"], Value::Bool(true), "{r:#}");
    assert_eq!(u(&r, "/moved_items"), 0);
    assert_eq!(
        db.raw("trade_history", &["_id"]).await,
        before,
        "the buckets changed"
    );
    assert_eq!(
        db.count("trades").await,
        docs_n as u64,
        "the source is left as it was"
    );
    // Finished: another layout is refused (exit 2), not reported as done.
    let changes = [("--size", Some("50")), ("--sum", None)];
    refused_with_other_settings(&db, &args, &changes, &["trades", "trade_history"], false).await;
    db.drop().await;
}
