//! The round trips of extended references: a referencing document's writes (the source read,
//! its entry bumped when the document points at it anew), a source's writes (its copies found
//! and updated in its transaction; none when no copied field changes), a delete refused while
//! copies exist.

use pattern_core::document::Update;
use pattern_core::store::MongoStore;
use pattern_core::{Document, Reference};
use pattern_tests::CommandLog;
use serde::{Deserialize, Serialize};

use super::Row;

/// A director, copied into screenings.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_directors", referenced_by(Screening = director))]
struct Director {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    born: i32,
}

/// The copy: the director's name.
#[derive(Clone, Serialize, Deserialize, Reference)]
#[reference(source = Director)]
struct DirectorRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

/// A screening holding a copy of its director.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_screenings")]
struct Screening {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    director: DirectorRef,
}

/// An actor, copied into casts: a `Vec` of copies.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_actors", referenced_by(Cast = actors))]
struct Actor {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Serialize, Deserialize, Reference)]
#[reference(source = Actor)]
struct ActorRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

/// A cast: a copy of each of its actors.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "rt_casts")]
struct Cast {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    actors: Vec<ActorRef>,
}

const TXN: &str = "commitTransaction";

pub(super) async fn rows(store: &MongoStore, log: &CommandLog) -> Vec<Row> {
    let mut rows = Vec::new();
    Screening::ensure_indexes(store).await.unwrap();
    for id in 1..3 {
        let name = format!("director {id}");
        Director {
            id,
            name,
            born: 1950,
        }
        .insert(store)
        .await
        .unwrap();
    }
    let copy = |id| DirectorRef {
        id,
        name: String::new(),
    };
    log.clear();
    Screening {
        id: 1,
        director: copy(1),
    }
    .insert(store)
    .await
    .unwrap();
    rows.push(Row::exactly(
        "reference: referencing insert (the copy filled from the source)",
        1,
        log,
        &["find", "update", "insert", TXN],
    ));
    log.clear();
    let same = Update::new().set(Screening::DIRECTOR, copy(1));
    assert!(Screening::update_one(store, Screening::ID.eq(1), same)
        .await
        .unwrap());
    rows.push(Row::exactly(
        "reference: referencing update_one, same source",
        1,
        log,
        &["find", "update", "find", "find", "update", TXN],
    ));
    Screening {
        id: 2,
        director: copy(1),
    }
    .insert(store)
    .await
    .unwrap();
    log.clear();
    let rename = Update::new().set(Director::NAME, "Agnès Varda".to_owned());
    assert!(Director::update_one(store, Director::ID.eq(1), rename)
        .await
        .unwrap());
    rows.push(Row::exactly(
        "reference: source update_one changing a copied field (2 copies, within the fan-out)",
        1,
        log,
        &["findAndModify", "bulkWrite", TXN],
    ));
    log.clear();
    let born = Update::new().set(Director::BORN, 1928);
    assert!(Director::update_one(store, Director::ID.eq(1), born)
        .await
        .unwrap());
    rows.push(Row::exactly(
        "reference: source update_one writing no copied field",
        1,
        log,
        &["update"],
    ));
    log.clear();
    let refused = Director::delete(store, &1).await;
    assert!(matches!(
        refused,
        Err(pattern_core::Error::StillReferenced { .. })
    ));
    rows.push(Row::exactly(
        "reference: source delete refused (a required copy exists)",
        1,
        log,
        &["find", "delete", "update", "find", "abortTransaction"],
    ));
    rows.extend(vec_rows(store, log).await);
    rows
}

/// A `Vec` of copies: its holder's insert reads the sources in one `find` and touches their
/// entries in one write; a source's write reads the stale holders, then their field, and sets
/// it per holder in one write.
async fn vec_rows(store: &MongoStore, log: &CommandLog) -> Vec<Row> {
    let mut rows = Vec::new();
    Cast::ensure_indexes(store).await.unwrap();
    for id in 1..4 {
        let name = format!("actor {id}");
        Actor { id, name }.insert(store).await.unwrap();
    }
    let copy = |id| ActorRef {
        id,
        name: String::new(),
    };
    log.clear();
    Cast {
        id: 1,
        actors: vec![copy(1), copy(2), copy(3)],
    }
    .insert(store)
    .await
    .unwrap();
    rows.push(Row::exactly(
        "reference: insert of a holder of a Vec of 3 copies (the sources in one find)",
        1,
        log,
        &["find", "bulkWrite", "insert", TXN],
    ));
    Cast {
        id: 2,
        actors: vec![copy(1), copy(3)],
    }
    .insert(store)
    .await
    .unwrap();
    log.clear();
    let rename = Update::new().set(Actor::NAME, "Delphine Seyrig".to_owned());
    assert!(Actor::update_one(store, Actor::ID.eq(1), rename)
        .await
        .unwrap());
    rows.push(Row::exactly(
        "reference: source update_one changing a field copied into Vecs (2 holders, set per holder)",
        1,
        log,
        // The source before and after its update (the way that reads the copies first), its
        // entry bumped, the stale holders, their field, the holders set in one write.
        &["find", "update", "find", "update", "find", "find", "bulkWrite", TXN],
    ));
    rows
}
