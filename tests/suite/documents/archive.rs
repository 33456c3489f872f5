//! The archive pattern for documents (`#[document(archive(age = ..., keep = ...))]`, issue 31
//! point 5) on both stores: the old documents not flagged to keep move to the archive
//! collection exactly once, a dry run counts the same and writes nothing, a second run moves
//! nothing, `get_with_archive` finds every document, `verify_archive` finds none in both; and
//! beside 8 concurrent updaters no update is lost (each applied update is in the one copy).

use pattern_core::adopt::{LayoutDefect, Options};
use pattern_core::document::{archive, get_with_archive, verify_archive};

use super::*;

/// An order, archived once placed before the cut-off unless pinned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "orders", archive(age = placed, keep = pinned))]
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

async fn old_orders_move_once(store: AnyStore) {
    for id in 0..100 {
        order(id).insert(&store).await.unwrap();
    }
    let before = DateTime::from_millis(T0 + 50 * DAY);
    let dry = Options {
        dry_run: true,
        ..Options::default()
    };
    let counted = archive::<Order, _>(&store, "orders_archive", before, &dry)
        .await
        .unwrap();
    // 50 older than the cut-off, of which 5 pinned (3, 13, 23, 33, 43).
    assert_eq!(counted.moved, 45);
    assert!(documents(&store, "orders_archive").await.is_empty());
    let done = archive::<Order, _>(&store, "orders_archive", before, &Options::default())
        .await
        .unwrap();
    assert_eq!(done.moved, 45);
    let archived = ids_in(&store, "orders_archive").await;
    let want: Vec<i64> = (0..50).filter(|i| i % 10 != 3).collect();
    assert_eq!(archived, want);
    let live = ids_in(&store, "orders").await;
    let want: Vec<i64> = (0..100).filter(|i| *i >= 50 || i % 10 == 3).collect();
    assert_eq!(live, want);
    for id in 0..100 {
        let got = get_with_archive::<Order, _, _>(&store, "orders_archive", &id)
            .await
            .unwrap();
        assert_eq!(got, Some(order(id)), "order {id}");
    }
    assert_eq!(
        verify_archive::<Order, _>(&store, "orders_archive")
            .await
            .unwrap(),
        []
    );
    let again = archive::<Order, _>(&store, "orders_archive", before, &Options::default())
        .await
        .unwrap();
    assert_eq!(again.moved, 0);
    // A document in both (written there by another tool) is reported.
    order(60).insert(&store).await.ok();
    let stray = bson::to_document(&order(60)).unwrap();
    store.insert_one("orders_archive", stray).await.unwrap();
    let defects = verify_archive::<Order, _>(&store, "orders_archive")
        .await
        .unwrap();
    assert!(
        matches!(&defects[..], [LayoutDefect::InBoth { id, .. }] if id == &Bson::Int64(60)),
        "{defects:?}"
    );
    // A type without an archive is refused.
    let e = archive::<Note, _>(&store, "x", before, &Options::default()).await;
    assert!(matches!(e, Err(Error::InvalidInput(_))), "{e:?}");
}

/// 8 updaters increment old orders while they move: every update that applied (matched a
/// document) is in the one place the order ends up.
async fn updates_beside_the_move_are_kept(store: AnyStore) {
    for id in 0..60 {
        order(id).insert(&store).await.unwrap();
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
                    Err(Error::WriteConflict { .. } | Error::Contention { .. }) => {}
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
        moved += archive::<Order, _>(&store, "orders_archive", before, &Options::default())
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
    for coll in ["orders", "orders_archive"] {
        for d in documents(&store, coll).await {
            total += d.get_i64("total").unwrap();
        }
    }
    assert_eq!(
        total,
        applied.load(Ordering::Relaxed),
        "every applied update, once"
    );
    let pinned_live = ids_in(&store, "orders").await;
    assert_eq!(pinned_live, [3, 13, 23, 33, 43, 53]);
    assert_eq!(
        verify_archive::<Order, _>(&store, "orders_archive")
            .await
            .unwrap(),
        []
    );
}

on_both_stores!(old_orders_move_once, updates_beside_the_move_are_kept);
