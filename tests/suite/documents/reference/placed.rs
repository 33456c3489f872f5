//! Copies that are not a field of their own (issue 67), on both stores: a `Vec` of copies
//! (`cast`), a copy in an embedded document (`meta.lead`), a `Vec` of copies in one
//! (`extras.guests`), and a copy in each element of an array of embedded documents
//! (`crew.person`), or a `Vec` of copies in each (`scenes.extras`). Each is kept per element: a source's write reaches its copies and leaves
//! every other element and field as it is; its delete removes its elements from a `Vec`, sets
//! an `Option` to `null`, and is refused by a required copy; past the fan-out, in batches;
//! `verify_copies` and `repair_copies` after another tool; 8 concurrent writers.

use bson::doc;
use pattern_core::adopt::Options;
use pattern_core::store::query;
use pattern_core::Reference;

use super::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "people",
    referenced_by(
        Movie = cast,
        Movie = meta.lead,
        Movie = extras.guests,
        Movie = crew.person,
        Movie = scenes.extras
    ),
    fan_out = 2
)]
struct Person {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    born: i32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Person)]
struct PersonRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Meta {
    year: i32,
    lead: Option<PersonRef>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Extras {
    note: String,
    guests: Vec<PersonRef>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Crew {
    role: String,
    person: PersonRef,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Scene {
    at: String,
    extras: Vec<PersonRef>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "movies")]
struct Movie {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[document(reference)]
    cast: Vec<PersonRef>,
    #[document(reference(in = lead))]
    meta: Meta,
    #[document(reference(in = guests))]
    extras: Extras,
    #[document(reference(each = person))]
    crew: Vec<Crew>,
    #[document(reference(each = extras))]
    scenes: Vec<Scene>,
}

fn person(id: i64, name: &str) -> Person {
    Person {
        id,
        name: name.to_owned(),
        born: 1950,
    }
}

/// A copy naming the source alone: the write fills the rest.
fn named(id: i64) -> PersonRef {
    PersonRef {
        id,
        name: "whatever the caller had".to_owned(),
    }
}

/// Movie `id`: cast 1 and 2, lead 3, guest 2, crew 4 (camera) and 1 (editor), scenes with
/// extras 2 and 4, then none, then 1.
fn movie(id: i64) -> Movie {
    Movie {
        id,
        title: format!("movie {id}"),
        cast: vec![named(1), named(2)],
        meta: Meta {
            year: 1960 + id as i32,
            lead: Some(named(3)),
        },
        extras: Extras {
            note: format!("note {id}"),
            guests: vec![named(2)],
        },
        crew: vec![
            Crew {
                role: "camera".into(),
                person: named(4),
            },
            Crew {
                role: "editor".into(),
                person: named(1),
            },
        ],
        scenes: vec![
            Scene {
                at: "beach".into(),
                extras: vec![named(2), named(4)],
            },
            Scene {
                at: "café".into(),
                extras: vec![],
            },
            Scene {
                at: "street".into(),
                extras: vec![named(1)],
            },
        ],
    }
}

async fn people(store: &AnyStore) {
    for (id, name) in [(1, "Varda"), (2, "Ozu"), (3, "Kurosawa"), (4, "Denis")] {
        person(id, name).insert(store).await.unwrap();
    }
}

async fn name_of(store: &AnyStore, id: i64) -> Option<String> {
    Person::get(store, &id).await.unwrap().map(|p| p.name)
}

/// Every copy of every movie holds its source's name, and `verify_copies` agrees; the other
/// fields are the movie's own.
async fn assert_exact(store: &AnyStore) {
    let movies = Movie::find(Movie::ID.gte(i64::MIN))
        .all(store)
        .await
        .unwrap();
    for m in &movies {
        let copies = (m.cast.iter())
            .chain(m.meta.lead.iter())
            .chain(m.extras.guests.iter())
            .chain(m.crew.iter().map(|c| &c.person))
            .chain(m.scenes.iter().flat_map(|s| &s.extras));
        for c in copies {
            assert_eq!(
                Some(c.name.clone()),
                name_of(store, c.id).await,
                "movie {}",
                m.id
            );
        }
        assert_eq!(
            m.meta.year,
            1960 + m.id as i32,
            "the embedded document's own field"
        );
        assert_eq!(m.extras.note, format!("note {}", m.id));
        let at: Vec<&str> = m.scenes.iter().map(|s| s.at.as_str()).collect();
        assert_eq!(at, ["beach", "café", "street"], "each element's own field");
    }
    assert!(Movie::verify_copies(store).await.unwrap().is_empty());
}

async fn each_place_is_filled_and_followed(store: AnyStore) {
    people(&store).await;
    for id in 0..5 {
        movie(id).insert(&store).await.unwrap();
    }
    let m = Movie::get(&store, &0).await.unwrap().unwrap();
    assert_eq!(m.cast[0].name, "Varda", "an insert fills each element");
    assert_eq!(m.cast[1].name, "Ozu");
    assert_eq!(m.meta.lead.as_ref().unwrap().name, "Kurosawa");
    assert_eq!(m.extras.guests[0].name, "Ozu");
    assert_eq!(m.crew[0].person.name, "Denis");
    assert_eq!(m.crew[1].person.name, "Varda");
    assert_eq!(m.crew[1].role, "editor");
    assert_exact(&store).await;

    // A source's write reaches its copies in every place, past the fan-out (5 movies, 2).
    let rename = |name: &str| Update::new().set(Person::NAME, name.to_owned());
    for (id, name) in [
        (1, "Agnès Varda"),
        (2, "Yasujirō Ozu"),
        (3, "Akira Kurosawa"),
    ] {
        assert!(Person::update_one(&store, Person::ID.eq(id), rename(name))
            .await
            .unwrap());
    }
    let denis = person(4, "Claire Denis");
    denis.save(&store).await.unwrap();
    assert_exact(&store).await;
    let m = Movie::get(&store, &3).await.unwrap().unwrap();
    assert_eq!(
        (m.cast[0].name.as_str(), m.crew[1].person.name.as_str()),
        ("Agnès Varda", "Agnès Varda")
    );
    assert_eq!(m.crew[0].role, "camera", "another element's field is left");

    // A write of the movie fills what the caller put there, whatever it was.
    let mut m = movie(0);
    m.cast = vec![named(3), named(4), named(1)];
    m.crew[0].person = named(2);
    m.save(&store).await.unwrap();
    let m = Movie::get(&store, &0).await.unwrap().unwrap();
    let cast: Vec<&str> = m.cast.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(cast, ["Akira Kurosawa", "Claire Denis", "Agnès Varda"]);
    assert_eq!(m.crew[0].person.name, "Yasujirō Ozu");
    assert_exact(&store).await;

    // A copy of a source that does not exist: refused, nothing written.
    let mut bad = movie(9);
    bad.extras.guests.push(named(99));
    let e = bad.insert(&store).await.unwrap_err();
    assert!(
        matches!(&e, pattern_core::Error::NotFound { collection, .. } if collection == "people"),
        "{e:?}"
    );
    assert!(Movie::get(&store, &9).await.unwrap().is_none());
}

async fn a_delete_removes_nulls_or_is_refused(store: AnyStore) {
    people(&store).await;
    person(5, "Chaplin").insert(&store).await.unwrap();
    for id in 0..3 {
        movie(id).insert(&store).await.unwrap();
    }
    // Ozu is in the cast and among the guests (two `Vec`s): removed from both.
    assert!(Person::delete(&store, &2).await.unwrap());
    for id in 0..3 {
        let m = Movie::get(&store, &id).await.unwrap().unwrap();
        let cast: Vec<i64> = m.cast.iter().map(|c| c.id).collect();
        assert_eq!(cast, [1], "movie {id}");
        assert!(m.extras.guests.is_empty());
        assert_eq!(m.extras.note, format!("note {id}"));
        let extras: Vec<i64> = m.scenes[0].extras.iter().map(|c| c.id).collect();
        assert_eq!(
            extras,
            [4],
            "removed from a `Vec` in an element, its sibling kept"
        );
    }
    // Kurosawa leads (an `Option` in an embedded document): null, the year kept.
    assert!(Person::delete(&store, &3).await.unwrap());
    let m = Movie::get(&store, &1).await.unwrap().unwrap();
    assert_eq!(
        m.meta,
        Meta {
            year: 1961,
            lead: None
        }
    );
    // Denis is in each crew (a required copy): the delete is refused, nothing deleted.
    let e = Person::delete(&store, &4).await.unwrap_err();
    assert!(
        matches!(e, pattern_core::Error::StillReferenced { .. }),
        "{e:?}"
    );
    assert_eq!(name_of(&store, 4).await.as_deref(), Some("Denis"));
    // A source no copy names deletes as any document.
    assert!(Person::delete(&store, &5).await.unwrap());
    assert_exact(&store).await;
}

async fn verify_and_repair_per_element(store: AnyStore) {
    people(&store).await;
    for id in 0..4 {
        movie(id).insert(&store).await.unwrap();
    }
    // Another tool renames Varda (cast and crew) and deletes Ozu (cast and guests).
    let raw = |id: i64| query::Filter::Eq("_id".into(), Bson::Int64(id));
    let mut rename = query::Update {
        set: vec![("name".into(), Bson::String("Agnès Varda".into()))],
        ..query::Update::default()
    };
    store
        .update_one("people", &raw(1), &mut rename, false)
        .await
        .unwrap();
    store.delete_many("people", &raw(2)).await.unwrap();
    let stale = Movie::verify_copies(&store).await.unwrap();
    let renamed: Vec<&str> = (stale.iter())
        .filter(|s| !s.source_missing)
        .map(|s| s.field)
        .collect();
    assert_eq!(
        renamed.len(),
        12,
        "cast, crew and scenes of 4 movies: {stale:?}"
    );
    assert!(renamed
        .iter()
        .all(|f| ["cast", "crew", "scenes"].contains(f)));
    assert_eq!(stale.iter().filter(|s| s.source_missing).count(), 12);
    let repaired = Movie::repair_copies(&store, &Options::default())
        .await
        .unwrap();
    assert!(repaired.orphans.is_empty(), "{:?}", repaired.orphans);
    let m = Movie::get(&store, &2).await.unwrap().unwrap();
    assert_eq!(m.cast.len(), 1, "the deleted source's element removed");
    assert!(m.extras.guests.is_empty());
    assert_eq!(m.crew[1].person.name, "Agnès Varda");
    assert_eq!(m.scenes[0].extras.len(), 1);
    assert_eq!(m.scenes[2].extras[0].name, "Agnès Varda");
    assert_exact(&store).await;
}

async fn eight_writers_keep_every_copy_exact(store: AnyStore) {
    people(&store).await;
    for id in 0..6 {
        movie(id).insert(&store).await.unwrap();
    }
    let mut tasks = Vec::new();
    for w in 0..8i64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..6i64 {
                if w % 2 == 0 {
                    let id = 1 + (w / 2 + round) % 4;
                    let name = format!("person {id} by {w} in {round}");
                    Person::update_one(
                        &store,
                        Person::ID.eq(id),
                        Update::new().set(Person::NAME, name),
                    )
                    .await
                    .unwrap();
                } else {
                    let mut m = movie((w + round) % 6);
                    m.cast.rotate_left((round % 2) as usize);
                    m.save(&store).await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_exact(&store).await;
}

/// The follower keeps every place's copies under another program's writes (MongoDB): a
/// source renamed and deleted, a movie written with copies that are not its sources'.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_follower_keeps_copies_in_every_place() {
    use pattern_core::follow::Follower;
    let m = pattern_tests::mongo_store("placed_copies").await;
    let store = AnyStore::Mongo(m.clone());
    let follower = Follower::new(m.clone(), "movies").follow::<Movie>();
    assert_eq!(
        follower.rules(),
        [
            "copies movies.cast",
            "copies movies.meta.lead",
            "copies movies.extras.guests",
            "copies movies.crew.person",
            "copies movies.scenes.extras"
        ]
    );
    people(&store).await;
    for id in 0..3 {
        movie(id).insert(&store).await.unwrap();
    }
    follower.catch_up().await.unwrap();
    let raw = pattern_tests::second_client(&m).await;
    let db = raw.database();
    let people = db.collection::<bson::Document>("people");
    let movies = db.collection::<bson::Document>("movies");
    people
        .update_one(doc! {"_id": 1_i64}, doc! {"$set": {"name": "Agnès Varda"}})
        .await
        .unwrap();
    people.delete_one(doc! {"_id": 2_i64}).await.unwrap();
    // pymongo's Int32 `_id`s, and names nobody's: the follower fills them from their sources.
    movies
        .update_one(
            doc! {"_id": 0_i64},
            doc! {"$set": {
                "crew": [{"role": "grip", "person": {"_id": 3_i32, "name": "wrong"}}],
                "meta.lead": {"_id": 4_i32, "name": "wrong too"},
            }},
        )
        .await
        .unwrap();
    follower.catch_up().await.unwrap();
    assert_exact(&store).await;
    let m0 = Movie::get(&store, &0).await.unwrap().unwrap();
    assert_eq!(m0.crew[0].person.name, "Kurosawa");
    assert_eq!(m0.crew[0].role, "grip");
    assert_eq!(m0.meta.lead.as_ref().unwrap().name, "Denis");
    let m1 = Movie::get(&store, &1).await.unwrap().unwrap();
    assert_eq!(m1.cast.iter().map(|c| c.id).collect::<Vec<_>>(), [1]);
    assert_eq!(m1.cast[0].name, "Agnès Varda");
    pattern_tests::drop_db(&store).await;
}

on_both_stores!(
    each_place_is_filled_and_followed,
    a_delete_removes_nulls_or_is_refused,
    verify_and_repair_per_element,
    eight_writers_keep_every_copy_exact,
);
