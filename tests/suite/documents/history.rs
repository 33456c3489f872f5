//! Document versioning (`#[document(history = "...")]`) on both stores: every generated write
//! method records a revision (the test walks `Document::__WRITES`), the history reads, revision
//! conflicts as typed errors, 16 read-modify-write tasks losing nothing, and documents written
//! before history was turned on.

use futures::{StreamExt, TryStreamExt};
use pattern_core::adopt::Options;
use pattern_core::document::Revision;
use pattern_core::store;

use super::*;

/// Version 1 of a note: its text only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct NoteV1 {
    #[serde(rename = "_id")]
    id: i64,
    text: String,
}

/// A note with history and a schema version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "notes",
    history = "notes_history",
    version = 2,
    previous(NoteV1 = 1)
)]
struct Note {
    #[serde(rename = "_id")]
    id: i64,
    text: String,
    likes: i64,
}

impl From<NoteV1> for Note {
    fn from(n: NoteV1) -> Self {
        Note {
            id: n.id,
            text: n.text,
            likes: 0,
        }
    }
}

fn note(id: i64, text: &str, likes: i64) -> Note {
    Note {
        id,
        text: text.into(),
        likes,
    }
}

async fn recorded(store: &AnyStore) -> Vec<bson::Document> {
    documents(store, "notes_history").await
}

async fn revision(store: &AnyStore, id: i64) -> Option<u64> {
    Note::get_revision(store, &id)
        .await
        .unwrap()
        .map(|r| r.revision)
}

/// Walks every write method the derive generated (`Note::__WRITES`): each bumps the revision and
/// records the state it replaced, or fails the test; a write method this test does not know
/// fails it too, so a new one cannot ship unversioned.
async fn every_write_method_records_a_revision(store: AnyStore) {
    assert!(Note::__WRITES.len() >= 8, "{:?}", Note::__WRITES);
    for (i, name) in Note::__WRITES.iter().enumerate() {
        let id = i as i64;
        let s = &store;
        if *name != "insert" {
            note(id, "first", 0).insert(s).await.unwrap();
        }
        let (rev, records) = (revision(s, id).await, recorded(s).await.len());
        match *name {
            "insert" => note(id, "first", 0).insert(s).await.unwrap(),
            "save" => note(id, "saved", 1).save(s).await.unwrap(),
            "update_one" => {
                let u = Update::new().inc(Note::LIKES, 1);
                assert!(Note::update_one(s, Note::ID.eq(id), u).await.unwrap());
            }
            "delete" => assert!(Note::delete(s, &id).await.unwrap()),
            "save_if" => note(id, "saved", 1).save_if(s, rev.unwrap()).await.unwrap(),
            "update_if" => {
                let u = Update::new().set(Note::TEXT, "edited");
                Note::update_if(s, &id, rev.unwrap(), u).await.unwrap();
            }
            "delete_if" => Note::delete_if(s, &id, rev.unwrap()).await.unwrap(),
            "migrate" => {
                // The sweep writes only older documents: make this one version 1 first.
                let raw = doc! {"_id": id, "text": "old", "revision": rev.unwrap() as i64};
                s.replace_one("notes", &pattern_core::store::query::Filter::eq("_id", id), raw, false)
                    .await
                    .unwrap();
                Note::migrate(s, &Options::default()).await.unwrap();
            }
            other => panic!(
                "`{other}` writes and this test does not know it: add it here, with the revision it must record"
            ),
        }
        let (rev_after, records_after) = (revision(s, id).await, recorded(s).await.len());
        match *name {
            "insert" => {
                assert_eq!((rev, rev_after), (None, Some(1)), "{name}");
                assert_eq!(records_after, records, "{name}: no previous state");
            }
            "delete" | "delete_if" => {
                assert_eq!(rev_after, None, "{name}");
                assert_eq!(
                    records_after,
                    records + 1,
                    "{name}: the last state recorded"
                );
            }
            _ => {
                assert_eq!(rev_after, rev.map(|r| r + 1), "{name}");
                assert_eq!(
                    records_after,
                    records + 1,
                    "{name}: the previous state recorded"
                );
            }
        }
    }
}

async fn history_reads(store: AnyStore) {
    let t0 = bson::DateTime::now();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    note(1, "a", 0).insert(&store).await.unwrap();
    let mut times = Vec::new();
    for text in ["b", "c", "d"] {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        times.push(bson::DateTime::now());
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let u = Update::new().set(Note::TEXT, text);
        assert!(Note::update_one(&store, Note::ID.eq(1_i64), u)
            .await
            .unwrap());
    }
    let all: Vec<Revision<Note>> = Note::history(&store, &1).try_collect().await.unwrap();
    let seen: Vec<(u64, &str)> = all
        .iter()
        .map(|r| (r.revision, r.document.text.as_str()))
        .collect();
    assert_eq!(seen, [(4, "d"), (3, "c"), (2, "b"), (1, "a")]);
    assert!(all[0].until.is_none() && all[1].until.is_some());
    assert_eq!(
        all[1].until, all[0].since,
        "one revision ends when the next begins"
    );
    for (n, text) in [(1, "a"), (2, "b"), (4, "d")] {
        let at = Note::at_revision(&store, &1, n).await.unwrap().unwrap();
        assert_eq!(at.text, text);
    }
    assert!(Note::at_revision(&store, &1, 9).await.unwrap().is_none());
    assert!(
        Note::as_of(&store, &1, t0).await.unwrap().is_none(),
        "not yet inserted"
    );
    for (t, text) in times.iter().zip(["a", "b", "c"]) {
        let then = Note::as_of(&store, &1, *t).await.unwrap().unwrap();
        assert_eq!(then.text, text);
    }
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let before_delete = bson::DateTime::now();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert!(Note::delete(&store, &1).await.unwrap());
    assert!(Note::get(&store, &1).await.unwrap().is_none());
    let later = bson::DateTime::now();
    assert!(
        Note::as_of(&store, &1, later).await.unwrap().is_none(),
        "deleted"
    );
    assert_eq!(
        Note::as_of(&store, &1, before_delete)
            .await
            .unwrap()
            .unwrap()
            .text,
        "d"
    );
    let kept: Vec<u64> = Note::history(&store, &1)
        .map(|r| r.unwrap().revision)
        .collect()
        .await;
    assert_eq!(kept, [4, 3, 2, 1], "the history outlives the document");
    // Inserted again: its revisions go on from the last recorded.
    note(1, "e", 0).insert(&store).await.unwrap();
    assert_eq!(revision(&store, 1).await, Some(5));
    // A long history streams past one page (100 records per find).
    for i in 0..120 {
        let u = Update::new().set(Note::LIKES, i);
        Note::update_one(&store, Note::ID.eq(1_i64), u)
            .await
            .unwrap();
    }
    let n = Note::history(&store, &1).count().await;
    assert_eq!(n, 125);
}

async fn a_stale_revision_is_a_conflict(store: AnyStore) {
    note(7, "x", 0).insert(&store).await.unwrap();
    let read = Note::get_revision(&store, &7).await.unwrap().unwrap();
    assert_eq!(read.revision, 1);
    let mut edited = read.document.clone();
    edited.likes = 1;
    edited.save_if(&store, read.revision).await.unwrap();
    // The same revision again: someone wrote since.
    let conflict = |r: pattern_core::Result<()>, found| match r {
        Err(Error::Conflict {
            expected, found: f, ..
        }) => assert_eq!((expected, f), (1, found)),
        other => panic!("expected Conflict, got {other:?}"),
    };
    conflict(edited.save_if(&store, read.revision).await, Some(2));
    let u = Update::new().inc(Note::LIKES, 1);
    conflict(Note::update_if(&store, &7, read.revision, u).await, Some(2));
    conflict(Note::delete_if(&store, &7, read.revision).await, Some(2));
    assert_eq!(Note::get(&store, &7).await.unwrap().unwrap().likes, 1);
    Note::delete_if(&store, &7, 2).await.unwrap();
    conflict(edited.save_if(&store, 1).await, None);
}

/// 16 tasks, each adding 1 to `likes` 8 times (200 with `PATTERN_FULL=1`) by reading the document and saving it back on
/// the revision read (retrying on a conflict): no increment is lost, and each is one revision.
async fn sixteen_read_modify_write_tasks_lose_nothing(store: AnyStore) {
    note(1, "hot", 0).insert(&store).await.unwrap();
    let per = pattern_tests::scale(8, 200) as i64;
    let tasks = (0..16).map(|_| {
        let store = &store;
        async move {
            for _ in 0..per {
                loop {
                    let r = Note::get_revision(store, &1).await.unwrap().unwrap();
                    let mut n = r.document;
                    n.likes += 1;
                    match n.save_if(store, r.revision).await {
                        Ok(()) => break,
                        Err(Error::Conflict { .. }) => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        }
    });
    futures::future::join_all(tasks).await;
    let r = Note::get_revision(&store, &1).await.unwrap().unwrap();
    assert_eq!(r.document.likes, 16 * per);
    assert_eq!(r.revision, 1 + 16 * per as u64);
    assert_eq!(recorded(&store).await.len() as i64, 16 * per);
}

/// Documents written before history (and versioning) was turned on: no revision, no version.
async fn documents_from_before_history_are_adopted(store: AnyStore) {
    store
        .insert_one("notes", doc! {"_id": 3_i64, "text": "legacy"})
        .await
        .unwrap();
    let r = Note::get_revision(&store, &3).await.unwrap().unwrap();
    assert_eq!((r.revision, r.since, r.document.likes), (0, None, 0));
    let u = Update::new().inc(Note::LIKES, 2);
    assert!(Note::update_one(&store, Note::ID.eq(3_i64), u)
        .await
        .unwrap());
    let all: Vec<Revision<Note>> = Note::history(&store, &3).try_collect().await.unwrap();
    let revs: Vec<(u64, i64)> = all.iter().map(|r| (r.revision, r.document.likes)).collect();
    // The upgrade to version 2 is a revision of its own, then the update.
    assert_eq!(revs, [(2, 2), (1, 0), (0, 0)]);
    assert_eq!(all[2].since, None);
    let stored = documents(&store, "notes").await;
    assert_eq!(stored[0].get_i32("schema_version"), Ok(2));
    assert_eq!(stored[0].get_i64("revision"), Ok(2));
}

/// The validators: the version and the revision required of every document, the history
/// records' fields; every write of the library passes them, a foreign write without them is
/// refused.
async fn validators_cover_the_version_and_the_revision(store: AnyStore) {
    Note::ensure_validator(&store).await.unwrap();
    note(1, "a", 0).insert(&store).await.unwrap();
    note(1, "b", 0).save(&store).await.unwrap();
    let u = Update::new().inc(Note::LIKES, 1);
    assert!(Note::update_one(&store, Note::ID.eq(1_i64), u)
        .await
        .unwrap());
    assert!(Note::delete(&store, &1).await.unwrap());
    let refused = |r: Result<(), store::Error>| {
        assert!(
            matches!(r, Err(store::Error::SchemaViolation { .. })),
            "{r:?}"
        );
    };
    let without_version = doc! {"_id": 2_i64, "text": "x", "likes": 0_i64, "revision": 1_i64};
    refused(store.insert_one("notes", without_version).await);
    let without_revision = doc! {"_id": 3_i64, "text": "x", "likes": 0_i64, "schema_version": 2};
    refused(store.insert_one("notes", without_revision).await);
    let version_zero =
        doc! {"_id": 4_i64, "text": "x", "likes": 0_i64, "schema_version": 0, "revision": 1_i64};
    refused(store.insert_one("notes", version_zero).await);
    refused(
        store
            .insert_one("notes_history", doc! {"_id": 5_i64, "id": 5_i64})
            .await,
    );
    assert_eq!(recorded(&store).await.len(), 3);
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "shared", history = "shared_history_a")]
struct SharedA {
    #[serde(rename = "_id")]
    id: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "shared", history = "shared_history_b")]
struct SharedB {
    #[serde(rename = "_id")]
    id: i64,
}

/// Two types over one collection, each with its history: each ensures its own indexes.
async fn each_type_ensures_its_own_indexes(store: AnyStore) {
    SharedA { id: 1 }.insert(&store).await.unwrap();
    SharedB { id: 2 }.insert(&store).await.unwrap();
    SharedB { id: 2 }.save(&store).await.unwrap();
    for h in ["shared_history_a", "shared_history_b"] {
        let names = store.index_names(h).await.unwrap();
        assert!(
            names
                .iter()
                .any(|n| n == "pattern_history_id_1_revision_-1"),
            "{h}: {names:?}"
        );
    }
}

/// A seeded random sequence of every write on 4 documents against a plain model: after each
/// operation the document read is the model's; at the end every document's history is every
/// state it had, newest first, each at its revision, and `at_revision` gives each.
async fn history_matches_a_model_of_random_writes(store: AnyStore) {
    use std::collections::BTreeMap;
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    // Per document: its current state, and every state it had (revision, note).
    type States = (Option<Note>, Vec<(u64, Note)>);
    let mut model: BTreeMap<i64, States> = BTreeMap::new();
    let steps = pattern_tests::scale(150, 2_000);
    for step in 0..steps {
        let id = next(4) as i64;
        let (current, states) = model.entry(id).or_default();
        let last = states.last().map_or(0, |s| s.0);
        let text = format!("s{step}");
        match next(6) {
            0 => {
                let r = note(id, &text, 0).insert(&store).await;
                if current.is_some() {
                    assert!(
                        matches!(r, Err(Error::Store(store::Error::DuplicateKey { .. }))),
                        "{r:?}"
                    );
                } else {
                    r.unwrap();
                    *current = Some(note(id, &text, 0));
                    states.push((last + 1, note(id, &text, 0)));
                }
            }
            1 => {
                let likes = next(100) as i64;
                note(id, &text, likes).save(&store).await.unwrap();
                *current = Some(note(id, &text, likes));
                states.push((last + 1, note(id, &text, likes)));
            }
            2 => {
                let u = Update::new().inc(Note::LIKES, 1);
                let applied = Note::update_one(&store, Note::ID.eq(id), u).await.unwrap();
                assert_eq!(applied, current.is_some());
                if let Some(c) = current {
                    c.likes += 1;
                    states.push((last + 1, c.clone()));
                }
            }
            3 => {
                let deleted = Note::delete(&store, &id).await.unwrap();
                assert_eq!(deleted, current.take().is_some());
            }
            4 => {
                // On the revision read, or a stale one.
                let stale = next(2) == 0;
                let expected = if stale { last.saturating_sub(1) } else { last };
                let u = Update::new().set(Note::TEXT, text.as_str());
                let r = Note::update_if(&store, &id, expected, u).await;
                match current {
                    Some(c) if expected == last => {
                        r.unwrap();
                        c.text = text.clone();
                        states.push((last + 1, c.clone()));
                    }
                    _ => assert!(matches!(r, Err(Error::Conflict { .. })), "{r:?}"),
                }
            }
            _ => {
                let r = Note::delete_if(&store, &id, last).await;
                match current.take() {
                    Some(_) => r.unwrap(),
                    None => assert!(
                        matches!(r, Err(Error::Conflict { found: None, .. })),
                        "{r:?}"
                    ),
                }
            }
        }
        assert_eq!(
            Note::get(&store, &id).await.unwrap(),
            *current,
            "step {step}"
        );
    }
    for (id, (_, states)) in &model {
        let all: Vec<Revision<Note>> = Note::history(&store, id).try_collect().await.unwrap();
        let got: Vec<(u64, Note)> = all.into_iter().map(|r| (r.revision, r.document)).collect();
        let want: Vec<(u64, Note)> = states.iter().rev().cloned().collect();
        assert_eq!(got, want, "document {id}");
        for (n, state) in states {
            let at = Note::at_revision(&store, id, *n).await.unwrap();
            assert_eq!(at.as_ref(), Some(state), "document {id} at {n}");
        }
    }
}

/// A document written without a revision (by another tool) over an `_id` the library deleted
/// is recorded after that `_id`'s last revision: the next write through the library records
/// it and overwrites no record.
async fn a_document_without_a_revision_after_a_delete(store: AnyStore) {
    note(5, "first", 0).insert(&store).await.unwrap();
    assert!(Note::delete(&store, &5).await.unwrap());
    let foreign =
        doc! {"_id": 5_i64, "text": "by another tool", "likes": 3_i64, "schema_version": 2};
    store.insert_one("notes", foreign).await.unwrap();
    assert_eq!(revision(&store, 5).await, Some(0));
    let inc = Update::new().inc(Note::LIKES, 1);
    assert!(Note::update_one(&store, Note::ID.eq(5_i64), inc)
        .await
        .unwrap());
    let revisions: Vec<i64> = (recorded(&store).await.iter())
        .filter(|r| r.get_i64("id") == Ok(5))
        .map(|r| r.get_i64("revision").unwrap())
        .collect();
    assert_eq!(revisions, [1, 2]);
    assert_eq!(revision(&store, 5).await, Some(3));
    let past = Note::at_revision(&store, &5, 2).await.unwrap().unwrap();
    assert_eq!(past, note(5, "by another tool", 3));
}

on_both_stores!(
    history_matches_a_model_of_random_writes,
    each_type_ensures_its_own_indexes,
    validators_cover_the_version_and_the_revision,
    every_write_method_records_a_revision,
    history_reads,
    a_stale_revision_is_a_conflict,
    sixteen_read_modify_write_tasks_lose_nothing,
    documents_from_before_history_are_adopted,
    a_document_without_a_revision_after_a_delete,
);
