//! `pattern convert money` and `pattern verify money`.

use bson::{doc, Bson, Document};
use pattern_core::store::query::{Filter, FindOptions, Update};
use pattern_core::store::Store;

use crate::support::{show, stdout, Db};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_money_is_exact_refuses_what_is_not_and_finishes_after_a_clean_verify() {
    let db = Db::new("cli_money").await;
    // The seed's clothes, prices as scaled longs (1999 = 19.99), one with a third decimal place.
    let prices = [1999_i64, 3999, 2999, 2495, 8000];
    let mut clothes: Vec<Document> = (1..=5)
        .zip(prices)
        .map(|(id, p)| doc! {"_id": id, "price": p})
        .collect();
    clothes.push(doc! {"_id": 6, "price": 4.995});
    db.insert("clothes", clothes).await;
    const FIELDS: [&str; 8] = [
        "--collection",
        "clothes",
        "--from",
        "price",
        "--scaled",
        "2",
        "--to",
        "priceDec",
    ];
    let args: Vec<&str> = ["convert", "money"]
        .into_iter()
        .chain(FIELDS)
        .chain(["--finish", "into-old"])
        .collect();

    // The dry run writes nothing.
    let dry: Vec<&str> = args.iter().copied().chain(["--dry-run"]).collect();
    let r = db.json(&dry, 3);
    assert_eq!(r["dry_run"], true, "{r:#}");
    let stored = db
        .store
        .find("clothes", &Filter::and([]), &FindOptions::default())
        .await
        .unwrap();
    assert!(
        stored.iter().all(|d| !d.contains_key("priceDec")),
        "{stored:?}"
    );

    // 4.995 is refused (a fraction in a scaled field), the rest converted; the finish step
    // waits for a clean verification: exit 3.
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let text = stdout(&out);
    assert!(text.contains("converted                      5"), "{text}");
    assert!(
        text.contains("_id 6: 4.995 does not convert exactly"),
        "{text}"
    );
    assert!(text.contains("finish step not run"), "{text}");
    let one = db
        .store
        .find("clothes", &Filter::eq("_id", 1), &FindOptions::default())
        .await
        .unwrap();
    assert_eq!(
        one[0].get("priceDec"),
        Some(&Bson::Decimal128("19.99".parse().unwrap()))
    );
    assert_eq!(one[0].get("price"), Some(&Bson::Int64(1999)));

    // Fixed by hand, the same command finishes: every price a Decimal128 in `price`.
    let mut fix = Update {
        set: vec![("price".into(), Bson::Int64(499))],
        ..Update::default()
    };
    assert!(
        db.store
            .update_one("clothes", &Filter::eq("_id", 6), &mut fix, false)
            .await
            .unwrap()
            .matched
    );
    let r = db.json(&args, 0);
    assert_eq!(
        r["verified"]["defects"].as_array().map(Vec::len),
        Some(0),
        "{r:#}"
    );
    let stored = db
        .store
        .find("clothes", &Filter::and([]), &FindOptions::default())
        .await
        .unwrap();
    let expected = ["19.99", "39.99", "29.99", "24.95", "80.00", "4.99"];
    for (d, e) in stored.iter().zip(expected) {
        assert_eq!(
            d.get("price"),
            Some(&Bson::Decimal128(e.parse().unwrap())),
            "{d}"
        );
        assert!(!d.contains_key("priceDec"), "{d}");
    }
    // `verify money` on the finished collection: clean.
    let verify: Vec<&str> = ["verify", "money"].into_iter().chain(FIELDS).collect();
    let out = db.run(&verify);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).contains("6 documents read, 6 converted"),
        "{}",
        show(&out)
    );
    // The same field on both sides, or no form: usage errors.
    let same = [
        "verify",
        "money",
        "--collection",
        "clothes",
        "--from",
        "price",
        "--text",
        "--to",
        "price",
    ];
    assert_eq!(db.run(&same).status.code(), Some(2));
    let no_form = [
        "convert",
        "money",
        "--collection",
        "clothes",
        "--from",
        "price",
        "--to",
        "p2",
    ];
    assert_eq!(db.run(&no_form).status.code(), Some(2));
    db.drop().await;
}
