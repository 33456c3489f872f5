// #[derive(Tree)] in each of the five models, in a module that imports nothing, beside a
// user's own `Result`; every generated method is called (type-checked against `MemoryStore`,
// never run) and its future checked to be `Send`.
#![deny(warnings)]

pub mod models {
    type Result<T> = std::result::Result<T, String>;

    #[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
    #[tree(collection = "by_parent", model = "parent_refs")]
    pub struct ByParent {
        #[serde(rename = "_id")]
        pub name: String,
    }

    #[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
    #[tree(collection = "by_children", model = "child_refs")]
    pub struct ByChildren {
        #[serde(rename = "_id")]
        pub id: i64,
        pub label: String,
    }

    #[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
    #[tree(collection = "by_ancestors", model = "ancestors")]
    pub struct ByAncestors {
        #[serde(rename = "_id")]
        pub id: bson::oid::ObjectId,
    }

    #[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
    #[tree(collection = "by_path", model = "materialized_path")]
    pub struct ByPath {
        pub _id: String,
        pub size: u64,
    }

    #[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
    #[tree(collection = "by_bounds", model = "nested_set")]
    pub struct ByBounds {
        #[tree(id)]
        #[serde(rename = "_id")]
        pub id: u32,
    }

    pub fn spec() -> Result<()> {
        use pattern_core::spec::{TreeFields, TreeModel};
        use pattern_core::tree::Tree;
        assert_eq!(ByParent::SPEC.model, TreeModel::ParentRefs);
        assert_eq!(ByChildren::SPEC.model, TreeModel::ChildRefs);
        assert_eq!(ByAncestors::SPEC.model, TreeModel::Ancestors);
        assert_eq!(ByPath::SPEC.model, TreeModel::MaterializedPath);
        assert_eq!(ByBounds::SPEC.model, TreeModel::NestedSet);
        for spec in [
            ByParent::SPEC,
            ByChildren::SPEC,
            ByAncestors::SPEC,
            ByPath::SPEC,
            ByBounds::SPEC,
        ] {
            assert_eq!((spec.fields, spec.max_depth), (TreeFields::SEED, None));
        }
        assert_eq!(ByParent::SPEC.collection, "by_parent");
        let node = ByPath {
            _id: "docs".into(),
            size: 3,
        };
        assert_eq!(node.id(), "docs");
        Ok(())
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

/// Every method of one model, with the types it returns.
async fn every_method(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    use models::ByParent;
    let id = "Books".to_owned();
    let node = ByParent { name: id.clone() };
    assert_send(ByParent::ensure_indexes(store)).await?;
    assert_send(node.insert_root(store)).await?;
    assert_send(node.insert_child(store, &id)).await?;
    assert_send(node.save(store)).await?;
    let _: Option<ByParent> = assert_send(ByParent::get(store, &id)).await?;
    let _: Option<ByParent> = assert_send(ByParent::parent(store, &id)).await?;
    let _: Vec<ByParent> = assert_send(ByParent::children(store, &id)).await?;
    let _: Vec<ByParent> = assert_send(ByParent::siblings(store, &id)).await?;
    let _: Vec<ByParent> = assert_send(ByParent::ancestors(store, &id)).await?;
    let _: Vec<ByParent> = assert_send(ByParent::descendants(store, &id, None)).await?;
    let _: Vec<ByParent> = ByParent::descendants(store, &id, Some(1)).await?;
    let _: u32 = assert_send(ByParent::depth(store, &id)).await?;
    let _: bool = assert_send(ByParent::is_descendant(store, &id, &id)).await?;
    assert_send(ByParent::move_to(store, &id, Some(&id))).await?;
    ByParent::move_to(store, &id, None).await?;
    let _: u64 = assert_send(ByParent::delete_subtree(store, &id)).await?;
    assert_send(ByParent::delete_node(store, &id)).await?;
    let _: Vec<ByParent> = assert_send(ByParent::roots(store)).await?;
    let walked: Vec<(u32, ByParent)> = assert_send(ByParent::walk(store)).await?;
    let _ = walked.into_iter().map(|(depth, node)| (depth, node.name));
    let defects: Vec<pattern_core::tree::Defect> =
        assert_send(ByParent::verify(store)).await?.defects;
    let _ = defects.iter().filter(|d| d.repairable()).count();
    let repair: pattern_core::tree::Repair = assert_send(ByParent::repair(store)).await?;
    let _ = (repair.fixed.len(), repair.unrepaired.len());
    Ok(())
}

/// The other models, with their id types.
async fn other_models(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    use models::{ByAncestors, ByBounds, ByChildren, ByPath};
    let node = ByChildren {
        id: 1,
        label: "root".into(),
    };
    node.insert_root(store).await?;
    ByChildren {
        id: 2,
        label: "leaf".into(),
    }
    .insert_child(store, &1)
    .await?;
    let _: Vec<ByChildren> = assert_send(ByChildren::children(store, &1)).await?;
    ByChildren::move_to(store, &2, None).await?;

    let oid = bson::oid::ObjectId::new();
    ByAncestors { id: oid }.insert_root(store).await?;
    let _: Vec<ByAncestors> = assert_send(ByAncestors::ancestors(store, &oid)).await?;

    let path = ByPath {
        _id: "docs".into(),
        size: 1,
    };
    path.insert_child(store, &"root".to_owned()).await?;
    let _: Vec<ByPath> = assert_send(ByPath::descendants(store, &path._id, None)).await?;

    ByBounds { id: 1 }.insert_root(store).await?;
    let _: u64 = assert_send(ByBounds::delete_subtree(store, &1)).await?;
    let _: Vec<(u32, ByBounds)> = ByBounds::walk(store).await?;
    Ok(())
}

/// Generic code passes its own store type through (`S: Store + ?Sized`), as users write it.
#[allow(clippy::needless_maybe_sized)]
async fn generic<S: pattern_core::store::Store + ?Sized>(store: &S) -> pattern_core::Result<u32> {
    models::ByBounds::depth(store, &7).await
}

fn main() {
    models::spec().unwrap();
    // Type-checked only: building the futures does not run them.
    let store = pattern_core::MemoryStore::new();
    drop(every_method(&store));
    drop(other_models(&store));
    drop(generic(&store));
}
