//! The collections `advise` is tested on, one per finding kind and one that fits none, written
//! the same on any store (every `_id`, date and value fixed): the suite asserts the findings'
//! figures on both stores and compiles their code (`tests/ui/examples/advise_*.rs`); the CLI's
//! tests run the commands each finding gives on the same data. And four collections of
//! MongoDB's published sample datasets, loaded from `tests/data/mongodb-sample/` as
//! `mongoimport` loads them.

use bson::{doc, oid::ObjectId, Binary, DateTime, Document};
use pattern_core::store::query::IndexSpec;
use pattern_core::store::Store;

/// 2023-11-14T22:13:20Z, the seeds' first moment.
pub const EPOCH_MS: i64 = 1_700_000_000_000;

/// `sales` (outlier): 500 books, 496 bought by 3 to 12 users (`i % 10 + 3`), books 0, 125,
/// 250 and 375 by 1,000, 2,000, 3,000 and 4,000; every 50th book has no title; an index on
/// the array (`customers_purchased_1`). Returns each book's array length, by `_id`.
pub async fn sales<S: Store>(store: &S) -> Vec<u64> {
    let mut docs = Vec::new();
    let mut lengths = Vec::new();
    for i in 0..500_i32 {
        let n = if i % 125 == 0 {
            1_000 * (i / 125 + 1)
        } else {
            i % 10 + 3
        };
        let buyers: Vec<String> = (0..n).map(|u| format!("user{u}")).collect();
        let mut d = doc! {"_id": i};
        if i % 50 != 7 {
            d.insert("title", format!("Book {i}"));
        }
        d.insert("customers_purchased", buyers);
        docs.push(d);
        lengths.push(n as u64);
    }
    store.insert_many("sales", docs).await.expect("seed sales");
    let index = IndexSpec {
        name: "customers_purchased_1".into(),
        keys: vec![("customers_purchased".into(), 1)],
        unique: false,
        partial: None,
    };
    store
        .create_index("sales", &index)
        .await
        .expect("index sales");
    lengths
}

/// `trades` (bucket): customers 1 to 20, customer `c` with `30 + c` trades an hour and a
/// quarter apart from `EPOCH_MS + c` minutes (a flat series over two to three days each).
/// Returns each customer's number of trades.
pub async fn trades<S: Store>(store: &S) -> Vec<u64> {
    let mut docs = Vec::new();
    let mut per = Vec::new();
    let mut id = 0_i64;
    for c in 1..=20_i32 {
        let n = 30 + c;
        for i in 0..n {
            id += 1;
            let at = EPOCH_MS + i64::from(c) * 60_000 + i64::from(i) * 4_500_000;
            let ticker = ["MDB", "GOOG", "AAPL"][(i % 3) as usize];
            docs.push(doc! {
                "_id": id,
                "customerId": c,
                "ticker": ticker,
                "type": if i % 2 == 0 { "buy" } else { "sell" },
                "qty": i64::from(1 + (c * 7 + i) % 100),
                "date": DateTime::from_millis(at),
            });
        }
        per.push(n as u64);
    }
    store
        .insert_many("trades", docs)
        .await
        .expect("seed trades");
    per
}

/// The specification fields of `parts`.
pub const PART_SPECS: [&str; 12] = [
    "voltage", "watts", "amps", "ohms", "lengthMm", "widthMm", "heightMm", "weightG", "pins",
    "lumens", "rpm", "ports",
];

/// `parts` (attribute): 300 parts, each with a name, a price and 2 or 3 of the twelve
/// [`PART_SPECS`] (integers), part `i` holding specs `i % 12`, `(i + 5) % 12`, and
/// `(i + 8) % 12` when `i` is even ([`part_holds`]).
pub async fn parts<S: Store>(store: &S) {
    let mut docs = Vec::new();
    for i in 0..300_i64 {
        let mut d = doc! {"_id": i, "name": format!("part {i}"), "price": 100 + i % 50};
        for s in (0..12).filter(|s| part_holds(i, *s)) {
            d.insert(PART_SPECS[s as usize], 10 + (i * s) % 90);
        }
        docs.push(d);
    }
    store.insert_many("parts", docs).await.expect("seed parts");
}

/// Whether part `i` holds spec `s` (an index into [`PART_SPECS`]).
pub fn part_holds(i: i64, s: i64) -> bool {
    i % 12 == s || (i + 5) % 12 == s || (i % 2 == 0 && (i + 8) % 12 == s)
}

/// `products` (polymorphic): 120 products, `kind` cycling book (`author`, an `isbn` for two in
/// three), shirt (`size`, `colour`), cable (`lengthM`, `connector`); every one a name and a
/// price.
pub async fn products<S: Store>(store: &S) {
    let mut docs = Vec::new();
    for i in 0..120_i64 {
        let mut d = doc! {"_id": i, "name": format!("product {i}"), "price": 5 + i % 40};
        match i % 3 {
            0 => {
                d.insert("kind", "book");
                d.insert("author", format!("author {}", i % 17));
                if i % 9 != 0 {
                    d.insert("isbn", format!("978-{i:07}"));
                }
            }
            1 => {
                d.insert("kind", "shirt");
                d.insert("size", ["S", "M", "L"][(i % 9 / 3) as usize]);
                d.insert("colour", ["blue", "white"][(i % 2) as usize]);
            }
            _ => {
                d.insert("kind", "cable");
                d.insert("lengthM", 1 + i % 5);
                d.insert("connector", ["usb-c", "hdmi"][(i % 2) as usize]);
            }
        }
        docs.push(d);
    }
    store
        .insert_many("products", docs)
        .await
        .expect("seed products");
}

/// `customers` (schema versioning, a version field): 150 customers; 0 to 9 without
/// `schema_version` and 10 to 59 at version 1 (`name`, `email`); 60 to 149 at version 2
/// (`first`, `last`, `email`).
pub async fn customers<S: Store>(store: &S) {
    let mut docs = Vec::new();
    for i in 0..150_i64 {
        let email = format!("c{i}@example.com");
        docs.push(match i {
            0..10 => doc! {"_id": i, "name": format!("Ann Old{i}"), "email": email},
            10..60 => {
                doc! {"_id": i, "schema_version": 1, "name": format!("Ann Lee{i}"), "email": email}
            }
            _ => doc! {
                "_id": i,
                "schema_version": 2,
                "first": "Bo",
                "last": format!("Chen{i}"),
                "email": email,
            },
        });
    }
    store
        .insert_many("customers", docs)
        .await
        .expect("seed customers");
}

/// An ObjectId created at `secs` after [`EPOCH_MS`], its other bytes from `n`.
pub fn object_id(secs: u32, n: u32) -> ObjectId {
    let t = (EPOCH_MS / 1000) as u32 + secs;
    let mut b = [0u8; 12];
    b[..4].copy_from_slice(&t.to_be_bytes());
    b[8..].copy_from_slice(&n.to_be_bytes());
    ObjectId::from_bytes(b)
}

/// `people` (schema versioning over time, no version field): 200 people created an hour
/// apart (ObjectId `_id`s); the first 100 store `name`, `city` and `born` (an `int`), the next
/// 100 `first`, `last`, `city` and `born`: from the 101st hour on, `name` gave way to `first`
/// and `last`.
pub async fn people<S: Store>(store: &S) {
    let mut docs = Vec::new();
    for i in 0..200_u32 {
        let id = object_id(i * 3_600, i);
        let city = ["Lyon", "Oslo", "Lima"][(i % 3) as usize];
        let born = 1950 + (i % 50) as i32;
        docs.push(if i < 100 {
            doc! {"_id": id, "name": format!("Ada Byron{i}"), "city": city, "born": born}
        } else {
            doc! {"_id": id, "first": "Ada", "last": format!("Byron{i}"), "city": city, "born": born}
        });
    }
    store
        .insert_many("people", docs)
        .await
        .expect("seed people");
}

/// `categories` (tree, parent references): 60 categories `c0`..`c59`, each with a name;
/// `c0`, `c1`, `c2` are roots (`parent: null`), `ci` is a child of `c(i / 3)` otherwise.
pub async fn categories<S: Store>(store: &S) {
    let mut docs = Vec::new();
    for i in 0..60_u32 {
        let parent = if i < 3 {
            bson::Bson::Null
        } else {
            bson::Bson::String(format!("c{}", i / 3))
        };
        docs.push(doc! {"_id": format!("c{i}"), "name": format!("Category {i}"), "parent": parent});
    }
    store
        .insert_many("categories", docs)
        .await
        .expect("seed categories");
}

/// `folders` (tree, parent references, integer `_id`s): 40 folders `0`..`39` (`int`s), each
/// with a name; `0` is the root (`parent: null`), `i` a child of `(i - 1) / 3` otherwise.
pub async fn folders<S: Store>(store: &S) {
    let mut docs = Vec::new();
    for i in 0..40_i32 {
        let parent = if i == 0 {
            bson::Bson::Null
        } else {
            bson::Bson::Int32((i - 1) / 3)
        };
        docs.push(doc! {"_id": i, "name": format!("Folder {i}"), "parent": parent});
    }
    store
        .insert_many("folders", docs)
        .await
        .expect("seed folders");
}

/// `exams` (bucket, keyed by an ObjectId): 1,000 exam results a minute apart (`takenAt`), of
/// 20 students (`student`, an ObjectId: 50 results each), each a `score` from 0 to 100
/// (`(i * 37) % 101`: 9 or 10 results per score, 10 for the median one) and a comment. The
/// score repeats as often as a key would, but identifies nothing: the series is the student's.
pub async fn exams<S: Store>(store: &S) {
    let mut docs = Vec::new();
    for i in 0..1_000_i32 {
        docs.push(doc! {
            "_id": i,
            "student": object_id(0, (i % 20) as u32),
            "score": (i * 37) % 101,
            "takenAt": DateTime::from_millis(EPOCH_MS + i64::from(i) * 60_000),
            "comment": format!("exam {i}"),
        });
    }
    store.insert_many("exams", docs).await.expect("seed exams");
}

/// The four collections of MongoDB's sample datasets in `tests/data/mongodb-sample/` (its
/// README says where they are from), as `(database, collection)`.
pub const MONGODB_SAMPLES: [(&str, &str); 4] = [
    ("sample_analytics", "accounts"),
    ("sample_analytics", "customers"),
    ("sample_mflix", "theaters"),
    ("sample_mflix", "users"),
];

/// Loads `tests/data/mongodb-sample/<database>/<collection>.json` into the collection
/// `collection` as `mongoimport` does: each line one document in Extended JSON (its types kept:
/// `$oid`, `$numberInt`, `$numberLong`, `$numberDouble`, `$date`), fields in their order,
/// documents in the file's. Returns how many.
pub async fn mongodb_sample<S: Store>(store: &S, database: &str, collection: &str) -> usize {
    let path = format!(
        "{}/data/mongodb-sample/{database}/{collection}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let docs: Vec<Document> = (text.lines().enumerate())
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            let json: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{path}:{}: {e}", n + 1));
            match bson::Bson::try_from(json) {
                Ok(bson::Bson::Document(d)) => d,
                other => panic!("{path}:{}: not a document: {other:?}", n + 1),
            }
        })
        .collect();
    let n = docs.len();
    store
        .insert_many(collection, docs)
        .await
        .unwrap_or_else(|e| panic!("load {database}.{collection}: {e}"));
    n
}

/// `users` (no finding): 200 users, each an email, an age (18 to 80), one to three tags and
/// an active flag.
pub async fn users<S: Store>(store: &S) {
    let mut docs = Vec::new();
    for i in 0..200_i64 {
        let tags: Vec<String> = (0..=i % 3).map(|t| format!("tag{}", (i + t) % 7)).collect();
        docs.push(doc! {
            "_id": i,
            "email": format!("u{i}@example.com"),
            "age": 18 + i % 63,
            "tags": tags,
            "active": i % 4 != 0,
        });
    }
    store.insert_many("users", docs).await.expect("seed users");
}

/// `blobs` (document size): two documents of a little over 8.5 MiB, their `data` binary.
pub async fn blobs<S: Store>(store: &S) {
    for i in 0..2_i64 {
        let bytes = vec![i as u8; 8_900_000];
        let data = Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes,
        };
        store
            .insert_one(
                "blobs",
                doc! {"_id": i, "label": format!("blob {i}"), "data": data},
            )
            .await
            .expect("seed blobs");
    }
}

/// `readings` (bucket, sampled): 2,000 readings, 100 per sensor (`sensorId` 1 to 20), a
/// minute apart.
pub async fn readings<S: Store>(store: &S) {
    let mut docs: Vec<Document> = Vec::new();
    for i in 0..2_000_i64 {
        docs.push(doc! {
            "_id": i,
            "sensorId": 1 + i % 20,
            "at": DateTime::from_millis(EPOCH_MS + (i / 20) * 60_000),
            "value": (i % 37) as f64 / 4.0,
        });
    }
    store
        .insert_many("readings", docs)
        .await
        .expect("seed readings");
}

/// Every collection of one finding kind (not `blobs` nor `readings`): what the generated
/// code and the CLI's commands are checked on.
pub async fn seed_all<S: Store>(store: &S) {
    sales(store).await;
    trades(store).await;
    parts(store).await;
    products(store).await;
    customers(store).await;
    people(store).await;
    categories(store).await;
    users(store).await;
}
