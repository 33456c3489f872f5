//! `pattern indexes outlier|bucket`.

use crate::support::data::trades_10_customers;
use crate::support::{show, stdout, Db, Rng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_reports_missing_stale_and_users_and_exits_3_on_drift() {
    let db = Db::new("cli_indexes").await;
    let mut rng = Rng::seeded();
    db.insert("trades", trades_10_customers(&mut rng)).await;
    let args = [
        "indexes",
        "bucket",
        "--collection",
        "trade_history",
        "--key",
        "customerId",
        "--size",
        "20",
        "--time",
        "date",
    ];
    // Before the migration: no collection, every needed index missing.
    let r = db.json(&args, 3);
    assert_eq!(r[0]["exists"], false, "{r:#}");
    assert_eq!(r[0]["missing"].as_array().unwrap().len(), 4, "{r:#}");
    let out = db.run(&[
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
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("needed, present"), "{}", show(&out));
    // Without --time, the bounds index is the library's, stale for that layout.
    let plain = &args[..args.len() - 2];
    let out = db.run(plain);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(stdout(&out).contains("STALE"), "{}", show(&out));
    // The trades collection's own index is the user's.
    let r = db.json(
        &[
            "indexes",
            "bucket",
            "--collection",
            "trades",
            "--key",
            "customerId",
        ],
        3,
    );
    assert_eq!(r[0]["users"], serde_json::json!(["_id_"]), "{r:#}");
    db.drop().await;
}
