//! Features with features (issue 67): the pairs the derive accepts since its write pipeline's
//! stages compose, each on every write path, on both stores, against a plain model written
//! out by hand.
//!
//! - History with the related patterns: a computed child, a subset child, a source of copies
//!   and a holder of copies, each with a history: every write is one revision of the document
//!   it writes and keeps what others hold of it exact; a copy refreshed by its source's write
//!   is not a revision of the document holding it.
//! - Schema versions with the related patterns: documents an older build wrote (version 1)
//!   among the current ones; the children are counted as stored, a copy holds its source's
//!   fields as the source's current version stores them (an older source is upgraded as it is
//!   read for the copy), and an older holder gets its copy filled when it is upgraded (a
//!   read's write-back, an update, the sweep).

use bson::{doc, Bson};
use futures::TryStreamExt;
use pattern_core::adopt::Options;
use pattern_core::document::{history, migrate, verify, verify_copies, verify_subsets};
use pattern_core::store::query;
use pattern_core::store::transaction;
use pattern_core::Reference;

use super::*;

fn by_id(id: i64) -> query::Filter {
    query::Filter::eq("_id", id)
}

/// The revision a document of a type with history is at (`None`: no document).
async fn revision(store: &AnyStore, coll: &str, id: i64) -> Option<i64> {
    let found = store.find(coll, &by_id(id), &Default::default()).await;
    let doc = found.unwrap().pop()?;
    doc.get(pattern_core::document::REVISION)
        .and_then(pattern_tests::as_int)
}

/// How many states of document `id` the history collection `past` holds.
async fn recorded(store: &AnyStore, past: &str, id: i64) -> usize {
    let of_id = query::Filter::eq("id", id);
    store
        .find(past, &of_id, &Default::default())
        .await
        .unwrap()
        .len()
}

// ----- History with a computed child ---------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "p_boards")]
struct Board {
    #[serde(rename = "_id")]
    id: i64,
    count: i64,
    sum: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "p_scores",
    history = "p_scores_past",
    computed(parent = Board, key = board, count = count, sum(points = sum))
)]
struct Score {
    #[serde(rename = "_id")]
    id: i64,
    board: i64,
    points: i64,
}

/// Board `b` as the scores `model` say: its count and sum.
async fn boards_agree(store: &AnyStore, model: &[Score], boards: &[i64]) {
    for &b in boards {
        let of: Vec<i64> = model
            .iter()
            .filter(|s| s.board == b)
            .map(|s| s.points)
            .collect();
        let got = Board::get(store, &b).await.unwrap().unwrap();
        let want = Board {
            id: b,
            count: of.len() as i64,
            sum: of.iter().sum(),
        };
        assert_eq!(got, want);
    }
    assert_eq!(verify::<Score, _>(store).await.unwrap(), vec![]);
}

/// Every write path of a computed child with history: each write one revision of the score
/// (its previous state recorded), each adjusting the boards in the same transaction.
async fn history_with_a_computed_child(store: AnyStore) {
    for b in [1, 2] {
        let board = Board {
            id: b,
            count: 0,
            sum: 0,
        };
        board.insert(&store).await.unwrap();
    }
    let mut model = vec![];
    let score = |id, board, points| Score { id, board, points };
    // insert: revision 1, nothing recorded.
    score(10, 1, 5).insert(&store).await.unwrap();
    model.push(score(10, 1, 5));
    boards_agree(&store, &model, &[1, 2]).await;
    assert_eq!(revision(&store, "p_scores", 10).await, Some(1));
    // save over it, moved to board 2: revision 2.
    score(10, 2, 7).save(&store).await.unwrap();
    model[0] = score(10, 2, 7);
    boards_agree(&store, &model, &[1, 2]).await;
    assert_eq!(revision(&store, "p_scores", 10).await, Some(2));
    // update_one: revision 3.
    let inc = pattern_core::document::Update::new().inc(Score::POINTS, 3);
    assert!(Score::update_one(&store, Score::ID.eq(10), inc)
        .await
        .unwrap());
    model[0].points = 10;
    boards_agree(&store, &model, &[1, 2]).await;
    // save_if at the revision read: 4; at a stale one: refused, nothing written.
    score(10, 1, 1).save_if(&store, 3).await.unwrap();
    model[0] = score(10, 1, 1);
    assert!(matches!(
        score(10, 2, 9).save_if(&store, 3).await,
        Err(Error::Conflict { .. })
    ));
    boards_agree(&store, &model, &[1, 2]).await;
    // update_if: 5.
    let set = pattern_core::document::Update::new().set(Score::POINTS, 4);
    Score::update_if(&store, &10, 4, set).await.unwrap();
    model[0].points = 4;
    boards_agree(&store, &model, &[1, 2]).await;
    assert_eq!(revision(&store, "p_scores", 10).await, Some(5));
    assert_eq!(recorded(&store, "p_scores_past", 10).await, 4);
    // In a caller's transaction, with an insert beside it.
    transaction(&store, |tx| {
        Box::pin(async move {
            Score {
                id: 11,
                board: 2,
                points: 6,
            }
            .insert(tx)
            .await
        })
    })
    .await
    .unwrap();
    model.push(score(11, 2, 6));
    boards_agree(&store, &model, &[1, 2]).await;
    // delete_if, delete: the last states recorded, the boards emptied.
    Score::delete_if(&store, &10, 5).await.unwrap();
    assert!(Score::delete(&store, &11).await.unwrap());
    model.clear();
    boards_agree(&store, &model, &[1, 2]).await;
    assert_eq!(recorded(&store, "p_scores_past", 10).await, 5);
    assert_eq!(recorded(&store, "p_scores_past", 11).await, 1);
    let past: Vec<i64> = (history::<Score, _, _>(&store, &10))
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .iter()
        .map(|r| r.document.points)
        .collect();
    assert_eq!(past, [4, 1, 10, 7, 5], "newest first");
}

// ----- History with a subset child -----------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "p_feeds")]
struct Feed {
    #[serde(rename = "_id")]
    id: i64,
    recent: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "p_entries",
    history = "p_entries_past",
    subset(parent = Feed, key = feed, into = recent, keep = 2, order = date)
)]
struct Entry {
    #[serde(rename = "_id")]
    id: i64,
    feed: i64,
    date: i64,
}

/// The feed's subset (the 2 newest, as the library reads them) is the model's, and every
/// stored subset is its children's first ones.
async fn feed_agrees(store: &AnyStore, model: &[Entry]) {
    let mut newest: Vec<Entry> = model.iter().filter(|e| e.feed == 1).cloned().collect();
    newest.sort_by_key(|e| std::cmp::Reverse((e.date, e.id)));
    newest.truncate(2);
    let got = pattern_core::document::subset::<Entry, _, _>(store, &1)
        .await
        .unwrap();
    assert_eq!(got, Some(newest));
    assert_eq!(
        verify_subsets::<Entry, _>(store).await.unwrap(),
        Vec::<String>::new()
    );
}

async fn history_with_a_subset_child(store: AnyStore) {
    Feed {
        id: 1,
        recent: vec![],
    }
    .insert(&store)
    .await
    .unwrap();
    let e = |id, date| Entry { id, feed: 1, date };
    let mut model = vec![];
    for (id, date) in [(1, 10), (2, 20), (3, 30)] {
        e(id, date).insert(&store).await.unwrap();
        model.push(e(id, date));
        feed_agrees(&store, &model).await;
    }
    // The oldest made the newest: a save.
    e(1, 40).save(&store).await.unwrap();
    model[0] = e(1, 40);
    feed_agrees(&store, &model).await;
    // update_one of the newest to the oldest; update_if; save_if.
    let set = pattern_core::document::Update::new().set(Entry::DATE, 5);
    assert!(Entry::update_one(&store, Entry::ID.eq(1), set)
        .await
        .unwrap());
    model[0].date = 5;
    feed_agrees(&store, &model).await;
    let set = pattern_core::document::Update::new().set(Entry::DATE, 50);
    Entry::update_if(&store, &2, 1, set).await.unwrap();
    model[1].date = 50;
    feed_agrees(&store, &model).await;
    e(3, 1).save_if(&store, 1).await.unwrap();
    model[2].date = 1;
    feed_agrees(&store, &model).await;
    // Each write one revision, its previous state recorded.
    assert_eq!(revision(&store, "p_entries", 1).await, Some(3));
    assert_eq!(recorded(&store, "p_entries_past", 1).await, 2);
    Entry::delete_if(&store, &2, 2).await.unwrap();
    model.remove(1);
    feed_agrees(&store, &model).await;
    assert_eq!(recorded(&store, "p_entries_past", 2).await, 2);
}

// ----- History with a source and a holder of copies ------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "p_people",
    history = "p_people_past",
    referenced_by(Film = director, Clip = director),
    fan_out = 1
)]
struct Person {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Person)]
struct PersonRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "p_films", history = "p_films_past")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[document(reference)]
    director: PersonRef,
}

async fn director_of(store: &AnyStore, film: i64) -> String {
    Film::get(store, &film)
        .await
        .unwrap()
        .unwrap()
        .director
        .name
}

/// A source with history: each write a revision, its copies brought in line in the same
/// transaction. A holder with history: its writes fill its copy and are revisions; a copy
/// refreshed by its source's write is not a revision of the film.
async fn history_with_a_source_and_a_holder(store: AnyStore) {
    let person = |id, name: &str| Person {
        id,
        name: name.into(),
    };
    person(1, "Varda").insert(&store).await.unwrap();
    person(2, "Ozu").insert(&store).await.unwrap();
    let film = |id, director| Film {
        id,
        title: format!("film {id}"),
        director: PersonRef {
            id: director,
            name: "?".into(),
        },
    };
    film(10, 1).insert(&store).await.unwrap();
    film(11, 1).insert(&store).await.unwrap();
    assert_eq!(director_of(&store, 10).await, "Varda", "filled on insert");
    // The source's writes: save, update_one, save_if, update_if.
    person(1, "Agnès Varda").save(&store).await.unwrap();
    assert_eq!(director_of(&store, 11).await, "Agnès Varda");
    let set = pattern_core::document::Update::new().set(Person::NAME, "A. Varda".to_owned());
    assert!(Person::update_one(&store, Person::ID.eq(1), set)
        .await
        .unwrap());
    assert_eq!(director_of(&store, 10).await, "A. Varda");
    person(1, "Varda").save_if(&store, 3).await.unwrap();
    let set = pattern_core::document::Update::new().set(Person::NAME, "Agnès".to_owned());
    Person::update_if(&store, &1, 4, set).await.unwrap();
    assert_eq!(director_of(&store, 11).await, "Agnès");
    assert_eq!(revision(&store, "p_people", 1).await, Some(5));
    assert_eq!(recorded(&store, "p_people_past", 1).await, 4);
    // The films were not written by those: still at their first revision.
    assert_eq!(revision(&store, "p_films", 10).await, Some(1));
    // The holder's writes: a save moving the copy to another source, an update_if.
    film(10, 2).save(&store).await.unwrap();
    assert_eq!(director_of(&store, 10).await, "Ozu");
    let set = pattern_core::document::Update::new().set(Film::TITLE, "Tokyo Story".to_owned());
    Film::update_if(&store, &10, 2, set).await.unwrap();
    assert_eq!(revision(&store, "p_films", 10).await, Some(3));
    assert_eq!(recorded(&store, "p_films_past", 10).await, 2);
    assert_eq!(verify_copies::<Film, _>(&store).await.unwrap(), vec![]);
    // A source still referenced is not deleted; once free, its delete is recorded.
    assert!(Person::delete(&store, &1).await.is_err());
    Film::delete(&store, &11).await.unwrap();
    assert!(Person::delete(&store, &1).await.unwrap());
    assert_eq!(recorded(&store, "p_people_past", 1).await, 5);
}

// ----- Schema versions with the related patterns ---------------------------------------------

/// Version 1 of a score: the same fields, but no `bonus`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ScoreV1 {
    #[serde(rename = "_id")]
    id: i64,
    board: i64,
    points: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "p_vscores",
    version = 2,
    previous(ScoreV1 = 1),
    write_back,
    computed(parent = Board, key = board, count = count, sum(points = sum))
)]
struct VScore {
    #[serde(rename = "_id")]
    id: i64,
    board: i64,
    points: i64,
    bonus: bool,
}

impl From<ScoreV1> for VScore {
    fn from(v: ScoreV1) -> Self {
        VScore {
            id: v.id,
            board: v.board,
            points: v.points,
            bonus: false,
        }
    }
}

/// Children written by an older build count as stored; a read's write-back, an update, a save,
/// a delete and the sweep each keep the board exact.
async fn versions_with_a_computed_child(store: AnyStore) {
    Board {
        id: 1,
        count: 0,
        sum: 0,
    }
    .insert(&store)
    .await
    .unwrap();
    for (id, points) in [(1, 2), (2, 3), (3, 4), (4, 5)] {
        let old = doc! {"_id": id, "board": 1_i64, "points": points as i64};
        store.insert_one("p_vscores", old).await.unwrap();
    }
    VScore::recompute(&store, &1_i64).await.unwrap();
    let board = |store: AnyStore| async move { Board::get(&store, &1).await.unwrap().unwrap() };
    assert_eq!(board(store.clone()).await.sum, 14);
    // A read writes the upgrade back; an update upgrades first; a save over an old one; a
    // delete of an old one.
    let read = VScore::get(&store, &1).await.unwrap().unwrap();
    assert!(!read.bonus);
    let inc = pattern_core::document::Update::new().inc(VScore::POINTS, 10);
    assert!(VScore::update_one(&store, VScore::ID.eq(2), inc)
        .await
        .unwrap());
    VScore {
        id: 3,
        board: 1,
        points: 1,
        bonus: true,
    }
    .save(&store)
    .await
    .unwrap();
    assert!(VScore::delete(&store, &4).await.unwrap());
    let b = board(store.clone()).await;
    assert_eq!((b.count, b.sum), (3, 2 + 13 + 1));
    assert_eq!(verify::<VScore, _>(&store).await.unwrap(), vec![]);
    // A new one and the sweep of what is left.
    let old = doc! {"_id": 5_i64, "board": 1_i64, "points": 100_i64};
    store.insert_one("p_vscores", old).await.unwrap();
    VScore::recompute(&store, &1_i64).await.unwrap();
    migrate::<VScore, _>(&store, &Options::default())
        .await
        .unwrap();
    let b = board(store.clone()).await;
    assert_eq!((b.count, b.sum), (4, 116));
    assert_eq!(verify::<VScore, _>(&store).await.unwrap(), vec![]);
    for d in documents(&store, "p_vscores").await {
        assert_eq!(
            d.get("schema_version").and_then(pattern_tests::as_int),
            Some(2)
        );
    }
}

/// Version 1 of a director: its name stored as `label`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct DirectorV1 {
    #[serde(rename = "_id")]
    id: i64,
    label: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "p_directors",
    version = 2,
    previous(DirectorV1 = 1),
    referenced_by(Movie = director)
)]
struct Director {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

impl From<DirectorV1> for Director {
    fn from(v: DirectorV1) -> Self {
        Director {
            id: v.id,
            name: v.label,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Director)]
struct DirectorRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

/// Version 1 of a movie: the director's `_id` alone, no copy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct MovieV1 {
    #[serde(rename = "_id")]
    id: i64,
    director_id: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "p_movies",
    version = 2,
    previous(MovieV1 = 1),
    write_back
)]
struct Movie {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    director: DirectorRef,
}

impl From<MovieV1> for Movie {
    fn from(v: MovieV1) -> Self {
        Movie {
            id: v.id,
            director: DirectorRef {
                id: v.director_id,
                name: String::new(),
            },
        }
    }
}

/// A copy of a director an older build wrote holds the name as the current version stores it
/// (the source upgraded as it is read for the copy); a movie an older build wrote, without a
/// copy, gets it filled when it is upgraded (a read's write-back, the sweep); `verify_copies`
/// reads the sources the same way.
async fn versions_with_a_source_and_a_holder(store: AnyStore) {
    let old = doc! {"_id": 1_i64, "label": "Varda"};
    store.insert_one("p_directors", old).await.unwrap();
    Movie {
        id: 10,
        director: DirectorRef {
            id: 1,
            name: "?".into(),
        },
    }
    .insert(&store)
    .await
    .unwrap();
    let copy = |store: AnyStore, id: i64| async move {
        let found = store
            .find("p_movies", &by_id(id), &Default::default())
            .await;
        let movie = found.unwrap().pop().unwrap();
        movie.get_document("director").unwrap().get("name").cloned()
    };
    assert_eq!(
        copy(store.clone(), 10).await,
        Some(Bson::String("Varda".into()))
    );
    assert_eq!(verify_copies::<Movie, _>(&store).await.unwrap(), vec![]);
    // Movies an older build wrote: no copy until upgraded.
    for id in [11_i64, 12] {
        let old = doc! {"_id": id, "director_id": 1_i64};
        store.insert_one("p_movies", old).await.unwrap();
    }
    let read = Movie::get(&store, &11).await.unwrap().unwrap();
    assert_eq!(read.director.id, 1);
    assert_eq!(
        copy(store.clone(), 11).await,
        Some(Bson::String("Varda".into())),
        "written back, filled"
    );
    migrate::<Movie, _>(&store, &Options::default())
        .await
        .unwrap();
    assert_eq!(
        copy(store.clone(), 12).await,
        Some(Bson::String("Varda".into())),
        "swept, filled"
    );
    assert_eq!(verify_copies::<Movie, _>(&store).await.unwrap(), vec![]);
    // The director's own upgrade and rename reach every copy.
    migrate::<Director, _>(&store, &Options::default())
        .await
        .unwrap();
    let set = pattern_core::document::Update::new().set(Director::NAME, "Agnès Varda".to_owned());
    assert!(Director::update_one(&store, Director::ID.eq(1), set)
        .await
        .unwrap());
    for id in [10, 11, 12] {
        assert_eq!(
            copy(store.clone(), id).await,
            Some(Bson::String("Agnès Varda".into()))
        );
    }
    assert_eq!(verify_copies::<Movie, _>(&store).await.unwrap(), vec![]);
}

// ----- A subset child holding copies ---------------------------------------------------------

/// A shelf embeds its 2 longest clips, whole: the copies they hold included.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "p_shelves")]
struct Shelf {
    #[serde(rename = "_id")]
    id: i64,
    longest: Vec<Clip>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "p_clips",
    subset(parent = Shelf, key = shelf, into = longest, keep = 2, order = minutes)
)]
struct Clip {
    #[serde(rename = "_id")]
    id: i64,
    shelf: i64,
    minutes: i64,
    #[document(reference)]
    director: PersonRef,
}

/// A source's write reaches the copies its holders' parents embed: within the fan-out in its
/// transaction, past it in the batches after it, and by `repair_copies` after another tool.
async fn a_subset_child_holding_copies(store: AnyStore) {
    for (id, name) in [(1, "Varda"), (2, "Ozu")] {
        let p = Person {
            id,
            name: name.into(),
        };
        p.insert(&store).await.unwrap();
    }
    for id in 0..2 {
        let shelf = Shelf {
            id,
            longest: vec![],
        };
        shelf.insert(&store).await.unwrap();
    }
    for (id, shelf, minutes, director) in
        [(1, 0, 90, 1), (2, 0, 80, 2), (3, 1, 70, 1), (4, 1, 5, 1)]
    {
        let clip = Clip {
            id,
            shelf,
            minutes,
            director: PersonRef {
                id: director,
                name: "?".into(),
            },
        };
        clip.insert(&store).await.unwrap();
    }
    let names = |store: AnyStore| async move {
        let mut out = Vec::new();
        for id in 0..2 {
            let shelf = Shelf::get(&store, &id).await.unwrap().unwrap();
            out.extend(shelf.longest.into_iter().map(|c| c.director.name));
        }
        out
    };
    assert_eq!(
        names(store.clone()).await,
        ["Varda", "Ozu", "Varda", "Varda"]
    );
    // Three clips copy Varda, past the fan-out of 1: batches after the commit.
    let set = pattern_core::document::Update::new().set(Person::NAME, "Agnès Varda".to_owned());
    assert!(Person::update_one(&store, Person::ID.eq(1), set)
        .await
        .unwrap());
    assert_eq!(
        names(store.clone()).await,
        ["Agnès Varda", "Ozu", "Agnès Varda", "Agnès Varda"]
    );
    // One clip copies Ozu: in the source's transaction.
    let ozu = Person {
        id: 2,
        name: "Yasujirō Ozu".into(),
    };
    ozu.save(&store).await.unwrap();
    assert_eq!(names(store.clone()).await[1], "Yasujirō Ozu");
    assert_eq!(
        verify_subsets::<Clip, _>(&store).await.unwrap(),
        Vec::<String>::new()
    );
    // Another tool renames Ozu: `repair_copies` brings the clip and the shelf's subset in line.
    let mut rename = query::Update {
        set: vec![("name".into(), Bson::String("Ozu".into()))],
        ..query::Update::default()
    };
    store
        .update_one("p_people", &by_id(2), &mut rename, false)
        .await
        .unwrap();
    let repaired = Clip::repair_copies(&store, &Options::default())
        .await
        .unwrap();
    assert_eq!(repaired.copies, 1);
    assert_eq!(names(store.clone()).await[1], "Ozu");
    assert_eq!(
        verify_subsets::<Clip, _>(&store).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(verify_copies::<Clip, _>(&store).await.unwrap(), vec![]);
}

on_both_stores!(
    a_subset_child_holding_copies,
    history_with_a_computed_child,
    history_with_a_subset_child,
    history_with_a_source_and_a_holder,
    versions_with_a_computed_child,
    versions_with_a_source_and_a_holder,
);
