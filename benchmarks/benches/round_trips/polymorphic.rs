//! The round trips of a polymorphic collection: every read and write of a variant is the one
//! command of a plain document, its discriminator in the filter; a save refused over another
//! variant adds the one read that names the variant found. A variant child of computed values
//! written through the enum sends what a plain child sends.

use pattern_core::document::{Update, Variant};
use pattern_core::store::MongoStore;
use pattern_core::{Document, Error};
use pattern_tests::CommandLog;
use serde::{Deserialize, Serialize};

use super::Row;

/// A book, one variant's struct.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(variant_of = Item)]
struct Novel {
    #[serde(rename = "_id")]
    id: i64,
    price: i64,
    #[document(index)]
    author: String,
}

/// The catalogue: novels and shirts in one collection.
#[derive(Clone, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(collection = "rt_items", shared(price: i64))]
enum Item {
    Novel(Novel),
    Shirt {
        #[serde(rename = "_id")]
        id: i64,
        price: i64,
        size: String,
    },
}

/// A film counting its reviews and keeping the best stars.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_screens")]
struct Screen {
    #[serde(rename = "_id")]
    id: i64,
    n: i64,
    best: Option<i64>,
}

/// A review, a variant child of its film's computed values.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(variant_of = Remark, computed(parent = Screen, key = screen, count = n, max(stars = best)))]
struct Critique {
    #[serde(rename = "_id")]
    id: i64,
    screen: i64,
    stars: i64,
}

/// Reviews and notes in one collection: a note is no child.
#[derive(Clone, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(collection = "rt_remarks")]
enum Remark {
    Critique(Critique),
    Aside {
        #[serde(rename = "_id")]
        id: i64,
        screen: i64,
        stars: i64,
    },
}

/// What a transaction's commit is named in the log.
const TXN: &str = "commitTransaction";

pub(super) async fn rows(store: &MongoStore, log: &CommandLog) -> Vec<Row> {
    let mut rows = variant_rows(store, log).await;
    rows.extend(child_rows(store, log).await);
    rows
}

/// A variant child through the enum: an insert as a plain child's; a change of variant away
/// from it, the save's read and write and the parent's adjustment of a child that leaves.
async fn child_rows(store: &MongoStore, log: &CommandLog) -> Vec<Row> {
    let mut rows = Vec::new();
    let screen = Screen {
        id: 1,
        n: 0,
        best: None,
    };
    screen.insert(store).await.unwrap();
    Remark::ensure_indexes(store).await.unwrap();
    let critique = |id, stars| Critique {
        id,
        screen: 1,
        stars,
    };
    critique(1, 3).into_enum().insert(store).await.unwrap();
    log.clear();
    critique(2, 5).into_enum().insert(store).await.unwrap();
    rows.push(Row::exactly(
        "variant child insert through the enum (computed parent)",
        1,
        log,
        &["insert", "update", TXN],
    ));
    log.clear();
    let aside = Remark::Aside {
        id: 2,
        screen: 1,
        stars: 5,
    };
    assert!(aside.change_variant(store).await.unwrap());
    rows.push(Row::exactly(
        "change_variant of a variant child away (the maximum: the next read from the children)",
        1,
        log,
        &["find", "update", "find", "find", "update", TXN],
    ));
    rows
}

async fn variant_rows(store: &MongoStore, log: &CommandLog) -> Vec<Row> {
    let mut rows = Vec::new();
    Item::ensure_indexes(store).await.unwrap();
    let novel = |id| Novel {
        id,
        price: 10,
        author: "Melville".into(),
    };
    let shirt = |id| ItemShirt {
        id,
        price: 20,
        size: "M".into(),
    };
    log.clear();
    novel(1).into_enum().insert(store).await.unwrap();
    rows.push(Row::exactly(
        "polymorphic insert (the enum)",
        1,
        log,
        &["insert"],
    ));
    log.clear();
    shirt(2).insert(store).await.unwrap();
    rows.push(Row::exactly(
        "polymorphic insert (a variant)",
        1,
        log,
        &["insert"],
    ));
    log.clear();
    let all = Item::find(Item::PRICE.gte(0)).all(store).await.unwrap();
    assert_eq!(all.len(), 2);
    rows.push(Row::exactly(
        "polymorphic find (the enum)",
        1,
        log,
        &["find"],
    ));
    log.clear();
    let novels = Novel::find(Novel::AUTHOR.eq("Melville"))
        .all(store)
        .await
        .unwrap();
    assert_eq!(novels.len(), 1);
    rows.push(Row::exactly(
        "variant find (discriminator added)",
        1,
        log,
        &["find"],
    ));
    log.clear();
    assert!(ItemShirt::get(store, &1).await.unwrap().is_none());
    rows.push(Row::exactly(
        "variant get of another variant's id",
        1,
        log,
        &["find"],
    ));
    log.clear();
    let to_l = Update::new().set(ItemShirt::SIZE, "L");
    assert!(ItemShirt::update_one(store, ItemShirt::ID.eq(2), to_l)
        .await
        .unwrap());
    rows.push(Row::exactly("variant-only update", 1, log, &["update"]));
    log.clear();
    shirt(2).save(store).await.unwrap();
    rows.push(Row::exactly("variant save", 1, log, &["update"]));
    log.clear();
    let over = Item::Novel(novel(2)).save(store).await;
    assert!(matches!(over, Err(Error::OtherVariant { .. })), "{over:?}");
    rows.push(Row::exactly(
        "save over another variant (refused)",
        1,
        log,
        &["update", "find"],
    ));
    log.clear();
    assert!(Item::Novel(novel(2)).change_variant(store).await.unwrap());
    rows.push(Row::exactly("change_variant", 1, log, &["update"]));
    log.clear();
    assert!(Item::verify_variants(store).await.unwrap().is_empty());
    rows.push(Row::exactly(
        "verify_variants (2 documents)",
        1,
        log,
        &["find"],
    ));
    log.clear();
    assert!(Novel::delete(store, &2).await.unwrap());
    rows.push(Row::exactly("variant delete", 1, log, &["delete"]));
    rows
}
