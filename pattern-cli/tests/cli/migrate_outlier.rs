//! `pattern migrate outlier` killed repeatedly mid-run, resumed to an exact result.

use std::collections::HashMap;
use std::time::Instant;

use bson::{doc, Document};

use crate::support::kill::{checkpoint, kill_repeatedly, refused_with_other_settings, run_timed};
use crate::support::{show, stdout, Db, Rng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_outlier_survives_kills_and_resumes() {
    const DOCS: i32 = 2_000;
    let db = Db::new("cli_kill_outlier").await;
    let mut rng = Rng::seeded();
    // 65% of the documents within the threshold, the rest up to 2,000 customers.
    let docs: Vec<Document> = (0..DOCS)
        .map(|i| {
            let n = if rng.next() % 100 < 65 {
                rng.range(0, 50)
            } else {
                rng.range(51, 2000)
            };
            let customers: Vec<i32> = (0..n).map(|_| rng.range(0, 1_000_000) as i32).collect();
            doc! {"_id": i, "title": format!("book {i}"), "customers_purchased": customers}
        })
        .collect();
    db.insert("books", docs.clone()).await;
    let args = [
        "--quiet",
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
        "100",
        "--batch",
        "2000",
    ];
    let started = Instant::now();
    let kills = kill_repeatedly(&db, &args, "outlier:books", 3, 10, &mut rng).await;
    eprintln!("killed runs: {:?}", started.elapsed());
    let (_, finished) = checkpoint(&db, "outlier:books").await;
    let changes = [
        ("--threshold", Some("100")),
        ("--array", Some("customers")),
        ("--flag", Some("has_more")),
        ("--overflow", Some("extra_more")),
        ("--owner", Some("sale_id")),
        ("--extra", Some("more")),
        ("--chunk", Some("7")),
        ("--chunk-count", Some("n")),
        ("--seq", Some("number")),
    ];
    let colls = ["books", "extra_books"];
    refused_with_other_settings(&db, &args, &changes, &colls, !finished).await;
    let out = run_timed(&db, &args, "the run to completion");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        kills.mid_migration >= 1,
        "no kill landed after a committed batch: nothing resumed"
    );
    assert!(
        stdout(&out).contains("resumed after") || stdout(&out).contains("already finished"),
        "{}",
        show(&out)
    );

    let mains = db.docs("books", &["_id"]).await;
    let chunks = db.docs("extra_books", &["book_id", "seq"]).await;
    let mut overflow: HashMap<i32, Vec<Document>> = HashMap::new();
    for c in chunks {
        overflow
            .entry(c.get_i32("book_id").unwrap())
            .or_default()
            .push(c);
    }
    assert_eq!(mains.len(), docs.len());
    for (main, original) in mains.iter().zip(&docs) {
        let id = main.get_i32("_id").unwrap();
        assert_eq!(id, original.get_i32("_id").unwrap());
        let want = original.get_array("customers_purchased").unwrap();
        let mut got = main.get_array("customers_purchased").unwrap().clone();
        assert!(
            got.len() <= 50,
            "book {id}: {} items in the main array",
            got.len()
        );
        let flagged = main.get_bool("has_extras").unwrap_or(false);
        assert_eq!(flagged, want.len() > 50, "book {id}: flag");
        for (i, c) in overflow.remove(&id).unwrap_or_default().iter().enumerate() {
            let seq = c
                .get("seq")
                .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)))
                .unwrap();
            assert_eq!(seq, i as i64 + 1, "book {id}: chunks numbered 1..n");
            let items = c.get_array("customers_purchased_extra").unwrap();
            assert!(items.len() <= 100, "book {id}: chunk {seq} over 100");
            got.extend(items.iter().cloned());
        }
        assert!(
            &got == want,
            "book {id}: main array + chunks differ from the original ({} vs {} items)",
            got.len(),
            want.len()
        );
    }
    assert!(overflow.is_empty(), "orphan chunks: {:?}", overflow.keys());

    let verify = [
        "verify",
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
        "100",
    ];
    let out = db.run(&verify);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let before = (
        db.raw("books", &["_id"]).await,
        db.raw("extra_books", &["_id"]).await,
    );
    let out = run_timed(&db, &args, "the run after completion");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("already finished"), "{}", show(&out));
    assert_eq!(
        (
            db.raw("books", &["_id"]).await,
            db.raw("extra_books", &["_id"]).await
        ),
        before
    );
    // Finished: another layout is refused (exit 2), not reported as done.
    let changes = [("--threshold", Some("100")), ("--chunk", Some("50"))];
    refused_with_other_settings(&db, &args, &changes, &["books", "extra_books"], false).await;
    db.drop().await;
}
