//! Validation level `moderate`, refusals inside transactions and batches, installing again.

use super::*;
use pattern_core::store;

/// "Moderate": a bucket written over the layout before the validator existed can still be
/// updated or replaced (and so repaired); once repaired it is checked again. An insert (an
/// upsert's too) is always checked.
async fn moderate_repairs_foreign_documents(store: AnyStore) {
    let broken =
        doc! {"_id": "5_1", "customerId": 5_i64, "count": 15, "history": trades(15), "page": 1_i64};
    let other = doc! {"_id": "6_1", "customerId": 6_i64, "count": 20, "history": trades(20)};
    store.insert_one("trades", broken.clone()).await.unwrap();
    store.insert_one("trades", other.clone()).await.unwrap();
    TradeHistory::ensure_validator(&store).await.unwrap();
    let by_id = Filter::eq("_id", "5_1");
    // Still invalid after it: not checked.
    let note = set(vec![("note", "seen".into())]);
    assert!(update(&store, "trades", &by_id, note, false).await.unwrap());
    // The repair: the count set, the array cut to the size.
    let repair = set(vec![("count", 10.into()), ("history", trades(10).into())]);
    assert!(update(&store, "trades", &by_id, repair, false)
        .await
        .unwrap());
    // Valid now: an update or a replacement that breaks it again is refused.
    let past_size = update(&store, "trades", &by_id, inc("count", 1), false);
    assert_refused(past_size.await, "trades");
    assert_refused(
        store
            .replace_one("trades", &by_id, broken.clone(), false)
            .await,
        "trades",
    );
    // A replacement of a document that fails the schema is not checked either.
    let mut still_broken = other.clone();
    still_broken.insert("count", 19);
    let other_id = Filter::eq("_id", "6_1");
    let replaced = store
        .replace_one("trades", &other_id, still_broken, false)
        .await;
    assert!(replaced.unwrap().matched);
    // The broken documents, inserted again: refused.
    store
        .delete_many("trades", &Filter::And(vec![]))
        .await
        .unwrap();
    assert_refused(store.insert_one("trades", broken).await, "trades");
    assert_refused(store.insert_one("trades", other).await, "trades");
    // An upsert inserts: checked.
    let new = Filter::eq("_id", "7_1");
    let upsert = update(
        &store,
        "trades",
        &new,
        set(vec![("count", 11.into())]),
        true,
    );
    assert_refused(upsert.await, "trades");
    assert!(documents(&store, "trades").await.is_empty());
}

/// A refusal inside a transaction fails the transaction with the typed error and keeps
/// nothing of it; in an ordered batch it is the failed write's error, the writes before it
/// applied, none after.
async fn refusals_in_transactions_and_batches(store: AnyStore) {
    TradeHistory::ensure_validator(&store).await.unwrap();
    let good = |id: &str| doc! {"_id": id, "customerId": 1_i64, "count": 1, "history": trades(1)};
    let bad = |id: &str| doc! {"_id": id, "customerId": 1_i64, "count": 11, "history": trades(1)};
    let r = transaction(&store, |tx| {
        Box::pin(async move {
            tx.insert_one("trades", good("t1")).await?;
            tx.insert_one("trades", bad("t2")).await?;
            Ok(())
        })
    })
    .await;
    assert_refused(r, "trades");
    assert!(documents(&store, "trades").await.is_empty());
    let ops = vec![
        WriteOp::Insert(good("b1")),
        WriteOp::Insert(bad("b2")),
        WriteOp::Insert(good("b3")),
    ];
    let outcome = store.write_batch("trades", ops).await;
    assert_eq!(outcome.applied, 1);
    assert_refused(outcome.error.map_or(Ok(()), Err), "trades");
    let ids: Vec<Bson> = documents(&store, "trades")
        .await
        .iter()
        .map(|d| d.get("_id").unwrap().clone())
        .collect();
    assert_eq!(ids, [Bson::String("b1".into())]);
    // An update in a batch, past the layout.
    let ops = vec![WriteOp::Update {
        filter: Filter::eq("_id", "b1"),
        update: Box::new(inc("count", 10)),
        upsert: false,
    }];
    let outcome = store.write_batch("trades", ops).await;
    assert_eq!(outcome.applied, 0);
    assert_refused(outcome.error.map_or(Ok(()), Err), "trades");
    // An ingest whose fill of a foreign bucket (count 0, but ten items) would pass the size:
    // the refusal inside `Error::Ingest`, the items after it listed unwritten.
    let foreign =
        doc! {"_id": "x_1", "customerId": 77_i64, "count": 0, "history": trades(10), "page": 1_i64};
    store.insert_one("trades", foreign).await.unwrap();
    let pairs: Vec<(i64, Trade)> = (0..20).map(|i| (77, trade(i))).collect();
    match TradeHistory::ingest(&store, &pairs).await {
        Err(Error::Ingest {
            source, unwritten, ..
        }) => {
            assert!(
                matches!(*source, Error::Store(store::Error::SchemaViolation { .. })),
                "{source:?}"
            );
            assert_eq!(unwritten, (0..20).collect::<Vec<_>>());
        }
        other => panic!("{other:?}"),
    }
}

/// Installing again replaces the validator; the memo makes the lazy install once per store,
/// and a collection that did not exist is created with it.
async fn install_is_idempotent(store: AnyStore) {
    TradeHistory::ensure_validator(&store).await.unwrap();
    TradeHistory::ensure_validator(&store).await.unwrap();
    Feed::ensure_validator(&store).await.unwrap();
    let over = doc! {"customerId": 1_i64, "count": 11, "history": []};
    assert_refused(store.insert_one("trades", over).await, "trades");
    if let AnyStore::Mongo(m) = &store {
        let names = m.database().list_collection_names().await.unwrap();
        for c in ["trades", "feeds", "feed_overflow"] {
            assert!(names.iter().any(|n| n == c), "{c} not created: {names:?}");
        }
        let info = m
            .database()
            .run_command(doc! {"listCollections": 1, "filter": {"name": "trades"}})
            .await
            .unwrap();
        let first = &info
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()[0];
        let options = first
            .as_document()
            .unwrap()
            .get_document("options")
            .unwrap();
        assert_eq!(
            options.get_str("validationLevel"),
            Ok("moderate"),
            "{options}"
        );
        assert_eq!(
            options.get_str("validationAction"),
            Ok("error"),
            "{options}"
        );
        assert_eq!(
            options.get_document("validator").unwrap(),
            &doc! {"$jsonSchema": bucket::schemas::<TradeHistory>()[0].1.to_document()}
        );
    }
}

// These tests write foreign documents by `_id` on purpose (what other tools do): not checked
// against the targeting rule; the library's operations they also run are, in their own suites.
on_both_stores!(
    untargeted:
    moderate_repairs_foreign_documents,
    refusals_in_transactions_and_batches,
    install_is_idempotent,
);
