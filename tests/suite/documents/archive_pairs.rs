//! The archive with the other features (issue 67): a move is a delete through the type's write
//! pipeline, so each feature's stage runs around it, in the move's transaction, on both
//! stores, with the archive on the same store (a transaction per move) and on another (a
//! copy, then the delete's transaction).
//!
//! - A child of computed values and of a subset leaves its parent's aggregates and subset:
//!   the parents hold what the live children say, as `verify` and the follower read them.
//! - A document with history takes no revision with it: its last state is recorded as a
//!   delete records it, read back through `history`, `at_revision` and `as_of`.
//! - A source of copies moves once nothing copies it; until then it stays live and the report
//!   counts it (`still_copied`).
//! - A variant's archive moves its variant's documents only.

use bson::DateTime;
use futures::TryStreamExt;
use pattern_core::adopt::Options;
use pattern_core::document::{
    archive, as_of, at_revision, get_with_archive, history, verify, verify_archive, verify_copies,
    verify_subsets, ArchiveAt,
};
use pattern_core::{MemoryStore, Reference};

use super::*;

const T0: i64 = 1_700_000_000_000;
const DAY: i64 = 86_400_000;

fn day(n: i64) -> DateTime {
    DateTime::from_millis(T0 + n * DAY)
}

/// The archive collection `coll` of `store`.
fn at<'a>(store: &'a AnyStore, coll: &'a str) -> ArchiveAt<'a, AnyStore> {
    ArchiveAt {
        store,
        collection: coll,
    }
}

/// Another store for the archive than the live one.
fn another() -> AnyStore {
    AnyStore::Memory(MemoryStore::new())
}

/// Each test on both stores, with its archive on the live store and on another.
macro_rules! here_and_elsewhere {
    ($($body:ident => $here:ident, $elsewhere:ident;)*) => {
        $(
            async fn $here(store: AnyStore) {
                $body(&store, &store).await;
            }
            async fn $elsewhere(store: AnyStore) {
                $body(&store, &another()).await;
            }
        )*
        on_both_stores!($($here, $elsewhere,)*);
    };
}

async fn ids_in(store: &AnyStore, coll: &str) -> Vec<i64> {
    let mut ids: Vec<i64> = (documents(store, coll).await.iter())
        .map(|d| pattern_tests::as_int(d.get("_id").unwrap()).unwrap())
        .collect();
    ids.sort();
    ids
}

// ----- A computed child with history --------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "ap_boards")]
struct Board {
    #[serde(rename = "_id")]
    id: i64,
    count: i64,
    sum: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "ap_scores",
    history = "ap_scores_past",
    computed(parent = Board, key = board, count = count, sum(points = sum)),
    archive(age = at, pin = pinned)
)]
struct Score {
    #[serde(rename = "_id")]
    id: i64,
    board: i64,
    points: i64,
    at: DateTime,
    pinned: bool,
}

fn score(id: i64) -> Score {
    Score {
        id,
        board: id % 2,
        points: id,
        at: day(id),
        pinned: id == 3,
    }
}

/// Scores 0..10 on boards 0 and 1, one saved over once (revision 2), then the scores before
/// day 6 archived: the boards count and sum the live scores only; each archived score's last
/// state is in its history, read back by revision and by time; the archive holds it as it was.
async fn a_computed_child_with_history_leaves_its_parent(store: &AnyStore, archived_in: &AnyStore) {
    {
        for b in [0, 1] {
            let board = Board {
                id: b,
                count: 0,
                sum: 0,
            };
            board.insert(store).await.unwrap();
        }
        for id in 0..10 {
            score(id).insert(store).await.unwrap();
        }
        let mut two = score(2);
        two.points = 20;
        two.save(store).await.unwrap();
        // Apart by a few milliseconds: the revisions' times are the writers' clocks.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let saved_at = DateTime::now();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let to = at(archived_in, "ap_scores_archive");
        let done = archive::<Score, _, _>(store, to, day(6), &Options::default())
            .await
            .unwrap();
        // 0, 1, 2, 4, 5 (3 is pinned).
        assert_eq!(done.moved, 5);
        assert_eq!(
            ids_in(archived_in, "ap_scores_archive").await,
            [0, 1, 2, 4, 5]
        );
        assert_eq!(ids_in(store, "ap_scores").await, [3, 6, 7, 8, 9]);
        for (b, live) in [(0, [6, 8].as_slice()), (1, [3, 7, 9].as_slice())] {
            let got = Board::get(store, &b).await.unwrap().unwrap();
            let want = Board {
                id: b,
                count: live.len() as i64,
                sum: live.iter().sum(),
            };
            assert_eq!(got, want, "board {b}: its live scores");
        }
        assert_eq!(verify::<Score, _>(store).await.unwrap(), vec![]);
        // Score 2's history: revision 1 (saved over), revision 2 (moved), nothing current.
        let revisions: Vec<_> = history::<Score, _, _>(store, &2)
            .try_collect()
            .await
            .unwrap();
        let numbers: Vec<u64> = revisions.iter().map(|r| r.revision).collect();
        assert_eq!(numbers, [2, 1]);
        assert!(revisions.iter().all(|r| r.until.is_some()), "none current");
        assert_eq!(revisions[0].document, two);
        let at_two = at_revision::<Score, _, _>(store, &2, 2).await.unwrap();
        assert_eq!(at_two, Some(two.clone()));
        assert_eq!(
            as_of::<Score, _, _>(store, &2, saved_at).await.unwrap(),
            Some(two.clone())
        );
        let later = DateTime::from_millis(DateTime::now().timestamp_millis() + 1_000);
        assert_eq!(as_of::<Score, _, _>(store, &2, later).await.unwrap(), None);
        // The archive holds it as it was, read back with the live ones.
        let got = get_with_archive::<Score, _, _, _>(store, to, &2)
            .await
            .unwrap();
        assert_eq!(got, Some(two.clone()));
        assert_eq!(verify_archive::<Score, _, _>(store, to).await.unwrap(), []);
        // The live ones' writes keep the boards exact after the move.
        Score::delete(store, &8).await.unwrap();
        let got = Board::get(store, &0).await.unwrap().unwrap();
        assert_eq!((got.count, got.sum), (1, 6));
        assert_eq!(verify::<Score, _>(store).await.unwrap(), vec![]);
    }
}

// ----- A subset child ------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "ap_feeds")]
struct Feed {
    #[serde(rename = "_id")]
    id: i64,
    recent: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "ap_entries",
    subset(parent = Feed, key = feed, into = recent, keep = 2, order = date),
    archive(age = date)
)]
struct Entry {
    #[serde(rename = "_id")]
    id: i64,
    feed: i64,
    date: DateTime,
}

/// Entries on days 0..6 with the feed keeping the 2 newest, and the archive cutting after day
/// 4: the newest two are live and stay; then, cut after day 6, every entry moves and the
/// subset is empty (it holds live children only).
async fn a_subset_child_leaves_its_parent(store: &AnyStore, archived_in: &AnyStore) {
    {
        let feed = Feed {
            id: 1,
            recent: vec![],
        };
        feed.insert(store).await.unwrap();
        let e = |id| Entry {
            id,
            feed: 1,
            date: day(id),
        };
        for id in 0..6 {
            e(id).insert(store).await.unwrap();
        }
        let to = at(archived_in, "ap_entries_archive");
        let done = archive::<Entry, _, _>(store, to, day(4), &Options::default())
            .await
            .unwrap();
        assert_eq!(done.moved, 4);
        let kept = pattern_core::document::subset::<Entry, _, _>(store, &1)
            .await
            .unwrap();
        assert_eq!(kept, Some(vec![e(5), e(4)]));
        assert_eq!(
            verify_subsets::<Entry, _>(store).await.unwrap(),
            Vec::<String>::new()
        );
        let done = archive::<Entry, _, _>(store, to, day(6), &Options::default())
            .await
            .unwrap();
        assert_eq!(done.moved, 2);
        let kept = pattern_core::document::subset::<Entry, _, _>(store, &1)
            .await
            .unwrap();
        assert_eq!(kept, Some(vec![]));
        assert_eq!(
            verify_subsets::<Entry, _>(store).await.unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            ids_in(archived_in, "ap_entries_archive").await,
            [0, 1, 2, 3, 4, 5]
        );
    }
}

// ----- A source of copies ---------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "ap_people",
    referenced_by(Film = director),
    archive(age = retired)
)]
struct Person {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    retired: DateTime,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Person)]
struct PersonRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "ap_films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    director: Option<PersonRef>,
}

/// Two retired people, one a film copies (an optional copy): the one nobody copies moves, the
/// copied one stays live with its copy untouched, counted as `still_copied`; once the film no
/// longer copies it, the next run moves it.
async fn a_source_moves_once_nothing_copies_it(store: &AnyStore, archived_in: &AnyStore) {
    {
        let person = |id, name: &str| Person {
            id,
            name: name.into(),
            retired: day(id),
        };
        person(1, "Varda").insert(store).await.unwrap();
        person(2, "Ozu").insert(store).await.unwrap();
        person(9, "Sciamma").insert(store).await.unwrap();
        let film = |id, director: Option<i64>| Film {
            id,
            director: director.map(|id| PersonRef {
                id,
                name: "?".into(),
            }),
        };
        film(10, Some(1)).insert(store).await.unwrap();
        let to = at(archived_in, "ap_people_archive");
        let done = archive::<Person, _, _>(store, to, day(5), &Options::default())
            .await
            .unwrap();
        assert_eq!((done.moved, done.still_copied), (1, 1));
        assert_eq!(ids_in(store, "ap_people").await, [1, 9]);
        assert_eq!(ids_in(archived_in, "ap_people_archive").await, [2]);
        let copy = Film::get(store, &10).await.unwrap().unwrap().director;
        assert_eq!(
            copy.map(|c| c.name),
            Some("Varda".to_owned()),
            "the copy untouched"
        );
        assert_eq!(verify_copies::<Film, _>(store).await.unwrap(), vec![]);
        // The film points elsewhere: Varda moves on the next run.
        film(10, Some(9)).save(store).await.unwrap();
        let done = archive::<Person, _, _>(store, to, day(5), &Options::default())
            .await
            .unwrap();
        assert_eq!((done.moved, done.still_copied), (1, 0));
        assert_eq!(ids_in(store, "ap_people").await, [9]);
        assert_eq!(ids_in(archived_in, "ap_people_archive").await, [1, 2]);
        assert_eq!(verify_copies::<Film, _>(store).await.unwrap(), vec![]);
        let got = get_with_archive::<Person, _, _, _>(store, to, &1)
            .await
            .unwrap();
        assert_eq!(got, Some(person(1, "Varda")));
    }
}

// ----- A variant of a polymorphic collection ---------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Sale, archive(age = placed))]
struct Retail {
    #[serde(rename = "_id")]
    id: i64,
    placed: DateTime,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(collection = "ap_sales", shared(id: i64))]
enum Sale {
    Retail(Retail),
    Wholesale {
        #[serde(rename = "_id")]
        id: i64,
        placed: DateTime,
    },
}

/// Old retail and wholesale sales in one collection: the retail variant's archive moves the
/// old retail sales only; each is read back as a retail sale; a wholesale `_id` is not found
/// through the retail variant's archive.
async fn a_variant_archives_its_own_documents(store: &AnyStore, archived_in: &AnyStore) {
    {
        for id in 0..6 {
            let sale = match id % 2 {
                0 => Sale::Retail(Retail {
                    id,
                    placed: day(id),
                }),
                _ => Sale::Wholesale {
                    id,
                    placed: day(id),
                },
            };
            sale.insert(store).await.unwrap();
        }
        let to = at(archived_in, "ap_sales_archive");
        let done = archive::<Retail, _, _>(store, to, day(5), &Options::default())
            .await
            .unwrap();
        assert_eq!(done.moved, 3);
        assert_eq!(ids_in(archived_in, "ap_sales_archive").await, [0, 2, 4]);
        assert_eq!(ids_in(store, "ap_sales").await, [1, 3, 5]);
        let got = get_with_archive::<Retail, _, _, _>(store, to, &2)
            .await
            .unwrap();
        assert_eq!(
            got,
            Some(Retail {
                id: 2,
                placed: day(2)
            })
        );
        // A wholesale sale archived by another tool is not a retail sale.
        let stray = bson::doc! {"_id": 7_i64, "kind": "wholesale", "placed": day(7)};
        archived_in
            .insert_one("ap_sales_archive", stray)
            .await
            .unwrap();
        let got = get_with_archive::<Retail, _, _, _>(store, to, &7)
            .await
            .unwrap();
        assert_eq!(got, None);
    }
}

here_and_elsewhere!(
    a_computed_child_with_history_leaves_its_parent => computed_history_here, computed_history_elsewhere;
    a_subset_child_leaves_its_parent => subset_here, subset_elsewhere;
    a_source_moves_once_nothing_copies_it => source_here, source_elsewhere;
    a_variant_archives_its_own_documents => variant_here, variant_elsewhere;
);
