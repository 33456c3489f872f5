//! The seed's conversions.

use super::*;

async fn seed_scaled_longs_gain_their_decimals(store: AnyStore) {
    seed(&store, &scaled_clothes()).await;
    let report = convert_money(&store, &SCALED, &quiet()).await.unwrap();
    assert_eq!(
        (report.converted, report.replaced, report.refused.len()),
        (5, 0, 0)
    );
    let v = report.verified.expect("verified");
    assert!(v.is_clean(), "{v:?}");
    assert_eq!((v.documents, v.converted), (5, 5));
    // The seed's `db.clothes.find()` after the aggregation, byte for byte: 8000 is 80.00.
    let want = with_field(scaled_clothes(), "priceDec", seed_decimals());
    assert_eq!(documents(&store, "clothes").await, want);
    // Again: nothing left to do, nothing written.
    let again = convert_money(&store, &SCALED, &quiet()).await.unwrap();
    assert!(again.already_finished);
    assert_eq!((again.converted, again.batches), (0, 0));
    assert_eq!(documents(&store, "clothes").await, want);
}

async fn seed_strings_gain_their_decimals(store: AnyStore) {
    seed(&store, &string_clothes()).await;
    let report = convert_money(&store, &TEXT, &quiet()).await.unwrap();
    assert_eq!(report.converted, 5);
    assert!(report.verified.unwrap().is_clean());
    let want = with_field(string_clothes(), "priceDec", seed_decimals());
    assert_eq!(documents(&store, "clothes").await, want);
}

/// Converts the seed's `source` with `conv` (which finishes), expecting `want` stored, then
/// runs again: nothing left to write.
async fn finishes(
    store: &AnyStore,
    source: &[Document],
    conv: MoneyConversion<'_>,
    want: &[Document],
) {
    seed(store, source).await;
    let report = convert_money(store, &conv, &quiet()).await.unwrap();
    assert_eq!((report.converted, report.replaced), (5, 5));
    assert_eq!(report.finish_skipped, None);
    let v = report.verified.unwrap();
    assert!(v.is_clean() && v.converted == 5, "{v:?}");
    assert_eq!(documents(store, "clothes").await, want);
    let again = convert_money(store, &conv, &quiet()).await.unwrap();
    assert_eq!((again.converted, again.replaced), (0, 0));
    assert!(again.verified.unwrap().is_clean());
    assert_eq!(documents(store, "clothes").await, want);
}

async fn into_old_gives_the_articles_overwrite(store: AnyStore) {
    let conv = INTO_OLD;
    // The `$mul: {price: NumberDecimal("0.01")}` result of the seed.
    let want = with_field(scaled_clothes(), "price", seed_decimals());
    finishes(&store, &scaled_clothes(), conv, &want).await;
}

async fn drop_old_keeps_only_the_decimal(store: AnyStore) {
    let conv = MoneyConversion {
        finish: Finish::DropOld,
        ..TEXT
    };
    let mut want = with_field(string_clothes(), "priceDec", seed_decimals());
    want.iter_mut().for_each(|d| {
        d.remove("price");
    });
    finishes(&store, &string_clothes(), conv, &want).await;
}

on_both_stores!(
    seed_scaled_longs_gain_their_decimals,
    seed_strings_gain_their_decimals,
    into_old_gives_the_articles_overwrite,
    drop_old_keeps_only_the_decimal,
);
