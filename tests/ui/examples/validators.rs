// `validate` on each derive, in a module that imports nothing, beside a user's own `Result`:
// the trait constants it sets (and leaves unset without it), the id types a tree reads off its
// id field, and `ensure_validator` type-checked against `MemoryStore` with a `Send` future.
#![deny(warnings)]

pub mod models {
    type Result<T> = std::result::Result<T, String>;

    #[derive(pattern_core::Bucket)]
    #[bucket(collection = "trades", size = 10, validate)]
    pub struct TradeHistory {
        #[bucket(key)]
        pub customer_id: i64,
        #[bucket(items)]
        pub history: Vec<i64>,
    }

    #[derive(pattern_core::Outlier, serde::Serialize, serde::Deserialize)]
    #[outlier(
        collection = "sales",
        threshold = 50,
        overflow = "extra_sales",
        validate
    )]
    pub struct Book {
        #[outlier(id)]
        #[serde(rename = "_id")]
        pub id: String,
        #[outlier(items)]
        pub customers_purchased: Vec<String>,
    }

    #[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
    #[tree(collection = "categories", model = "nested_set", validate)]
    pub struct Category {
        #[serde(rename = "_id")]
        pub id: bson::oid::ObjectId,
    }

    #[derive(pattern_core::Tree, serde::Serialize, serde::Deserialize)]
    #[tree(collection = "menus", model = "child_refs")]
    pub struct Menu {
        #[serde(rename = "_id")]
        pub id: (u8, u8),
    }

    pub fn constants() -> Result<()> {
        use pattern_core::tree::Tree;
        use pattern_core::{spec::BsonType, Bucket, Outlier};
        const { assert!(TradeHistory::VALIDATE && Book::VALIDATE && Category::VALIDATE) };
        const { assert!(!Menu::VALIDATE) };
        assert_eq!(Category::ID_TYPES, [BsonType::ObjectId]);
        assert!(Menu::ID_TYPES.is_empty());
        Ok(())
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

async fn install(store: &pattern_core::MemoryStore) -> pattern_core::Result<()> {
    use models::{Book, Category, Menu, TradeHistory};
    assert_send(TradeHistory::ensure_validator(store)).await?;
    assert_send(Book::ensure_validator(store)).await?;
    assert_send(Category::ensure_validator(store)).await?;
    assert_send(Menu::ensure_validator(store)).await
}

fn main() {
    models::constants().unwrap();
    drop(install(&pattern_core::MemoryStore::new()));
}
