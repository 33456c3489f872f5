//! The seed's documents and queries in every model, and the commands each method sends.

use super::*;

/// The seed's documents for `model`, as its shell commands insert them.
fn seed_documents(model: TreeModel) -> Vec<Document> {
    match model {
        TreeModel::ParentRefs => vec![
            doc! {"_id": "MongoDB", "parent": "Databases"},
            doc! {"_id": "dbm", "parent": "Databases"},
            doc! {"_id": "Databases", "parent": "Programming"},
            doc! {"_id": "Languages", "parent": "Programming"},
            doc! {"_id": "Programming", "parent": "Books"},
            doc! {"_id": "Books", "parent": null},
        ],
        TreeModel::ChildRefs => vec![
            doc! {"_id": "MongoDB", "children": []},
            doc! {"_id": "dbm", "children": []},
            doc! {"_id": "Databases", "children": ["MongoDB", "dbm"]},
            doc! {"_id": "Languages", "children": []},
            doc! {"_id": "Programming", "children": ["Databases", "Languages"]},
            doc! {"_id": "Books", "children": ["Programming"]},
        ],
        TreeModel::Ancestors => vec![
            doc! {"_id": "MongoDB", "ancestors": ["Books", "Programming", "Databases"], "parent": "Databases"},
            doc! {"_id": "dbm", "ancestors": ["Books", "Programming", "Databases"], "parent": "Databases"},
            doc! {"_id": "Databases", "ancestors": ["Books", "Programming"], "parent": "Programming"},
            doc! {"_id": "Languages", "ancestors": ["Books", "Programming"], "parent": "Programming"},
            doc! {"_id": "Programming", "ancestors": ["Books"], "parent": "Books"},
            doc! {"_id": "Books", "ancestors": [], "parent": null},
        ],
        TreeModel::MaterializedPath => vec![
            doc! {"_id": "Books", "path": null},
            doc! {"_id": "Programming", "path": ",Books,"},
            doc! {"_id": "Databases", "path": ",Books,Programming,"},
            doc! {"_id": "Languages", "path": ",Books,Programming,"},
            doc! {"_id": "MongoDB", "path": ",Books,Programming,Databases,"},
            doc! {"_id": "dbm", "path": ",Books,Programming,Databases,"},
        ],
        TreeModel::NestedSet => vec![
            doc! {"_id": "Books", "parent": 0, "left": 1, "right": 12},
            doc! {"_id": "Programming", "parent": "Books", "left": 2, "right": 11},
            doc! {"_id": "Languages", "parent": "Programming", "left": 3, "right": 4},
            doc! {"_id": "Databases", "parent": "Programming", "left": 5, "right": 10},
            doc! {"_id": "MongoDB", "parent": "Databases", "left": 6, "right": 7},
            doc! {"_id": "dbm", "parent": "Databases", "left": 8, "right": 9},
        ],
    }
}

/// The document with its fields in order and integers widened (the shell writes doubles).
fn exact(d: &Document) -> Vec<(String, Bson)> {
    d.iter()
        .map(|(k, v)| {
            let v = match v {
                Bson::Int32(x) => Bson::Int64(i64::from(*x)),
                Bson::Double(x) if x.fract() == 0.0 => Bson::Int64(*x as i64),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

fn by_id(mut docs: Vec<Document>) -> Vec<Vec<(String, Bson)>> {
    docs.sort_by_key(|d| d.get_str("_id").unwrap_or_default().to_owned());
    docs.iter().map(exact).collect()
}

/// Built through the library, every model's documents are the seed's, field for field and in
/// the seed's field order; the nested-set root's parent is `null` where the seed wrote `0`.
async fn seed_documents_exactly<T: Named>(store: &AnyStore) {
    build_seed::<T>(store).await;
    let mut expected = seed_documents(T::SPEC.model);
    if T::SPEC.model == TreeModel::NestedSet {
        expected[0].insert("parent", Bson::Null);
    }
    assert_eq!(
        by_id(documents(store, COLL).await),
        by_id(expected),
        "{:?}",
        T::SPEC.model
    );
    assert!(tree::verify::<T, _>(store)
        .await
        .unwrap()
        .defects
        .is_empty());
}

/// The seed's queries through the typed API.
async fn seed_queries<T: Named>(store: &AnyStore) {
    let m = T::SPEC.model;
    let parent = tree::parent::<T, _, _>(store, &s("MongoDB")).await.unwrap();
    assert_eq!(parent.map(|p| s(p.name())), Some(s("Databases")), "{m:?}");
    let children = tree::children::<T, _, _>(store, &s("Databases"))
        .await
        .unwrap();
    assert_eq!(names(&children), ["MongoDB", "dbm"], "{m:?}");
    let ancestors = tree::ancestors::<T, _, _>(store, &s("MongoDB"))
        .await
        .unwrap();
    assert_eq!(
        names(&ancestors),
        ["Books", "Programming", "Databases"],
        "{m:?}"
    );
    let below = tree::descendants::<T, _, _>(store, &s("Programming"), None)
        .await
        .unwrap();
    let expected_order = if m == TreeModel::NestedSet || m == TreeModel::ChildRefs {
        // The seed's order of Programming's children in these two models.
        if m == TreeModel::NestedSet {
            vec!["Languages", "Databases", "MongoDB", "dbm"]
        } else {
            vec!["Databases", "MongoDB", "dbm", "Languages"]
        }
    } else {
        vec!["Databases", "MongoDB", "dbm", "Languages"]
    };
    assert_eq!(names(&below), expected_order, "{m:?}");
    let whole = tree::walk::<T, _>(store).await.unwrap();
    let shown: Vec<(u32, String)> = whole.iter().map(|(d, n)| (*d, s(n.name()))).collect();
    assert_eq!(shown.len(), 6, "{m:?}");
    assert_eq!(shown[0], (0, s("Books")));
    assert_eq!(shown[1], (1, s("Programming")));
    assert_eq!(tree::depth::<T, _, _>(store, &s("dbm")).await.unwrap(), 3);
    let roots = tree::roots::<T, _>(store).await.unwrap();
    assert_eq!(names(&roots), ["Books"], "{m:?}");
    let siblings = tree::siblings::<T, _, _>(store, &s("MongoDB"))
        .await
        .unwrap();
    assert_eq!(names(&siblings), ["dbm"], "{m:?}");
    assert!(
        tree::is_descendant::<T, _, _>(store, &s("dbm"), &s("Books"))
            .await
            .unwrap()
    );
    assert!(
        !tree::is_descendant::<T, _, _>(store, &s("Books"), &s("dbm"))
            .await
            .unwrap()
    );
}

async fn seed_tree(store: AnyStore) {
    async fn both<T: Named>(store: &AnyStore) {
        seed_documents_exactly::<T>(store).await;
        seed_queries::<T>(store).await;
    }
    each_model!(store, both);
}

/// Documents inserted by the seed's own shell commands (nested-set root `parent: 0`,
/// doubles for numbers) are read correctly.
async fn seed_shell_documents(store: AnyStore) {
    async fn shell<T: Named>(store: &AnyStore) {
        for d in seed_documents(T::SPEC.model) {
            let d = d
                .into_iter()
                .map(|(k, v)| match v {
                    Bson::Int32(x) => (k, Bson::Double(f64::from(x))),
                    other => (k, other),
                })
                .collect();
            store.insert_one(COLL, d).await.unwrap();
        }
        seed_queries::<T>(store).await;
        assert_eq!(tree::verify::<T, _>(store).await.unwrap().defects, vec![]);
    }
    each_model!(store, shell);
}

/// The README's table of commands per method and model, counted with command monitoring on
/// the article's tree (the bench shows the same counts on 10,000 nodes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongo_commands_per_method() {
    let (mongo, log) = pattern_tests::counted_mongo_store("tree_commands").await;
    let store = AnyStore::Mongo(mongo.clone());
    async fn count<T: Named>(store: &AnyStore, log: &pattern_tests::CommandLog) -> Vec<usize> {
        build_seed::<T>(store).await;
        tree::ensure_indexes::<T, _>(store).await.unwrap();
        let mut counts = Vec::new();
        macro_rules! counted {
            ($e:expr) => {{
                log.clear();
                $e.await.unwrap();
                counts.push(log.len());
            }};
        }
        counted!(tree::get::<T, _, _>(store, "MongoDB"));
        counted!(tree::depth::<T, _, _>(store, "MongoDB"));
        counted!(tree::parent::<T, _, _>(store, "MongoDB"));
        counted!(tree::children::<T, _, _>(store, "Databases"));
        counted!(tree::ancestors::<T, _, _>(store, "MongoDB"));
        counted!(tree::descendants::<T, _, _>(store, "Programming", None));
        counted!(tree::insert_child(store, "Languages", &T::named("Rust")));
        counted!(tree::move_to::<T, _, _>(store, "Databases", Some("Books")));
        counted!(tree::delete_node::<T, _, _>(store, "Databases"));
        counted!(tree::delete_subtree::<T, _, _>(store, "Programming"));
        counts
    }
    // get, depth, parent, children, ancestors, descendants, insert_child, move_to,
    // delete_node, delete_subtree: tree.md's table.
    let want: [(TreeModel, [usize; 10]); 5] = [
        (TreeModel::ParentRefs, [1, 1, 1, 1, 1, 1, 4, 6, 5, 5]),
        (TreeModel::ChildRefs, [1, 1, 1, 1, 1, 1, 5, 7, 6, 6]),
        (TreeModel::Ancestors, [1, 1, 1, 1, 1, 1, 4, 6, 6, 4]),
        (TreeModel::MaterializedPath, [1, 1, 2, 2, 2, 2, 4, 6, 5, 4]),
        (TreeModel::NestedSet, [1, 1, 1, 1, 1, 2, 5, 7, 6, 5]),
    ];
    let mut got = Vec::new();
    for (model, _) in &want {
        let counts = match model {
            TreeModel::ParentRefs => count::<ParentRefs>(&store, &log).await,
            TreeModel::ChildRefs => count::<ChildRefs>(&store, &log).await,
            TreeModel::Ancestors => count::<Ancestors>(&store, &log).await,
            TreeModel::MaterializedPath => count::<Paths>(&store, &log).await,
            TreeModel::NestedSet => count::<NestedSet>(&store, &log).await,
        };
        clear(&store).await;
        got.push((*model, counts));
    }
    let want: Vec<(TreeModel, Vec<usize>)> = want.iter().map(|(m, c)| (*m, c.to_vec())).collect();
    assert_eq!(got, want);
    let _ = mongo.database().drop().await;
}

on_both_stores!(seed_tree, seed_shell_documents);
