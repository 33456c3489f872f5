//! Plain documents (`#[derive(Document)]`, `pattern_core::document`), on both stores: the
//! article's atomic checkout on the seed's book, 16 concurrent checkouts of 3 copies, keyword
//! search on the seed's Moby-Dick (one keyword, all of several, any of several, the seed's
//! projection), normalised keywords, typed paths that follow serde's renames, and `explain`
//! showing the multikey index at work on both stores.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bson::{doc, Bson, DateTime};
use pattern_core::document::{Filter, Update};
use pattern_core::money::{self, Decimal};
use pattern_core::{store::Store, AnyStore, Document, Error};
use pattern_tests::{documents, on_both_stores, recording_mongo_store};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Checkout {
    by: String,
    date: DateTime,
}

/// The seed's book, field for field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "books")]
struct Book {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    author: Vec<String>,
    published_date: DateTime,
    pages: i32,
    language: String,
    publisher_id: String,
    available: i32,
    checkout: Vec<Checkout>,
}

fn date(iso: &str) -> DateTime {
    DateTime::parse_rfc3339_str(iso).unwrap()
}

/// `{_id: 123456789, title: "MongoDB: The Definitive Guide", ..., available: 3, checkout: [{by:
/// "joe", date: ISODate("2012-10-15")}]}`
fn seed_book() -> Book {
    Book {
        id: 123456789,
        title: "MongoDB: The Definitive Guide".into(),
        author: vec!["Kristina Chodorow".into(), "Mike Dirolf".into()],
        published_date: date("2010-09-24T00:00:00Z"),
        pages: 216,
        language: "English".into(),
        publisher_id: "oreilly".into(),
        available: 3,
        checkout: vec![Checkout {
            by: "joe".into(),
            date: date("2012-10-15T00:00:00Z"),
        }],
    }
}

/// The seed's update: `update({_id, available: {$gt: 0}}, {$inc: {available: -1}, $push:
/// {checkout: {by, date: new Date()}}})`; whether it applied.
async fn checkout(store: &AnyStore, id: i64, by: &str) -> bool {
    Book::update_one(
        store,
        Book::ID.eq(id).and(Book::AVAILABLE.gt(0)),
        Update::new().inc(Book::AVAILABLE, -1).push(
            Book::CHECKOUT,
            Checkout {
                by: by.into(),
                date: DateTime::now(),
            },
        ),
    )
    .await
    .expect("the checkout update")
}

fn readers(book: &Book) -> Vec<&str> {
    book.checkout.iter().map(|c| c.by.as_str()).collect()
}

/// The seed's document and update: the stored document is the seed's, the checkout applies
/// while copies last (`nMatched: 1`), then matches nothing and writes nothing (`nMatched: 0`).
async fn checkout_recipe(store: AnyStore) {
    seed_book().insert(&store).await.unwrap();
    let stored = documents(&store, "books").await;
    assert_eq!(
        stored,
        [doc! {
            "_id": 123456789_i64,
            "title": "MongoDB: The Definitive Guide",
            "author": ["Kristina Chodorow", "Mike Dirolf"],
            "published_date": date("2010-09-24T00:00:00Z"),
            "pages": 216,
            "language": "English",
            "publisher_id": "oreilly",
            "available": 3,
            "checkout": [{"by": "joe", "date": date("2012-10-15T00:00:00Z")}],
        }]
    );
    assert!(checkout(&store, 123456789, "abc").await);
    let book = Book::get(&store, &123456789).await.unwrap().unwrap();
    assert_eq!(book.available, 2);
    assert_eq!(readers(&book), ["joe", "abc"]);
    assert!(checkout(&store, 123456789, "def").await);
    assert!(checkout(&store, 123456789, "ghi").await);
    let before = documents(&store, "books").await;
    assert!(!checkout(&store, 123456789, "late").await, "no copy left");
    assert_eq!(documents(&store, "books").await, before, "nothing written");
    assert!(!checkout(&store, 42, "nobody").await, "no such book");
    let book = Book::get(&store, &123456789).await.unwrap().unwrap();
    assert_eq!(book.available, 0);
    assert_eq!(readers(&book), ["joe", "abc", "def", "ghi"]);
    // A return: the inverse update, conditional on the reader holding a copy.
    let returned = Book::update_one(
        &store,
        Book::ID.eq(123456789_i64),
        Update::new()
            .inc(Book::AVAILABLE, 1)
            .set(Book::LANGUAGE, "en"),
    )
    .await
    .unwrap();
    assert!(returned);
    let book = Book::get(&store, &123456789).await.unwrap().unwrap();
    assert_eq!((book.available, book.language.as_str()), (1, "en"));
    // `save` writes the whole document back (last writer wins), `insert` refuses a second.
    let mut edited = book.clone();
    edited.pages = 217;
    edited.save(&store).await.unwrap();
    assert_eq!(Book::get(&store, &123456789).await.unwrap(), Some(edited));
    let again = seed_book().insert(&store).await.unwrap_err();
    assert!(matches!(again, Error::DuplicateKey { .. }), "{again:?}");
    let nothing = Book::update_one(&store, Filter::id(&123456789), Update::new()).await;
    assert!(
        matches!(nothing, Err(Error::InvalidInput(_))),
        "{nothing:?}"
    );
}

/// 16 tasks check out the seed's book (3 copies) at once: exactly 3 succeed, every write
/// returns without error, and a reader polling the book meanwhile never sees `available`
/// below 0 nor a copy count and a log that disagree (`available + checkouts = 4` in every
/// state: the two fields change in one write). The log ends with `joe` and the 3 winners.
async fn sixteen_checkouts_of_three_copies(store: AnyStore) {
    seed_book().insert(&store).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let observer = {
        let (store, done) = (store.clone(), done.clone());
        tokio::spawn(async move {
            let mut seen = 0;
            while !done.load(Ordering::SeqCst) || seen == 0 {
                let book = Book::get(&store, &123456789).await.unwrap().unwrap();
                assert!(book.available >= 0, "available {}", book.available);
                assert_eq!(book.available as usize + book.checkout.len(), 4, "{book:?}");
                seen += 1;
                tokio::task::yield_now().await;
            }
            seen
        })
    };
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let by = format!("reader{i}");
                (checkout(&store, 123456789, &by).await, by)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        let (applied, by) = t.await.expect("a checkout task");
        if applied {
            winners.push(by);
        }
    }
    done.store(true, Ordering::SeqCst);
    let polls = observer.await.expect("the observer");
    assert_eq!(winners.len(), 3, "winners: {winners:?}");
    let book = Book::get(&store, &123456789).await.unwrap().unwrap();
    assert_eq!(book.available, 0);
    let mut log = readers(&book)[1..].to_vec();
    log.sort();
    winners.sort();
    assert_eq!(readers(&book)[0], "joe");
    assert_eq!(log, winners);
    println!("16 checkouts of 3 copies: 3 applied, 13 refused, {polls} consistent reads");
}

/// The seed's keyword document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "volumes")]
struct Volume {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
    author: String,
    published: i32,
    #[serde(rename = "ISBN")]
    isbn: i64,
    #[document(keywords)]
    topics: Vec<String>,
}

fn volume(id: i32, title: &str, published: i32, topics: &[&str]) -> Volume {
    Volume {
        id,
        title: title.into(),
        author: "someone".into(),
        published,
        isbn: 1000 + i64::from(id),
        topics: topics.iter().map(|t| t.to_string()).collect(),
    }
}

/// `{title: "Moby-Dick", author: "Herman Melville", published: 1851, ISBN: 0451526996,
/// topics: ["whaling", "allegory", "revenge", "American", "novel", "nautical", "voyage", "Cape
/// Cod"]}`
fn moby_dick() -> Volume {
    Volume {
        id: 1,
        title: "Moby-Dick".into(),
        author: "Herman Melville".into(),
        published: 1851,
        isbn: 451526996,
        topics: [
            "whaling", "allegory", "revenge", "American", "novel", "nautical", "voyage", "Cape Cod",
        ]
        .map(String::from)
        .to_vec(),
    }
}

/// The seed's projection `{title: 1}`: `_id` and the title.
#[derive(Debug, PartialEq, Deserialize)]
struct Title {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
}

async fn library(store: &AnyStore) {
    moby_dick().insert(store).await.unwrap();
    volume(2, "The Odyssey", -700, &["voyage", "epic", "nautical"])
        .insert(store)
        .await
        .unwrap();
    volume(3, "Walden", 1854, &["nature", "American"])
        .insert(store)
        .await
        .unwrap();
    volume(4, "Empty", 2000, &[]).insert(store).await.unwrap();
}

/// The seed's `createIndex({topics: 1})` and `findOne({topics: "voyage"}, {title: 1})`, and
/// the queries on one keyword, all of several and any of several.
async fn keyword_search_replays_moby_dick(store: AnyStore) {
    library(&store).await;
    let names = store.index_names("volumes").await.unwrap();
    assert!(names.contains(&"topics_1".to_owned()), "{names:?}");
    let one: Option<Title> = Volume::find(Volume::TOPICS.contains("voyage"))
        .project(Volume::TITLE)
        .ascending(Volume::ID)
        .one_as(&store)
        .await
        .unwrap();
    assert_eq!(
        one,
        Some(Title {
            id: 1,
            title: "Moby-Dick".into()
        })
    );
    let titles = |found: Vec<Volume>| found.into_iter().map(|v| v.title).collect::<Vec<_>>();
    let voyage = Volume::find(Volume::TOPICS.contains("voyage"))
        .ascending(Volume::ID)
        .all(&store)
        .await
        .unwrap();
    assert_eq!(titles(voyage), ["Moby-Dick", "The Odyssey"]);
    let all = Volume::find(Volume::TOPICS.contains_all(["voyage", "whaling"]))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(titles(all), ["Moby-Dick"]);
    let any = Volume::find(Volume::TOPICS.contains_any(["epic", "nature"]))
        .descending(Volume::PUBLISHED)
        .all(&store)
        .await
        .unwrap();
    assert_eq!(titles(any), ["Walden", "The Odyssey"]);
    // Keywords are compared exactly (no normalisation asked for here): "american" is not
    // "American"; no stemming: "whale" is not "whaling".
    for missing in ["american", "whale"] {
        let none = Volume::find(Volume::TOPICS.contains(missing))
            .all(&store)
            .await
            .unwrap();
        assert!(none.is_empty(), "{missing}");
    }
    let nothing = Volume::find(Volume::TOPICS.contains_all(Vec::<String>::new()))
        .all(&store)
        .await
        .unwrap();
    assert!(nothing.is_empty());
    // With another condition, and a keyword added in place.
    let old = Volume::TOPICS
        .contains("American")
        .and(Volume::PUBLISHED.lt(1852));
    let found = Volume::find(old.clone()).all(&store).await.unwrap();
    assert_eq!(titles(found), ["Moby-Dick"]);
    let add = Update::new().push(Volume::TOPICS, "transcendentalism".to_owned());
    assert!(Volume::update_one(&store, Filter::id(&3), add)
        .await
        .unwrap());
    let walden = Volume::find(Volume::TOPICS.contains("transcendentalism"))
        .project(Volume::TITLE)
        .all_as::<Title, _>(&store)
        .await
        .unwrap();
    assert_eq!(
        walden,
        [Title {
            id: 3,
            title: "Walden".into()
        }]
    );
}

/// Keywords lowercased on write and on query (`#[document(keywords(lowercase))]`); typed paths
/// named as serde stores the fields (`rename_all`, `rename`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "articles")]
#[serde(rename_all = "camelCase")]
struct Article {
    #[serde(rename = "_id")]
    id: String,
    head_line: String,
    #[document(keywords(lowercase))]
    search_tags: Vec<String>,
    read_count: i64,
}

async fn keywords_are_normalised(store: AnyStore) {
    assert_eq!(Article::HEAD_LINE.name(), "headLine");
    assert_eq!(Article::SEARCH_TAGS.name(), "searchTags");
    assert_eq!(Article::ID.name(), "_id");
    let a = Article {
        id: "a1".into(),
        head_line: "Schema design".into(),
        search_tags: vec!["MongoDB".into(), "Rust".into(), "ÉTÉ".into()],
        read_count: 0,
    };
    a.insert(&store).await.unwrap();
    let stored = documents(&store, "articles").await;
    assert_eq!(
        stored[0].get_array("searchTags").unwrap(),
        &vec![Bson::from("mongodb"), Bson::from("rust"), Bson::from("été")]
    );
    for query in ["RUST", "rust", "Rust"] {
        let found = Article::find(Article::SEARCH_TAGS.contains(query))
            .all(&store)
            .await
            .unwrap();
        assert_eq!(found.len(), 1, "{query}");
    }
    let both = Article::find(Article::SEARCH_TAGS.contains_all(["MONGODB", "Été"]))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(both.len(), 1);
    let update = Update::new()
        .push(Article::SEARCH_TAGS, "Async".to_owned())
        .inc(Article::READ_COUNT, 5);
    assert!(Article::update_one(&store, Filter::id("a1"), update)
        .await
        .unwrap());
    let got = Article::get(&store, "a1").await.unwrap().unwrap();
    assert_eq!(got.search_tags, ["mongodb", "rust", "été", "async"]);
    assert_eq!(got.read_count, 5);
    // `save` normalises too.
    let mut edited = got.clone();
    edited.search_tags.push("NoSQL".into());
    edited.save(&store).await.unwrap();
    let got = Article::get(&store, "a1").await.unwrap().unwrap();
    assert_eq!(got.search_tags.last().map(String::as_str), Some("nosql"));
}

/// A library of `n` volumes, one in ten about "voyage".
async fn shelves(store: &AnyStore, n: i32) {
    moby_dick().insert(store).await.unwrap();
    for i in 2..=n {
        let topics: &[&str] = if i % 10 == 0 {
            &["voyage", "sea"]
        } else {
            &["novel", "history"]
        };
        volume(i, &format!("Volume {i}"), 1900 + i, topics)
            .insert(store)
            .await
            .unwrap();
    }
}

/// In memory, the planner walks `topics_1` for one keyword and for all of several (the first
/// one looked up, the others checked): it examines the documents holding the keyword only.
async fn memory_keyword_search_uses_the_index(store: AnyStore) {
    let AnyStore::Memory(m) = &store else {
        return;
    };
    shelves(&store, 200).await;
    let voyage = Volume::TOPICS.contains("voyage").to_query().unwrap();
    let plan = m.explain("volumes", &voyage);
    assert_eq!(plan.index.as_deref(), Some("topics_1"));
    assert_eq!((plan.examined, plan.returned), (21, 21));
    let all = (Volume::TOPICS.contains_all(["whaling", "voyage"]))
        .to_query()
        .unwrap();
    let plan = m.explain("volumes", &all);
    assert_eq!(plan.index.as_deref(), Some("topics_1"));
    assert_eq!((plan.examined, plan.returned), (1, 1));
    println!("memory explain: {plan:?}");
}

/// The article's product with a price: `Decimal` fields in each money form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: i32,
    #[serde(with = "pattern_core::money::decimal128")]
    price: Decimal,
    #[serde(
        serialize_with = "money::scaled::serialize::<2, _>",
        deserialize_with = "money::scaled::deserialize::<2, _>"
    )]
    cost: Decimal,
    #[serde(default, with = "money::decimal128::option")]
    discount: Option<Decimal>,
    #[serde(with = "money::text")]
    label: Decimal,
    /// A collection part-way through a conversion: read in any form, written as Decimal128.
    #[serde(
        serialize_with = "money::decimal128::serialize",
        deserialize_with = "money::any_form::deserialize::<2, _>"
    )]
    list: Decimal,
}

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn product(id: i32, price: &str) -> Product {
    Product {
        id,
        price: dec(price),
        cost: dec("1.50"),
        discount: None,
        label: dec(price),
        list: dec(price),
    }
}

/// `Decimal` fields stored as Decimal128 (and the other money forms): `$inc` adds exactly
/// (0.1 three times is 0.3), comparisons and sorting are exact where `f64` cannot tell the
/// values apart, the scaled form adds at its scale and refuses finer amounts, the text form
/// refuses `$inc`; every stored value has its form's BSON type.
async fn money_fields_are_exact(store: AnyStore) {
    // 10.000000000000000001 and 10.000000000000000002 are the same f64.
    let prices = [
        "0",
        "10.000000000000000002",
        "10.000000000000000001",
        "9.99",
        "10",
    ];
    for (i, p) in prices.iter().enumerate() {
        product(i as i32, p).insert(&store).await.unwrap();
    }
    let stored = documents(&store, "products").await;
    assert_eq!(
        stored[1].get("price"),
        Some(&Bson::Decimal128("10.000000000000000002".parse().unwrap()))
    );
    assert_eq!(stored[1].get("cost"), Some(&Bson::Int64(150)));
    assert_eq!(stored[1].get("discount"), Some(&Bson::Null));
    assert_eq!(
        stored[1].get("label"),
        Some(&Bson::String("10.000000000000000002".into()))
    );
    assert_eq!(
        stored[1].get("list"),
        Some(&Bson::Decimal128("10.000000000000000002".parse().unwrap()))
    );
    // 0.1 added three times is 0.3, exactly.
    for _ in 0..3 {
        let inc = Update::new()
            .inc(Product::PRICE, dec("0.1"))
            .inc(Product::COST, dec("0.01"));
        assert!(Product::update_one(&store, Product::ID.eq(0), inc)
            .await
            .unwrap());
    }
    let p = Product::get(&store, &0).await.unwrap().unwrap();
    assert_eq!((p.price, p.cost), (dec("0.3"), dec("1.53")));
    assert_eq!(
        documents(&store, "products").await[0].get("cost"),
        Some(&Bson::Int64(153))
    );
    // Comparisons: beyond what f64 holds.
    let above = Product::find(Product::PRICE.gt(dec("10.000000000000000001")))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(above.iter().map(|p| p.id).collect::<Vec<_>>(), [1]);
    let exactly = Product::find(Product::PRICE.eq(dec("10.000000000000000001")))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(exactly.iter().map(|p| p.id).collect::<Vec<_>>(), [2]);
    // Sorting: 0.3, 9.99, 10, 10.000000000000000001, 10.000000000000000002.
    let sorted = Product::find(Filter::everything())
        .ascending(Product::PRICE)
        .all(&store)
        .await
        .unwrap();
    assert_eq!(
        sorted.iter().map(|p| p.id).collect::<Vec<_>>(),
        [0, 3, 4, 2, 1]
    );
    // `set` of an optional amount, then a filter on it.
    let set = Update::new().set(Product::DISCOUNT, Some(dec("0.05")));
    assert!(Product::update_one(&store, Product::ID.eq(3), set)
        .await
        .unwrap());
    let discounted = Product::find(Product::DISCOUNT.eq(Some(dec("0.05"))))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(discounted.iter().map(|p| p.id).collect::<Vec<_>>(), [3]);
    // Refused before anything is sent: an amount finer than the scale; `$inc` on text.
    let before = documents(&store, "products").await;
    let finer = Update::new().inc(Product::COST, dec("0.001"));
    let e = Product::update_one(&store, Product::ID.eq(0), finer)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("cost")),
        "{e:?}"
    );
    let text = Update::new().inc(Product::LABEL, dec("1"));
    let e = Product::update_one(&store, Product::ID.eq(0), text)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("as text")),
        "{e:?}"
    );
    assert_eq!(documents(&store, "products").await, before);
}

on_both_stores!(
    money_fields_are_exact,
    checkout_recipe,
    sixteen_checkouts_of_three_copies,
    keyword_search_replays_moby_dick,
    keywords_are_normalised,
);

/// Fixtures clear collections whole (a delete that reaches every shard): left out of the
/// targeting check.
mod fixtures {
    use super::*;

    /// The in-memory store as a test double (the same calls on MongoDB): fixtures seeded as
    /// another tool wrote them, read back in `_id` order with every BSON type, cleared.
    async fn fixtures_keep_every_bson_type(store: AnyStore) {
        use pattern_core::testing::Fixtures;
        let docs = vec![
            doc! {"_id": 3, "n": 1_i32, "big": 1_i64, "x": 1.5, "d": Bson::Decimal128("0.10".parse().unwrap())},
            doc! {"_id": 1, "n": 2_i32, "when": DateTime::from_millis(0), "tags": ["a"]},
            doc! {"_id": 2, "nested": {"deep": 3_i64}},
        ];
        store.seed("fixtures", docs.clone()).await.unwrap();
        let stored = store.documents("fixtures").await.unwrap();
        assert_eq!(stored, [docs[1].clone(), docs[2].clone(), docs[0].clone()]);
        assert_eq!(stored[2].get("big"), Some(&Bson::Int64(1)));
        assert_eq!(stored[2].get("n"), Some(&Bson::Int32(1)));
        // A library type reads the fixture; what it writes is there to look at.
        store
            .seed(
                "products",
                [
                    doc! {"_id": 9, "price": Bson::Decimal128("1.10".parse().unwrap()),
                    "cost": 110_i64, "label": "1.10", "list": 110_i64},
                ],
            )
            .await
            .unwrap();
        let p = Product::get(&store, &9).await.unwrap().unwrap();
        assert_eq!(
            (p.price, p.list, p.discount),
            (dec("1.10"), dec("1.10"), None)
        );
        let again = store.seed("fixtures", [doc! {"_id": 1}]).await.unwrap_err();
        assert!(matches!(again, Error::DuplicateKey { .. }), "{again:?}");
        let all = pattern_core::store::query::Filter::everything();
        let n = store
            .find("fixtures", &all, &Default::default())
            .await
            .unwrap()
            .len();
        assert_eq!(n, 3);
        assert_eq!(store.clear("fixtures").await.unwrap(), 3);
        assert!(store.documents("fixtures").await.unwrap().is_empty());
        assert!(store.documents("nothing_here").await.unwrap().is_empty());
    }

    on_both_stores!(untargeted: fixtures_keep_every_bson_type);
}

mod memory_only {
    #[tokio::test]
    async fn keyword_search_uses_the_index() {
        super::memory_keyword_search_uses_the_index(pattern_tests::memory_store()).await;
    }
}

/// On MongoDB, the very find the library sends for one keyword and for all of several, as
/// recorded by command monitoring, explained: an index scan of `topics_1` (multikey), with as
/// many documents examined as returned; the find names itself a keyword search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongo_keyword_search_uses_the_index() {
    let (m, log) = recording_mongo_store("documents_explain").await;
    let store = AnyStore::Mongo(m.clone());
    shelves(&store, 200).await;
    for (filter, want) in [
        (Volume::TOPICS.contains("voyage"), 21),
        (Volume::TOPICS.contains_all(["whaling", "voyage"]), 1),
    ] {
        log.lock().unwrap().clear();
        let found = Volume::find(filter)
            .project(Volume::TITLE)
            .all_as::<Title, _>(&store)
            .await
            .unwrap();
        assert_eq!(found.len(), want);
        let sent: Vec<bson::Document> = (log.lock().unwrap().iter())
            .filter(|(name, _)| name == "find")
            .map(|(_, cmd)| cmd.clone())
            .collect();
        assert_eq!(sent.len(), 1, "one find: {sent:?}");
        let find = &sent[0];
        assert_eq!(
            find.get_str("comment").unwrap(),
            "pattern scatter: keyword search"
        );
        let mut cmd = bson::Document::new();
        for k in ["find", "filter", "projection"] {
            if let Some(v) = find.get(k) {
                cmd.insert(k, v.clone());
            }
        }
        let out = m
            .database()
            .run_command(doc! {"explain": cmd.clone(), "verbosity": "executionStats"})
            .await
            .expect("explain");
        let stats = out.get_document("executionStats").expect("executionStats");
        let n = |k: &str| pattern_tests::as_int(stats.get(k).unwrap_or(&Bson::Null));
        let (examined, returned) = (n("totalDocsExamined"), n("nReturned"));
        let plan = out
            .get_document("queryPlanner")
            .and_then(|q| q.get_document("winningPlan"))
            .expect("winningPlan");
        let scans = index_scans(plan);
        println!(
            "explain of {cmd}: index scans {scans:?}, docs examined {examined:?}, returned {returned:?}"
        );
        assert!(
            scans
                .iter()
                .any(|(name, multikey)| name == "topics_1" && *multikey != Some(false)),
            "no scan of topics_1 in {plan}"
        );
        assert_eq!(returned, Some(want as i64));
        assert_eq!(examined, returned, "documents examined beyond the matches");
    }
    let _ = m.database().drop().await;
}

/// The `IXSCAN` stages of a plan: index name and `isMultiKey` where the server says.
fn index_scans(plan: &bson::Document) -> Vec<(String, Option<bool>)> {
    let mut out = Vec::new();
    if plan.get_str("stage") == Ok("IXSCAN") {
        let name = plan.get_str("indexName").unwrap_or("").to_owned();
        out.push((name, plan.get_bool("isMultiKey").ok()));
    }
    for (_, v) in plan {
        match v {
            Bson::Document(d) => out.extend(index_scans(d)),
            Bson::Array(a) => {
                for d in a.iter().filter_map(Bson::as_document) {
                    out.extend(index_scans(d));
                }
            }
            _ => {}
        }
    }
    out
}
