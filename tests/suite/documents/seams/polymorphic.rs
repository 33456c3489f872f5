//! The polymorphic collection, written through a variant's type (`Novel`, `ItemShirt`) and
//! through the enum (`Item`): every variant's features (keywords, an index, attributes) held
//! by both, against a model of the collection.

use pattern_core::store;
use std::collections::BTreeMap;

use bson::Document as BsonDocument;
use pattern_core::document::{Filter, Update, Variant};
use pattern_core::store::transaction;
use pattern_core::Error;

use super::schema::*;
use super::{abort, aborted, validates, Cells};
use crate::documents::*;

#[derive(Clone, Default)]
pub(super) struct Items(pub(super) BTreeMap<i64, Item>);

impl Items {
    pub(super) fn put(&mut self, item: Item) {
        self.0.insert(*item.id(), item);
    }
}

/// The item as read back: a novel's topics lowercased.
fn read_as(item: &Item) -> Item {
    match item {
        Item::Novel(v) => Item::Novel(Novel {
            topics: v.topics.iter().map(|t| t.to_lowercase()).collect(),
            ..v.clone()
        }),
        other => other.clone(),
    }
}

pub(super) async fn check_items(store: &AnyStore, m: &Items) {
    let stored = documents(store, "m_items").await;
    let want: Vec<BsonDocument> = m.0.values().map(item_doc).collect();
    assert_eq!(stored, want, "items");
    let mut read = Item::find(Filter::everything()).all(store).await.unwrap();
    read.sort_by_key(|i| *i.id());
    let want: Vec<Item> = m.0.values().map(read_as).collect();
    assert_eq!(read, want, "the items read");
    assert!(Item::verify_variants(store).await.unwrap().is_empty());
    // Each variant's own features, through its own type: the keyword search in any case, the
    // index, the attribute query.
    let mut found: Vec<i64> = Novel::find(Novel::TOPICS.contains("MOBY"))
        .all(store)
        .await
        .unwrap()
        .iter()
        .map(|n| n.id)
        .collect();
    found.sort();
    let novels = m.0.values().filter_map(|i| match i {
        Item::Novel(n) => Some(n),
        _ => None,
    });
    let want: Vec<i64> = (novels.clone())
        .filter(|n| n.topics.iter().any(|t| t.eq_ignore_ascii_case("moby")))
        .map(|n| n.id)
        .collect();
    assert_eq!(found, want, "the keyword search");
    for n in novels {
        let by_isbn = Novel::find(Novel::ISBN.eq(n.isbn.clone()))
            .all(store)
            .await
            .unwrap();
        assert_eq!(by_isbn.len(), 1, "isbn {}", n.isbn);
    }
    let mut chest: Vec<i64> = ItemShirt::find(ItemShirt::SPECS.attribute("Chest").gte(100))
        .all(store)
        .await
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect();
    chest.sort();
    let want: Vec<i64> = (m.0.values())
        .filter(|i| matches!(i, Item::Shirt { .. }))
        .map(|i| *i.id())
        .collect();
    assert_eq!(chest, want, "the attribute query");
    validates::<Item>(store, "m_items", &stored).await;
}

async fn empty(store: &AnyStore) {
    super::empty(store, &["m_items"]).await;
}

fn other_variant(r: pattern_core::Result<()>) {
    assert!(matches!(r, Err(Error::OtherVariant { .. })), "{r:?}");
}

/// The rows: `through_enum` false writes through the variants' types, true through the enum.
async fn rows(store: &AnyStore, cells: &mut Cells, through_enum: bool) {
    let row = if through_enum {
        "polymorphic, through the enum"
    } else {
        "polymorphic, through the variant's type"
    };
    Item::ensure_validator(store).await.unwrap();
    empty(store).await;
    let mut m = Items::default();
    macro_rules! cell {
        ($path:expr, async $body:block) => {
            let ok = cells
                .cell(row, $path, async {
                    async $body.await;
                    check_items(store, &m).await;
                })
                .await;
            if !ok {
                empty(store).await;
                m = Items::default();
                let _ = &m;
            }
        };
    }
    let mut next = 0;
    let mut fresh = || {
        next += 10;
        next
    };
    // Inserts a novel `id` and a shirt `id + 1`, through the row's types.
    async fn two(store: &AnyStore, m: &mut Items, id: i64, through_enum: bool) {
        let (n, s) = (novel(id, "Moby Dick", 1), shirt(id + 1, "Tee", 1));
        if through_enum {
            Item::Novel(n.clone()).insert(store).await.unwrap();
            s.clone().into_enum().insert(store).await.unwrap();
        } else {
            n.insert(store).await.unwrap();
            s.insert(store).await.unwrap();
        }
        m.put(Item::Novel(n));
        m.put(s.into_enum());
    }
    let id = fresh();
    cell!("insert", async {
        two(store, &mut m, id, through_enum).await;
        let dup = if through_enum {
            shirt(id, "Tee", 2).into_enum().insert(store).await
        } else {
            shirt(id, "Tee", 2).insert(store).await
        };
        assert!(
            matches!(dup, Err(Error::Store(store::Error::DuplicateKey { .. }))),
            "{dup:?}"
        );
    });
    let id = fresh();
    cell!("save (new, existing, over another variant)", async {
        let (n, s) = (novel(id, "Moby Whale", 1), shirt(id + 1, "Tee", 1));
        if through_enum {
            Item::Novel(n.clone()).save(store).await.unwrap();
            s.clone().into_enum().save(store).await.unwrap();
            Item::Novel(novel(id, "Moby Sea", 2))
                .save(store)
                .await
                .unwrap();
            other_variant(Item::Novel(novel(id + 1, "Over", 3)).save(store).await);
        } else {
            n.save(store).await.unwrap();
            s.save(store).await.unwrap();
            novel(id, "Moby Sea", 2).save(store).await.unwrap();
            other_variant(novel(id + 1, "Over", 3).save(store).await);
        }
        m.put(Item::Novel(novel(id, "Moby Sea", 2)));
        m.put(s.into_enum());
    });
    let id = fresh();
    cell!(
        "update_one (typed, conditional, another variant's)",
        async {
            two(store, &mut m, id, through_enum).await;
            if through_enum {
                let inc = || Update::new().inc(Item::N, 1);
                assert!(Item::update_one(store, Item::ID.eq(id), inc())
                    .await
                    .unwrap());
                let no = Item::ID.eq(id + 1).and(Item::N.gt(5));
                assert!(!Item::update_one(store, no, inc()).await.unwrap());
                assert!(Item::update_one(store, Item::ID.eq(id + 1), inc())
                    .await
                    .unwrap());
            } else {
                let topics = Update::new().set(Novel::TOPICS, vec!["MOBY".into(), "Sea".into()]);
                assert!(Novel::update_one(store, Novel::ID.eq(id), topics)
                    .await
                    .unwrap());
                let size = || Update::new().set(ItemShirt::SIZE, "XL");
                assert!(!ItemShirt::update_one(store, ItemShirt::ID.eq(id), size())
                    .await
                    .unwrap());
                let inc = Update::new().inc(Novel::N, 1);
                assert!(Novel::update_one(store, Novel::ID.eq(id), inc)
                    .await
                    .unwrap());
                assert!(
                    ItemShirt::update_one(store, ItemShirt::ID.eq(id + 1), size())
                        .await
                        .unwrap()
                );
            }
            match m.0.get_mut(&id) {
                Some(Item::Novel(n)) => {
                    n.n += 1;
                    if !through_enum {
                        n.topics = vec!["moby".into(), "sea".into()];
                    }
                }
                other => panic!("{other:?}"),
            }
            match m.0.get_mut(&(id + 1)) {
                Some(Item::Shirt { n, size, .. }) => {
                    if through_enum {
                        *n += 1;
                    } else {
                        *size = "XL".into();
                    }
                }
                other => panic!("{other:?}"),
            }
        }
    );
    let id = fresh();
    cell!("delete", async {
        two(store, &mut m, id, through_enum).await;
        if through_enum {
            assert!(Item::delete(store, &id).await.unwrap());
        } else {
            assert!(!ItemShirt::delete(store, &id).await.unwrap());
            assert!(Novel::delete(store, &id).await.unwrap());
        }
        m.0.remove(&id);
    });
    let id = fresh();
    cell!("transaction (committed and aborted)", async {
        transaction(store, |tx| {
            Box::pin(async move {
                if through_enum {
                    Item::Novel(novel(id, "Moby Tx", 1)).insert(tx).await?;
                    shirt(id + 1, "Tee", 1).into_enum().save(tx).await?;
                } else {
                    novel(id, "Moby Tx", 1).insert(tx).await?;
                    shirt(id + 1, "Tee", 1).save(tx).await?;
                }
                Ok(())
            })
        })
        .await
        .unwrap();
        m.put(Item::Novel(novel(id, "Moby Tx", 1)));
        m.put(shirt(id + 1, "Tee", 1).into_enum());
        aborted(
            transaction(store, |tx| {
                Box::pin(async move {
                    Item::Novel(novel(id + 2, "Moby No", 1)).insert(tx).await?;
                    Item::delete(tx, &id).await?;
                    abort::<()>()
                })
            })
            .await,
        );
    });
    if through_enum {
        let id = fresh();
        cell!("change_variant", async {
            two(store, &mut m, id, true).await;
            let to_shirt = shirt(id, "Tee", 4).into_enum();
            assert!(to_shirt.change_variant(store).await.unwrap());
            m.put(to_shirt);
            let to_novel = Item::Novel(novel(id + 1, "Moby Again", 5));
            assert!(to_novel.change_variant(store).await.unwrap());
            m.put(to_novel);
            let absent = Item::Novel(novel(id + 5, "Moby", 1));
            assert!(!absent.change_variant(store).await.unwrap());
        });
        let id = fresh();
        cell!("save racing change_variant", async {
            two(store, &mut m, id, true).await;
            let outcomes = futures::future::join_all((0..4_i64).map(|t| async move {
                for i in 0..6 {
                    match (t + i) % 4 {
                        0 => assert!(Item::Novel(novel(id, "Moby", i))
                            .change_variant(store)
                            .await
                            .unwrap()),
                        1 => assert!(shirt(id, "Tee", i)
                            .into_enum()
                            .change_variant(store)
                            .await
                            .unwrap()),
                        2 => match novel(id, "Moby", i).save(store).await {
                            Ok(()) | Err(Error::OtherVariant { .. }) => {}
                            Err(e) => return Err(e),
                        },
                        _ => match shirt(id, "Tee", i).save(store).await {
                            Ok(()) | Err(Error::OtherVariant { .. }) => {}
                            Err(e) => return Err(e),
                        },
                    }
                }
                Ok(())
            }))
            .await;
            for o in outcomes {
                o.unwrap();
            }
            let last = Item::Novel(novel(id, "Moby Last", 9));
            assert!(last.change_variant(store).await.unwrap());
            m.put(last);
        });
    }
}

pub(super) async fn variant(store: &AnyStore, cells: &mut Cells) {
    rows(store, cells, false).await;
}

pub(super) async fn enumeration(store: &AnyStore, cells: &mut Cells) {
    rows(store, cells, true).await;
}
