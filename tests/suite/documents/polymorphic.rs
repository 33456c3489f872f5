//! Documents of many shapes in one collection (`#[derive(Document)]` on a serde internally
//! tagged enum), on both stores: the catalogue's books (a newtype of a struct deriving
//! `Document` with `variant_of`), shirts and cables (struct-like variants, their structs
//! generated). A variant's find, update, get and delete see only its own documents, so a
//! variant-only field is never written into another variant's document (Mongoose's stripped
//! or misapplied subtype updates) and another variant never comes back (Spring Data's 1597);
//! a save never changes a document's variant, `change_variant` does; a document with an
//! unknown or missing discriminator is a typed error, skipped when asked, listed by
//! `verify_variants` (MongoEngine hid them); an index on a variant's field is partial on its
//! variant; the validator checks each variant's fields by discriminator.

use pattern_core::document::{Attributes, Variant};
use pattern_core::store;
use pattern_core::store::query;

use super::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Product)]
struct Book {
    #[serde(rename = "_id")]
    id: u32,
    name: String,
    price: i64,
    author: String,
    #[document(index)]
    isbn: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(
    collection = "products",
    shared(id: u32, name: String, price: i64),
    variant_derive(Clone, Debug, PartialEq)
)]
enum Product {
    Book(Book),
    Shirt {
        #[serde(rename = "_id")]
        id: u32,
        name: String,
        price: i64,
        #[document(index)]
        size: String,
        colour: String,
    },
    Cable {
        #[serde(rename = "_id")]
        id: u32,
        name: String,
        price: i64,
        #[document(attributes)]
        specs: Attributes<i64>,
    },
}

fn book(id: u32, price: i64) -> Book {
    Book {
        id,
        name: format!("book {id}"),
        price,
        author: "Melville".into(),
        isbn: format!("isbn-{id}"),
    }
}

fn shirt(id: u32, size: &str) -> ProductShirt {
    ProductShirt {
        id,
        name: format!("shirt {id}"),
        price: 20,
        size: size.into(),
        colour: "blue".into(),
    }
}

fn cable(id: u32, metres: i64) -> ProductCable {
    ProductCable {
        id,
        name: format!("cable {id}"),
        price: 5,
        specs: [("metres", metres), ("amps", 10)].into_iter().collect(),
    }
}

async fn catalogue(store: &AnyStore) {
    Product::Book(book(1, 12)).insert(store).await.unwrap();
    book(2, 30).insert(store).await.unwrap();
    shirt(3, "M").insert(store).await.unwrap();
    shirt(4, "L").into_enum().insert(store).await.unwrap();
    cable(5, 2).insert(store).await.unwrap();
}

fn ids(products: &[Product]) -> Vec<u32> {
    let mut out: Vec<u32> = products.iter().map(|p| *p.id()).collect();
    out.sort();
    out
}

async fn one_collection_each_variant_its_own(store: AnyStore) {
    catalogue(&store).await;
    let raw = documents(&store, "products").await;
    let kinds: Vec<&str> = raw.iter().map(|d| d.get_str("kind").unwrap()).collect();
    assert_eq!(kinds, ["book", "book", "shirt", "shirt", "cable"]);
    assert!(raw[1].get_str("author").is_ok(), "{:?}", raw[1]);
    // The whole collection, as the enum; filters on the shared fields.
    let all = Product::find(Filter::everything())
        .all(&store)
        .await
        .unwrap();
    assert_eq!(ids(&all), [1, 2, 3, 4, 5]);
    let dear = Product::find(Product::PRICE.gte(20))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(ids(&dear), [2, 3, 4]);
    assert_eq!(
        Product::get(&store, &3).await.unwrap(),
        Some(shirt(3, "M").into_enum())
    );
    // One variant: its type back, never another variant's, even on a shared field.
    let books = Book::find(Book::PRICE.gte(0)).all(&store).await.unwrap();
    assert_eq!(books, [book(1, 12), book(2, 30)]);
    let shirts = ProductShirt::find(ProductShirt::PRICE.eq(20))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(shirts, [shirt(3, "M"), shirt(4, "L")]);
    assert_eq!(Book::get(&store, &3).await.unwrap(), None, "a shirt's id");
    assert_eq!(
        ProductShirt::get(&store, &4).await.unwrap(),
        Some(shirt(4, "L"))
    );
    // A variant-only update: applied to that variant's documents only.
    let to_xl = || Update::new().set(ProductShirt::SIZE, "XL");
    let on_book = ProductShirt::update_one(&store, ProductShirt::ID.eq(1_u32), to_xl());
    assert!(!on_book.await.unwrap(), "a book is not a shirt");
    let raw = documents(&store, "products").await;
    assert!(!raw[0].contains_key("size"), "{:?}", raw[0]);
    assert!(
        ProductShirt::update_one(&store, ProductShirt::ID.eq(3_u32), to_xl())
            .await
            .unwrap()
    );
    assert_eq!(
        ProductShirt::get(&store, &3).await.unwrap().unwrap().size,
        "XL"
    );
    // A shared-field update over the whole collection.
    let cheaper = Update::new().set(Product::PRICE, 4);
    assert!(Product::update_one(&store, Product::ID.eq(5_u32), cheaper)
        .await
        .unwrap());
    assert_eq!(
        ProductCable::get(&store, &5).await.unwrap().unwrap().price,
        4
    );
    // A variant's delete deletes its own only.
    assert!(!Book::delete(&store, &4).await.unwrap());
    assert!(ProductShirt::get(&store, &4).await.unwrap().is_some());
    assert!(ProductShirt::delete(&store, &4).await.unwrap());
    // The conversions.
    let p = Product::Book(book(9, 1));
    assert_eq!(ProductShirt::from_enum(p.clone()), Err(p.clone()));
    assert_eq!(Book::from_enum(p), Ok(book(9, 1)));
}

async fn a_variant_changes_only_explicitly(store: AnyStore) {
    catalogue(&store).await;
    // Saving a book over the shirt 3: refused, nothing written (by the enum or the variant).
    let over = Product::Book(book(3, 99)).save(&store).await.unwrap_err();
    let Error::OtherVariant { variant, .. } = &over else {
        panic!("{over:?}")
    };
    assert_eq!(
        (variant.stored.as_deref(), variant.written.as_str()),
        (Some("shirt"), "book")
    );
    assert!(matches!(
        book(3, 99).save(&store).await,
        Err(Error::OtherVariant { .. })
    ));
    assert_eq!(
        Product::get(&store, &3).await.unwrap(),
        Some(shirt(3, "M").into_enum())
    );
    // A save of the same variant writes; a new id is inserted.
    shirt(3, "S").save(&store).await.unwrap();
    book(7, 8).save(&store).await.unwrap();
    assert_eq!(
        ProductShirt::get(&store, &3).await.unwrap().unwrap().size,
        "S"
    );
    // The explicit change: the shirt 3 is now a book, no shirt field left.
    assert!(Product::Book(book(3, 99))
        .change_variant(&store)
        .await
        .unwrap());
    assert_eq!(Book::get(&store, &3).await.unwrap(), Some(book(3, 99)));
    let raw = documents(&store, "products").await;
    let three = raw
        .iter()
        .find(|d| d.get_i64("_id").ok() == Some(3) || d.get_i32("_id").ok() == Some(3));
    assert!(!three.unwrap().contains_key("size"));
    assert!(!Product::Book(book(70, 1))
        .change_variant(&store)
        .await
        .unwrap());
    assert_eq!(Product::get(&store, &70).await.unwrap(), None);
}

async fn unknown_shapes_are_typed_errors(store: AnyStore) {
    catalogue(&store).await;
    let raw = [
        doc! {"_id": 90, "kind": "hat", "name": "fedora", "price": 3},
        doc! {"_id": 91, "name": "no kind", "price": 3},
        doc! {"_id": 92, "kind": "book", "name": "no author", "price": 3, "isbn": "x"},
    ];
    for d in raw {
        store.insert_one("products", d).await.unwrap();
    }
    let e = Product::get(&store, &90).await.unwrap_err();
    let Error::UnknownVariant { id, variant, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!((id.as_str(), variant.value.as_deref()), ("90", Some("hat")));
    assert!(e.to_string().contains("`kind: hat`"), "{e}");
    let e = Product::get(&store, &91).await.unwrap_err();
    assert!(
        matches!(&e, Error::UnknownVariant { variant, .. } if variant.value.is_none()),
        "{e:?}"
    );
    // A find of the collection fails on them, or skips them when asked (a book missing its
    // author is another error: a known variant that does not decode).
    assert!(Product::find(Filter::everything())
        .all(&store)
        .await
        .is_err());
    let known = Product::find(Product::PRICE.gte(5))
        .skip_unknown_variants()
        .all(&store)
        .await
        .unwrap();
    assert_eq!(ids(&known), [1, 2, 3, 4, 5]);
    // A variant's find never sees them.
    assert_eq!(
        ProductShirt::find(Filter::everything())
            .all(&store)
            .await
            .unwrap()
            .len(),
        2
    );
    let mut bad = Product::verify_variants(&store).await.unwrap();
    bad.sort_by_key(|u| u.id.to_string());
    let found: Vec<(String, Option<Bson>)> = bad
        .iter()
        .map(|u| (u.id.to_string(), u.variant.clone()))
        .collect();
    assert_eq!(
        found,
        [
            ("90".to_owned(), Some(Bson::String("hat".into()))),
            ("91".to_owned(), None),
            ("92".to_owned(), Some(Bson::String("book".into()))),
        ]
    );
    assert!(bad[2].reason.contains("author"), "{}", bad[2].reason);
}

async fn indexes_and_validator_per_variant(store: AnyStore) {
    Product::ensure_indexes(&store).await.unwrap();
    let names = store.index_names("products").await.unwrap();
    for want in [
        "isbn_1_kind_book",
        "size_1_kind_shirt",
        "pattern_attributes_specs_kind_cable",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    // A variant's type installs its enum's validator, not one of its own.
    Book::ensure_validator(&store).await.unwrap();
    catalogue(&store).await;
    let refused = [
        doc! {"_id": 90, "kind": "hat", "name": "fedora", "price": 3},
        doc! {"_id": 91, "name": "no kind", "price": 3},
        doc! {"_id": 92, "kind": "book", "name": "no author", "price": 3, "isbn": "x"},
        doc! {"_id": 93, "kind": "shirt", "name": "s", "price": 3, "size": 4, "colour": "red"},
    ];
    for d in refused {
        let e = store.insert_one("products", d.clone()).await.unwrap_err();
        assert!(
            matches!(e, store::Error::SchemaViolation { .. }),
            "{d}: {e:?}"
        );
    }
    // A shirt with a book's field passes: each variant checks its own fields.
    let ok =
        doc! {"_id": 94, "kind": "shirt", "name": "s", "price": 3, "size": "M", "colour": "red"};
    store.insert_one("products", ok).await.unwrap();
    // The partial index serves a variant's find on its field: the filter as the library
    // sends it (the discriminator added), explained.
    let filter = query::Filter::And(vec![
        query::Filter::Eq("kind".into(), Bson::String("book".into())),
        query::Filter::Eq("isbn".into(), Bson::String("isbn-2".into())),
    ]);
    let found = Book::find(Book::ISBN.eq("isbn-2"))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(found, [book(2, 30)]);
    let index = match &store {
        AnyStore::Memory(m) => m.explain("products", &filter).index.unwrap_or_default(),
        AnyStore::Mongo(m) => {
            let cmd = doc! {"find": "products", "filter": filter.to_document()};
            let out = m
                .database()
                .run_command(doc! {"explain": cmd, "verbosity": "queryPlanner"})
                .await
                .expect("explain");
            let plan = out.get_document("queryPlanner").unwrap().to_string();
            if plan.contains("isbn_1_kind_book") {
                "isbn_1_kind_book".to_owned()
            } else {
                plan
            }
        }
    };
    assert_eq!(index, "isbn_1_kind_book");
    // In memory, a cable's attribute query walks the cables' partial attribute index, bounded
    // by the attribute's name and value within one element.
    if let AnyStore::Memory(m) = &store {
        let amps = ProductCable::SPECS
            .attribute("amps")
            .gte(10)
            .to_query()
            .unwrap();
        let filter = query::Filter::And(vec![
            query::Filter::Eq("kind".into(), Bson::String("cable".into())),
            amps,
        ]);
        let plan = m.explain("products", &filter);
        assert_eq!(
            plan.index.as_deref(),
            Some("pattern_attributes_specs_kind_cable")
        );
        assert_eq!((plan.examined, plan.returned), (1, 1));
    }
}

/// `analyze_shapes` (`pattern analyze shapes`) on the catalogue, no type needed: `kind`
/// found, each value's count and fields, the cables' attribute keys.
async fn shapes_analyzed_without_types(store: AnyStore) {
    catalogue(&store).await;
    let opts = pattern_core::adopt::Options::default();
    let r = pattern_core::adopt::shapes::analyze_shapes(&store, "products", None, &opts)
        .await
        .unwrap();
    let d = r.discriminator.unwrap();
    assert_eq!((d.field.as_str(), d.found, d.missing), ("kind", true, 0));
    let values: Vec<(&str, u64)> = d
        .values
        .iter()
        .map(|v| (v.value.as_str(), v.count))
        .collect();
    assert_eq!(values, [("book", 2), ("shirt", 2), ("cable", 1)]);
    assert_eq!(d.values[0].always, ["author", "isbn", "name", "price"]);
    let keys: Vec<(&str, u64)> = (r.attributes[0].keys.iter())
        .map(|(k, n, _)| (k.as_str(), *n))
        .collect();
    assert_eq!(
        (r.attributes[0].field.as_str(), keys),
        ("specs", vec![("amps", 1), ("metres", 1)])
    );
}

/// A variant keeping lowercased keywords, as the newtype of a struct and as a struct-like
/// variant: what the enum's writes must normalise as the variant's do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Item)]
struct Novel {
    #[serde(rename = "_id")]
    id: u32,
    title: String,
    #[document(keywords(lowercase))]
    topics: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(
    collection = "items",
    shared(id: u32, title: String),
    variant_derive(Clone, Debug, PartialEq)
)]
enum Item {
    Novel(Novel),
    #[serde(rename = "tshirt")]
    TShirt {
        #[serde(rename = "_id")]
        id: u32,
        title: String,
        #[document(keywords(lowercase))]
        tags: Vec<String>,
    },
}

fn novel(id: u32) -> Novel {
    Novel {
        id,
        title: "Moby-Dick".into(),
        topics: vec!["Whales".into(), "SEA".into()],
    }
}

fn tshirt(id: u32) -> ItemTShirt {
    ItemTShirt {
        id,
        title: "Tee".into(),
        tags: vec!["Cotton".into()],
    }
}

/// Every write of the enum normalises a variant's keywords as the variant's own writes do: an
/// insert, a save (new and over a document), a change of variant; the variant's keyword
/// search finds them all.
async fn the_enums_writes_keep_a_variants_keywords(store: AnyStore) {
    Item::Novel(novel(1)).insert(&store).await.unwrap();
    Item::Novel(novel(2)).save(&store).await.unwrap();
    novel(3).insert(&store).await.unwrap();
    Item::Novel(novel(3)).save(&store).await.unwrap();
    tshirt(4).insert(&store).await.unwrap();
    assert!(Item::Novel(novel(4)).change_variant(&store).await.unwrap());
    novel(5).insert(&store).await.unwrap();
    assert!(tshirt(5).into_enum().change_variant(&store).await.unwrap());
    tshirt(6).into_enum().insert(&store).await.unwrap();
    let raw = documents(&store, "items").await;
    for d in &raw {
        let (field, want) = match d.get_str("kind").unwrap() {
            "novel" => ("topics", vec!["whales", "sea"]),
            _ => ("tags", vec!["cotton"]),
        };
        let stored: Vec<&str> = (d.get_array(field).unwrap().iter())
            .map(|b| b.as_str().unwrap())
            .collect();
        assert_eq!(stored, want, "{d}");
    }
    let mut found: Vec<u32> = Novel::find(Novel::TOPICS.contains("Whales"))
        .all(&store)
        .await
        .unwrap()
        .iter()
        .map(|n| n.id)
        .collect();
    found.sort();
    assert_eq!(found, [1, 2, 3, 4]);
    let shirts = ItemTShirt::find(ItemTShirt::TAGS.contains("COTTON"))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(shirts.iter().map(|s| s.id).collect::<Vec<_>>(), [5, 6]);
}

/// 8 tasks on one `_id`, each changing its variant and saving it as either variant: a save is
/// written or refused with `OtherVariant`, never anything else (no duplicate key from the
/// upsert that lost to a change of variant).
async fn a_save_racing_a_change_of_variant_is_written_or_refused(store: AnyStore) {
    Item::Novel(novel(1)).insert(&store).await.unwrap();
    let steps = pattern_tests::scale(20, 100);
    let outcomes = futures::future::join_all((0..8_u32).map(|t| {
        let store = &store;
        async move {
            let (mut written, mut refused) = (0, 0);
            for i in 0..steps {
                let save = match (t + i) % 4 {
                    0 => {
                        assert!(Item::Novel(novel(1)).change_variant(store).await.unwrap());
                        continue;
                    }
                    1 => {
                        assert!(tshirt(1).into_enum().change_variant(store).await.unwrap());
                        continue;
                    }
                    2 => novel(1).save(store).await,
                    _ => tshirt(1).save(store).await,
                };
                match save {
                    Ok(()) => written += 1,
                    Err(Error::OtherVariant { .. }) => refused += 1,
                    Err(e) => panic!("task {t}, step {i}: {e:?}"),
                }
            }
            (written, refused)
        }
    }))
    .await;
    let (written, refused) = outcomes
        .iter()
        .fold((0, 0), |(w, r), (a, b)| (w + a, r + b));
    assert_eq!(written + refused, 8 * steps / 2);
    assert!(Item::get(&store, &1).await.unwrap().is_some());
    assert!(Item::verify_variants(&store).await.unwrap().is_empty());
}

on_both_stores!(
    shapes_analyzed_without_types,
    one_collection_each_variant_its_own,
    a_variant_changes_only_explicitly,
    unknown_shapes_are_typed_errors,
    indexes_and_validator_per_variant,
    the_enums_writes_keep_a_variants_keywords,
    a_save_racing_a_change_of_variant_is_written_or_refused,
);
