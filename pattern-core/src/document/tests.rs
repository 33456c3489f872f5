use bson::{doc, Document as BsonDocument};
use serde::{Deserialize, Serialize};

use super::*;
use crate::spec::{Keywords, Normalize};
use crate::store::query::{self, FindOptions};
use crate::store::Store;
use crate::MemoryStore;
use crate::Result;
use codec::write_back;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Checkout {
    by: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Book {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    available: i32,
    checkout: Vec<Checkout>,
    #[serde(rename = "tags")]
    topics: Vec<String>,
}

const ID: Field<Book, i64> = Field::new("_id");
const TITLE: Field<Book, String> = Field::new("title");
const AVAILABLE: Field<Book, i32> = Field::new("available");
const CHECKOUT: Field<Book, Vec<Checkout>> = Field::new("checkout");
const TOPICS: Field<Book, Vec<String>> = Field::new("tags");

impl Document for Book {
    const COLLECTION: &'static str = "books";
    type Id = i64;
    fn id(&self) -> &i64 {
        &self.id
    }
    const KEYWORDS: &'static [Keywords] = &[Keywords {
        field: "tags",
        normalize: Normalize::Lowercase,
    }];
}

fn book(id: i64, available: i32, topics: &[&str]) -> Book {
    Book {
        id,
        title: format!("book {id}"),
        available,
        checkout: vec![Checkout { by: "joe".into() }],
        topics: topics.iter().map(|s| s.to_string()).collect(),
    }
}

fn checkout(id: i64, by: &str) -> (Filter<Book>, Update<Book>) {
    (
        ID.eq(id).and(AVAILABLE.gt(0)),
        Update::new()
            .inc(AVAILABLE, -1)
            .push(CHECKOUT, Checkout { by: by.into() }),
    )
}

#[test]
fn filters_and_updates_are_the_seeds_documents() {
    let (filter, update) = checkout(123456789, "abc");
    assert_eq!(
        filter.to_query().unwrap().to_document(),
        doc! {"_id": 123456789_i64, "available": {"$gt": 0}}
    );
    assert_eq!(
        update.into_query().unwrap().to_document(),
        doc! {"$inc": {"available": -1}, "$push": {"checkout": {"by": "abc"}}}
    );
    // Keywords are normalised on query, one or all of several.
    assert_eq!(
        TOPICS.contains("Voyage").to_query().unwrap().to_document(),
        doc! {"tags": "voyage"}
    );
    let all = TOPICS.contains_all(["Whaling", "voyage"]);
    assert!(all.is_keyword_search());
    assert_eq!(
        all.to_query().unwrap().to_document(),
        doc! {"tags": {"$all": ["whaling", "voyage"]}}
    );
    assert!(!TITLE.eq("x").is_keyword_search());
    let empty = Update::<Book>::new().into_query().unwrap_err();
    assert!(empty.to_string().contains("nothing to do"), "{empty}");
}

#[tokio::test]
async fn checkout_applies_while_copies_last() {
    let store = MemoryStore::new();
    insert(&store, &book(1, 2, &[])).await.unwrap();
    let mut applied = Vec::new();
    for by in ["a", "b", "c"] {
        let (f, u) = checkout(1, by);
        applied.push(update_one(&store, f, u).await.unwrap());
    }
    assert_eq!(applied, [true, true, false]);
    let got: Book = get(&store, &1).await.unwrap().unwrap();
    assert_eq!(got.available, 0);
    let by: Vec<&str> = got.checkout.iter().map(|c| c.by.as_str()).collect();
    assert_eq!(by, ["joe", "a", "b"]);
}

#[derive(Debug, PartialEq, Deserialize)]
struct Title {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    available: Option<i32>,
}

#[tokio::test]
async fn keyword_search_normalises_projects_and_uses_the_index() {
    let store = MemoryStore::new();
    insert(&store, &book(1, 1, &["Whaling", "Voyage"]))
        .await
        .unwrap();
    save(&store, &book(2, 1, &["voyage", "Cape Cod"]))
        .await
        .unwrap();
    insert(&store, &book(3, 1, &["novel"])).await.unwrap();
    // Stored lowercased.
    let stored: Book = get(&store, &2).await.unwrap().unwrap();
    assert_eq!(stored.topics, ["voyage", "cape cod"]);
    let found: Vec<Title> = find(TOPICS.contains("VOYAGE"))
        .project(TITLE)
        .ascending(ID)
        .all_as(&store)
        .await
        .unwrap();
    let ids: Vec<i64> = found.iter().map(|t| t.id).collect();
    assert_eq!(ids, [1, 2]);
    // Only the projection (and `_id`) comes back, on this store too.
    assert!(found.iter().all(|t| t.available.is_none()));
    let both = find(TOPICS.contains_all(["voyage", "whaling"]))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(both.len(), 1);
    assert_eq!(both[0].id, 1);
    let none = find(TOPICS.contains_all(Vec::<String>::new()))
        .all(&store)
        .await
        .unwrap();
    assert!(none.is_empty());
    let plan = store.explain("books", &TOPICS.contains("voyage").to_query().unwrap());
    assert_eq!(plan.index.as_deref(), Some("tags_1"));
    assert_eq!((plan.examined, plan.returned), (2, 2));
    let all = store.explain(
        "books",
        &TOPICS
            .contains_all(["cape cod", "voyage"])
            .to_query()
            .unwrap(),
    );
    assert_eq!(all.index.as_deref(), Some("tags_1"));
    assert_eq!((all.examined, all.returned), (1, 1));
    // A push to a keyword array is normalised too.
    let add = Update::new().push(TOPICS, "Allegory".to_owned());
    assert!(update_one(&store, Filter::id(&3), add).await.unwrap());
    let third: Book = get(&store, &3).await.unwrap().unwrap();
    assert_eq!(third.topics, ["novel", "allegory"]);
    let opts = find(TOPICS.contains("x")).options();
    assert_eq!(opts.comment, Some(KEYWORD_SEARCH));
    assert_eq!(find(Filter::<Book>::id(&3)).options().comment, None);
}

/// A versioned type by hand: version 2 stores `n` as a string, version 1 as a number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Counter {
    #[serde(rename = "_id")]
    id: i64,
    n: String,
}

#[derive(Deserialize)]
struct CounterV1 {
    #[serde(rename = "_id")]
    id: i64,
    n: i64,
}

impl Document for Counter {
    const COLLECTION: &'static str = "counters";
    type Id = i64;
    fn id(&self) -> &i64 {
        &self.id
    }
    const VERSIONING: Option<Versioning> = Some(Versioning {
        field: "v",
        current: 2,
        unversioned: 1,
        oldest: 1,
        write_back: true,
    });
    fn upgrade(from: u32, doc: BsonDocument) -> Result<Self> {
        let up = Upgrading::<Self>::new(from, doc);
        match from {
            1 => {
                let v1 = up.read::<CounterV1>()?.done()?;
                Ok(Counter {
                    id: v1.id,
                    n: v1.n.to_string(),
                })
            }
            _ => Err(up.unknown()),
        }
    }
}

/// Write-back writes only over the very document read: a write since (here one that kept
/// version 1) is never overwritten, and the next read upgrades what it holds then.
#[test]
fn write_back_never_overwrites_a_write_since_the_read() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = MemoryStore::new();
        store
            .insert_one("counters", doc! {"_id": 1_i64, "n": 5_i64})
            .await
            .unwrap();
        let read = doc! {"_id": 1_i64, "n": 5_i64};
        // An older build's write after the read: still version 1.
        let mut inc = query::Update {
            inc: vec![("n".into(), 1)],
            ..query::Update::default()
        };
        let by_id = query::Filter::eq("_id", 1_i64);
        store
            .update_one("counters", &by_id, &mut inc, false)
            .await
            .unwrap();
        let (upgraded, from) = decode_stored::<Counter>(read.clone()).unwrap();
        assert_eq!((upgraded.n.as_str(), from), ("5", Some(1)));
        assert!(!write_back::<Counter, _>(&store, read, &upgraded)
            .await
            .unwrap());
        let stored = store
            .find("counters", &by_id, &FindOptions::default())
            .await
            .unwrap();
        assert_eq!(
            stored,
            [doc! {"_id": 1_i64, "n": 6_i64}],
            "the write since the read kept"
        );
        // The next read upgrades what is stored now, and writes it back.
        let now = get::<Counter, _, _>(&store, &1).await.unwrap().unwrap();
        assert_eq!(now.n, "6");
        let stored = store
            .find("counters", &by_id, &FindOptions::default())
            .await
            .unwrap();
        assert_eq!(stored, [doc! {"_id": 1_i64, "n": "6", "v": 2}]);
    });
}
