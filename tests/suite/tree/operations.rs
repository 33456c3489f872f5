//! Each operation and its errors, hostile ids, the depth limit, `save`, a user's transaction.

use super::*;
use pattern_core::store;

/// Moves, deletes and their errors, in every model.
async fn operations(store: AnyStore) {
    async fn ops<T: Named>(store: &AnyStore) {
        let m = T::SPEC.model;
        build_seed::<T>(store).await;
        // Move Databases (with MongoDB and dbm) under Books.
        tree::move_to::<T, _, _>(store, &s("Databases"), Some(&s("Books")))
            .await
            .unwrap();
        let anc = tree::ancestors::<T, _, _>(store, &s("MongoDB"))
            .await
            .unwrap();
        assert_eq!(names(&anc), ["Books", "Databases"], "{m:?}");
        let kids = tree::children::<T, _, _>(store, &s("Books")).await.unwrap();
        assert_eq!(sorted(names(&kids)), ["Databases", "Programming"], "{m:?}");
        assert_eq!(tree::depth::<T, _, _>(store, &s("dbm")).await.unwrap(), 2);
        assert_eq!(
            tree::verify::<T, _>(store).await.unwrap().defects,
            vec![],
            "{m:?}"
        );
        // Cycles are refused: under itself, under its own descendant.
        for under in ["Databases", "MongoDB"] {
            let e = tree::move_to::<T, _, _>(store, &s("Databases"), Some(&s(under))).await;
            assert!(matches!(e, Err(Error::Cycle { .. })), "{m:?} {e:?}");
        }
        let e = tree::move_to::<T, _, _>(store, &s("Books"), Some(&s("dbm"))).await;
        assert!(matches!(e, Err(Error::Cycle { .. })), "{m:?} {e:?}");
        // Unknown nodes.
        for e in [
            tree::move_to::<T, _, _>(store, &s("Nope"), Some(&s("Books"))).await,
            tree::move_to::<T, _, _>(store, &s("dbm"), Some(&s("Nope"))).await,
            tree::insert_child(store, &s("Nope"), &T::named("x")).await,
            tree::delete_node::<T, _, _>(store, &s("Nope")).await,
        ] {
            assert!(matches!(e, Err(Error::UnknownNode { .. })), "{m:?} {e:?}");
        }
        assert!(matches!(
            tree::children::<T, _, _>(store, &s("Nope")).await,
            Err(Error::UnknownNode { .. })
        ));
        assert!(matches!(
            tree::parent::<T, _, _>(store, &s("Nope")).await,
            Err(Error::UnknownNode { .. })
        ));
        assert!(tree::get::<T, _, _>(store, &s("Nope"))
            .await
            .unwrap()
            .is_none());
        // Duplicate ids, as a root and as a child.
        let e = tree::insert_root(store, &T::named("dbm")).await;
        assert!(
            matches!(e, Err(Error::Store(store::Error::DuplicateKey { .. }))),
            "{m:?} {e:?}"
        );
        let e = tree::insert_child(store, &s("Books"), &T::named("dbm")).await;
        assert!(
            matches!(e, Err(Error::Store(store::Error::DuplicateKey { .. }))),
            "{m:?} {e:?}"
        );
        assert_eq!(
            tree::verify::<T, _>(store).await.unwrap().defects,
            vec![],
            "{m:?}"
        );
        // Make Databases a root, then move it back under Programming.
        tree::move_to::<T, _, _>(store, &s("Databases"), None)
            .await
            .unwrap();
        let roots = tree::roots::<T, _>(store).await.unwrap();
        assert_eq!(sorted(names(&roots)), ["Books", "Databases"], "{m:?}");
        assert_eq!(tree::depth::<T, _, _>(store, &s("dbm")).await.unwrap(), 1);
        tree::move_to::<T, _, _>(store, &s("Databases"), Some(&s("Programming")))
            .await
            .unwrap();
        assert_eq!(tree::depth::<T, _, _>(store, &s("dbm")).await.unwrap(), 3);
        assert_eq!(
            tree::verify::<T, _>(store).await.unwrap().defects,
            vec![],
            "{m:?}"
        );
        // Delete one node: its children move up.
        tree::delete_node::<T, _, _>(store, &s("Databases"))
            .await
            .unwrap();
        let kids = tree::children::<T, _, _>(store, &s("Programming"))
            .await
            .unwrap();
        assert_eq!(
            sorted(names(&kids)),
            ["Languages", "MongoDB", "dbm"],
            "{m:?}"
        );
        assert_eq!(
            tree::depth::<T, _, _>(store, &s("MongoDB")).await.unwrap(),
            2
        );
        assert_eq!(
            tree::verify::<T, _>(store).await.unwrap().defects,
            vec![],
            "{m:?}"
        );
        // Delete a subtree.
        let n = tree::delete_subtree::<T, _, _>(store, &s("Programming"))
            .await
            .unwrap();
        assert_eq!(n, 4, "{m:?}");
        let all = tree::walk::<T, _>(store).await.unwrap();
        assert_eq!(all.len(), 1, "{m:?}");
        assert!(tree::children::<T, _, _>(store, &s("Books"))
            .await
            .unwrap()
            .is_empty());
        assert_eq!(
            tree::verify::<T, _>(store).await.unwrap().defects,
            vec![],
            "{m:?}"
        );
        // Deleting a root's node makes its children roots.
        tree::insert_child(store, &s("Books"), &T::named("A"))
            .await
            .unwrap();
        tree::insert_child(store, &s("A"), &T::named("B"))
            .await
            .unwrap();
        tree::delete_node::<T, _, _>(store, &s("Books"))
            .await
            .unwrap();
        assert_eq!(
            names(&tree::roots::<T, _>(store).await.unwrap()),
            ["A"],
            "{m:?}"
        );
        assert_eq!(tree::depth::<T, _, _>(store, &s("B")).await.unwrap(), 1);
        assert_eq!(
            tree::verify::<T, _>(store).await.unwrap().defects,
            vec![],
            "{m:?}"
        );
        // Descendants to a depth.
        tree::insert_child(store, &s("B"), &T::named("C"))
            .await
            .unwrap();
        let one = tree::descendants::<T, _, _>(store, &s("A"), Some(1))
            .await
            .unwrap();
        assert_eq!(names(&one), ["B"], "{m:?}");
        let two = tree::descendants::<T, _, _>(store, &s("A"), Some(2))
            .await
            .unwrap();
        assert_eq!(names(&two), ["B", "C"], "{m:?}");
    }
    each_model!(store, ops);
}

/// Ids with regex metacharacters stay values; `Book` never matches the subtree of `Books`;
/// ids a model cannot store are refused.
async fn hostile_ids(store: AnyStore) {
    async fn hostile<T: Named>(store: &AnyStore) {
        let m = T::SPEC.model;
        tree::insert_root(store, &T::named("Book")).await.unwrap();
        tree::insert_root(store, &T::named("Books")).await.unwrap();
        tree::insert_child(store, &s("Books"), &T::named("x"))
            .await
            .unwrap();
        tree::insert_child(store, &s("Book"), &T::named("y"))
            .await
            .unwrap();
        for id in ["a.b", "(", "*", "[x]", "^$", "\\", "$where", "é ü", "a|b"] {
            tree::insert_child(store, &s("Book"), &T::named(id))
                .await
                .unwrap();
            tree::insert_child(store, &s(id), &T::named(&format!("{id}-child")))
                .await
                .unwrap();
            let below = tree::descendants::<T, _, _>(store, &s(id), None)
                .await
                .unwrap();
            assert_eq!(names(&below), [format!("{id}-child")], "{m:?} {id}");
        }
        let books = tree::descendants::<T, _, _>(store, &s("Books"), None)
            .await
            .unwrap();
        assert_eq!(names(&books), ["x"], "{m:?}");
        let book = tree::descendants::<T, _, _>(store, &s("Book"), Some(1))
            .await
            .unwrap();
        assert!(!names(&book).contains(&s("x")), "{m:?}");
        if m == TreeModel::MaterializedPath {
            for bad in ["a,b", ""] {
                let e = tree::insert_root(store, &T::named(bad)).await;
                assert!(
                    matches!(e, Err(Error::Store(store::Error::InvalidInput(_)))),
                    "{bad:?}: {e:?}"
                );
            }
        }
        assert_eq!(
            tree::verify::<T, _>(store).await.unwrap().defects,
            vec![],
            "{m:?}"
        );
    }
    each_model!(store, hostile);
}

/// `max_depth`: a child or a move past it is refused with `TooDeep`, nothing written.
async fn max_depth(store: AnyStore) {
    async fn limited<T: Named>(store: &AnyStore) {
        build_seed::<T>(store).await;
        // The seed's tree is 3 deep; a limit of 3 refuses a fourth level.
        let spec = TreeSpec {
            max_depth: Some(3),
            ..T::SPEC
        };
        let e = pattern_core::tree::raw::insert_child(
            store,
            &spec,
            doc! {"_id": "deep"},
            &"dbm".into(),
        )
        .await;
        assert!(
            matches!(
                e,
                Err(Error::TooDeep {
                    depth: 4,
                    max_depth: 3,
                    ..
                })
            ),
            "{e:?}"
        );
        let e = pattern_core::tree::raw::move_to(
            store,
            &spec,
            &"Languages".into(),
            Some(&"dbm".into()),
        )
        .await;
        assert!(matches!(e, Err(Error::TooDeep { .. })), "{e:?}");
        let e = pattern_core::tree::raw::move_to(
            store,
            &spec,
            &"Databases".into(),
            Some(&"Languages".into()),
        )
        .await;
        assert!(matches!(e, Err(Error::TooDeep { .. })), "{e:?}");
        assert_eq!(
            tree::depth::<T, _, _>(store, &s("Languages"))
                .await
                .unwrap(),
            2
        );
        assert!(tree::get::<T, _, _>(store, &s("deep"))
            .await
            .unwrap()
            .is_none());
        assert_eq!(tree::verify::<T, _>(store).await.unwrap().defects, vec![]);
    }
    each_model!(store, limited);
}

/// `save` changes the node's own fields and keeps its place.
async fn save_keeps_place(store: AnyStore) {
    #[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
    struct Labeled {
        #[serde(rename = "_id")]
        id: String,
        label: String,
    }
    impl Tree for Labeled {
        const SPEC: TreeSpec = TreeSpec::new(COLL, TreeModel::Ancestors);
        type Id = String;
        fn id(&self) -> &String {
            &self.id
        }
    }
    let node = |id: &str, label: &str| Labeled {
        id: id.into(),
        label: label.into(),
    };
    tree::insert_root(&store, &node("r", "root")).await.unwrap();
    tree::insert_child(&store, &s("r"), &node("c", "child"))
        .await
        .unwrap();
    tree::save(&store, &node("c", "renamed")).await.unwrap();
    let c: Labeled = tree::get::<Labeled, _, _>(&store, "c")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.label, "renamed");
    assert_eq!(
        tree::depth::<Labeled, _, _>(&store, &s("c")).await.unwrap(),
        1
    );
    let e = tree::save(&store, &node("nope", "x")).await;
    assert!(matches!(e, Err(Error::UnknownNode { .. })), "{e:?}");
    let docs = documents(&store, COLL).await;
    assert_eq!(
        docs[1],
        doc! {"_id": "r", "label": "root", "ancestors": [], "parent": null}
    );
}

/// A user's own write and a tree move in one transaction: both commit, or (when the work
/// fails) neither is kept.
async fn user_transaction(store: AnyStore) {
    use pattern_core::store::query::Filter;
    // On a cluster the audit log stays unsharded, beside the tree: the transaction then
    // touches the primary shard alone (README, "Sharding").
    if let AnyStore::Mongo(m) = &store {
        pattern_tests::declare_unsharded(m.database().name(), "audit");
    }
    build_seed::<ParentRefs>(&store).await;
    // The work fails after both writes: nothing is kept.
    let failed: Result<(), Error> = pattern_core::store::transaction(&store, |tx| {
        Box::pin(async move {
            tx.insert_one("audit", doc! {"_id": 1, "moved": "Databases"})
                .await?;
            tree::move_to::<ParentRefs, _, _>(tx, "Databases", Some("Books")).await?;
            Err(Error::Store(store::Error::InvalidInput(
                "changed my mind".into(),
            )))
        })
    })
    .await;
    assert!(
        matches!(failed, Err(Error::Store(store::Error::InvalidInput(_)))),
        "{failed:?}"
    );
    assert_eq!(
        tree::depth::<ParentRefs, _, _>(&store, "MongoDB")
            .await
            .unwrap(),
        3
    );
    assert!(documents(&store, "audit").await.is_empty());
    // The same work, committed: both are there.
    pattern_core::store::transaction(&store, |tx| {
        Box::pin(async move {
            tx.insert_one("audit", doc! {"_id": 1, "moved": "Databases"})
                .await?;
            tree::move_to::<ParentRefs, _, _>(tx, "Databases", Some("Books")).await
        })
    })
    .await
    .unwrap();
    assert_eq!(
        tree::depth::<ParentRefs, _, _>(&store, "MongoDB")
            .await
            .unwrap(),
        2
    );
    let audit = store
        .find("audit", &Filter::And(vec![]), &pattern_tests::read_back())
        .await
        .unwrap();
    assert_eq!(audit, vec![doc! {"_id": 1, "moved": "Databases"}]);
}

on_both_stores!(
    user_transaction,
    operations,
    hostile_ids,
    max_depth,
    save_keeps_place,
);
