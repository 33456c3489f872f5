//! The collection's width (`series::width`) under concurrent writers: buckets not cut by span,
//! read by one `_id` range that reaches the width to each side, while the width grows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::*;

const WRITERS: i64 = 16;
const KEYS: i64 = 4;

/// A trade `n` of writer `w`, at a time anywhere in 30 days, or (one in 16) up to 90 days off
/// either way: items far out of order, which widen the buckets they join.
fn scattered(rng: &mut Lcg, w: i64, n: i64) -> Trade {
    let at = if rng.below(16) == 0 {
        T0 - 90 * DAY + rng.below(180 * DAY as u64) as i64
    } else {
        T0 + rng.below(30 * DAY as u64) as i64
    };
    Trade {
        id: w * 1_000 + n,
        date: DateTime::from_millis(at),
        ..trade(rng, n)
    }
}

/// The `trades` collection's mark in `pattern_bounded`, as stored (`None`: none yet).
async fn trades_mark(store: &AnyStore) -> Option<bson::Document> {
    let by_name = pattern_core::store::query::Filter::Eq("_id".into(), "trades".into());
    (store.find("pattern_bounded", &by_name, &Default::default()))
        .await
        .unwrap()
        .pop()
}

/// Once its push returned, item `t` lies within the collection's width of the second its
/// bucket's `_id` names: a read of any range holding it finds its bucket.
async fn covered(store: &AnyStore, key: i64, t: &Trade) {
    use pattern_core::store::query::Filter;
    let of = Filter::and([
        Filter::Eq("customerId".into(), bson::Bson::Int64(key)),
        Filter::Eq("history.id".into(), bson::Bson::Int64(t.id)),
    ]);
    let opts = Default::default();
    let bucket = store
        .find("trades", &of, &opts)
        .await
        .unwrap()
        .pop()
        .unwrap();
    let id = bucket.get_str("_id").unwrap();
    let start = id.split('_').nth(1).unwrap().parse::<i64>().unwrap() * 1_000;
    let mark = trades_mark(store).await.unwrap();
    let side = |k: &str| mark.get(format!("width_{k}")).and_then(as_int).unwrap();
    let at = t.date.timestamp_millis();
    let (after, before) = (at - (start + 999), start - at);
    assert!(
        after <= side("after") && before <= side("before"),
        "item {} at {at}: {after} ms after, {before} ms before {id}, mark {mark}",
        t.id
    );
}

/// 16 writers push out-of-order trades to 4 keys of a collection not cut by span (forgetting
/// what they learned now and then, as new processes would) while 2 readers read random ranges
/// of an hour, a day and a month: every read returns every item whose push returned before
/// the read began, and only items of its key and range, however the width grows meanwhile.
/// Then every item is stored once and the layout is clean (one open bucket a key, each
/// writer's items in its order).
async fn every_pushed_item_stays_in_reach(store: AnyStore) {
    stays_in_reach(store, Apart::OneStore).await
}

/// Processes apart: on MongoDB each writer and reader is a process of its own (a store that
/// shares no memory with the others, not behind a router, so that a range read scans by the
/// width), and a writer that forgets starts a new one.
async fn reads_apart_find_every_item_pushed_before_them(store: AnyStore) {
    stays_in_reach(store, Apart::Processes).await
}

/// Processes apart, with a lease of 100 ms on the width (`bucket::lease_width`): readers that
/// skip the mark while they trust the width they read, writers that wait instead.
async fn leased_reads_find_every_item_pushed_before_them(store: AnyStore) {
    let lease = std::time::Duration::from_millis(100);
    bucket::lease_width::<Trades, _>(&store, lease)
        .await
        .unwrap();
    stays_in_reach(store, Apart::Processes).await
}

/// How the writers and readers of [`stays_in_reach`] stand: one store (on MongoDB behind a
/// router, as the suite's stores), or each its own process.
#[derive(Clone, Copy, PartialEq)]
enum Apart {
    OneStore,
    Processes,
}

async fn stays_in_reach(store: AnyStore, apart: Apart) {
    let process = |store: &AnyStore| match apart {
        Apart::Processes => process_routed(store, false),
        Apart::OneStore => store.clone(),
    };
    let pushed: Arc<Mutex<Vec<(i64, Trade)>>> = Arc::default();
    let writing = Arc::new(AtomicBool::new(true));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (mut store, pushed) = (process(&store), pushed.clone());
        writers.push(tokio::spawn(async move {
            let mut rng = Lcg(7_000 + w as u64);
            for n in 0..24 {
                // Now and then as a process that starts afresh: the store forgets what it
                // learned (each key's newest bucket, the width), as another process knows
                // none of it.
                if rng.below(6) == 0 {
                    store.extensions().forget();
                    if apart == Apart::Processes {
                        store = process_routed(&store, false);
                    }
                }
                let (key, t) = (n % KEYS, scattered(&mut rng, w, n));
                bucket::push::<Trades, _, _>(&store, &key, &t)
                    .await
                    .unwrap();
                covered(&store, key, &t).await;
                pushed.lock().unwrap().push((key, t));
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..2_u64 {
        let (store, pushed, writing) = (process(&store), pushed.clone(), writing.clone());
        readers.push(tokio::spawn(async move {
            let mut rng = Lcg(9_000 + r);
            let mut reads = 0;
            while writing.load(Ordering::SeqCst) || reads < 20 {
                let before: Vec<(i64, Trade)> = pushed.lock().unwrap().clone();
                let mut key = rng.below(KEYS as u64) as i64;
                let len = [3_600_000, DAY, 30 * DAY][rng.below(3) as usize];
                let mut from = T0 - 90 * DAY + rng.below(180 * DAY as u64) as i64;
                // Every other read around the item pushed last: what a push that widened the
                // collection just before must be found by.
                if let (0, Some((k, t))) = (rng.below(2), before.last()) {
                    key = *k;
                    from = t.date.timestamp_millis() - rng.below(len as u64) as i64;
                }
                let got: Vec<Trade> =
                    bucket::range::<Trades, _, _>(&store, &key, date(from)..date(from + len))
                        .try_collect()
                        .await
                        .unwrap();
                let ids: HashSet<i64> = got.iter().map(|t| t.id).collect();
                for (k, t) in &before {
                    let at = t.date.timestamp_millis();
                    if *k == key && (from..from + len).contains(&at) {
                        assert!(
                            ids.contains(&t.id),
                            "key {key}, {from}..{}: item {} at {at} pushed before the read, \
                             not returned",
                            from + len,
                            t.id
                        );
                    }
                }
                for t in &got {
                    let at = t.date.timestamp_millis();
                    assert!((from..from + len).contains(&at), "{t:?} outside the range");
                    assert_eq!((t.id % 1_000) % KEYS, key, "{t:?} of another key");
                }
                reads += 1;
                // The in-memory store's reads never wait: let the writers run.
                tokio::task::yield_now().await;
            }
            reads
        }));
    }
    let mut failed = None;
    for w in writers {
        if let Err(e) = w.await {
            failed.get_or_insert(e);
        }
    }
    writing.store(false, Ordering::SeqCst);
    for r in readers {
        assert!(r.await.unwrap() >= 20);
    }
    if let Some(e) = failed {
        std::panic::resume_unwind(e.into_panic());
    }
    let pushed = pushed.lock().unwrap().clone();
    for key in 0..KEYS {
        let got: Vec<Trade> = bucket::items::<Trades, _, _>(&store, &key)
            .try_collect()
            .await
            .unwrap();
        let mut want: Vec<i64> = (pushed.iter())
            .filter(|(k, _)| *k == key)
            .map(|(_, t)| t.id)
            .collect();
        let mut ids: Vec<i64> = got.iter().map(|t| t.id).collect();
        // Each writer's items in its order.
        for w in 0..WRITERS {
            let mine: Vec<i64> = ids.iter().copied().filter(|i| i / 1_000 == w).collect();
            assert!(mine.windows(2).all(|p| p[0] < p[1]), "writer {w}: {mine:?}");
        }
        ids.sort();
        want.sort();
        assert_eq!(ids, want, "key {key}: every item once");
        // The whole history by one range.
        let all: Vec<Trade> =
            bucket::range::<Trades, _, _>(&store, &key, date(T0 - 91 * DAY)..date(T0 + 91 * DAY))
                .try_collect()
                .await
                .unwrap();
        assert_eq!(all.len(), want.len(), "key {key}");
    }
    let v = pattern_core::adopt::verify_bucket(&store, &Trades::SPEC, &Default::default())
        .await
        .unwrap();
    assert!(v.is_clean(), "{v:?}");
}

/// A program that pushes into the buckets itself, not keeping the width: `verify` names the
/// bucket whose times lie past it (a range read may miss them), where the library's own
/// pushes leave it clean.
async fn verify_names_a_bucket_past_the_width(store: AnyStore) {
    let mut rng = Lcg(31);
    for n in 0..8 {
        let t = Trade {
            date: DateTime::from_millis(T0 + n * 60_000),
            ..trade(&mut rng, n)
        };
        bucket::push::<Trades, _, _>(&store, &3, &t).await.unwrap();
    }
    let clean = pattern_core::adopt::verify_bucket(&store, &Trades::SPEC, &Default::default())
        .await
        .unwrap();
    assert!(clean.is_clean(), "{clean:?}");
    // Another program's push: a year later, into the open bucket, bounds kept, width not.
    use pattern_core::store::query::{Filter, Update};
    let open = Filter::and([
        Filter::Eq("customerId".into(), bson::Bson::Int64(3)),
        Filter::Lt("count".into(), bson::Bson::Int32(5)),
    ]);
    let late = DateTime::from_millis(T0 + 365 * DAY);
    let item = bson::to_bson(&Trade {
        date: late,
        ..trade(&mut rng, 99)
    })
    .unwrap();
    let mut update = Update {
        push: vec![("history".into(), vec![item])],
        inc: vec![("count".into(), 1)],
        max: vec![("date_max".into(), bson::Bson::DateTime(late))],
        ..Update::default()
    };
    store
        .update_one("trades", &open, &mut update, false)
        .await
        .unwrap();
    let found = pattern_core::adopt::verify_bucket(&store, &Trades::SPEC, &Default::default())
        .await
        .unwrap();
    let past: Vec<_> = (found.defects.iter())
        .filter(|d| matches!(d, pattern_core::adopt::LayoutDefect::WrongBounds { reason, .. } if reason.contains("width")))
        .collect();
    assert_eq!(past.len(), 1, "{found:?}");
}

/// A lease only where a read scans by the width, of 1 ms to 60 s: refused, nothing written.
async fn a_lease_needs_a_width(store: AnyStore) {
    use std::time::Duration;
    let err = bucket::lease_width::<super::spans::Daily, _>(&store, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("keeps no width"), "{err}");
    for wrong in [
        Duration::ZERO,
        Duration::from_micros(999),
        Duration::from_secs(61),
    ] {
        let err = bucket::lease_width::<Trades, _>(&store, wrong)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("from 1 ms to 60 s"),
            "{wrong:?}: {err}"
        );
    }
    let mark = trades_mark(&store).await;
    assert!(
        mark.iter().all(|m| !m.contains_key("width_lease")),
        "{mark:?}"
    );
    // A lease only grows.
    bucket::lease_width::<Trades, _>(&store, Duration::from_millis(300))
        .await
        .unwrap();
    bucket::lease_width::<Trades, _>(&store, Duration::from_millis(200))
        .await
        .unwrap();
    let mark = trades_mark(&store).await.unwrap();
    assert_eq!(
        mark.get("width_lease").and_then(as_int),
        Some(300),
        "{mark}"
    );
}

on_both_stores!(
    every_pushed_item_stays_in_reach,
    verify_names_a_bucket_past_the_width,
    a_lease_needs_a_width,
);

/// Processes not behind a router read by the width: `_id` ranges without the key, which the
/// suite's targeting check (as behind a `mongos`) would refuse.
mod apart {
    use super::*;
    on_both_stores!(
        untargeted: reads_apart_find_every_item_pushed_before_them,
        leased_reads_find_every_item_pushed_before_them,
    );
}
