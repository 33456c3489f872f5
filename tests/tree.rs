//! The tree models (`pattern_core::tree`), on both stores: the seed's documents and queries in
//! every model, each operation and its errors, hostile ids, write skew, verify and repair with
//! injected defects, and the oracle that runs one random sequence of operations through all
//! five models and compares every answer.

use bson::{doc, Bson, Document};
use pattern_core::tree::{self, Tree};
use pattern_core::{
    spec::{TreeModel, TreeSpec},
    store::Store,
    AnyStore, Error,
};
use pattern_tests::{documents, on_both_stores};
use serde::{Deserialize, Serialize};

const COLL: &str = "categories";

/// A node type per model, all over the seed's collection and layout (the node holds its id
/// and nothing else, as in the seed).
trait Named: Tree<Id = String> + Clone + std::fmt::Debug + 'static {
    fn named(name: &str) -> Self;
    fn name(&self) -> &str {
        self.id()
    }
}

macro_rules! node_type {
    ($name:ident, $model:expr) => {
        #[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
        struct $name {
            #[serde(rename = "_id")]
            name: String,
        }
        impl Tree for $name {
            const SPEC: TreeSpec = TreeSpec::new(COLL, $model);
            type Id = String;
            fn id(&self) -> &String {
                &self.name
            }
        }
        impl Named for $name {
            fn named(name: &str) -> Self {
                $name {
                    name: name.to_owned(),
                }
            }
        }
    };
}

node_type!(ParentRefs, TreeModel::ParentRefs);
node_type!(ChildRefs, TreeModel::ChildRefs);
node_type!(Ancestors, TreeModel::Ancestors);
node_type!(Paths, TreeModel::MaterializedPath);
node_type!(NestedSet, TreeModel::NestedSet);

/// Runs `$f::<Model>(&store)` for each of the five models, on a fresh collection each.
macro_rules! each_model {
    ($store:expr, $f:ident) => {{
        let store: &AnyStore = &$store;
        $f::<ParentRefs>(store).await;
        clear(store).await;
        $f::<ChildRefs>(store).await;
        clear(store).await;
        $f::<Ancestors>(store).await;
        clear(store).await;
        $f::<Paths>(store).await;
        clear(store).await;
        $f::<NestedSet>(store).await;
        clear(store).await;
    }};
}

async fn clear(store: &AnyStore) {
    store.drop_collection(COLL).await.expect("drop");
    store
        .drop_collection(tree::VERSIONS)
        .await
        .expect("drop versions");
}

fn s(x: &str) -> String {
    x.to_owned()
}

fn names<T: Named>(nodes: &[T]) -> Vec<String> {
    nodes.iter().map(|n| n.name().to_owned()).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Builds the seed's tree `Books > Programming > {Databases > {MongoDB, dbm}, Languages}`.
/// The seed orders Programming's children differently in two models (child references list
/// Databases first; nested sets number Languages first): each is built in its seed's order.
async fn build_seed<T: Named>(store: &AnyStore) {
    tree::insert_root(store, &T::named("Books")).await.unwrap();
    tree::insert_child(store, &s("Books"), &T::named("Programming"))
        .await
        .unwrap();
    let programming = if T::SPEC.model == TreeModel::NestedSet {
        ["Languages", "Databases"]
    } else {
        ["Databases", "Languages"]
    };
    for c in programming {
        tree::insert_child(store, &s("Programming"), &T::named(c))
            .await
            .unwrap();
    }
    for c in ["MongoDB", "dbm"] {
        tree::insert_child(store, &s("Databases"), &T::named(c))
            .await
            .unwrap();
    }
}

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
        assert!(matches!(e, Err(Error::DuplicateKey { .. })), "{m:?} {e:?}");
        let e = tree::insert_child(store, &s("Books"), &T::named("dbm")).await;
        assert!(matches!(e, Err(Error::DuplicateKey { .. })), "{m:?} {e:?}");
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
                assert!(matches!(e, Err(Error::InvalidInput(_))), "{bad:?}: {e:?}");
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
    let failed: Result<(), Error> = pattern_core::transaction(&store, |tx| {
        Box::pin(async move {
            tx.insert_one("audit", doc! {"_id": 1, "moved": "Databases"})
                .await?;
            tree::move_to::<ParentRefs, _, _>(tx, "Databases", Some("Books")).await?;
            Err(Error::InvalidInput("changed my mind".into()))
        })
    })
    .await;
    assert!(matches!(failed, Err(Error::InvalidInput(_))), "{failed:?}");
    assert_eq!(
        tree::depth::<ParentRefs, _, _>(&store, "MongoDB")
            .await
            .unwrap(),
        3
    );
    assert!(documents(&store, "audit").await.is_empty());
    // The same work, committed: both are there.
    pattern_core::transaction(&store, |tx| {
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
    assert!(matches!(e, Err(Error::InvalidInput(_))), "{e:?}");
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

on_both_stores!(
    derived_integer_ids,
    user_transaction,
    seed_tree,
    seed_shell_documents,
    operations,
    hostile_ids,
    max_depth,
    save_keeps_place
);

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
    // delete_node, delete_subtree: the README's table.
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
