//! Extended references (`#[derive(Reference)]`, `#[document(reference)]`,
//! `referenced_by(...)`) on both stores: a film holds a copy of its director's name and photo,
//! an award an optional one; every write of a director (save, typed update, conditional
//! update, delete) reaches every copy, in its transaction within the fan-out and in batches
//! past it; a write of a film fills its copy from the source whatever the caller put there; a
//! deferred propagation killed part-way and resumed writes each copy once; `verify_copies` and
//! `repair_copies` after another tool; 16 concurrent writers of sources and copies.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::FutureExt;
use pattern_core::adopt::Options;
use pattern_core::store::query;
use pattern_core::Reference;

use super::*;

mod on_mongo;
mod placed;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "directors",
    referenced_by(Film = director, Award = presenter)
)]
struct Director {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    photo: Option<String>,
    born: i32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Director)]
struct DirectorRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    photo: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[document(reference)]
    director: DirectorRef,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "awards")]
struct Award {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    presenter: Option<DirectorRef>,
}

fn director(id: i64, name: &str) -> Director {
    Director {
        id,
        name: name.to_owned(),
        photo: Some(format!("{name}.jpg")),
        born: 1950,
    }
}

/// A copy naming the source only: the write fills the rest.
fn stale_ref(id: i64) -> DirectorRef {
    DirectorRef {
        id,
        name: "whatever the caller had".to_owned(),
        photo: None,
    }
}

fn film(id: i64, director: i64) -> Film {
    Film {
        id,
        title: format!("film {id}"),
        director: stale_ref(director),
    }
}

/// Every film's and award's copy equals its director as stored.
async fn assert_exact(store: &AnyStore) {
    let films = Film::find(Film::ID.gte(i64::MIN)).all(store).await.unwrap();
    for f in films {
        let d = Director::get(store, &f.director.id).await.unwrap().unwrap();
        assert_eq!(
            f.director,
            pattern_core::document::copy_of(&d).unwrap(),
            "film {}",
            f.id
        );
    }
    let awards = Award::find(Award::ID.gte(i64::MIN))
        .all(store)
        .await
        .unwrap();
    for a in awards {
        if let Some(p) = &a.presenter {
            let d = Director::get(store, &p.id).await.unwrap().unwrap();
            assert_eq!(
                *p,
                pattern_core::document::copy_of(&d).unwrap(),
                "award {}",
                a.id
            );
        }
    }
    assert!(Film::verify_copies(store).await.unwrap().is_empty());
    assert!(Award::verify_copies(store).await.unwrap().is_empty());
}

async fn copies_follow_every_write(store: AnyStore) {
    for (id, name) in [(1, "Varda"), (2, "Ozu")] {
        director(id, name).insert(&store).await.unwrap();
    }
    // Created with a stale copy: filled from the source.
    for id in 0..4 {
        film(id, 1 + id % 2).insert(&store).await.unwrap();
    }
    let f0 = Film::get(&store, &0).await.unwrap().unwrap();
    assert_eq!(f0.director.name, "Varda");
    assert_eq!(f0.director.photo.as_deref(), Some("Varda.jpg"));
    Award {
        id: 1,
        presenter: Some(stale_ref(2)),
    }
    .insert(&store)
    .await
    .unwrap();
    Award {
        id: 2,
        presenter: None,
    }
    .save(&store)
    .await
    .unwrap();
    assert_exact(&store).await;
    // A missing source refuses the write.
    let err = film(9, 99).insert(&store).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(Film::get(&store, &9).await.unwrap().is_none());

    // The source's save, typed update and conditional update reach every copy.
    let mut varda = director(1, "Agnès Varda");
    varda.save(&store).await.unwrap();
    assert_exact(&store).await;
    let done = Director::update_one(
        &store,
        Director::ID.eq(2),
        Update::new().set(Director::PHOTO, Some("ozu-1953.jpg".to_owned())),
    )
    .await
    .unwrap();
    assert!(done);
    assert_eq!(
        Award::get(&store, &1)
            .await
            .unwrap()
            .unwrap()
            .presenter
            .unwrap()
            .photo
            .as_deref(),
        Some("ozu-1953.jpg")
    );
    let refused = Director::update_one(
        &store,
        Director::ID.eq(1).and(Director::BORN.gt(2000)),
        Update::new().set(Director::NAME, "nobody".to_owned()),
    )
    .await
    .unwrap();
    assert!(
        !refused,
        "the condition held for no director: nothing written"
    );
    // A field not copied changes no copy.
    varda.born = 1928;
    varda.save(&store).await.unwrap();
    assert_exact(&store).await;

    // A film's writes refill the copy: repointed, or its copy edited directly.
    Film::update_one(
        &store,
        Film::ID.eq(0),
        Update::new().set(Film::DIRECTOR, stale_ref(2)),
    )
    .await
    .unwrap();
    assert_eq!(
        Film::get(&store, &0).await.unwrap().unwrap().director.name,
        "Ozu"
    );
    let mut f1 = Film::get(&store, &1).await.unwrap().unwrap();
    f1.director.name = "edited by hand".to_owned();
    f1.save(&store).await.unwrap();
    assert_exact(&store).await;

    // Deleting a source: a required copy refuses it, an optional one becomes null.
    let err = Director::delete(&store, &2).await.unwrap_err();
    assert!(
        matches!(&err, Error::StillReferenced { by, .. } if by.field == "films.director"),
        "{err:?}"
    );
    assert!(
        Director::get(&store, &2).await.unwrap().is_some(),
        "nothing deleted"
    );
    director(3, "Kurosawa").insert(&store).await.unwrap();
    Award {
        id: 3,
        presenter: Some(stale_ref(3)),
    }
    .insert(&store)
    .await
    .unwrap();
    assert!(Director::delete(&store, &3).await.unwrap());
    assert_eq!(
        Award::get(&store, &3).await.unwrap().unwrap().presenter,
        None
    );
    assert_exact(&store).await;
    // The reference field is indexed.
    let indexes = store.index_names("films").await.unwrap();
    assert!(
        indexes
            .iter()
            .any(|i| i == "pattern_reference_director._id_1_by_id"),
        "{indexes:?}"
    );
    // A copy built from a source in one step, with no write.
    let loaded: DirectorRef = pattern_core::document::load_copy(&store, &1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(loaded.name, "Agnès Varda");
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "studios", referenced_by(Release = studio), fan_out = 4)]
struct Studio {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Studio)]
struct StudioRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "releases")]
struct Release {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    studio: StudioRef,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "labels",
    referenced_by(Record = label),
    fan_out = 4,
    deferred
)]
struct Label {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Label)]
struct LabelRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "records")]
struct Record {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    label: LabelRef,
}

async fn names_in(store: &AnyStore, coll: &str, path: &str) -> Vec<String> {
    documents(store, coll)
        .await
        .iter()
        .map(|d| {
            d.get_document(path)
                .unwrap()
                .get_str("name")
                .unwrap()
                .to_owned()
        })
        .collect()
}

async fn past_the_fan_out_in_batches(store: AnyStore) {
    let studio = |id: i64, name: &str| Studio {
        id,
        name: name.to_owned(),
    };
    studio(1, "Ghibli").insert(&store).await.unwrap();
    studio(2, "Aardman").insert(&store).await.unwrap();
    // Studio 1's releases at even `_id`s, studio 2's between them: each batch's `_id` range
    // holds the other studio's copies too, which must keep their own studio's name.
    for i in 0..23 {
        for (id, name) in [(1, ""), (2, "Aardman")] {
            let copy = StudioRef {
                id,
                name: name.to_owned(),
            };
            let release = Release {
                id: 2 * i + id - 1,
                studio: copy,
            };
            release.insert(&store).await.unwrap();
        }
    }
    // 23 copies, a fan-out of 4: 4 in the transaction, the rest in batches before it returns.
    studio(1, "Studio Ghibli").save(&store).await.unwrap();
    let names = names_in(&store, "releases", "studio").await;
    assert_eq!(names.len(), 46);
    let (ghibli, aardman): (Vec<_>, Vec<_>) =
        names.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    assert!(
        ghibli.iter().all(|(_, n)| *n == "Studio Ghibli"),
        "{names:?}"
    );
    assert!(aardman.iter().all(|(_, n)| *n == "Aardman"), "{names:?}");
    assert!(Studio::pending_propagations(&store)
        .await
        .unwrap()
        .is_empty());
    assert!(Release::verify_copies(&store).await.unwrap().is_empty());
}

async fn a_killed_propagation_resumes_exactly(store: AnyStore) {
    let label = |name: &str| Label {
        id: 7,
        name: name.to_owned(),
    };
    label("Blue Note").insert(&store).await.unwrap();
    for id in 0..40 {
        let copy = LabelRef {
            id: 7,
            name: String::new(),
        };
        Record { id, label: copy }.insert(&store).await.unwrap();
    }
    let before = bson::DateTime::now().timestamp_millis();
    // Deferred: the write brings 4 copies in line and records the rest.
    label("Blue Note Records").save(&store).await.unwrap();
    let new = |store| async move {
        (names_in(store, "records", "label").await.into_iter())
            .filter(|n| n == "Blue Note Records")
            .count()
    };
    assert_eq!(new(&store).await, 4);
    let pending = Label::pending_propagations(&store).await.unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].copies, "records.label");
    assert!(pending[0].since_ms >= before - 1_000, "{pending:?}");
    assert_eq!(Record::verify_copies(&store).await.unwrap().len(), 36);

    // Killed by its progress callback after 14 copies (two batches of 7).
    let killed = AtomicU64::new(0);
    let kill = |p: &pattern_core::adopt::Progress<'_>| {
        if p.done >= 14 {
            killed.fetch_add(1, Ordering::SeqCst);
            panic!("killed by the test after {} copies", p.done);
        }
    };
    let opts = Options {
        batch_items: 7,
        progress: Some(&kill),
        ..Options::default()
    };
    let run = AssertUnwindSafe(Label::propagate(&store, &opts))
        .catch_unwind()
        .await;
    assert!(run.is_err(), "the run was killed");
    assert_eq!(killed.load(Ordering::SeqCst), 1);
    assert_eq!(new(&store).await, 18, "4 in the write, 14 before the kill");
    assert_eq!(Label::pending_propagations(&store).await.unwrap().len(), 1);

    // Resumed: the 22 left, each once, and the job removed.
    let opts = Options {
        batch_items: 7,
        ..Options::default()
    };
    let done = Label::propagate(&store, &opts).await.unwrap();
    assert_eq!(done.copies, 22, "{done:?}");
    assert_eq!(done.finished, 1);
    assert_eq!(new(&store).await, 40);
    assert!(Label::pending_propagations(&store)
        .await
        .unwrap()
        .is_empty());
    let again = Label::propagate(&store, &opts).await.unwrap();
    assert_eq!(again.copies, 0, "nothing left: {again:?}");
    assert!(Record::verify_copies(&store).await.unwrap().is_empty());
}

/// `update_one` of a source learns its copies from one update by filter; past the fan-out its
/// transaction is abandoned, so what commits is what the fan-out allows: `fan_out` copies, the
/// rest recorded (deferred) for `propagate`. In a transaction the caller holds, nothing can be
/// abandoned: every copy follows in it.
async fn an_update_past_the_fan_out_commits_the_fan_out(store: AnyStore) {
    let label = Label {
        id: 8,
        name: "Verve".to_owned(),
    };
    label.insert(&store).await.unwrap();
    for id in 100..140 {
        let copy = LabelRef {
            id: 8,
            name: String::new(),
        };
        Record { id, label: copy }.insert(&store).await.unwrap();
    }
    let named = |store: AnyStore, name: &'static str| async move {
        (names_in(&store, "records", "label").await.into_iter())
            .filter(|n| n == name)
            .count()
    };
    let rename = |name: &str| Update::new().set(Label::NAME, name.to_owned());
    // The first update finds 40 stale copies: abandoned, then 4 in the write and a job.
    assert!(
        Label::update_one(&store, Label::ID.eq(8), rename("Verve Records"))
            .await
            .unwrap()
    );
    assert_eq!(named(store.clone(), "Verve Records").await, 4);
    let pending = Label::pending_propagations(&store).await.unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(Record::verify_copies(&store).await.unwrap().len(), 36);
    // The next goes the way past the fan-out directly (remembered): the same outcome.
    assert!(
        Label::update_one(&store, Label::ID.eq(8), rename("Verve Jazz"))
            .await
            .unwrap()
    );
    assert_eq!(named(store.clone(), "Verve Jazz").await, 4);
    assert_eq!(Label::pending_propagations(&store).await.unwrap().len(), 1);
    let done = Label::propagate(&store, &Options::default()).await.unwrap();
    assert_eq!(done.finished, 1, "{done:?}");
    assert_eq!(named(store.clone(), "Verve Jazz").await, 40);
    assert!(Record::verify_copies(&store).await.unwrap().is_empty());
    // In the caller's transaction, of a source remembered: as outside one.
    let in_callers = |name: &'static str| {
        let store = store.clone();
        async move {
            let mut ctx = ();
            pattern_core::store::transaction_with(&store, &mut ctx, |tx, ()| {
                Box::pin(async move {
                    Label::update_one(tx, Label::ID.eq(8), rename(name)).await?;
                    Ok(())
                })
            })
            .await
            .unwrap();
        }
    };
    in_callers("Verve Forecast").await;
    assert_eq!(named(store.clone(), "Verve Forecast").await, 4);
    Label::propagate(&store, &Options::default()).await.unwrap();
    // Of a source not remembered (a new process): all 40 in it, as it cannot be abandoned.
    store.extensions().forget();
    in_callers("Verve Gold").await;
    assert_eq!(named(store.clone(), "Verve Gold").await, 40);
    assert!(Label::pending_propagations(&store)
        .await
        .unwrap()
        .is_empty());
    assert!(Record::verify_copies(&store).await.unwrap().is_empty());
    // A source whose copies now fit goes back to one update by filter.
    store
        .delete_many(
            "records",
            &query::Filter::In("_id".into(), (103..140).map(Bson::Int64).collect()),
        )
        .await
        .unwrap();
    assert!(Label::update_one(&store, Label::ID.eq(8), rename("Verve"))
        .await
        .unwrap());
    assert_eq!(named(store.clone(), "Verve").await, 3);
    assert!(Label::pending_propagations(&store)
        .await
        .unwrap()
        .is_empty());
    assert!(Record::verify_copies(&store).await.unwrap().is_empty());
}

async fn verify_and_repair_after_another_tool(store: AnyStore) {
    for (id, name) in [(1, "Varda"), (2, "Ozu"), (3, "Kurosawa")] {
        director(id, name).insert(&store).await.unwrap();
    }
    for id in 0..9 {
        film(id, 1 + id % 3).insert(&store).await.unwrap();
    }
    Award {
        id: 1,
        presenter: Some(stale_ref(3)),
    }
    .insert(&store)
    .await
    .unwrap();
    // Another tool renames a director without touching the copies, deletes another.
    let raw = |id: i64| query::Filter::Eq("_id".into(), Bson::Int64(id));
    let mut rename = query::Update {
        set: vec![("name".into(), Bson::String("Yasujirō Ozu".into()))],
        ..query::Update::default()
    };
    store
        .update_one("directors", &raw(2), &mut rename, false)
        .await
        .unwrap();
    store.delete_many("directors", &raw(3)).await.unwrap();
    let stale = Film::verify_copies(&store).await.unwrap();
    assert_eq!(stale.len(), 6, "{stale:?}");
    let renamed = stale.iter().filter(|s| !s.source_missing).count();
    assert_eq!(renamed, 3);
    assert!(stale
        .iter()
        .filter(|s| !s.source_missing)
        .all(|s| s.differs == ["name"] && s.source == "2"));
    let repaired = Film::repair_copies(&store, &Options::default())
        .await
        .unwrap();
    assert_eq!(repaired.copies, 3);
    assert_eq!(
        repaired.orphans.len(),
        3,
        "a required copy of a deleted source is listed"
    );
    let left = Film::verify_copies(&store).await.unwrap();
    assert!(left.iter().all(|s| s.source_missing) && left.len() == 3);
    // An optional copy of a deleted source becomes null.
    let award = Award::repair_copies(&store, &Options::default())
        .await
        .unwrap();
    assert_eq!(award.copies, 1);
    assert_eq!(
        Award::get(&store, &1).await.unwrap().unwrap().presenter,
        None
    );
    assert!(Award::verify_copies(&store).await.unwrap().is_empty());
}

async fn sixteen_writers_keep_every_copy_exact(store: AnyStore) {
    for id in 0..4 {
        director(id, &format!("d{id}"))
            .insert(&store)
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for t in 0..16_i64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..6_i64 {
                let d = (t + i) % 4;
                if t % 2 == 0 {
                    // A director renamed (its copies follow).
                    let name = format!("d{d} by {t}.{i}");
                    Director::update_one(
                        &store,
                        Director::ID.eq(d),
                        Update::new().set(Director::NAME, name),
                    )
                    .await
                    .unwrap();
                } else if i % 2 == 0 {
                    // A film created pointing at it.
                    film(t * 100 + i, d).insert(&store).await.unwrap();
                } else {
                    // A film repointed at it.
                    Film::update_one(
                        &store,
                        Film::ID.eq(t * 100 + i - 1),
                        Update::new().set(Film::DIRECTOR, stale_ref((d + 1) % 4)),
                    )
                    .await
                    .unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(documents(&store, "films").await.len(), 24);
    assert_exact(&store).await;
}

on_both_stores!(
    copies_follow_every_write,
    past_the_fan_out_in_batches,
    a_killed_propagation_resumes_exactly,
    an_update_past_the_fan_out_commits_the_fan_out,
    verify_and_repair_after_another_tool,
    sixteen_writers_keep_every_copy_exact,
);
