//! The archive pattern for buckets (issue 31, point 5), on both stores: `archive` moves the
//! buckets wholly before a cut-off (never a key's newest) into another collection exactly
//! once, its dry run counts the same and writes nothing, a second run moves nothing; reads of
//! the history across both (`History::range`, `items`, `summary`) agree with the items, live
//! reads see the live ones; beside concurrent pushes nothing is lost or doubled; a move killed
//! between its copy and its delete is reported by `verify_archive` and completed by the next
//! run.

use super::*;

use pattern_core::adopt::{LayoutDefect, Options};
use pattern_core::bucket::{ArchiveAt, History};
use pattern_tests::{checkpoint, checkpoint_refuses_moved_past, dying};

/// [`Trades`] in its own collection, with roll-ups.
struct Live;
impl Bucket for Live {
    type Key = i64;
    type Item = Trade;
    type Summary = Totals;
    const SPEC: BucketSpec<'static> = BucketSpec {
        collection: "live_trades",
        keeps: Keeps {
            rollup: Some("live_trades.rollups"),
            ..Trades::SPEC.keeps
        },
        ..Trades::SPEC
    };
    fn item_millis(t: &Trade) -> Option<i64> {
        Some(t.date.timestamp_millis())
    }
}

const OLD: &str = "old_trades";

/// 60 trades for each of keys 0..3 (one in five out of time order), pushed one at a time.
async fn history_of_three(store: &AnyStore, rng: &mut Lcg) -> BTreeMap<i64, Vec<Trade>> {
    let mut all: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    for i in 0..180 {
        let key = i % 3;
        let t = trade(rng, i / 3);
        bucket::push::<Live, _, _>(store, &key, &t).await.unwrap();
        all.entry(key).or_default().push(t);
    }
    all
}

/// The trades' numbers (distinct within a key), in order.
fn ids(items: &[Trade]) -> Vec<i64> {
    items.iter().map(|t| t.id).collect()
}

async fn live_items(store: &AnyStore, key: i64) -> Vec<Trade> {
    bucket::items::<Live, _, _>(store, &key)
        .try_collect()
        .await
        .unwrap()
}

/// Dry run, then the moves; what stays live and what moved; reads across both and of the
/// live side alone; a second run moves nothing; `verify_archive` is clean.
async fn archive_moves_old_buckets_once(store: AnyStore) {
    let mut rng = Lcg(21);
    history_of_three(&store, &mut rng).await;
    let mut pushed: BTreeMap<i64, Vec<Trade>> = BTreeMap::new();
    for key in 0..3 {
        pushed.insert(key, live_items(&store, key).await);
    }
    let cutoff = date(T0 + 40 * DAY / 4);
    let to = ArchiveAt {
        store: &store,
        collection: OLD,
    };
    let dry = Options {
        dry_run: true,
        ..Options::default()
    };
    let counted = bucket::archive::<Live, _, _>(&store, to, cutoff, &dry)
        .await
        .unwrap();
    assert!(counted.moved > 0, "{counted:?}");
    assert!(
        documents(&store, OLD).await.is_empty(),
        "a dry run writes nothing"
    );
    let done = bucket::archive::<Live, _, _>(&store, to, cutoff, &Options::default())
        .await
        .unwrap();
    assert_eq!((done.moved, done.items), (counted.moved, counted.items));
    let archived = documents(&store, OLD).await;
    assert_eq!(archived.len() as u64, done.moved);
    let mut newest: HashMap<i64, i64> = HashMap::new();
    for d in documents(&store, "live_trades").await {
        if let Ok(page) = d.get_i64("page") {
            let k = d.get_i64("customerId").unwrap();
            let e = newest.entry(k).or_default();
            *e = (*e).max(page);
        }
    }
    for d in &archived {
        assert!(d.get_datetime("date_max").unwrap() < &cutoff, "{d:?}");
        let k = d.get_i64("customerId").unwrap();
        assert!(
            d.get_i64("page").unwrap() < newest[&k],
            "a key's newest bucket stays live"
        );
    }
    for d in documents(&store, "live_trades").await {
        if let (Ok(max), Ok(page)) = (d.get_datetime("date_max"), d.get_i64("page")) {
            let k = d.get_i64("customerId").unwrap();
            assert!(
                max >= &cutoff || page == newest[&k],
                "{d:?} should have moved"
            );
        }
    }
    let history = History::new(&store, to);
    for (key, items) in &pushed {
        let all = history.items::<Live, _>(key).await.unwrap();
        assert_eq!(
            ids(&all),
            ids(items),
            "key {key}: every item once, in push order"
        );
        // Ranges across both, against the items.
        for (from, to_ms) in [
            (T0 - DAY, T0 + 5 * DAY),
            (T0 + 8 * DAY, T0 + 12 * DAY),
            (T0, T0 + 30 * DAY),
        ] {
            let got: Vec<Trade> = history
                .range::<Live, _>(key, date(from)..date(to_ms))
                .try_collect()
                .await
                .unwrap();
            let mut want: Vec<i64> = ids(&items
                .iter()
                .filter(|t| (from..to_ms).contains(&t.date.timestamp_millis()))
                .cloned()
                .collect::<Vec<_>>());
            let mut got = ids(&got);
            want.sort();
            got.sort();
            assert_eq!(got, want, "key {key}, {from}..{to_ms}");
            let s = history
                .summary::<Live, _>(key, date(from)..date(to_ms))
                .await
                .unwrap();
            let inside: Vec<&Trade> = items
                .iter()
                .filter(|t| (from..to_ms).contains(&t.date.timestamp_millis()))
                .collect();
            assert_eq!(
                observed(&s),
                expected(&inside),
                "key {key}, {from}..{to_ms}"
            );
        }
        // The whole history (the roll-up), and the live side alone (its buckets).
        let s = history.summary::<Live, _>(key, ..).await.unwrap();
        assert_eq!(observed(&s), expected(&items.iter().collect::<Vec<_>>()));
        let live = live_items(&store, *key).await;
        let s = bucket::summary::<Live, _, _>(&store, key, ..)
            .await
            .unwrap();
        assert_eq!(observed(&s), expected(&live.iter().collect::<Vec<_>>()));
        assert!(live.len() < items.len(), "key {key}: some moved");
    }
    assert_eq!(
        bucket::verify_archive::<Live, _, _>(&store, to)
            .await
            .unwrap(),
        []
    );
    let v = bucket::verify::<Live, _>(&store).await.unwrap();
    assert!(
        v.is_clean(),
        "the live side is clean, its gaps archived: {v:?}"
    );
    let again = bucket::archive::<Live, _, _>(&store, to, cutoff, &Options::default())
        .await
        .unwrap();
    assert_eq!(again.moved, 0);
    // A bucket in neither place (deleted from the archive): its number is missing, and the
    // roll-up counts more than both sides hold.
    let lost = archived
        .iter()
        .find(|d| d.get_i64("customerId") == Ok(2) && d.get_i64("page") == Ok(2))
        .unwrap();
    use pattern_core::store::query::Filter;
    let by_id = Filter::and([
        Filter::Eq("customerId".into(), bson::Bson::Int64(2)),
        Filter::Eq("_id".into(), lost.get("_id").unwrap().clone()),
    ]);
    assert_eq!(store.delete_many(OLD, &by_id).await.unwrap(), 1);
    let rollups: Vec<Document> = documents(&store, "live_trades.rollups").await;
    assert_eq!(rollups.len(), 3, "{rollups:?}");
    let defects = bucket::verify_archive::<Live, _, _>(&store, to)
        .await
        .unwrap();
    assert!(
        defects.iter().any(|d| matches!(
            d,
            LayoutDefect::NotDense {
                expected: 2,
                found: 3,
                ..
            }
        )),
        "{defects:?}"
    );
    assert!(
        defects
            .iter()
            .any(|d| matches!(d, LayoutDefect::RollupDrift { rollup: 60, .. })),
        "{defects:?} {rollups:?}"
    );
}

/// Pushes to every key while everything but each key's newest bucket moves: every item is
/// in exactly one place afterwards, in order.
async fn archive_beside_pushes(store: AnyStore) {
    let mut rng = Lcg(22);
    history_of_three(&store, &mut rng).await;
    let to = ArchiveAt {
        store: &store,
        collection: OLD,
    };
    let later: Vec<Trade> = (0..60).map(|i| trade(&mut rng, 1_000 + i)).collect();
    let pushes = async {
        for (i, t) in later.iter().enumerate() {
            let key = (i % 3) as i64;
            bucket::push::<Live, _, _>(&store, &key, t).await.unwrap();
        }
    };
    let moves = async {
        let far = date(T0 + 10_000 * DAY);
        let mut moved = 0;
        for _ in 0..3 {
            moved += bucket::archive::<Live, _, _>(&store, to, far, &Options::default())
                .await
                .unwrap()
                .moved;
        }
        moved
    };
    let ((), moved) = tokio::join!(pushes, moves);
    assert!(moved > 0);
    let history = History::new(&store, to);
    let mut total = 0;
    for key in 0..3 {
        let all = history.items::<Live, _>(&key).await.unwrap();
        total += all.len();
        let mut seen = HashSet::new();
        for t in &all {
            assert!(seen.insert(t.id), "key {key}: {t:?} twice");
        }
    }
    assert_eq!(total, 180 + 60);
    assert_eq!(
        bucket::verify_archive::<Live, _, _>(&store, to)
            .await
            .unwrap(),
        []
    );
}

/// A run killed between a copy and its delete leaves the bucket in both: reported, read
/// once, and completed by the next run.
async fn a_killed_move_is_completed(store: AnyStore) {
    let mut rng = Lcg(23);
    history_of_three(&store, &mut rng).await;
    let before: Vec<Trade> = live_items(&store, 1).await;
    let first = documents(&store, "live_trades")
        .await
        .into_iter()
        .find(|d| d.get_i64("customerId") == Ok(1) && d.get_i64("page") == Ok(1))
        .unwrap();
    // The copy of a move, without its delete.
    store.insert_one(OLD, first.clone()).await.unwrap();
    let to = ArchiveAt {
        store: &store,
        collection: OLD,
    };
    let defects = bucket::verify_archive::<Live, _, _>(&store, to)
        .await
        .unwrap();
    assert!(
        matches!(&defects[..], [LayoutDefect::InBoth { id, .. }] if id == first.get("_id").unwrap()),
        "{defects:?}"
    );
    let history = History::new(&store, to);
    let all = history.items::<Live, _>(&1).await.unwrap();
    assert_eq!(ids(&all), ids(&before), "the bucket in both is read once");
    let cutoff = date(T0 + 10_000 * DAY);
    bucket::archive::<Live, _, _>(&store, to, cutoff, &Options::default())
        .await
        .unwrap();
    assert_eq!(
        bucket::verify_archive::<Live, _, _>(&store, to)
            .await
            .unwrap(),
        []
    );
    let all = history.items::<Live, _>(&1).await.unwrap();
    assert_eq!(ids(&all), ids(&before));
}

/// The checkpoint of the archive of `live_trades` into `old_trades`.
const CHECKPOINT: &str = "archive:live_trades:old_trades";

/// A run killed after two batches of 5 leaves its checkpoint part-way: another cut-off is
/// refused (a dry run too), nothing written; a dry run of the resume writes nothing; the next
/// run resumes after the position, reads fewer buckets than a fresh run, and the totals add
/// up to the fresh run's, every item once; the checkpoint says finished with the totals. A
/// fresh dry run writes no checkpoint, and after the finish a run with another cut-off starts
/// a new pass from the start.
async fn archive_resumes_from_its_checkpoint(store: AnyStore) {
    let mut rng = Lcg(25);
    let all = history_of_three(&store, &mut rng).await;
    let to = ArchiveAt {
        store: &store,
        collection: OLD,
    };
    let cutoff = date(T0 + 10_000 * DAY);
    let small = Options {
        batch_items: 5,
        ..Options::default()
    };
    let dry = Options {
        dry_run: true,
        ..small
    };
    let fresh = bucket::archive::<Live, _, _>(&store, to, cutoff, &dry)
        .await
        .unwrap();
    // 3 keys of 12 buckets of 5, each key's newest kept.
    assert_eq!((fresh.read, fresh.moved, fresh.items), (36, 33, 165));
    assert_eq!((fresh.total_moved, fresh.resumed_from), (33, None));
    assert_eq!(checkpoint(&store, CHECKPOINT).await, None, "a dry run");
    let s = store.clone();
    let died = tokio::spawn(async move {
        let to = ArchiveAt {
            store: &s,
            collection: OLD,
        };
        bucket::archive::<Live, _, _>(&s, to, cutoff, &dying("archive", 10, 5)).await
    })
    .await;
    assert!(died.is_err(), "the run dies");
    let part = checkpoint(&store, CHECKPOINT).await.unwrap();
    assert_eq!(part.get_str("state"), Ok("running"), "{part:?}");
    let position = part.get("position").unwrap().clone();
    let archived = documents(&store, OLD).await;
    let moved = part.get_i64("moved").unwrap();
    assert_eq!(moved, archived.len() as i64, "{part:?}");
    assert!((8..=10).contains(&moved), "two batches of 5: {part:?}");
    let items: i64 = (archived.iter())
        .map(|d| as_int(d.get("count").unwrap()).unwrap())
        .sum();
    assert_eq!(part.get_i64("items"), Ok(items));
    // Another cut-off is refused while the pass is part-way, a dry run's too.
    for opts in [&small, &dry] {
        let e = bucket::archive::<Live, _, _>(&store, to, date(T0 + 5 * DAY), opts).await;
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
    let rest = bucket::archive::<Live, _, _>(&store, to, cutoff, &dry)
        .await
        .unwrap();
    assert_eq!(rest.resumed_from.as_ref(), Some(&position));
    assert_eq!(rest.total_moved, 33, "{rest:?}");
    assert_eq!(checkpoint(&store, CHECKPOINT).await, Some(part.clone()));
    assert_eq!(documents(&store, OLD).await.len() as i64, moved);
    // The resume.
    let done = bucket::archive::<Live, _, _>(&store, to, cutoff, &small)
        .await
        .unwrap();
    assert_eq!(done.resumed_from, Some(position));
    assert_eq!(done.read, 36 - 10, "after the two recorded batches");
    assert_eq!(moved as u64 + done.moved, fresh.moved);
    assert_eq!((done.total_moved, done.total_items), (33, 165));
    assert_eq!(documents(&store, OLD).await.len(), 33);
    let history = History::new(&store, to);
    for (key, items) in &all {
        let got = history.items::<Live, _>(key).await.unwrap();
        assert_eq!(ids(&got), ids(items), "key {key}: every item once");
    }
    assert_eq!(
        bucket::verify_archive::<Live, _, _>(&store, to)
            .await
            .unwrap(),
        []
    );
    let end = checkpoint(&store, CHECKPOINT).await.unwrap();
    assert_eq!(end.get_str("state"), Ok("finished"), "{end:?}");
    assert_eq!(
        (end.get_i64("moved"), end.get_i64("items")),
        (Ok(33), Ok(165))
    );
    assert_eq!(end.get("position"), Some(&bson::Bson::Null));
    // A new pass, with another cut-off: from the start (the newest buckets only are left).
    let later = date(T0 + 20_000 * DAY);
    let again = bucket::archive::<Live, _, _>(&store, to, later, &small)
        .await
        .unwrap();
    assert_eq!(again.resumed_from, None);
    assert_eq!((again.read, again.moved, again.newest_kept), (3, 0, 3));
    assert_eq!(again.total_moved, 0);
    let end = checkpoint(&store, CHECKPOINT).await.unwrap();
    assert_eq!(end.get_str("state"), Ok("finished"));
    assert_eq!(
        end.get_document("spec").unwrap().get("before"),
        Some(&bson::Bson::DateTime(later))
    );
}

/// A run stopped after its second batch's moves, before that batch's checkpoint (about 5
/// buckets recorded, 10 moved): the next run counts the rest and their items from the archive side, so
/// its totals are what moved in all (33 buckets, 165 items), a dry run's as well; the
/// checkpoint ends with them.
async fn archive_totals_count_the_batch_a_killed_run_died_in(store: AnyStore) {
    let mut rng = Lcg(26);
    let all = history_of_three(&store, &mut rng).await;
    let to = ArchiveAt {
        store: &store,
        collection: OLD,
    };
    let cutoff = date(T0 + 10_000 * DAY);
    let small = Options {
        batch_items: 5,
        ..Options::default()
    };
    checkpoint_refuses_moved_past(&store, Some(5)).await;
    let stopped = bucket::archive::<Live, _, _>(&store, to, cutoff, &small).await;
    assert!(stopped.is_err(), "{stopped:?}");
    checkpoint_refuses_moved_past(&store, None).await;
    let part = checkpoint(&store, CHECKPOINT).await.unwrap();
    let recorded = part.get_i64("moved").unwrap() as u64;
    let archived = documents(&store, OLD).await.len() as u64;
    // Two batches of 5 read (a key's newest among them stays).
    assert!(
        recorded <= 5 && archived > recorded,
        "{archived} moved: {part:?}"
    );
    let dry = Options {
        dry_run: true,
        ..small
    };
    let counted = bucket::archive::<Live, _, _>(&store, to, cutoff, &dry)
        .await
        .unwrap();
    assert_eq!(
        (counted.moved, counted.total_moved, counted.total_items),
        (33 - archived, 33, 165),
        "{counted:?}"
    );
    assert_eq!(
        checkpoint(&store, CHECKPOINT).await,
        Some(part),
        "a dry run"
    );
    let done = bucket::archive::<Live, _, _>(&store, to, cutoff, &small)
        .await
        .unwrap();
    assert_eq!(done.moved, 33 - archived, "{done:?}");
    assert_eq!((done.total_moved, done.total_items), (33, 165), "{done:?}");
    assert_eq!(documents(&store, OLD).await.len(), 33);
    let history = History::new(&store, to);
    for (key, items) in &all {
        let got = history.items::<Live, _>(key).await.unwrap();
        assert_eq!(ids(&got), ids(items), "key {key}: every item once");
    }
    assert_eq!(
        bucket::verify_archive::<Live, _, _>(&store, to)
            .await
            .unwrap(),
        []
    );
    let end = checkpoint(&store, CHECKPOINT).await.unwrap();
    assert_eq!(
        (
            end.get_str("state"),
            end.get_i64("moved"),
            end.get_i64("items")
        ),
        (Ok("finished"), Ok(33), Ok(165))
    );
}

on_both_stores!(
    archive_totals_count_the_batch_a_killed_run_died_in,
    archive_moves_old_buckets_once,
    archive_beside_pushes,
    a_killed_move_is_completed,
    archive_resumes_from_its_checkpoint
);

/// The archive on another store: a second in-memory store.
#[tokio::test]
async fn the_archive_may_live_on_another_store() {
    let live = pattern_tests::memory_store();
    let cold = pattern_tests::memory_store();
    let mut rng = Lcg(24);
    let all = history_of_three(&live, &mut rng).await;
    let to = ArchiveAt {
        store: &cold,
        collection: OLD,
    };
    let moved =
        bucket::archive::<Live, _, _>(&live, to, date(T0 + 10_000 * DAY), &Options::default())
            .await
            .unwrap()
            .moved;
    assert_eq!(documents(&cold, OLD).await.len() as u64, moved);
    assert!(documents(&live, OLD).await.is_empty());
    let history = History::new(&live, to);
    for (key, items) in &all {
        assert_eq!(
            history.items::<Live, _>(key).await.unwrap().len(),
            items.len()
        );
    }
}
