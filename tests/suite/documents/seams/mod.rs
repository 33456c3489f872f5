//! Every document feature that touches writes, on every write path, on both stores (issue 42
//! point 11): the seams matrix.
//!
//! A row per feature: schema versioning (without and with `write_back`), history (alone and
//! with versioning), keywords, the approximate counter, the archive, a type with its validator
//! alone, a computed child, a subset child, an extended reference's source and holder, a
//! polymorphic collection written through a variant's type and through the enum, and a
//! bucket's roll-up with its archive. A cell per write path the row's feature has: `insert`,
//! `save` (new and over a document), `update_one` (typed, and conditional: one that matches
//! nothing, one that does), `delete`, inside `transaction` (committed and aborted), `save_if`
//! / `update_if` / `delete_if`, writes over an older build's documents, a read that writes
//! back, the sweep, the archive's move, `change_variant` and a save racing it, and the repairs
//! (`recompute`, `resubset`, `repair_copies`, `backfill`). After each write the cell checks
//! that the stored documents (and history records, archived documents, parents, copies)
//! equal a plain model written out by hand, that every read gives the model's values (a
//! projection too), that the validator accepts every stored document, and that the feature's
//! own check is clean (`verify`, `verify_subsets`, `verify_copies`, `verify_variants`,
//! `verify_archive`, the revisions, the version stamp, the keywords' form).
//!
//! Then the single-collection features in pairs on one type (issue 67: versioning, history,
//! keywords, the counter and the archive, every pair but history with the counter, which the
//! derive refuses as contradictory), and one type with every feature at once (versioning,
//! history, keywords, the archive, a computed and a subset child, a holder and a source of
//! copies, a polymorphic collection's variant beside a sibling's documents), each
//! over every write path it has. The related patterns' pairs with the others are in
//! `pairs.rs`, `archive_pairs.rs`, `variant_pairs.rs` and `reference/placed.rs`.
//!
//! Each failed cell is reported with its row and path, all together at the end; the row goes
//! on from empty collections. A combination of features whose meaning is contradictory is a
//! compile error (`tests/ui/document/`).

mod buckets;
mod oracle;
mod polymorphic;
mod related;
mod schema;
mod simple;

use pattern_core::store;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use bson::Document as BsonDocument;
use futures::FutureExt;
use pattern_core::store::query;

use super::*;

/// The cells run, and those that failed with why.
#[derive(Default)]
pub(super) struct Cells {
    run: Vec<String>,
    failed: Vec<(String, String)>,
}

impl Cells {
    /// Runs one cell (its write and its checks); whether it passed.
    pub(super) async fn cell(
        &mut self,
        row: &str,
        path: &str,
        body: impl Future<Output = ()>,
    ) -> bool {
        let name = format!("{row} × {path}");
        let outcome = AssertUnwindSafe(body).catch_unwind().await;
        self.run.push(name.clone());
        match outcome {
            Ok(()) => true,
            Err(p) => {
                let why = (p.downcast_ref::<String>().cloned())
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                self.failed.push((name, why));
                false
            }
        }
    }
}

/// Whether `D`'s validator for `coll` accepts `docs`: each inserted into a scratch collection
/// holding the same validator (the live one is "moderate" on MongoDB: it would not check a
/// stored document again).
pub(super) async fn validates<D: Document>(store: &AnyStore, coll: &str, docs: &[BsonDocument]) {
    let schemas = pattern_core::document::schemas::<D>();
    let Some((_, schema)) = schemas.iter().find(|(c, _)| *c == coll) else {
        return;
    };
    let scratch = format!("{coll}_validated");
    let all = query::Filter::And(vec![]);
    store.delete_many(&scratch, &all).await.unwrap();
    store.set_validator(&scratch, schema).await.unwrap();
    for d in docs {
        if let Err(e) = store.insert_one(&scratch, d.clone()).await {
            panic!("the validator of `{coll}` refuses {d}: {e}");
        }
    }
    store.delete_many(&scratch, &all).await.unwrap();
}

/// Empties `colls` (a row starting again after a failed cell).
pub(super) async fn empty(store: &AnyStore, colls: &[&str]) {
    for c in colls {
        store
            .delete_many(c, &query::Filter::And(vec![]))
            .await
            .unwrap();
    }
}

/// Asserts the transaction aborted by [`abort`] was.
pub(super) fn aborted<T: std::fmt::Debug>(r: pattern_core::Result<T>) {
    assert!(
        matches!(r, Err(Error::Store(store::Error::InvalidInput(_)))),
        "{r:?}"
    );
}

/// What a cell's transaction returns to abort.
pub(super) fn abort<T>() -> pattern_core::Result<T> {
    Err(Error::Store(store::Error::InvalidInput(
        "the test aborts it".into(),
    )))
}

async fn every_feature_on_every_write_path(store: AnyStore) {
    let mut cells = Cells::default();
    simple::row::<schema::Versioned>(&store, &mut cells).await;
    simple::row::<schema::WrittenBack>(&store, &mut cells).await;
    simple::row::<schema::Revised>(&store, &mut cells).await;
    simple::row::<schema::RevisedVersioned>(&store, &mut cells).await;
    simple::row::<schema::Tagged>(&store, &mut cells).await;
    simple::row::<schema::Counted>(&store, &mut cells).await;
    simple::row::<schema::Order>(&store, &mut cells).await;
    simple::row::<schema::Plain>(&store, &mut cells).await;
    // Pairs of them on one type, and all of them at once (issue 67).
    simple::row::<schema::VersionedTagged>(&store, &mut cells).await;
    simple::row::<schema::VersionedCounted>(&store, &mut cells).await;
    simple::row::<schema::VersionedArchived>(&store, &mut cells).await;
    simple::row::<schema::RevisedTagged>(&store, &mut cells).await;
    simple::row::<schema::RevisedArchived>(&store, &mut cells).await;
    simple::row::<schema::TaggedCounted>(&store, &mut cells).await;
    simple::row::<schema::TaggedArchived>(&store, &mut cells).await;
    simple::row::<schema::CountedArchived>(&store, &mut cells).await;
    simple::row::<schema::Everything>(&store, &mut cells).await;
    related::computed(&store, &mut cells).await;
    related::subset(&store, &mut cells).await;
    related::source(&store, &mut cells).await;
    related::holder(&store, &mut cells).await;
    polymorphic::variant(&store, &mut cells).await;
    polymorphic::enumeration(&store, &mut cells).await;
    buckets::rollup(&store, &mut cells).await;
    let report: Vec<String> = (cells.failed.iter())
        .map(|(cell, why)| format!("- {cell}: {why}"))
        .collect();
    println!(
        "{} cells run, {} failed",
        cells.run.len(),
        cells.failed.len()
    );
    assert!(
        cells.failed.is_empty(),
        "{} of {} cells failed:\n{}",
        cells.failed.len(),
        cells.run.len(),
        report.join("\n")
    );
}

on_both_stores!(untargeted: every_feature_on_every_write_path);
