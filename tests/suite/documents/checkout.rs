//! The article's atomic checkout on the seed's book, and 16 concurrent checkouts of 3 copies.

use super::*;
use pattern_core::store;

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
    assert!(
        matches!(again, Error::Store(store::Error::DuplicateKey { .. })),
        "{again:?}"
    );
    let nothing = Book::update_one(&store, Filter::id(&123456789), Update::new()).await;
    assert!(
        matches!(nothing, Err(Error::Store(store::Error::InvalidInput(_)))),
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

on_both_stores!(checkout_recipe, sixteen_checkouts_of_three_copies);
