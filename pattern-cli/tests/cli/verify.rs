//! `pattern verify`: a defect injected into migrated buckets.

use pattern_core::store::query::{Filter, FindOptions, Update};
use pattern_core::store::Store;
use serde_json::Value;

use crate::support::data::trades_10_customers;
use crate::support::{show, stdout, Db, Rng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_finds_an_injected_defect_and_exits_3() {
    let db = Db::new("cli_defect").await;
    let mut rng = Rng::seeded();
    db.insert("trades", trades_10_customers(&mut rng)).await;
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
    let verify = [
        "verify",
        "bucket",
        "--collection",
        "trade_history",
        "--key",
        "customerId",
        "--size",
        "20",
    ];
    assert_eq!(db.run(&verify).status.code(), Some(0));

    // Customer 3's second bucket says it holds one item more than its array.
    let target = Filter::and([Filter::eq("customerId", 3), Filter::eq("page", 2i64)]);
    let mut inc = Update {
        inc: vec![("count".into(), 1)],
        ..Update::default()
    };
    let o = db
        .store
        .update_one("trade_history", &target, &mut inc, false)
        .await
        .unwrap();
    assert!(o.matched);
    let id = db
        .store
        .find("trade_history", &target, &FindOptions::default())
        .await
        .unwrap()[0]
        .get_str("_id")
        .unwrap()
        .to_owned();

    let out = db.run(&verify);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let text = stdout(&out);
    assert!(text.contains("1 defects"), "{text}");
    assert!(
        text.contains(&format!(
            "trade_history _id \"{id}\": count is 21 but the array holds 20 items"
        )),
        "{text}"
    );

    let r = db.json(&verify, 3);
    let defects = r["defects"].as_array().unwrap();
    assert_eq!(defects.len(), 1, "{r:#}");
    assert_eq!(defects[0]["defect"], "count_mismatch");
    assert_eq!(defects[0]["id"], Value::from(id.as_str()));
    assert_eq!(defects[0]["count"], 21);
    assert_eq!(defects[0]["items"], 20);
    db.drop().await;
}
