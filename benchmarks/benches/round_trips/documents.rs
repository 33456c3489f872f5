//! The rows of `#[derive(Document)]` with schema versioning and history: each generated method
//! once, on a document of the current version and of older ones, with the commands it must
//! send (a transaction's `find` and writes, then `commitTransaction`).

use bson::{doc, Bson};
use futures::TryStreamExt;
use pattern_core::adopt::Options;
use pattern_core::document::{Filter, Update};
use pattern_core::store::MongoStore;
use pattern_core::{store::Store, Document};
use pattern_tests::CommandLog;
use serde::{Deserialize, Serialize};

use super::{Row, Want};

/// Version 1: a name.
#[derive(Deserialize)]
struct V1 {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

/// Version 2: renamed.
#[derive(Deserialize)]
struct V2 {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
}

impl From<V1> for V2 {
    fn from(v: V1) -> Self {
        V2 {
            id: v.id,
            full_name: v.name,
        }
    }
}

/// Version 3, without history.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_people", version = 3, previous(V1 = 1, V2 = 2))]
struct Person {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    visits: i64,
}

impl From<V2> for Person {
    fn from(v: V2) -> Self {
        Person {
            id: v.id,
            full_name: v.full_name,
            visits: 0,
        }
    }
}

/// Version 3 of the build before: it knows version 2 only.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_people", version = 2, previous(V1 = 1))]
struct Person2 {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
}

impl From<V1> for Person2 {
    fn from(v: V1) -> Self {
        Person2 {
            id: v.id,
            full_name: v.name,
        }
    }
}

/// The same, with history.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(
    collection = "rt_notes",
    version = 3,
    previous(V1 = 1, V2 = 2),
    history = "rt_notes_history"
)]
struct Note {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    visits: i64,
}

impl From<V2> for Note {
    fn from(v: V2) -> Self {
        Note {
            id: v.id,
            full_name: v.full_name,
            visits: 0,
        }
    }
}

/// A view count written every 10 views.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    #[document(approximate(every = 10))]
    views: i64,
}

/// A show and its ratings' count and best.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_shows")]
struct Show {
    #[serde(rename = "_id")]
    id: i64,
    n: i64,
    best: Option<i64>,
}

/// A rating of a show.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_ratings", computed(parent = Show, key = show, count = n, max(stars = best)))]
struct Rating {
    #[serde(rename = "_id")]
    id: i64,
    show: i64,
    stars: i64,
}

/// A board and its 5 newest posts.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_boards")]
struct Board {
    #[serde(rename = "_id")]
    id: i64,
    top: Vec<Post>,
}

/// A post of a board.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_posts", subset(parent = Board, key = board, into = top, keep = 5, order = at))]
struct Post {
    #[serde(rename = "_id")]
    id: i64,
    board: i64,
    at: i64,
}

/// A gadget and its technical attributes.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_gadgets")]
struct Gadget {
    #[serde(rename = "_id")]
    id: i64,
    #[document(attributes)]
    specs: pattern_core::document::Attributes<i64>,
}

const TXN: &str = "commitTransaction";

pub(super) async fn rows(store: &MongoStore, log: &CommandLog) -> Vec<Row> {
    let mut rows = Vec::new();
    Person::ensure_indexes(store).await.unwrap();
    Note::ensure_indexes(store).await.unwrap();
    let person = |id| Person {
        id,
        full_name: "Ada Lovelace".into(),
        visits: 0,
    };
    let inc = || Update::new().inc(Person::VISITS, 1);
    let v1 = |id: i64| doc! {"_id": id, "name": "Ada Lovelace"};

    // Schema versioning, no history.
    log.clear();
    person(1).insert(store).await.unwrap();
    rows.push(Row::exactly("versioned insert", 1, log, &["insert"]));
    log.clear();
    person(1).save(store).await.unwrap();
    rows.push(Row::exactly("versioned save", 1, log, &["update"]));
    log.clear();
    Person::get(store, &1).await.unwrap().unwrap();
    rows.push(Row::exactly(
        "versioned get, current version",
        1,
        log,
        &["find"],
    ));
    store.insert_one("rt_people", v1(2)).await.unwrap();
    log.clear();
    Person::get(store, &2).await.unwrap().unwrap();
    rows.push(Row::exactly(
        "versioned get, version 1 (2 hops, no write-back)",
        1,
        log,
        &["find"],
    ));
    log.clear();
    assert!(Person::update_one(store, Person::ID.eq(1), inc())
        .await
        .unwrap());
    rows.push(Row::exactly(
        "versioned update_one, current version",
        1,
        log,
        &["update"],
    ));
    log.clear();
    assert!(Person::update_one(store, Person::ID.eq(2), inc())
        .await
        .unwrap());
    rows.push(Row::exactly(
        "versioned update_one, version 1 (upgraded first)",
        1,
        log,
        &["update", "find", "find", "update", TXN, "update"],
    ));
    log.clear();
    assert!(!Person::update_one(store, Person::ID.eq(9), inc())
        .await
        .unwrap());
    rows.push(Row::exactly(
        "versioned update_one, no match",
        1,
        log,
        &["update", "find"],
    ));
    log.clear();
    let newer = Person2::update_one(
        store,
        Person2::ID.eq(1),
        Update::new().set(Person2::FULL_NAME, "x"),
    )
    .await;
    assert!(matches!(
        newer,
        Err(pattern_core::Error::NewerVersion { .. })
    ));
    rows.push(Row::exactly(
        "update_one of a newer version (refused)",
        1,
        log,
        &["update", "find"],
    ));
    log.clear();
    assert!(Person::delete(store, &2).await.unwrap());
    rows.push(Row::exactly("versioned delete", 1, log, &["delete"]));
    log.clear();
    let found = Person::find(Filter::everything()).all(store).await.unwrap();
    assert_eq!(found.len(), 1);
    rows.push(Row::exactly("versioned find", 1, log, &["find"]));

    // Attributes: a query on one attribute is one find (one `$elemMatch`).
    Gadget::ensure_indexes(store).await.unwrap();
    let specs = [("voltage", 230_i64), ("watts", 60)].into_iter().collect();
    Gadget { id: 1, specs }.insert(store).await.unwrap();
    log.clear();
    let found = Gadget::find(Gadget::SPECS.attribute("voltage").gt(200))
        .all(store)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    rows.push(Row::exactly(
        "attribute query (one $elemMatch)",
        1,
        log,
        &["find"],
    ));
    for id in 10..15 {
        store.insert_one("rt_people", v1(id)).await.unwrap();
    }
    log.clear();
    let swept = Person::migrate(
        store,
        &Options {
            batch_items: 5,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(swept.upgraded, 5);
    // The checkpoint and the sessions of an earlier run (2 finds); the batch's `_id`s (a
    // find), then its transaction: the documents (a find), 5 replacements, the checkpoint and
    // the session recorded (2 updates), the commit; at the end a pass from the start that finds
    // nothing and the checkpoint finished, with the session recorded if the driver handed
    // this run another pooled session (a find, 1 or 2 updates, the commit): 16 or 17.
    rows.push(Row::new(
        "sweep of 5 documents, one batch",
        1,
        log.names(),
        Want::AtMost(17.0),
    ));
    log.clear();
    let again = Person::migrate(store, &Options::default()).await.unwrap();
    assert_eq!(again.upgraded, 0);
    // The checkpoint; the sessions the last run used, ended and forgotten (find, find,
    // killSessions, delete); a pass that finds nothing; the checkpoint finished (its session
    // recorded): 8.
    rows.push(Row::new(
        "sweep with nothing left to upgrade",
        1,
        log.names(),
        Want::AtMost(8.0),
    ));

    // Approximate counters: one `update` per 10 increments, `flush` one per counter with some.
    store
        .insert_one("rt_films", doc! {"_id": 1_i64, "views": 0_i64})
        .await
        .unwrap();
    log.clear();
    for _ in 0..9 {
        assert!(!Film::increment_views(store, &1).await.unwrap());
    }
    rows.push(Row::exactly(
        "approximate increment, 9 of every 10",
        9,
        log,
        &[],
    ));
    log.clear();
    assert!(Film::increment_views(store, &1).await.unwrap());
    rows.push(Row::exactly(
        "approximate increment, the 10th",
        1,
        log,
        &["update"],
    ));
    for _ in 0..4 {
        Film::increment_views(store, &1).await.unwrap();
    }
    log.clear();
    assert_eq!(Film::flush(store).await.unwrap(), 4);
    rows.push(Row::exactly(
        "approximate flush, one counter",
        1,
        log,
        &["update"],
    ));

    // Computed parents: each child write a transaction with its parent; an insert updates the
    // parent from its own values (one pipeline update), a delete reads it first.
    store
        .insert_one(
            "rt_shows",
            doc! {"_id": 1_i64, "n": 0_i64, "best": Bson::Null},
        )
        .await
        .unwrap();
    Rating::ensure_indexes(store).await.unwrap();
    log.clear();
    Rating {
        id: 1,
        show: 1,
        stars: 4,
    }
    .insert(store)
    .await
    .unwrap();
    rows.push(Row::exactly(
        "computed child insert",
        1,
        log,
        &["insert", "update", TXN],
    ));
    Rating {
        id: 2,
        show: 1,
        stars: 5,
    }
    .insert(store)
    .await
    .unwrap();
    log.clear();
    assert!(Rating::delete(store, &1).await.unwrap());
    rows.push(Row::exactly(
        "computed child delete, not the maximum",
        1,
        log,
        &["find", "delete", "find", "update", TXN],
    ));
    log.clear();
    assert!(Rating::delete(store, &2).await.unwrap());
    rows.push(Row::exactly(
        "computed child delete of the maximum (the next read from the children)",
        1,
        log,
        &["find", "delete", "find", "find", "update", TXN],
    ));

    // A subset: each child write a transaction with its parent; an insert pushes the child
    // into the parent's subset (sorted and cut in the same update), a delete rewrites it from
    // the first children.
    store
        .insert_one("rt_boards", doc! {"_id": 1_i64, "top": []})
        .await
        .unwrap();
    Post::ensure_indexes(store).await.unwrap();
    log.clear();
    Post {
        id: 1,
        board: 1,
        at: 5,
    }
    .insert(store)
    .await
    .unwrap();
    rows.push(Row::exactly(
        "subset child insert",
        1,
        log,
        &["insert", "update", TXN],
    ));
    log.clear();
    assert!(Post::delete(store, &1).await.unwrap());
    rows.push(Row::exactly(
        "subset child delete",
        1,
        log,
        &["find", "delete", "find", "update", TXN],
    ));
    log.clear();
    Post::subset(store, &1_i64).await.unwrap().unwrap();
    rows.push(Row::exactly("subset read (the parent)", 1, log, &["find"]));

    // History.
    let note = |id| Note {
        id,
        full_name: "Ada Lovelace".into(),
        visits: 0,
    };
    log.clear();
    note(1).insert(store).await.unwrap();
    rows.push(Row::exactly("history insert", 1, log, &["find", "insert"]));
    let write = ["find", "insert", "update", TXN];
    log.clear();
    note(1).save(store).await.unwrap();
    rows.push(Row::exactly("history save", 1, log, &write));
    log.clear();
    let u = Update::new().inc(Note::VISITS, 1);
    assert!(Note::update_one(store, Note::ID.eq(1), u).await.unwrap());
    rows.push(Row::exactly("history update_one", 1, log, &write));
    log.clear();
    let r = Note::get_revision(store, &1).await.unwrap().unwrap();
    rows.push(Row::exactly("history get_revision", 1, log, &["find"]));
    log.clear();
    r.document.save_if(store, r.revision).await.unwrap();
    rows.push(Row::exactly("history save_if", 1, log, &write));
    log.clear();
    let u = Update::new().inc(Note::VISITS, 1);
    Note::update_if(store, &1, r.revision + 1, u).await.unwrap();
    rows.push(Row::exactly("history update_if", 1, log, &write));
    log.clear();
    let stale = note(1).save_if(store, r.revision).await;
    assert!(matches!(stale, Err(pattern_core::Error::Conflict { .. })));
    rows.push(Row::exactly(
        "history save_if of a stale revision (Conflict)",
        1,
        log,
        &["find", "abortTransaction"],
    ));
    log.clear();
    let all: Vec<_> = Note::history(store, &1).try_collect().await.unwrap();
    assert_eq!(all.len(), 5);
    rows.push(Row::exactly(
        "history(id), 5 revisions",
        1,
        log,
        &["find", "find"],
    ));
    log.clear();
    Note::at_revision(store, &1, 5).await.unwrap().unwrap();
    rows.push(Row::exactly(
        "at_revision, the current one",
        1,
        log,
        &["find"],
    ));
    log.clear();
    Note::at_revision(store, &1, 2).await.unwrap().unwrap();
    rows.push(Row::exactly(
        "at_revision, a past one",
        1,
        log,
        &["find", "find"],
    ));
    log.clear();
    Note::as_of(store, &1, bson::DateTime::now())
        .await
        .unwrap()
        .unwrap();
    rows.push(Row::exactly("as_of, now", 1, log, &["find"]));
    log.clear();
    let before = bson::DateTime::from_millis(0);
    assert!(Note::as_of(store, &1, before).await.unwrap().is_none());
    rows.push(Row::exactly(
        "as_of, before it existed",
        1,
        log,
        &["find", "find"],
    ));
    store
        .insert_one("rt_notes", doc! {"_id": 2_i64, "name": "Old Note"})
        .await
        .unwrap();
    log.clear();
    let u = Update::new().inc(Note::VISITS, 1);
    assert!(Note::update_one(store, Note::ID.eq(2), u).await.unwrap());
    // The document has no revision (an older build wrote it): the upgrade reads the last one
    // its `_id` recorded, to record it after (none here: at revision 0).
    rows.push(Row::exactly(
        "history update_one, version 1, no revision (upgrade, then update: 2 revisions)",
        1,
        log,
        &[
            "find", "find", "find", "insert", "update", "find", "insert", "update", TXN,
        ],
    ));
    log.clear();
    Note::delete_if(store, &2, 2).await.unwrap();
    rows.push(Row::exactly(
        "history delete_if",
        1,
        log,
        &["find", "insert", "delete", TXN],
    ));
    log.clear();
    assert!(Note::delete(store, &1).await.unwrap());
    rows.push(Row::exactly(
        "history delete",
        1,
        log,
        &["find", "insert", "delete", TXN],
    ));
    rows
}
