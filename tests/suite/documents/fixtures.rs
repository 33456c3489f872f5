//! Fixtures clear collections whole (a delete that reaches every shard): left out of the
//! targeting check.

use super::*;
use pattern_core::store;

/// The in-memory store as a test double (the same calls on MongoDB): fixtures seeded as
/// another tool wrote them, read back in `_id` order with every BSON type, cleared.
async fn fixtures_keep_every_bson_type(store: AnyStore) {
    use pattern_core::testing::Fixtures;
    let docs = vec![
        doc! {"_id": 3, "n": 1_i32, "big": 1_i64, "x": 1.5, "d": Bson::Decimal128("0.10".parse().unwrap())},
        doc! {"_id": 1, "n": 2_i32, "when": DateTime::from_millis(0), "tags": ["a"]},
        doc! {"_id": 2, "nested": {"deep": 3_i64}},
    ];
    store.seed("fixtures", docs.clone()).await.unwrap();
    let stored = store.documents("fixtures").await.unwrap();
    assert_eq!(stored, [docs[1].clone(), docs[2].clone(), docs[0].clone()]);
    assert_eq!(stored[2].get("big"), Some(&Bson::Int64(1)));
    assert_eq!(stored[2].get("n"), Some(&Bson::Int32(1)));
    // A library type reads the fixture; what it writes is there to look at.
    store
        .seed(
            "products",
            [
                doc! {"_id": 9, "price": Bson::Decimal128("1.10".parse().unwrap()),
                "cost": 110_i64, "label": "1.10", "list": 110_i64},
            ],
        )
        .await
        .unwrap();
    let p = Product::get(&store, &9).await.unwrap().unwrap();
    assert_eq!(
        (p.price, p.list, p.discount),
        (dec("1.10"), dec("1.10"), None)
    );
    let again = store.seed("fixtures", [doc! {"_id": 1}]).await.unwrap_err();
    assert!(
        matches!(again, store::Error::DuplicateKey { .. }),
        "{again:?}"
    );
    let all = pattern_core::store::query::Filter::everything();
    let n = store
        .find("fixtures", &all, &Default::default())
        .await
        .unwrap()
        .len();
    assert_eq!(n, 3);
    assert_eq!(store.clear("fixtures").await.unwrap(), 3);
    assert!(store.documents("fixtures").await.unwrap().is_empty());
    assert!(store.documents("nothing_here").await.unwrap().is_empty());
}

on_both_stores!(untargeted: fixtures_keep_every_bson_type);
