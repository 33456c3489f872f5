//! One random-sequence oracle over every document feature at once (issue 42 point 12), on both
//! stores: a seeded sequence of writes interleaving a versioned type with history, keywords,
//! an approximate counter, the archive, a computed child (sums of doubles), a subset child, an
//! extended reference (a fan-out of 1, so its propagations run in batches) and a polymorphic
//! collection (written through the enum and the variants' types), and a type with every
//! feature at once (versioning, history, keywords, the archive, a computed and a subset child,
//! a holder of copies of a source with history, the source of pins' copies, a variant of a
//! polymorphic collection), some inside transactions
//! committed or aborted, against the matrix's models. After each step the family it touched is
//! compared whole with its model (documents, history records, archive, parents, copies, every
//! read, the validators, the feature's own check); every 25 steps, and at the end, all of them.
//!
//! `PATTERN_FULL=1` runs 3,000 steps instead of 150; `PATTERN_SEAMS_SEED` sets another seed.

use bson::Document as BsonDocument;
use pattern_core::adopt::Options;
use pattern_core::document::{self, Filter, Update, Variant};
use pattern_core::store;
use pattern_core::store::transaction;
use pattern_core::store::Store;
use pattern_core::Error;

use super::polymorphic::{check_items, Items};
use super::related::{
    check_boards, check_feeds, check_refs, entry, film, person, score, Boards, Feeds, Refs,
};
use super::schema::*;
use super::simple::{
    archive_in_model, bump_views, by_an_older_build, check, critic, older, prepare, Model,
};
use crate::documents::*;

/// The models of every family.
#[derive(Default)]
struct World {
    revised: Model<RevisedVersioned>,
    tagged: Model<Tagged>,
    counted: Model<Counted>,
    orders: Model<Order>,
    boards: Boards,
    feeds: Feeds,
    refs: Refs,
    items: Items,
    /// A type with every single-collection feature at once (but the counter, which history
    /// refuses).
    everything: Model<Everything>,
}

/// A seeded generator: `next(n)` in `0..n`.
type Rng = dyn FnMut(u64) -> u64 + Send;

const NAMES: [&str; 4] = ["Ann Lee", "Bo Wu", "Cy Do Re", "Di Moby"];

fn expect_err<T: std::fmt::Debug>(r: pattern_core::Result<T>, what: fn(&Error) -> bool) {
    match r {
        Err(e) if what(&e) => {}
        other => panic!("unexpected: {other:?}"),
    }
}

/// One write of a single-collection type `T` (ids 0..6), checked against and applied to `m`.
async fn simple_step<T: Simple, S: Store + 'static>(
    store: &S,
    m: &mut Model<T>,
    next: &mut Rng,
    in_txn: bool,
) {
    let id = next(6) as i64;
    let name = NAMES[next(4) as usize];
    let exists = m.live.contains_key(&id);
    let history = T::HISTORY.is_some();
    let op = next(8);
    if op < 2 && m.archived.contains_key(&id) {
        // An archived `_id` is not written live again (the archive chapter, archive.md).
        return;
    }
    match op {
        0 if !(in_txn && exists) => {
            let r = document::insert(store, &T::make(id, name, 1)).await;
            if exists {
                expect_err(r, |e| {
                    matches!(e, Error::Store(store::Error::DuplicateKey { .. }))
                });
            } else {
                r.unwrap();
                m.write(&T::make(id, name, 1));
            }
        }
        1 => {
            let n = next(5) as i64;
            document::save(store, &T::make(id, name, n)).await.unwrap();
            m.write(&T::make(id, name, n));
        }
        2 | 3 => {
            // Typed, or conditional on `n`.
            let n = (m.live.get(&id)).map(|(d, _, _)| d.get_i64("n").unwrap());
            let filter = match next(2) {
                0 => Filter::id(&id),
                _ => Filter::id(&id).and(T::N.lt(3)),
            };
            let conditional = format!("{:?}", filter.to_query().unwrap()).contains("Lt");
            let matches = n.is_some_and(|n| !conditional || n < 3);
            let inc = Update::new().inc(T::N, 1);
            let done = document::update_one::<T, _>(store, filter, inc)
                .await
                .unwrap();
            assert_eq!(done, matches, "update of {id}");
            if matches {
                m.bump(id);
            }
        }
        4 => {
            let done = document::delete::<T, _, _>(store, &id).await.unwrap();
            assert_eq!(done, exists);
            if exists {
                m.put(id, None);
                // What the counter counted for it is dropped with it.
                m.pending.remove(&id);
            }
        }
        5 if history && exists => {
            let rev = m.live[&id].0.get_i64("revision").unwrap_or(0) as u64;
            let stale = next(3) == 0 && !in_txn;
            let expected = if stale { rev + 7 } else { rev };
            let conflict = |e: &Error| matches!(e, Error::Conflict { .. });
            match next(3) {
                0 => {
                    let r = document::save_if(store, &T::make(id, name, 2), expected).await;
                    if stale {
                        expect_err(r, conflict);
                    } else {
                        r.unwrap();
                        m.write(&T::make(id, name, 2));
                    }
                }
                1 => {
                    let inc = Update::new().inc(T::N, 1);
                    let r = document::update_if::<T, _, _>(store, &id, expected, inc).await;
                    if stale {
                        expect_err(r, conflict);
                    } else {
                        r.unwrap();
                        m.bump(id);
                    }
                }
                _ => {
                    let r = document::delete_if::<T, _, _>(store, &id, expected).await;
                    if stale {
                        expect_err(r, conflict);
                    } else {
                        r.unwrap();
                        m.put(id, None);
                    }
                }
            }
        }
        _ if !in_txn => {
            // One of the type's own paths: an older build's document or the sweep, an
            // increment, the archive's move.
            let mut own = Vec::new();
            own.extend(T::VERSIONING.map(|_| 0));
            own.extend((!T::APPROXIMATE.is_empty() && exists).then_some(1));
            own.extend(T::ARCHIVE.map(|_| 2));
            let Some(&path) = own.get(next(own.len().max(1) as u64) as usize) else {
                return;
            };
            if path == 0 {
                if !exists && !m.archived.contains_key(&id) && next(2) == 0 {
                    let d = older(id, name, next(3) as i64, next(2) == 0);
                    by_an_older_build_on(store, m, d).await;
                } else {
                    let r = document::migrate::<T, _>(store, &Options::default()).await;
                    let old: Vec<i64> = (m.live.iter())
                        .filter(|(_, (_, _, old))| *old)
                        .map(|(id, _)| *id)
                        .collect();
                    assert_eq!(r.unwrap().upgraded, old.len() as u64);
                    for id in old {
                        let v = m.value(id);
                        m.write(&v);
                    }
                }
            } else if path == 1 {
                let wrote = document::increment::<T, _, _>(store, "views", &id)
                    .await
                    .unwrap();
                let pending = m.pending.get(&id).copied().unwrap_or(0);
                assert_eq!(wrote, pending == 2, "increment of {id}");
                if wrote {
                    bump_views(m, id, 3, -2);
                } else {
                    bump_views(m, id, 0, 1);
                }
            } else {
                let live: &dyn std::any::Any = store;
                if let Some(store) = live.downcast_ref::<AnyStore>() {
                    archive_in_model(store, m).await;
                }
            }
        }
        _ => {}
    }
}

/// One write of [`Everything`]: of a document, of a pin copying one (one in eight), or of a
/// critic its copies copy (one in four), which every copy of this build's documents follows
/// with no revision of its holder.
async fn everything_step<S: Store + 'static>(
    store: &S,
    m: &mut Model<Everything>,
    next: &mut Rng,
    in_txn: bool,
) {
    match next(8) {
        0 | 1 => {}
        2 => return pin_step(store, m, next).await,
        _ => return simple_step(store, m, next, in_txn).await,
    }
    let id = next(2) as i64;
    let renamed = critic(id, next(1_000) as i64);
    if next(2) == 0 {
        document::save(store, &renamed).await.unwrap();
    } else {
        let rename = Update::new().set(Critic::NAME, renamed.name.clone());
        assert!(
            document::update_one::<Critic, _>(store, Filter::id(&id), rename)
                .await
                .unwrap()
        );
    }
    m.rename(id, &renamed.name);
}

/// A pin (0..3) saved with a copy of document 0..6, or none: a document that is not live is
/// `NotFound`, nothing written.
async fn pin_step<S: Store + 'static>(store: &S, m: &mut Model<Everything>, next: &mut Rng) {
    let id = next(3) as i64;
    let of = (next(4) > 0).then(|| next(6) as i64);
    let pin = Pin {
        id,
        of: of.map(|of| EverythingRef {
            id: of,
            name: UNFILLED.into(),
        }),
    };
    let r = document::save(store, &pin).await;
    match of {
        Some(of) if !m.live.contains_key(&of) => {
            expect_err(r, |e| matches!(e, Error::NotFound { .. }));
        }
        _ => {
            r.unwrap();
            m.pins.insert(id, of);
        }
    }
}

/// [`by_an_older_build`] on any store (the oracle's transactions write none).
async fn by_an_older_build_on<T: Simple, S: Store + 'static>(
    store: &S,
    m: &mut Model<T>,
    d: BsonDocument,
) {
    let any: &dyn std::any::Any = store;
    if let Some(store) = any.downcast_ref::<AnyStore>() {
        by_an_older_build(store, m, [d]).await;
    }
}

/// One write of a score (ids 0..8) on boards 0..3 (3 never exists; a board may be deleted).
async fn computed_step<S: Store>(store: &S, m: &mut Boards, next: &mut Rng, in_txn: bool) {
    let id = next(8) as i64;
    let board = next(4) as i64;
    let x = [0.1, 0.2, 0.25, 0.7, 1e20, 3.0][next(6) as usize];
    let before = m.scores.get(&id).cloned();
    let missing = |e: &Error| matches!(e, Error::NotFound { .. });
    let attaches = |m: &Boards, to: i64| {
        before.as_ref().is_none_or(|b| b.board != to) && !m.boards.contains(&to)
    };
    // In a transaction, only writes that succeed: a write refused part-way would leave what it
    // wrote before the refusal in the caller's transaction.
    let refused = |m: &Boards, op: u64| match op {
        0 => before.is_some() || attaches(m, board),
        1 => attaches(m, board),
        3 => before.is_some() && attaches(m, board),
        _ => false,
    };
    let op = next(6);
    if in_txn && refused(m, op) {
        return;
    }
    match op {
        0 => {
            let r = score(id, board, x).insert(store).await;
            if before.is_some() {
                expect_err(r, |e| {
                    matches!(e, Error::Store(store::Error::DuplicateKey { .. }))
                });
            } else if attaches(m, board) {
                expect_err(r, missing);
            } else {
                r.unwrap();
                m.scores.insert(id, score(id, board, x));
            }
        }
        1 => {
            let r = score(id, board, x).save(store).await;
            if attaches(m, board) {
                expect_err(r, missing);
            } else {
                r.unwrap();
                m.scores.insert(id, score(id, board, x));
            }
        }
        2 => {
            let set = Update::new().set(Score::SCORE, x);
            let done = Score::update_one(store, Score::ID.eq(id), set)
                .await
                .unwrap();
            assert_eq!(done, before.is_some());
            if let Some(s) = m.scores.get_mut(&id) {
                s.score = x;
            }
        }
        3 => {
            let moved = Update::new().set(Score::BOARD, board);
            let r = Score::update_one(store, Score::ID.eq(id), moved).await;
            if before.is_some() && attaches(m, board) {
                expect_err(r, missing);
            } else {
                assert_eq!(r.unwrap(), before.is_some());
                if let Some(s) = m.scores.get_mut(&id) {
                    s.board = board;
                }
            }
        }
        4 => {
            let done = Score::delete(store, &id).await.unwrap();
            assert_eq!(done, before.is_some());
            m.scores.remove(&id);
        }
        _ if next(10) == 0 => {
            // A board deleted under its scores (never inserted again: its scores are orphans).
            let done = Board::delete(store, &board).await.unwrap();
            assert_eq!(done, m.boards.remove(&board));
        }
        _ => {}
    }
}

/// One write of an entry (ids 0..8) on feeds 0..3 (3 never exists).
async fn subset_step<S: Store>(store: &S, m: &mut Feeds, next: &mut Rng, in_txn: bool) {
    let id = next(8) as i64;
    let feed = next(4) as i64;
    let date = next(20) as i64;
    let before = m.entries.get(&id).cloned();
    let missing = |e: &Error| matches!(e, Error::NotFound { .. });
    let attaches =
        |m: &Feeds, to: i64| before.as_ref().is_none_or(|b| b.feed != to) && !m.feeds.contains(&to);
    let op = next(5);
    let refused = match op {
        0 | 1 => attaches(m, feed),
        3 => before.is_some() && attaches(m, feed),
        _ => false,
    };
    if in_txn && refused {
        return;
    }
    match op {
        0 | 1 => {
            let r = entry(id, feed, date).save(store).await;
            if attaches(m, feed) {
                expect_err(r, missing);
            } else {
                r.unwrap();
                m.entries.insert(id, entry(id, feed, date));
            }
        }
        2 => {
            let set = Update::new().set(Entry::DATE, date);
            let done = Entry::update_one(store, Entry::ID.eq(id), set)
                .await
                .unwrap();
            assert_eq!(done, before.is_some());
            if let Some(e) = m.entries.get_mut(&id) {
                e.date = date;
            }
        }
        3 => {
            let moved = Update::new().set(Entry::FEED, feed);
            let r = Entry::update_one(store, Entry::ID.eq(id), moved).await;
            if before.is_some() && attaches(m, feed) {
                expect_err(r, missing);
            } else {
                assert_eq!(r.unwrap(), before.is_some());
                if let Some(e) = m.entries.get_mut(&id) {
                    e.feed = feed;
                }
            }
        }
        _ => {
            let done = Entry::delete(store, &id).await.unwrap();
            assert_eq!(done, before.is_some());
            m.entries.remove(&id);
        }
    }
}

/// One write of a person (ids 0..4) or a film (ids 0..6) pointing at one.
async fn reference_step<S: Store>(store: &S, m: &mut Refs, next: &mut Rng, in_txn: bool) {
    let p = next(4) as i64;
    let f = next(6) as i64;
    let name = NAMES[next(4) as usize];
    match next(7) {
        0 | 1 => {
            person(p, name).save(store).await.unwrap();
            let n = m.people.get(&p).map_or(0, |x| x.n);
            m.people.insert(
                p,
                Person {
                    n,
                    ..person(p, name)
                },
            );
            if n != 0 {
                // A save writes the whole person: `n` back to 0.
                m.people.get_mut(&p).unwrap().n = 0;
            }
        }
        2 => {
            let rename = Update::new().set(Person::NAME, name).inc(Person::N, 1);
            let done = Person::update_one(store, Person::ID.eq(p), rename)
                .await
                .unwrap();
            assert_eq!(done, m.people.contains_key(&p));
            if let Some(x) = m.people.get_mut(&p) {
                (x.name, x.n) = (name.into(), x.n + 1);
            }
        }
        3 => {
            let done = Person::delete(store, &p).await.unwrap();
            assert_eq!(done, m.people.remove(&p).is_some());
            for (_, _, d) in m.films.values_mut() {
                if *d == Some(p) {
                    *d = None;
                }
            }
        }
        4 | 5 => {
            let director = (next(4) != 0).then_some(p);
            if in_txn && director.is_some_and(|d| !m.people.contains_key(&d)) {
                return;
            }
            let r = film(f, director).save(store).await;
            if director.is_some_and(|d| !m.people.contains_key(&d)) {
                expect_err(r, |e| matches!(e, Error::NotFound { .. }));
            } else {
                r.unwrap();
                m.films.insert(f, (format!("film {f}"), 0, director));
            }
        }
        _ => {
            let done = Film::delete(store, &f).await.unwrap();
            assert_eq!(done, m.films.remove(&f).is_some());
        }
    }
}

/// One write of an item (ids 0..5), through the enum or a variant's type.
async fn item_step<S: Store>(store: &S, m: &mut Items, next: &mut Rng, in_txn: bool) {
    let id = next(5) as i64;
    let title = NAMES[next(4) as usize];
    let n = next(9) as i64;
    let stored = m.0.get(&id).cloned();
    let is_novel = matches!(stored, Some(Item::Novel(_)));
    let (as_novel, through_enum) = (next(2) == 0, next(2) == 0);
    let item = if as_novel {
        Item::Novel(novel(id, title, n))
    } else {
        shirt(id, title, n).into_enum()
    };
    let op = next(5);
    if in_txn && op < 2 && stored.is_some() && is_novel != as_novel {
        return;
    }
    match op {
        0 | 1 => {
            let r = match (&item, through_enum) {
                (_, true) => item.save(store).await,
                (Item::Novel(v), false) => v.save(store).await,
                (_, false) => {
                    ItemShirt::from_enum(item.clone())
                        .unwrap()
                        .save(store)
                        .await
                }
            };
            if stored.is_some() && is_novel != as_novel {
                expect_err(r, |e| matches!(e, Error::OtherVariant { .. }));
            } else {
                r.unwrap();
                m.put(item);
            }
        }
        2 => {
            let done = item.change_variant(store).await.unwrap();
            assert_eq!(done, stored.is_some());
            if done {
                m.put(item);
            }
        }
        3 => {
            let inc = Update::new().inc(Item::N, 1);
            let done = Item::update_one(store, Item::ID.eq(id), inc).await.unwrap();
            assert_eq!(done, stored.is_some());
            match m.0.get_mut(&id) {
                Some(Item::Novel(v)) => v.n += 1,
                Some(Item::Shirt { n, .. }) => *n += 1,
                None => {}
            }
        }
        _ => {
            let done = if through_enum || stored.is_none() {
                Item::delete(store, &id).await.unwrap()
            } else if is_novel {
                Novel::delete(store, &id).await.unwrap()
            } else {
                ItemShirt::delete(store, &id).await.unwrap()
            };
            assert_eq!(done, stored.is_some());
            m.0.remove(&id);
        }
    }
}

/// Runs `step` on the family's model: on the store itself, or on a copy of the model inside a
/// transaction that commits it (the copy kept) or aborts it (the copy dropped).
macro_rules! step {
    ($store:expr, $next:expr, $model:expr, $f:expr) => {{
        match $next(6) {
            0 => {
                let mut copy = $model.clone();
                let mut seed = $next(u64::MAX);
                let commit = $next(2) == 0;
                let copied = &mut copy;
                let done = transaction($store, move |tx| {
                    let mut copy = copied.clone();
                    let mut rng = pattern_tests::rng(seed.max(1));
                    seed = seed.wrapping_add(1);
                    Box::pin(async move {
                        $f(tx, &mut copy, &mut rng, true).await;
                        $f(tx, &mut copy, &mut rng, true).await;
                        if commit {
                            Ok(copy)
                        } else {
                            Err(Error::Store(store::Error::InvalidInput(
                                "the oracle aborts it".into(),
                            )))
                        }
                    })
                })
                .await;
                match done {
                    Ok(copy) => $model = copy,
                    Err(Error::Store(store::Error::InvalidInput(_))) => {}
                    Err(e) => panic!("{e:?}"),
                }
            }
            _ => $f($store, &mut $model, $next, false).await,
        }
    }};
}

async fn check_all(store: &AnyStore, w: &World) {
    check::<RevisedVersioned>(store, &w.revised).await;
    check::<Tagged>(store, &w.tagged).await;
    check::<Counted>(store, &w.counted).await;
    check::<Order>(store, &w.orders).await;
    check_boards(store, &w.boards).await;
    check_feeds(store, &w.feeds).await;
    check_refs(store, &w.refs).await;
    check_items(store, &w.items).await;
    check::<Everything>(store, &w.everything).await;
}

async fn every_document_feature_matches_a_model(store: AnyStore) {
    let seed = std::env::var("PATTERN_SEAMS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5ea3_5eed_2026_1127_u64);
    let mut rng = pattern_tests::rng(seed);
    let next: &mut Rng = &mut rng;
    let mut w = World::default();
    document::ensure_validator::<RevisedVersioned, _>(&store)
        .await
        .unwrap();
    document::ensure_validator::<Tagged, _>(&store)
        .await
        .unwrap();
    document::ensure_validator::<Counted, _>(&store)
        .await
        .unwrap();
    document::ensure_validator::<Order, _>(&store)
        .await
        .unwrap();
    document::ensure_validator::<Everything, _>(&store)
        .await
        .unwrap();
    prepare::<Everything>(&store).await;
    Item::ensure_validator(&store).await.unwrap();
    for id in 0..3 {
        Board::empty(id).insert(&store).await.unwrap();
        w.boards.boards.insert(id);
        Feed {
            id,
            recent: Vec::new(),
        }
        .insert(&store)
        .await
        .unwrap();
        w.feeds.feeds.insert(id);
    }
    let steps = pattern_tests::scale(150, 3_000);
    for i in 0..steps {
        // Every feature at once weighs as three families.
        let family = next(11).min(8);
        let at = format!("seed {seed:#x}, step {i}, family {family}");
        let step = async {
            match family {
                0 => step!(&store, next, w.revised, simple_step),
                1 => step!(&store, next, w.tagged, simple_step),
                // The counter counts in the process: a transaction that aborts would not
                // take its increments back (they are not writes), so none in transactions.
                2 => simple_step(&store, &mut w.counted, next, false).await,
                3 => simple_step(&store, &mut w.orders, next, false).await,
                4 => step!(&store, next, w.boards, computed_step),
                5 => step!(&store, next, w.feeds, subset_step),
                6 => step!(&store, next, w.refs, reference_step),
                7 => step!(&store, next, w.items, item_step),
                _ => step!(&store, next, w.everything, everything_step),
            }
            match family {
                0 => check::<RevisedVersioned>(&store, &w.revised).await,
                1 => check::<Tagged>(&store, &w.tagged).await,
                2 => check::<Counted>(&store, &w.counted).await,
                3 => check::<Order>(&store, &w.orders).await,
                4 => check_boards(&store, &w.boards).await,
                5 => check_feeds(&store, &w.feeds).await,
                6 => check_refs(&store, &w.refs).await,
                7 => check_items(&store, &w.items).await,
                _ => check::<Everything>(&store, &w.everything).await,
            }
            if i % 25 == 24 {
                check_all(&store, &w).await;
            }
        };
        if let Err(p) = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(step)).await {
            let why = (p.downcast_ref::<String>().cloned())
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            panic!("{at}: {why}");
        }
    }
    // The counter's last increments, written.
    let pending: i64 = w.counted.pending.values().sum();
    assert_eq!(Counted::flush(&store).await.unwrap(), pending as u64);
    for (id, p) in std::mem::take(&mut w.counted.pending) {
        bump_views(&mut w.counted, id, p, 0);
    }
    check_all(&store, &w).await;
}

on_both_stores!(untargeted: every_document_feature_matches_a_model);
