//! Typed fields through the stores.

use super::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Garment {
    #[serde(rename = "_id")]
    id: i32,
    #[serde(with = "money::decimal128")]
    price: Decimal,
    #[serde(default, with = "money::decimal128::option")]
    sale: Option<Decimal>,
    #[serde(with = "money::text")]
    label: Decimal,
    mills: Scaled<3>,
}

async fn decimal_fields_round_trip_through_the_store(store: AnyStore) {
    let amounts = [
        "19.99",
        "80.00",
        "-0.01",
        "0",
        "79228162514264337593543950335",
        "0.0000000000000000000000000001",
        "90071992547409.93",
    ];
    let garments: Vec<Garment> = amounts
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let d: Decimal = a.parse().unwrap();
            Garment {
                id: i as i32,
                price: d,
                sale: (i % 2 == 0).then_some(d),
                label: d,
                mills: Scaled("9.99".parse().unwrap()),
            }
        })
        .collect();
    for g in &garments {
        store
            .insert_one("garments", bson::to_document(g).unwrap())
            .await
            .unwrap();
    }
    // Stored as the article's types: Decimal128, a string, a scaled long.
    let stored = documents(&store, "garments").await;
    for (d, a) in stored.iter().zip(amounts) {
        assert_eq!(d.get("price"), Some(&dec(a)), "{d}");
        assert_eq!(d.get_str("label").unwrap(), a);
        assert_eq!(d.get("mills"), Some(&Bson::Int64(9990)));
    }
    // Read back: from documents and from raw bytes, each value with its places.
    let back: Vec<Garment> = stored
        .into_iter()
        .map(|d| bson::from_document(d).unwrap())
        .collect();
    assert_eq!(back, garments);
    let raw = store
        .find_raw("garments", &Filter::and([]), &read_back())
        .await
        .unwrap();
    let back: Vec<Garment> = raw
        .iter()
        .map(|r| bson::from_slice(r.as_bytes()).unwrap())
        .collect();
    assert_eq!(back, garments);
    assert_eq!(back[1].price.to_string(), "80.00");
    // Queried by exact value, as `find({price: NumberDecimal("19.99")})`.
    let found = store
        .find(
            "garments",
            &Filter::eq("price", dec("19.990")),
            &read_back(),
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    // Server arithmetic is decimal: 0.1 + 0.2 is 0.3 exactly ($inc on Decimal128).
    store
        .insert_one("garments", doc! {"_id": 99, "total": dec("0.1")})
        .await
        .unwrap();
    let mut add = Update {
        sum: vec![("total".into(), dec("0.2"))],
        ..Update::default()
    };
    store
        .update_one("garments", &Filter::eq("_id", 99), &mut add, false)
        .await
        .unwrap();
    let total = store
        .find("garments", &Filter::eq("_id", 99), &read_back())
        .await
        .unwrap();
    assert_eq!(total[0].get("total"), Some(&dec("0.3")));
    // A stored value a Decimal cannot hold is a decode error, never a rounded amount.
    store
        .insert_one(
            "garments",
            doc! {"_id": 100, "price": dec("1E-40"), "label": "1", "mills": 1_i64},
        )
        .await
        .unwrap();
    let bad = store
        .find("garments", &Filter::eq("_id", 100), &read_back())
        .await
        .unwrap();
    let err = bson::from_document::<Garment>(bad[0].clone()).unwrap_err();
    assert!(err.to_string().contains("more decimal places"), "{err}");
}

on_both_stores!(decimal_fields_round_trip_through_the_store);
