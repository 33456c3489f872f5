//! Refusals and exit codes: a typo refused before anything is written, an unreachable server,
//! usage errors, the help.

use assert_cmd::Command;
use bson::{doc, Document};
use pattern_core::store::Store;
use serde_json::Value;

use crate::support::{show, stdout, with_arg, Db, BIN};

/// The defect of a typo: a first run pointed at an array the documents lack (and the default
/// reference) is refused before it writes anything, naming what it found; the indexes such a
/// run of an earlier version left on the overflow collection (the library's, for another
/// reference) are dropped by the next run instead of failing it; the same for the bucket
/// migration's source, key and time, and the money conversion's collection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typo_is_refused_before_anything_is_written() {
    let db = Db::new("cli_typo").await;
    let sales: Vec<Document> = (0..40)
        .map(|i| {
            let buyers: Vec<i32> = (0..(i * 5)).collect();
            doc! {"_id": i, "title": format!("book {i}"), "customers_purchased": buyers}
        })
        .collect();
    db.insert("sales", sales.clone()).await;
    let collections = db.store.collection_names().await.unwrap();
    let typo = [
        "migrate",
        "outlier",
        "--collection",
        "sales",
        "--array",
        "customers",
        "--threshold",
        "50",
        "--overflow",
        "extra_sales",
    ];
    let out = db.run(&typo);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no document of `sales` has `customers`")
            && err.contains("customers_purchased")
            && err.contains("nothing was written"),
        "{err}"
    );
    let out = db.run(&with_arg(&typo, "--collection", Some("sale")));
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no collection `sale`") && err.contains("sales"),
        "{err}"
    );
    assert_eq!(
        db.store.collection_names().await.unwrap(),
        collections,
        "something was created"
    );

    // The indexes an earlier version's run with the default reference (`sales_id`) left.
    let stale = pattern_core::spec::SeriesSpec {
        collection: "extra_sales",
        key_field: "sales_id",
        items_field: "customers_purchased_extra",
        count_field: "count",
        size: pattern_core::outlier::DEFAULT_CHUNK,
        order: pattern_core::spec::SeriesOrder::Seq("seq"),
        keeps: pattern_core::spec::Keeps::NONE,
    };
    for index in stale.indexes() {
        db.store.create_index("extra_sales", &index).await.unwrap();
    }
    let right = with_arg(
        &with_arg(&typo, "--array", Some("customers_purchased")),
        "--owner",
        Some("book_id"),
    );
    let out = db.run(&right);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let names = db.store.index_names("extra_sales").await.unwrap();
    assert!(!names.iter().any(|n| n.contains("sales_id")), "{names:?}");
    let indexes: Vec<&str> = ["indexes"]
        .into_iter()
        .chain(
            right[1..]
                .iter()
                .copied()
                .filter(|a| !a.starts_with("--batch")),
        )
        .collect();
    let out = db.run(&indexes);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for (main, original) in db.docs("sales", &["_id"]).await.iter().zip(&sales) {
        let n = original.get_array("customers_purchased").unwrap().len();
        assert_eq!(
            main.get_array("customers_purchased").unwrap().len(),
            n.min(50)
        );
    }

    // Bucket: the source, its key, its time; money: the collection.
    let bucket = [
        "migrate",
        "bucket",
        "--from",
        "sales",
        "--to",
        "sale_buckets",
        "--key",
        "title",
        "--time",
        "date",
    ];
    let out = db.run(&bucket);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`date` holding the item's time") && err.contains("title"),
        "{err}"
    );
    let out = db.run(&with_arg(&bucket, "--key", Some("customer")));
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = db.run(&with_arg(&bucket, "--from", Some("trade")));
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let money = [
        "convert",
        "money",
        "--collection",
        "cloths",
        "--from",
        "price",
        "--scaled",
        "2",
        "--to",
        "priceDec",
    ];
    let r = db.json(&money, 2);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("no collection `cloths`"),
        "{r:#}"
    );
    let after = db.store.collection_names().await.unwrap();
    assert!(
        !after.iter().any(|c| c == "sale_buckets" || c == "cloths"),
        "{after:?}"
    );
    db.drop().await;
}
#[test]
fn unreachable_server_exits_4_and_usage_errors_exit_2() {
    let unreachable = "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500";
    let args = [
        "--uri",
        unreachable,
        "--db",
        "x",
        "verify",
        "bucket",
        "--collection",
        "c",
        "--key",
        "k",
    ];
    let out = Command::new(BIN)
        .env_remove("MONGODB_URI")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: cannot reach the server"), "{err}");
    assert!(out.stdout.is_empty(), "{}", show(&out));
    // With --json, also one JSON document on stdout.
    let out = Command::new(BIN)
        .env_remove("MONGODB_URI")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(r["code"], 4);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("cannot reach the server"),
        "{r:#}"
    );

    // A missing required argument: clap's usage error.
    let out = Command::new(BIN)
        .args([
            "--uri",
            unreachable,
            "--db",
            "x",
            "verify",
            "bucket",
            "--collection",
            "c",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--key"),
        "{}",
        show(&out)
    );
    // No database, no server: usage errors too.
    let out = Command::new(BIN)
        .args([
            "--uri",
            unreachable,
            "verify",
            "bucket",
            "--collection",
            "c",
            "--key",
            "k",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = Command::new(BIN)
        .env_remove("MONGODB_URI")
        .args([
            "--db",
            "x",
            "verify",
            "bucket",
            "--collection",
            "c",
            "--key",
            "k",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("MONGODB_URI"),
        "{}",
        show(&out)
    );
    // Refused settings: the time's min kept twice.
    let out = Command::new(BIN)
        .args([
            "--uri",
            unreachable,
            "--db",
            "x",
            "migrate",
            "bucket",
            "--from",
            "t",
            "--to",
            "h",
            "--key",
            "k",
        ])
        .args(["--time", "date", "--min", "date"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    // --json on a usage error: the error as JSON on stdout.
    let out = Command::new(BIN)
        .args([
            "--json",
            "--uri",
            unreachable,
            "--db",
            "x",
            "verify",
            "bucket",
            "--collection",
            "c",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(r["code"], 2);
}

#[test]
fn help_documents_the_exit_codes() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    for want in [
        "Exit codes:",
        "  3  the data has layout defects",
        "  4  cannot reach the server",
        "  5  the migration stopped",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
}
