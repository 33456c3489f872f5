//! Money fields of a plain document, stored and queried exactly.

use super::*;
use pattern_core::store;

/// `Decimal` fields stored as Decimal128 (and the other money forms): `$inc` adds exactly
/// (0.1 three times is 0.3), comparisons and sorting are exact where `f64` cannot tell the
/// values apart, the scaled form adds at its scale and refuses finer amounts, the text form
/// refuses `$inc`; every stored value has its form's BSON type.
async fn money_fields_are_exact(store: AnyStore) {
    // 10.000000000000000001 and 10.000000000000000002 are the same f64.
    let prices = [
        "0",
        "10.000000000000000002",
        "10.000000000000000001",
        "9.99",
        "10",
    ];
    for (i, p) in prices.iter().enumerate() {
        product(i as i32, p).insert(&store).await.unwrap();
    }
    let stored = documents(&store, "products").await;
    assert_eq!(
        stored[1].get("price"),
        Some(&Bson::Decimal128("10.000000000000000002".parse().unwrap()))
    );
    assert_eq!(stored[1].get("cost"), Some(&Bson::Int64(150)));
    assert_eq!(stored[1].get("discount"), Some(&Bson::Null));
    assert_eq!(
        stored[1].get("label"),
        Some(&Bson::String("10.000000000000000002".into()))
    );
    assert_eq!(
        stored[1].get("list"),
        Some(&Bson::Decimal128("10.000000000000000002".parse().unwrap()))
    );
    // 0.1 added three times is 0.3, exactly.
    for _ in 0..3 {
        let inc = Update::new()
            .inc(Product::PRICE, dec("0.1"))
            .inc(Product::COST, dec("0.01"));
        assert!(Product::update_one(&store, Product::ID.eq(0), inc)
            .await
            .unwrap());
    }
    let p = Product::get(&store, &0).await.unwrap().unwrap();
    assert_eq!((p.price, p.cost), (dec("0.3"), dec("1.53")));
    assert_eq!(
        documents(&store, "products").await[0].get("cost"),
        Some(&Bson::Int64(153))
    );
    // Comparisons: beyond what f64 holds.
    let above = Product::find(Product::PRICE.gt(dec("10.000000000000000001")))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(above.iter().map(|p| p.id).collect::<Vec<_>>(), [1]);
    let exactly = Product::find(Product::PRICE.eq(dec("10.000000000000000001")))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(exactly.iter().map(|p| p.id).collect::<Vec<_>>(), [2]);
    // Sorting: 0.3, 9.99, 10, 10.000000000000000001, 10.000000000000000002.
    let sorted = Product::find(Filter::everything())
        .ascending(Product::PRICE)
        .all(&store)
        .await
        .unwrap();
    assert_eq!(
        sorted.iter().map(|p| p.id).collect::<Vec<_>>(),
        [0, 3, 4, 2, 1]
    );
    // `set` of an optional amount, then a filter on it.
    let set = Update::new().set(Product::DISCOUNT, Some(dec("0.05")));
    assert!(Product::update_one(&store, Product::ID.eq(3), set)
        .await
        .unwrap());
    let discounted = Product::find(Product::DISCOUNT.eq(Some(dec("0.05"))))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(discounted.iter().map(|p| p.id).collect::<Vec<_>>(), [3]);
    // Refused before anything is sent: an amount finer than the scale; `$inc` on text.
    let before = documents(&store, "products").await;
    let finer = Update::new().inc(Product::COST, dec("0.001"));
    let e = Product::update_one(&store, Product::ID.eq(0), finer)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::Store(store::Error::InvalidInput(m)) if m.contains("cost")),
        "{e:?}"
    );
    let text = Update::new().inc(Product::LABEL, dec("1"));
    let e = Product::update_one(&store, Product::ID.eq(0), text)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::Store(store::Error::InvalidInput(m)) if m.contains("as text")),
        "{e:?}"
    );
    assert_eq!(documents(&store, "products").await, before);
}

on_both_stores!(money_fields_are_exact);
