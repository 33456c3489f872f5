//! A product catalogue: books, shirts and cables in one `products` collection, told apart by
//! `kind` (the polymorphic pattern: `Product`, a serde internally tagged enum deriving
//! `Document`, each variant a type of its own), cables with free-form specifications as `{k, v}`
//! pairs (the attribute pattern). Step by step: the catalogue inserted and listed; one variant
//! found; a shirt-only update aimed at a book writing nothing; cables found by one attribute; a
//! save over another variant refused, then `change_variant`; documents of an unknown kind and of
//! none, written by another tool, found as typed errors and by `verify_variants`; the indexes.
//!
//! In memory by default; on MongoDB (database `pattern_product_catalogue`) when `MONGODB_URI`
//! is set:
//!
//!     cargo run -p examples --bin product_catalogue

use bson::{doc, Bson};
use pattern_core::document::{Attributes, Filter, Update, Variant};
use pattern_core::store::query::{Filter as StoreFilter, FindOptions};
use pattern_core::store::AnyStore;
use pattern_core::store::Store;
use pattern_core::{Document, Error};
use serde::{Deserialize, Serialize};

/// A book: a newtype variant's struct, declared here, a variant of `Product`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Product)]
struct Book {
    #[serde(rename = "_id")]
    id: i64,
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
    shared(id: i64, name: String, price: i64),
    variant_derive(Clone, Debug, PartialEq)
)]
enum Product {
    Book(Book),
    Shirt {
        #[serde(rename = "_id")]
        id: i64,
        name: String,
        price: i64,
        #[document(index)]
        size: String,
        colour: String,
    },
    Cable {
        #[serde(rename = "_id")]
        id: i64,
        name: String,
        price: i64,
        #[document(attributes)]
        specs: Attributes<i64>,
    },
}

fn book(id: i64, name: &str, author: &str, price: i64) -> Book {
    let (name, author, isbn) = (name.into(), author.into(), format!("isbn-{id}"));
    Book {
        id,
        name,
        price,
        author,
        isbn,
    }
}

fn shirt(id: i64, name: &str, size: &str) -> ProductShirt {
    let (name, size, colour) = (name.into(), size.into(), "blue".into());
    ProductShirt {
        id,
        name,
        price: 25,
        size,
        colour,
    }
}

fn cable(id: i64, name: &str, specs: &[(&str, i64)]) -> ProductCable {
    let specs = specs.iter().map(|(k, v)| (*k, *v)).collect();
    ProductCable {
        id,
        name: name.into(),
        price: 9,
        specs,
    }
}

fn describe(p: &Product) -> String {
    match p {
        Product::Book(b) => format!("book {} {} by {}", b.id, b.name, b.author),
        Product::Shirt { id, name, size, .. } => format!("shirt {id} {name} ({size})"),
        Product::Cable { id, specs, .. } => format!("cable {id} {:?}", specs.0),
    }
}

/// The stored document with this `_id`, as relaxed JSON, `_id` and `kind` first.
async fn stored(store: &AnyStore, id: i64) -> Result<String, Error> {
    let by_id = StoreFilter::eq("_id", id);
    let mut found = store
        .find("products", &by_id, &FindOptions::default())
        .await?;
    let found = found.pop().expect("a stored document");
    let mut out = doc! {"_id": found.get("_id").cloned(), "kind": found.get("kind").cloned()};
    for (k, v) in found {
        out.insert(k, v);
    }
    Ok(Bson::Document(out).into_relaxed_extjson().to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_product_catalogue").await?;
    println!("store: {}", store.kind());
    store.drop_collection("products").await?;

    // 1. The catalogue: each variant written through its own type or through the enum.
    let moby = book(1, "Moby-Dick", "Herman Melville", 12);
    moby.insert(&store).await?;
    let walden = book(2, "Walden", "Henry David Thoreau", 30);
    Product::Book(walden).insert(&store).await?;
    shirt(3, "Oxford", "M").insert(&store).await?;
    shirt(4, "Flannel", "L").into_enum().insert(&store).await?;
    let usb = cable(5, "USB-C 2 m", &[("amps", 10), ("metres", 2)]);
    usb.insert(&store).await?;
    let extension = cable(6, "Extension 10 m", &[("amps", 3), ("metres", 10)]);
    extension.insert(&store).await?;
    println!("1. inserted 6 products: 2 books, 2 shirts, 2 cables");
    for id in [1, 3, 5] {
        println!("   {}", stored(&store, id).await?);
    }

    // 2. The whole collection as the enum, sorted and filtered by shared fields.
    let all = Product::find(Filter::everything()).ascending(Product::ID);
    println!("2. all products, as the enum:");
    for p in all.all(&store).await? {
        println!("   {}", describe(&p));
    }
    let dear = Product::find(Product::PRICE.gte(20)).ascending(Product::ID);
    let dear: Vec<i64> = dear.all(&store).await?.iter().map(|p| *p.id()).collect();
    println!("   price >= 20: {dear:?}");
    assert_eq!(dear, [2, 3, 4]);

    // 3. One variant: only its own documents come back, as its own type.
    let shirts = ProductShirt::find(ProductShirt::PRICE.gte(0)).ascending(ProductShirt::ID);
    let shirts = shirts.all(&store).await?;
    let shirts: Vec<&str> = shirts.iter().map(|s| s.name.as_str()).collect();
    let not_a_book = Book::get(&store, &3).await?;
    println!("3. shirts: {shirts:?}; Book::get(3): {not_a_book:?} (3 is a shirt)");
    assert_eq!((shirts, not_a_book), (vec!["Oxford", "Flannel"], None));

    // 4. A shirt-only update: aimed at a book, it matches nothing and writes nothing.
    let xl = || Update::new().set(ProductShirt::SIZE, "XL");
    let on_book = ProductShirt::update_one(&store, ProductShirt::ID.eq(1), xl()).await?;
    let on_shirt = ProductShirt::update_one(&store, ProductShirt::ID.eq(3), xl()).await?;
    println!("4. set size XL on _id 1 (a book): {on_book}; on _id 3 (a shirt): {on_shirt}");
    let book_1 = stored(&store, 1).await?;
    println!("   book 1 as stored: {book_1}");
    assert!(!on_book && on_shirt && !book_1.contains("size"));
    assert_eq!(ProductShirt::get(&store, &3).await?.unwrap().size, "XL");

    // 5. The attribute pattern: `amps` at least 10 in one {k, v} pair. Cable 6 has an `amps`
    // pair and a value of 10 (its metres), in two pairs: it does not match.
    let strong = ProductCable::find(ProductCable::SPECS.attribute("amps").gte(10));
    let short = ProductCable::find(ProductCable::SPECS.attribute("metres").between(1, 5));
    let ids = |cables: Vec<ProductCable>| cables.iter().map(|c| c.id).collect::<Vec<_>>();
    let (strong, short) = (
        ids(strong.all(&store).await?),
        ids(short.all(&store).await?),
    );
    println!("5. cables with amps >= 10: {strong:?}; of 1 to 5 metres: {short:?}");
    assert_eq!((strong, short), (vec![5], vec![5]));

    // 6. A save never changes a variant; `change_variant` does, explicitly.
    let over = book(4, "Dubliners", "James Joyce", 15);
    let Err(Error::OtherVariant { variant, .. }) = over.save(&store).await else {
        panic!("a save over another variant went through")
    };
    let (was, written) = (
        variant.stored.as_deref().unwrap_or("none"),
        &variant.written,
    );
    println!(
        "6. save of book 4 over shirt 4: refused (OtherVariant: stored {was}, written {written})"
    );
    let shirt_4 = ProductShirt::get(&store, &4).await?;
    assert_eq!(shirt_4, Some(shirt(4, "Flannel", "L")));
    let changed = over.clone().into_enum().change_variant(&store).await?;
    let now = stored(&store, 4).await?;
    println!("   change_variant: {changed}; product 4 as stored: {now}");
    assert!(changed && !now.contains("size") && !now.contains("colour"));
    assert_eq!(Book::get(&store, &4).await?, Some(over));
    assert_eq!(ProductShirt::get(&store, &4).await?, None);

    // 7. Another tool writes a hat (a kind this program does not know) and a product of none.
    for raw in [
        doc! {"_id": 90_i64, "kind": "hat", "name": "Fedora", "price": 40},
        doc! {"_id": 91_i64, "name": "Mystery", "price": 1},
    ] {
        store.insert_one("products", raw).await?;
    }
    println!("7. another tool wrote products 90 (kind hat) and 91 (no kind)");
    let hat = Product::get(&store, &90).await;
    let Err(e @ Error::UnknownVariant { .. }) = hat else {
        panic!("an unknown kind: {hat:?}")
    };
    println!("   Product::get(90): UnknownVariant: {e}");
    let every = Product::find(Filter::everything()).all(&store).await;
    assert!(matches!(every, Err(Error::UnknownVariant { .. })));
    println!("   find of every product: UnknownVariant");
    let known = Product::find(Filter::everything()).skip_unknown_variants();
    let known = known.all(&store).await?.len();
    let books = Book::find(Filter::everything()).all(&store).await?.len();
    println!("   skip_unknown_variants: {known} products; Book::find: {books} books");
    assert_eq!((known, books), (6, 3));
    let kind = |v: Option<&Bson>| v.map_or("none".into(), Bson::to_string);
    let odd = Product::verify_variants(&store).await?;
    let mut odd: Vec<String> = (odd.iter())
        .map(|u| format!("{} ({})", u.id, kind(u.variant.as_ref())))
        .collect();
    odd.sort();
    println!("   verify_variants: {}", odd.join(", "));
    assert_eq!(odd, ["90 (\"hat\")", "91 (none)"]);

    // 8. Each variant's indexes, partial on its kind.
    let mut names = store.index_names("products").await?;
    names.sort();
    println!("8. indexes of products: {}", names.join(", "));
    for want in [
        "isbn_1_kind_book",
        "size_1_kind_shirt",
        "pattern_attributes_specs_kind_cable",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    println!("product catalogue: each variant read and written alone, nothing across variants");
    Ok(())
}
