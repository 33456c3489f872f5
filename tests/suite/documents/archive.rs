//! The archive pattern for documents (`#[document(archive(age = ..., pin = ...))]`, issue 31
//! point 5) on both stores: the old documents not flagged to keep move to the archive
//! collection exactly once, a dry run counts the same and writes nothing, a second run moves
//! nothing, `get_with_archive` finds every document, `verify_archive` finds none in both; and
//! beside 8 concurrent updaters no update is lost (each applied update is in the one copy).
//! All of it with the archive on the same store (a transaction per move) and on another (a
//! copy, then a delete that declines when the document changed); on another store, a move
//! killed between its copy and its delete is reported and finished by the next run.

use pattern_core::adopt::{LayoutDefect, Options};
use pattern_core::document::{archive, get_with_archive, verify_archive, ArchiveAt};
use pattern_core::store;
use pattern_core::MemoryStore;
use pattern_tests::{checkpoint, checkpoint_refuses_moved_past, dying};

use super::*;

/// An order, archived once placed before the cut-off unless pinned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "orders", archive(age = placed, pin = pinned))]
struct Order {
    #[serde(rename = "_id")]
    id: i64,
    placed: DateTime,
    pinned: bool,
    total: i64,
}

/// A type that declares no archive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "notes")]
struct Note {
    #[serde(rename = "_id")]
    id: i64,
}

const T0: i64 = 1_700_000_000_000;
const DAY: i64 = 86_400_000;

fn order(id: i64) -> Order {
    Order {
        id,
        placed: DateTime::from_millis(T0 + id * DAY),
        pinned: id % 10 == 3,
        total: 0,
    }
}

async fn ids_in(store: &AnyStore, coll: &str) -> Vec<i64> {
    let mut ids: Vec<i64> = (documents(store, coll).await.iter())
        .map(|d| d.get_i64("_id").unwrap())
        .collect();
    ids.sort();
    ids
}

/// The archive of `orders` in collection `orders_archive` of `store`.
fn at(store: &AnyStore) -> ArchiveAt<'_, AnyStore> {
    ArchiveAt {
        store,
        collection: "orders_archive",
    }
}

/// Another store for the archive than the live one.
fn another() -> AnyStore {
    AnyStore::Memory(MemoryStore::new())
}

async fn old_orders_move_once(store: AnyStore) {
    moves_once(&store, &store).await;
}

async fn old_orders_move_once_to_another_store(store: AnyStore) {
    moves_once(&store, &another()).await;
}

async fn moves_once(store: &AnyStore, archived_in: &AnyStore) {
    let to = at(archived_in);
    for id in 0..100 {
        order(id).insert(store).await.unwrap();
    }
    let before = DateTime::from_millis(T0 + 50 * DAY);
    let dry = Options {
        dry_run: true,
        ..Options::default()
    };
    let counted = archive::<Order, _, _>(store, to, before, &dry)
        .await
        .unwrap();
    // 50 older than the cut-off, of which 5 pinned (3, 13, 23, 33, 43).
    assert_eq!(counted.moved, 45);
    assert!(documents(archived_in, "orders_archive").await.is_empty());
    let done = archive::<Order, _, _>(store, to, before, &Options::default())
        .await
        .unwrap();
    assert_eq!(done.moved, 45);
    let archived = ids_in(archived_in, "orders_archive").await;
    let want: Vec<i64> = (0..50).filter(|i| i % 10 != 3).collect();
    assert_eq!(archived, want);
    let live = ids_in(store, "orders").await;
    let want: Vec<i64> = (0..100).filter(|i| *i >= 50 || i % 10 == 3).collect();
    assert_eq!(live, want);
    for id in 0..100 {
        let got = get_with_archive::<Order, _, _, _>(store, to, &id)
            .await
            .unwrap();
        assert_eq!(got, Some(order(id)), "order {id}");
    }
    let defects = verify_archive::<Order, _, _>(store, to).await.unwrap();
    assert_eq!(defects, []);
    let again = archive::<Order, _, _>(store, to, before, &Options::default())
        .await
        .unwrap();
    assert_eq!(again.moved, 0);
    // A document in both (written there by another tool) is reported.
    order(60).insert(store).await.ok();
    let stray = bson::to_document(&order(60)).unwrap();
    archived_in
        .insert_one("orders_archive", stray)
        .await
        .unwrap();
    let defects = verify_archive::<Order, _, _>(store, to).await.unwrap();
    assert!(
        matches!(&defects[..], [LayoutDefect::InBoth { id, .. }] if id == &Bson::Int64(60)),
        "{defects:?}"
    );
    // A type without an archive, or an archive that is the live collection, is refused.
    let e = archive::<Note, _, _>(store, to, before, &Options::default()).await;
    assert!(
        matches!(e, Err(Error::Store(store::Error::InvalidInput(_)))),
        "{e:?}"
    );
    let itself = ArchiveAt {
        store,
        collection: "orders",
    };
    let e = archive::<Order, _, _>(store, itself, before, &Options::default()).await;
    assert!(
        matches!(e, Err(Error::Store(store::Error::InvalidInput(_)))),
        "{e:?}"
    );
}

/// On another store, a move killed between its copy and its delete leaves the document in
/// both: reported, read from the live side, and moved by the next run (the copy replaced with
/// the document as it is now, the live one deleted). A copy left of a document that is no
/// longer old is not touched by a run (it is not a candidate) and stays reported.
async fn a_move_killed_after_its_copy_is_finished(store: AnyStore) {
    let archived_in = another();
    let to = at(&archived_in);
    for id in 0..10 {
        order(id).insert(&store).await.unwrap();
    }
    // The copy of a move of order 4, killed before its delete; then order 4 changes.
    let copy = bson::to_document(&order(4)).unwrap();
    archived_in
        .insert_one("orders_archive", copy)
        .await
        .unwrap();
    Order::update_one(&store, Order::ID.eq(4), Update::new().inc(Order::TOTAL, 5))
        .await
        .unwrap();
    let defects = verify_archive::<Order, _, _>(&store, to).await.unwrap();
    assert!(
        matches!(&defects[..], [LayoutDefect::InBoth { .. }]),
        "{defects:?}"
    );
    let live = get_with_archive::<Order, _, _, _>(&store, to, &4)
        .await
        .unwrap();
    assert_eq!(live.map(|o| o.total), Some(5));
    let before = DateTime::from_millis(T0 + 8 * DAY);
    let done = archive::<Order, _, _>(&store, to, before, &Options::default())
        .await
        .unwrap();
    assert_eq!(done.moved, 7); // 0..8 but the pinned 3
    assert_eq!(verify_archive::<Order, _, _>(&store, to).await.unwrap(), []);
    let moved = get_with_archive::<Order, _, _, _>(&store, to, &4)
        .await
        .unwrap();
    assert_eq!(
        moved.map(|o| o.total),
        Some(5),
        "the copy is the document as it was moved"
    );
    assert_eq!(
        ids_in(&archived_in, "orders_archive").await,
        [0, 1, 2, 4, 5, 6, 7]
    );
    assert_eq!(ids_in(&store, "orders").await, [3, 8, 9]);
}

async fn updates_beside_the_move_are_kept(store: AnyStore) {
    kept_beside_updates(&store, &store).await;
}

async fn updates_beside_a_move_to_another_store_are_kept(store: AnyStore) {
    kept_beside_updates(&store, &another()).await;
}

/// 8 updaters increment old orders while they move: every update that applied (matched a
/// document) is in the one place the order ends up.
async fn kept_beside_updates(store: &AnyStore, archived_in: &AnyStore) {
    let to = at(archived_in);
    for id in 0..60 {
        order(id).insert(store).await.unwrap();
    }
    let applied = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut updaters = Vec::new();
    for u in 0..8 {
        let (store, applied, stop) = (store.clone(), applied.clone(), stop.clone());
        updaters.push(tokio::spawn(async move {
            let mut i = u;
            while !stop.load(Ordering::Relaxed) {
                let id = (i * 7) % 60;
                i += 1;
                let hit =
                    Order::update_one(&store, Order::ID.eq(id), Update::new().inc(Order::TOTAL, 1))
                        .await;
                match hit {
                    Ok(true) => {
                        applied.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(false) => {}
                    // A write conflict with the move's transaction: not applied.
                    Err(
                        Error::Store(store::Error::WriteConflict { .. })
                        | Error::Store(store::Error::Contention { .. }),
                    ) => {}
                    Err(e) => panic!("{e}"),
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    let before = DateTime::from_millis(T0 + 1_000 * DAY);
    // 54 to move (6 pinned): as many runs as the conflicts with the updaters take.
    let mut moved = 0;
    for _ in 0..1_000 {
        if moved == 54 {
            break;
        }
        moved += archive::<Order, _, _>(store, to, before, &Options::default())
            .await
            .unwrap()
            .moved;
    }
    assert_eq!(moved, 54);
    stop.store(true, Ordering::Relaxed);
    for u in updaters {
        u.await.unwrap();
    }
    let mut total = 0;
    for (s, coll) in [(store, "orders"), (archived_in, "orders_archive")] {
        for d in documents(s, coll).await {
            total += d.get_i64("total").unwrap();
        }
    }
    assert_eq!(
        total,
        applied.load(Ordering::Relaxed),
        "every applied update, once"
    );
    let pinned_live = ids_in(store, "orders").await;
    assert_eq!(pinned_live, [3, 13, 23, 33, 43, 53]);
    assert_eq!(verify_archive::<Order, _, _>(store, to).await.unwrap(), []);
}

async fn a_killed_run_resumes_from_its_checkpoint(store: AnyStore) {
    resumes(&store, &store).await;
}

async fn a_killed_run_to_another_store_resumes(store: AnyStore) {
    resumes(&store, &another()).await;
}

/// The checkpoint of the archive of `orders` into `orders_archive`, on the live store.
const CHECKPOINT: &str = "archive:orders:orders_archive";

/// A run killed after two batches of 10 leaves its checkpoint part-way: another cut-off is
/// refused (a dry run too), nothing written; the next run resumes after the position, reads
/// fewer documents than a fresh run, and the totals add up to the fresh run's, each document
/// in one place; the checkpoint says finished with the total. A fresh dry run writes no
/// checkpoint; after the finish, a run with another cut-off starts a new pass from the start.
async fn resumes(store: &AnyStore, archived_in: &AnyStore) {
    let to = at(archived_in);
    for id in 0..100 {
        order(id).insert(store).await.unwrap();
    }
    let before = DateTime::from_millis(T0 + 50 * DAY);
    let small = Options {
        batch_items: 10,
        ..Options::default()
    };
    let dry = Options {
        dry_run: true,
        ..small
    };
    let fresh = archive::<Order, _, _>(store, to, before, &dry)
        .await
        .unwrap();
    assert_eq!((fresh.read, fresh.moved, fresh.total_moved), (45, 45, 45));
    assert_eq!(checkpoint(store, CHECKPOINT).await, None, "a dry run");
    let (s, a) = (store.clone(), archived_in.clone());
    let died = tokio::spawn(async move {
        archive::<Order, _, _>(&s, at(&a), before, &dying("archive", 20, 10)).await
    })
    .await;
    assert!(died.is_err(), "the run dies");
    // Its moves' transactions recorded their server sessions (MongoDB's; the in-memory
    // store has none), for the next run to end.
    let on_mongo = matches!(store, AnyStore::Mongo(_));
    let sessions = checkpoint(store, &format!("{CHECKPOINT}:sessions")).await;
    let recorded = sessions.map_or(0, |s| s.get_array("ids").map_or(0, Vec::len));
    assert_eq!(recorded > 0, on_mongo, "{recorded} sessions recorded");
    let part = checkpoint(store, CHECKPOINT).await.unwrap();
    assert_eq!(part.get_str("state"), Ok("running"), "{part:?}");
    assert_eq!(part.get_i64("moved"), Ok(20), "{part:?}");
    // The 20th old order not pinned is 21.
    assert_eq!(part.get("position"), Some(&Bson::Int64(21)), "{part:?}");
    assert_eq!(ids_in(archived_in, "orders_archive").await.len(), 20);
    let same = std::ptr::eq(archived_in, store);
    assert_eq!(
        checkpoint(archived_in, CHECKPOINT).await.is_some(),
        same,
        "on the live store"
    );
    for opts in [&small, &dry] {
        let e = archive::<Order, _, _>(store, to, DateTime::from_millis(T0), opts).await;
        assert!(
            matches!(
                e,
                Err(Error::SettingsChanged {
                    finished: false,
                    ..
                })
            ),
            "{e:?}"
        );
    }
    assert_eq!(checkpoint(store, CHECKPOINT).await, Some(part.clone()));
    assert_eq!(ids_in(archived_in, "orders_archive").await.len(), 20);
    let done = archive::<Order, _, _>(store, to, before, &small)
        .await
        .unwrap();
    assert_eq!(done.resumed_from, Some(Bson::Int64(21)));
    assert_eq!(
        done.ended_sessions, recorded as u64,
        "the killed run's sessions ended"
    );
    assert_eq!(
        (done.read, done.moved),
        (25, 25),
        "after the recorded batches"
    );
    assert_eq!(done.total_moved, fresh.moved);
    let want: Vec<i64> = (0..50).filter(|i| i % 10 != 3).collect();
    assert_eq!(ids_in(archived_in, "orders_archive").await, want);
    let live: Vec<i64> = (0..100).filter(|i| *i >= 50 || i % 10 == 3).collect();
    assert_eq!(ids_in(store, "orders").await, live);
    assert_eq!(verify_archive::<Order, _, _>(store, to).await.unwrap(), []);
    let end = checkpoint(store, CHECKPOINT).await.unwrap();
    assert_eq!(end.get_str("state"), Ok("finished"), "{end:?}");
    assert_eq!(end.get_i64("moved"), Ok(45));
    assert_eq!(end.get("position"), Some(&Bson::Null));
    // A new pass with a later cut-off: from the start; 50..60 but the pinned 53.
    let later = DateTime::from_millis(T0 + 60 * DAY);
    let again = archive::<Order, _, _>(store, to, later, &small)
        .await
        .unwrap();
    assert_eq!(again.resumed_from, None);
    assert_eq!((again.read, again.moved, again.total_moved), (9, 9, 9));
    let end = checkpoint(store, CHECKPOINT).await.unwrap();
    assert_eq!(
        (end.get_str("state"), end.get_i64("moved")),
        (Ok("finished"), Ok(9))
    );
}

async fn totals_count_the_batch_a_killed_run_died_in(store: AnyStore) {
    totals_after_a_kill(&store, &store).await;
}

async fn totals_to_another_store_count_the_batch_a_killed_run_died_in(store: AnyStore) {
    totals_after_a_kill(&store, &another()).await;
}

/// A run stopped after its second batch's moves, before that batch's checkpoint (10
/// recorded, 20 moved): the next run counts the 10 from the archive side, so its
/// `total_moved` is what moved in all (45), a dry run's as well; the checkpoint ends with 45.
async fn totals_after_a_kill(store: &AnyStore, archived_in: &AnyStore) {
    let to = at(archived_in);
    for id in 0..100 {
        order(id).insert(store).await.unwrap();
    }
    let before = DateTime::from_millis(T0 + 50 * DAY);
    let small = Options {
        batch_items: 10,
        ..Options::default()
    };
    checkpoint_refuses_moved_past(store, Some(10)).await;
    let stopped = archive::<Order, _, _>(store, to, before, &small).await;
    assert!(stopped.is_err(), "{stopped:?}");
    checkpoint_refuses_moved_past(store, None).await;
    assert_eq!(ids_in(archived_in, "orders_archive").await.len(), 20);
    let part = checkpoint(store, CHECKPOINT).await.unwrap();
    assert_eq!(part.get_i64("moved"), Ok(10), "{part:?}");
    // The 10th old order not pinned is 10.
    assert_eq!(part.get("position"), Some(&Bson::Int64(10)), "{part:?}");
    let dry = Options {
        dry_run: true,
        ..small
    };
    let counted = archive::<Order, _, _>(store, to, before, &dry)
        .await
        .unwrap();
    assert_eq!(
        (counted.moved, counted.total_moved),
        (25, 45),
        "{counted:?}"
    );
    assert_eq!(checkpoint(store, CHECKPOINT).await, Some(part), "a dry run");
    let done = archive::<Order, _, _>(store, to, before, &small)
        .await
        .unwrap();
    assert_eq!(done.resumed_from, Some(Bson::Int64(10)));
    assert_eq!((done.moved, done.total_moved), (25, 45), "{done:?}");
    assert_eq!(ids_in(archived_in, "orders_archive").await.len(), 45);
    assert_eq!(verify_archive::<Order, _, _>(store, to).await.unwrap(), []);
    let end = checkpoint(store, CHECKPOINT).await.unwrap();
    assert_eq!(
        (end.get_str("state"), end.get_i64("moved")),
        (Ok("finished"), Ok(45))
    );
}

/// A collection written by other tools, its `_id`s of seven types: every old one moves, type
/// bracket after type bracket (`{_id: {$gt: last}}` alone stays in the last one's bracket), in
/// batches smaller than a bracket, and a run resumed in the second bracket finishes the rest
/// (the resumed run's position is a string: it goes on in the strings, then the later brackets).
async fn every_id_type_is_archived(store: AnyStore) {
    let ids = [
        Bson::Int64(7),
        Bson::Int32(3),
        Bson::Double(5.5),
        Bson::String("a".into()),
        Bson::String("b".into()),
        Bson::String("c".into()),
        Bson::Document(doc! {"k": 1}),
        Bson::ObjectId(bson::oid::ObjectId::from_bytes([1; 12])),
        Bson::Boolean(true),
        Bson::DateTime(DateTime::from_millis(5)),
    ];
    for (i, id) in ids.iter().enumerate() {
        for (age, tag) in [(T0, "old"), (T0 + 100 * DAY, "new")] {
            let id = match (tag, id) {
                ("old", id) => id.clone(),
                (_, Bson::String(s)) => Bson::String(format!("{s}-new")),
                (_, Bson::Int64(n)) => Bson::Int64(n + 1_000),
                _ => continue,
            };
            let d = doc! {"_id": id, "placed": DateTime::from_millis(age), "n": i as i64};
            store.insert_one("mixed", d).await.unwrap();
        }
    }
    let to = ArchiveAt {
        store: &store,
        collection: "mixed_archive",
    };
    let cutoff = DateTime::from_millis(T0 + DAY);
    let fields: (&str, Option<&str>) = ("placed", None);
    let small = Options {
        batch_items: 2,
        ..Options::default()
    };
    let dry = Options {
        dry_run: true,
        ..Options {
            batch_items: 2,
            ..Options::default()
        }
    };
    let counted = pattern_core::document::archive_layout(&store, "mixed", fields, to, cutoff, &dry)
        .await
        .unwrap();
    assert_eq!((counted.read, counted.moved), (10, 10));
    // A run killed after its third batch (the numbers take two, the strings' first is the
    // third), then the run that resumes it in the strings' bracket.
    let s = store.clone();
    let died = tokio::spawn(async move {
        let to = ArchiveAt {
            store: &s,
            collection: "mixed_archive",
        };
        let dying = dying("archive", 4, 2);
        pattern_core::document::archive_layout(&s, "mixed", fields, to, cutoff, &dying).await
    })
    .await;
    assert!(died.is_err(), "the first run dies");
    let rest = pattern_core::document::archive_layout(&store, "mixed", fields, to, cutoff, &small)
        .await
        .unwrap();
    assert!(rest.resumed_from.is_some(), "{rest:?}");
    assert_eq!(rest.total_moved, 10, "{rest:?}");
    let live = documents(&store, "mixed").await;
    assert_eq!(live.len(), 4, "only the four new ones stay: {live:?}");
    assert!(live
        .iter()
        .all(|d| d.get_datetime("placed").unwrap().timestamp_millis() > T0));
    let mut archived: Vec<i64> = (documents(&store, "mixed_archive").await.iter())
        .map(|d| d.get_i64("n").unwrap())
        .collect();
    archived.sort();
    assert_eq!(archived, (0..10).collect::<Vec<i64>>());
}

/// An `_id` archived, then written live again and archived again: the second move replaces
/// the older copy, on the same store as to another (it used to fail with a duplicate key on
/// the same store).
async fn an_id_archived_twice_keeps_the_newer(store: AnyStore) {
    for archived_in in [&store, &another()] {
        let to = at(archived_in);
        let cut = DateTime::from_millis(T0 + 50 * DAY);
        order(1).insert(&store).await.unwrap();
        archive::<Order, _, _>(&store, to, cut, &Options::default())
            .await
            .unwrap();
        let again = Order {
            total: 7,
            ..order(1)
        };
        again.insert(&store).await.unwrap();
        archive::<Order, _, _>(&store, to, cut, &Options::default())
            .await
            .unwrap();
        assert_eq!(ids_in(&store, "orders").await, Vec::<i64>::new());
        let kept = get_with_archive::<Order, _, _, _>(&store, to, &1_i64)
            .await
            .unwrap();
        assert_eq!(kept, Some(again));
        let one = pattern_core::store::query::Filter::eq("_id", 1_i64);
        archived_in
            .delete_many("orders_archive", &one)
            .await
            .unwrap();
        let all = pattern_core::store::query::Filter::And(vec![]);
        store.delete_many("pattern_migrations", &all).await.unwrap();
    }
}

on_both_stores!(
    an_id_archived_twice_keeps_the_newer,
    totals_count_the_batch_a_killed_run_died_in,
    totals_to_another_store_count_the_batch_a_killed_run_died_in,
    every_id_type_is_archived,
    a_killed_run_resumes_from_its_checkpoint,
    a_killed_run_to_another_store_resumes,
    old_orders_move_once,
    old_orders_move_once_to_another_store,
    a_move_killed_after_its_copy_is_finished,
    updates_beside_the_move_are_kept,
    updates_beside_a_move_to_another_store_are_kept,
);
