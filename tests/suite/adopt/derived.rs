//! The derives' generated methods: analyze, migrate and verify through `#[derive(Outlier)]` and
//! `#[derive(Bucket)]`.

use super::*;

#[derive(pattern_core::Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(
    collection = "sales",
    threshold = 3,
    overflow = "extra_sales",
    chunk = 2
)]
struct Sale {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i32,
    #[outlier(items)]
    customers: Vec<i32>,
}

#[allow(dead_code)] // only a layout: its documents are read through the methods
#[derive(pattern_core::Bucket)]
#[bucket(
    collection = "trade_pages",
    size = 4,
    time = "date",
    summary(sum = "qty")
)]
struct TradePages {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i32,
    #[bucket(items)]
    history: Vec<Trade>,
}

async fn generated_methods_analyze_migrate_verify(store: AnyStore) {
    let docs: Vec<Document> = (0..6)
        .map(|i| doc! {"_id": i, "customers": (0..i * 2).collect::<Vec<i32>>()})
        .collect();
    store.insert_many("sales", docs).await.unwrap();
    let a = Sale::analyze(&store).await.unwrap();
    assert_eq!((a.documents, a.over_threshold, a.lengths.max), (6, 4, 10));
    let r = Sale::migrate(&store, &Options::default()).await.unwrap();
    assert_eq!(r.changed, 4);
    assert!(Sale::verify(&store).await.unwrap().is_clean());
    assert!(Sale::index_report(&store)
        .await
        .unwrap()
        .iter()
        .all(|r| r.is_complete()));
    for i in 0..6 {
        assert_eq!(
            Sale::all_items(&store, &i).await.unwrap().unwrap(),
            (0..i * 2).collect::<Vec<i32>>()
        );
    }

    let expected = seed_trades(&store, 3, 9, 2).await;
    let before = TradePages::analyze_source(&store, &FLAT).await.unwrap();
    assert_eq!(
        before.items,
        expected.values().map(|v| v.len() as u64).sum::<u64>()
    );
    let r = TradePages::migrate(&store, &FLAT, &Options::default())
        .await
        .unwrap();
    assert_eq!(r.changed, 3);
    assert!(TradePages::verify(&store).await.unwrap().is_clean());
    assert!(TradePages::index_report(&store).await.unwrap()[0].is_complete());
    assert_eq!(
        TradePages::analyze(&store).await.unwrap().items,
        before.items
    );
    for (k, items) in &expected {
        let got: Vec<Trade> = TradePages::items(&store, k).try_collect().await.unwrap();
        assert_eq!(&got, items);
    }
}

on_both_stores!(generated_methods_analyze_migrate_verify);
