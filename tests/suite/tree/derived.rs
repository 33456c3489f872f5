//! `#[derive(Tree)]` with integer ids.

use super::*;
use pattern_core::store;

/// Through `#[derive(Tree)]`: integer ids, renamed fields, own data beside the model's fields,
/// `max_depth` from the attribute; the nested-set model refuses the id 0 (the seed's "no
/// parent").
async fn derived_integer_ids(store: AnyStore) {
    #[derive(pattern_core::Tree, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[tree(collection = "org", model = "nested_set", max_depth = 2)]
    #[tree(parent = "boss", left = "lo", right = "hi")]
    struct Unit {
        #[serde(rename = "_id")]
        id: i64,
        name: String,
    }
    let unit = |id: i64, name: &str| Unit {
        id,
        name: name.into(),
    };
    unit(1, "board").insert_root(&store).await.unwrap();
    unit(2, "sales").insert_child(&store, &1).await.unwrap();
    unit(3, "emea").insert_child(&store, &2).await.unwrap();
    let e = unit(4, "paris").insert_child(&store, &3).await;
    assert!(
        matches!(
            e,
            Err(Error::TooDeep {
                depth: 3,
                max_depth: 2,
                ..
            })
        ),
        "{e:?}"
    );
    let e = unit(0, "zero").insert_root(&store).await;
    assert!(
        matches!(e, Err(Error::Store(store::Error::InvalidInput(_)))),
        "{e:?}"
    );
    unit(5, "it").insert_child(&store, &1).await.unwrap();
    Unit::move_to(&store, &3, Some(&5)).await.unwrap();
    let below: Vec<i64> = Unit::descendants(&store, &1, None)
        .await
        .unwrap()
        .iter()
        .map(|u| u.id)
        .collect();
    assert_eq!(below, [2, 5, 3]);
    assert_eq!(
        documents(&store, "org").await,
        [
            doc! {"_id": 1_i64, "name": "board", "boss": null, "lo": 1_i64, "hi": 8_i64},
            doc! {"_id": 2_i64, "name": "sales", "boss": 1_i64, "lo": 2_i64, "hi": 3_i64},
            doc! {"_id": 3_i64, "name": "emea", "boss": 5_i64, "lo": 5_i64, "hi": 6_i64},
            doc! {"_id": 5_i64, "name": "it", "boss": 1_i64, "lo": 4_i64, "hi": 7_i64},
        ]
    );
    assert!(Unit::verify(&store).await.unwrap().defects.is_empty());
}

on_both_stores!(derived_integer_ids);
