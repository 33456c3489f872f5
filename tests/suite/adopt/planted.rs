//! Plants an index that breaks the targeting rule on purpose (a stale one of another
//! reference): left out of the targeting check.

use super::*;

async fn the_librarys_stale_indexes_of_another_reference_are_dropped(store: AnyStore) {
    let original = seed_books(&store, 10, &[75, 130]).await;
    // The overflow collection's indexes as a run with the default reference of the CLI
    // (`books_id`, a typo) left them: their unique `{books_id, seq}` refuses every second chunk.
    let typo = SeriesSpec {
        key_field: "books_id",
        ..Book::SPEC.overflow
    };
    for index in typo.indexes() {
        store.create_index("books_extra", &index).await.unwrap();
    }
    let mine = |names: &[String]| names.iter().any(|n| n.contains("books_id"));
    assert!(mine(&store.index_names("books_extra").await.unwrap()));
    let r = migrate_outlier(&store, &Book::SPEC, &quiet())
        .await
        .unwrap();
    assert!(r.verified.unwrap().is_clean());
    let names = store.index_names("books_extra").await.unwrap();
    assert!(!mine(&names), "stale indexes left: {names:?}");
    for index in Book::SPEC.overflow.indexes() {
        assert!(
            names.contains(&index.name),
            "{} missing from {names:?}",
            index.name
        );
    }
    for (id, items) in &original {
        assert_eq!(&book_items(&store, *id).await, items, "book {id}");
    }
}

on_both_stores!(untargeted: the_librarys_stale_indexes_of_another_reference_are_dropped);
