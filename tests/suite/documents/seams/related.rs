//! The features whose writes change other documents: a computed child (a board's count, sum,
//! minimum, maximum and average of its scores, doubles), a subset child (a feed's 2 newest
//! entries), an extended reference's source (people, copied into films with a fan-out of 1)
//! and holder (films). Each row runs its write paths against a model of both collections.

use pattern_core::store;
use std::collections::{BTreeMap, BTreeSet};

use bson::{doc, Bson, Document as BsonDocument};
use pattern_core::adopt::Options;
use pattern_core::document::Update;
use pattern_core::store::query;
use pattern_core::store::transaction;
use pattern_core::Error;

use super::schema::*;
use super::{abort, aborted, empty, validates, Cells};
use crate::documents::*;

/// A foreign write's filter on `_id`.
fn by_id(id: i64) -> query::Filter {
    query::Filter::eq("_id", id)
}

// ----- The computed child -------------------------------------------------------------------

#[derive(Clone, Default)]
pub(super) struct Boards {
    pub(super) boards: BTreeSet<i64>,
    pub(super) scores: BTreeMap<i64, Score>,
}

impl Boards {
    /// The board as the model says it is stored: the count, minimum and maximum exactly, the
    /// sum and average within the rounding of a sum added one by one (and 0 exactly without
    /// scores).
    fn board(&self, id: i64) -> (BsonDocument, f64) {
        let xs: Vec<f64> = (self.scores.values())
            .filter(|s| s.board == id)
            .map(|s| s.score)
            .collect();
        let n = xs.len();
        let exact = exact_sum(&xs);
        let min = xs.iter().copied().reduce(f64::min);
        let max = xs.iter().copied().reduce(f64::max);
        let opt = |v: Option<f64>| v.map_or(Bson::Null, Bson::Double);
        let doc = doc! {
            "_id": id, "count": n as i64, "sum": exact, "min": opt(min), "max": opt(max),
            "avg": opt((n > 0).then(|| exact / n as f64)),
        };
        let tolerance = (n as f64 + 1.0) * f64::EPSILON * xs.iter().map(|x| x.abs()).sum::<f64>();
        (doc, tolerance)
    }
}

/// The sum of `xs`, compensated (Neumaier): within the tolerance of [`Boards::board`].
fn exact_sum(xs: &[f64]) -> f64 {
    let (mut sum, mut c) = (0.0_f64, 0.0_f64);
    for &x in xs {
        let t = sum + x;
        c += if sum.abs() >= x.abs() {
            (sum - t) + x
        } else {
            (x - t) + sum
        };
        sum = t;
    }
    sum + c
}

pub(super) fn score(id: i64, board: i64, score: f64) -> Score {
    Score {
        id,
        board,
        score,
        n: 0,
    }
}

fn close(got: &BsonDocument, want: &BsonDocument, tolerance: f64) -> bool {
    want.iter().all(|(k, w)| match (got.get(k), w) {
        (Some(Bson::Double(g)), Bson::Double(w)) if k == "sum" || k == "avg" => {
            (g - w).abs() <= tolerance + 2.0 * f64::EPSILON * g.abs().max(w.abs())
        }
        (g, w) => g == Some(w),
    }) && got.len() == want.len()
}

pub(super) async fn check_boards(store: &AnyStore, m: &Boards) {
    let boards = documents(store, "m_boards").await;
    let ids: Vec<i64> = boards.iter().map(|b| b.get_i64("_id").unwrap()).collect();
    assert_eq!(ids, m.boards.iter().copied().collect::<Vec<_>>(), "boards");
    for b in &boards {
        let (want, tolerance) = m.board(b.get_i64("_id").unwrap());
        assert!(close(b, &want, tolerance), "board {b}, want {want}");
    }
    let scores = documents(store, "m_scores").await;
    let want: Vec<BsonDocument> = (m.scores.values())
        .map(|s| bson::to_document(s).unwrap())
        .collect();
    assert_eq!(scores, want, "scores");
    let drift = Score::verify(store).await.unwrap();
    assert!(drift.is_empty(), "verify: {drift:?}");
    validates::<Board>(store, "m_boards", &boards).await;
    validates::<Score>(store, "m_scores", &scores).await;
}

pub(super) async fn computed(store: &AnyStore, cells: &mut Cells) {
    const ROW: &str = "computed child";
    Board::ensure_validator(store).await.unwrap();
    Score::ensure_validator(store).await.unwrap();
    let mut m = Boards::default();
    macro_rules! cell {
        ($path:expr, async $body:block) => {
            let ok = cells
                .cell(ROW, $path, async {
                    async $body.await;
                    check_boards(store, &m).await;
                })
                .await;
            if !ok {
                empty(store, &["m_boards", "m_scores"]).await;
                m = Boards::default();
                let _ = &m;
            }
        };
    }
    let mut next = 0;
    let mut board = || {
        next += 100;
        next
    };
    let b = board();
    cell!("insert", async {
        Board::empty(b).insert(store).await.unwrap();
        m.boards.insert(b);
        for (i, x) in [0.1, 0.2, 0.7].into_iter().enumerate() {
            score(b + i as i64, b, x).insert(store).await.unwrap();
            m.scores.insert(b + i as i64, score(b + i as i64, b, x));
        }
        let missing = score(b + 9, b + 50, 1.0).insert(store).await;
        assert!(
            matches!(missing, Err(Error::NotFound { .. })),
            "{missing:?}"
        );
    });
    let b = board();
    cell!("save (new and existing)", async {
        Board::empty(b).insert(store).await.unwrap();
        m.boards.insert(b);
        score(b, b, 0.1).save(store).await.unwrap();
        score(b + 1, b, 0.2).save(store).await.unwrap();
        score(b, b, 0.3).save(store).await.unwrap();
        m.scores.insert(b, score(b, b, 0.3));
        m.scores.insert(b + 1, score(b + 1, b, 0.2));
    });
    let b = board();
    cell!("update_one (typed, conditional, moving)", async {
        Board::empty(b).insert(store).await.unwrap();
        Board::empty(b + 1).insert(store).await.unwrap();
        m.boards.extend([b, b + 1]);
        for (i, x) in [0.1, 0.2].into_iter().enumerate() {
            score(b + i as i64, b, x).insert(store).await.unwrap();
            m.scores.insert(b + i as i64, score(b + i as i64, b, x));
        }
        let set = Update::new().set(Score::SCORE, 0.25);
        assert!(Score::update_one(store, Score::ID.eq(b), set)
            .await
            .unwrap());
        m.scores.get_mut(&b).unwrap().score = 0.25;
        let no = Score::ID.eq(b).and(Score::SCORE.gt(100.0));
        let inc = || Update::new().inc(Score::N, 1);
        assert!(!Score::update_one(store, no, inc()).await.unwrap());
        assert!(Score::update_one(store, Score::ID.eq(b + 1), inc())
            .await
            .unwrap());
        m.scores.get_mut(&(b + 1)).unwrap().n = 1;
        let moved = Update::new().set(Score::BOARD, b + 1);
        assert!(Score::update_one(store, Score::ID.eq(b + 1), moved)
            .await
            .unwrap());
        m.scores.get_mut(&(b + 1)).unwrap().board = b + 1;
    });
    let b = board();
    cell!("delete", async {
        Board::empty(b).insert(store).await.unwrap();
        m.boards.insert(b);
        for (i, x) in [0.1, 0.2, 1e20, 1.0].into_iter().enumerate() {
            score(b + i as i64, b, x).insert(store).await.unwrap();
            m.scores.insert(b + i as i64, score(b + i as i64, b, x));
        }
        for id in [b, b + 1, b + 2] {
            assert!(Score::delete(store, &id).await.unwrap());
            m.scores.remove(&id);
        }
        assert!(!Score::delete(store, &b).await.unwrap());
    });
    let b = board();
    cell!("transaction (committed and aborted)", async {
        Board::empty(b).insert(store).await.unwrap();
        m.boards.insert(b);
        transaction(store, |tx| {
            Box::pin(async move {
                score(b, b, 0.1).insert(tx).await?;
                score(b + 1, b, 0.2).insert(tx).await?;
                Score::delete(tx, &b).await?;
                Ok(())
            })
        })
        .await
        .unwrap();
        m.scores.insert(b + 1, score(b + 1, b, 0.2));
        aborted(
            transaction(store, |tx| {
                Box::pin(async move {
                    score(b + 2, b, 0.5).insert(tx).await?;
                    Score::delete(tx, &(b + 1)).await?;
                    abort::<()>()
                })
            })
            .await,
        );
    });
    let b = board();
    cell!("orphans (the parent deleted)", async {
        Board::empty(b).insert(store).await.unwrap();
        Board::empty(b + 1).insert(store).await.unwrap();
        m.boards.extend([b, b + 1]);
        for (i, x) in [0.5, 0.25, 2.0].into_iter().enumerate() {
            score(b + i as i64, b, x).insert(store).await.unwrap();
            m.scores.insert(b + i as i64, score(b + i as i64, b, x));
        }
        assert!(Board::delete(store, &b).await.unwrap());
        m.boards.remove(&b);
        let inc = Update::new().inc(Score::N, 1).set(Score::SCORE, 0.75);
        assert!(Score::update_one(store, Score::ID.eq(b), inc)
            .await
            .unwrap());
        let s = m.scores.get_mut(&b).unwrap();
        (s.n, s.score) = (1, 0.75);
        assert!(Score::delete(store, &(b + 1)).await.unwrap());
        m.scores.remove(&(b + 1));
        let moved = Update::new().set(Score::BOARD, b + 1);
        assert!(Score::update_one(store, Score::ID.eq(b + 2), moved)
            .await
            .unwrap());
        m.scores.get_mut(&(b + 2)).unwrap().board = b + 1;
        // The orphan left: moved away, deleted.
        assert!(Score::delete(store, &b).await.unwrap());
        m.scores.remove(&b);
    });
    let b = board();
    cell!("recompute (after another tool)", async {
        Board::empty(b).insert(store).await.unwrap();
        m.boards.insert(b);
        for (i, x) in [0.1, 0.2, 0.3].into_iter().enumerate() {
            score(b + i as i64, b, x).insert(store).await.unwrap();
            m.scores.insert(b + i as i64, score(b + i as i64, b, x));
        }
        store.delete_many("m_scores", &by_id(b)).await.unwrap();
        m.scores.remove(&b);
        assert!(!Score::verify(store).await.unwrap().is_empty());
        Score::recompute(store, &b).await.unwrap();
    });
}

// ----- The subset child ---------------------------------------------------------------------

#[derive(Clone, Default)]
pub(super) struct Feeds {
    pub(super) feeds: BTreeSet<i64>,
    pub(super) entries: BTreeMap<i64, Entry>,
}

impl Feeds {
    fn feed(&self, id: i64) -> BsonDocument {
        let mut of: Vec<&Entry> = self.entries.values().filter(|e| e.feed == id).collect();
        of.sort_by_key(|e| std::cmp::Reverse((e.date, e.id)));
        let recent: Vec<BsonDocument> = (of.iter().take(2))
            .map(|e| bson::to_document(*e).unwrap())
            .collect();
        doc! {"_id": id, "recent": recent}
    }
}

pub(super) fn entry(id: i64, feed: i64, date: i64) -> Entry {
    Entry {
        id,
        feed,
        date,
        n: 0,
    }
}

pub(super) async fn check_feeds(store: &AnyStore, m: &Feeds) {
    let feeds = documents(store, "m_feeds").await;
    let want: Vec<BsonDocument> = m.feeds.iter().map(|f| m.feed(*f)).collect();
    assert_eq!(feeds, want, "feeds");
    let entries = documents(store, "m_entries").await;
    let want: Vec<BsonDocument> = (m.entries.values())
        .map(|e| bson::to_document(e).unwrap())
        .collect();
    assert_eq!(entries, want, "entries");
    assert_eq!(
        Entry::verify_subsets(store).await.unwrap(),
        Vec::<String>::new()
    );
    validates::<Feed>(store, "m_feeds", &feeds).await;
    validates::<Entry>(store, "m_entries", &entries).await;
}

pub(super) async fn subset(store: &AnyStore, cells: &mut Cells) {
    const ROW: &str = "subset child";
    Feed::ensure_validator(store).await.unwrap();
    Entry::ensure_validator(store).await.unwrap();
    let mut m = Feeds::default();
    macro_rules! cell {
        ($path:expr, async $body:block) => {
            let ok = cells
                .cell(ROW, $path, async {
                    async $body.await;
                    check_feeds(store, &m).await;
                })
                .await;
            if !ok {
                empty(store, &["m_feeds", "m_entries"]).await;
                m = Feeds::default();
                let _ = &m;
            }
        };
    }
    let mut next = 0;
    let mut feed = || {
        next += 100;
        next
    };
    let new_feed = |f: i64| Feed {
        id: f,
        recent: Vec::new(),
    };
    let f = feed();
    cell!("insert", async {
        new_feed(f).insert(store).await.unwrap();
        m.feeds.insert(f);
        for (i, d) in [5, 9, 7].into_iter().enumerate() {
            entry(f + i as i64, f, d).insert(store).await.unwrap();
            m.entries.insert(f + i as i64, entry(f + i as i64, f, d));
        }
        let missing = entry(f + 9, f + 50, 1).insert(store).await;
        assert!(
            matches!(missing, Err(Error::NotFound { .. })),
            "{missing:?}"
        );
    });
    let f = feed();
    cell!("save (new and existing)", async {
        new_feed(f).insert(store).await.unwrap();
        m.feeds.insert(f);
        for (i, d) in [5, 9, 7].into_iter().enumerate() {
            entry(f + i as i64, f, d).save(store).await.unwrap();
            m.entries.insert(f + i as i64, entry(f + i as i64, f, d));
        }
        entry(f + 1, f, 1).save(store).await.unwrap();
        m.entries.insert(f + 1, entry(f + 1, f, 1));
    });
    let f = feed();
    cell!("update_one (typed, conditional, moving)", async {
        new_feed(f).insert(store).await.unwrap();
        new_feed(f + 1).insert(store).await.unwrap();
        m.feeds.extend([f, f + 1]);
        for (i, d) in [5, 9, 7].into_iter().enumerate() {
            entry(f + i as i64, f, d).insert(store).await.unwrap();
            m.entries.insert(f + i as i64, entry(f + i as i64, f, d));
        }
        let newest = Update::new().set(Entry::DATE, 99_i64);
        assert!(Entry::update_one(store, Entry::ID.eq(f), newest)
            .await
            .unwrap());
        m.entries.get_mut(&f).unwrap().date = 99;
        let no = Entry::ID.eq(f).and(Entry::DATE.lt(0_i64));
        let inc = || Update::new().inc(Entry::N, 1);
        assert!(!Entry::update_one(store, no, inc()).await.unwrap());
        assert!(Entry::update_one(store, Entry::ID.eq(f), inc())
            .await
            .unwrap());
        m.entries.get_mut(&f).unwrap().n = 1;
        let moved = Update::new().set(Entry::FEED, f + 1);
        assert!(Entry::update_one(store, Entry::ID.eq(f + 1), moved)
            .await
            .unwrap());
        m.entries.get_mut(&(f + 1)).unwrap().feed = f + 1;
    });
    let f = feed();
    cell!("delete", async {
        new_feed(f).insert(store).await.unwrap();
        m.feeds.insert(f);
        for (i, d) in [5, 9, 7].into_iter().enumerate() {
            entry(f + i as i64, f, d).insert(store).await.unwrap();
            m.entries.insert(f + i as i64, entry(f + i as i64, f, d));
        }
        assert!(Entry::delete(store, &(f + 1)).await.unwrap());
        m.entries.remove(&(f + 1));
    });
    let f = feed();
    cell!("transaction (committed and aborted)", async {
        new_feed(f).insert(store).await.unwrap();
        m.feeds.insert(f);
        transaction(store, |tx| {
            Box::pin(async move {
                entry(f, f, 1).insert(tx).await?;
                entry(f + 1, f, 2).insert(tx).await?;
                Ok(())
            })
        })
        .await
        .unwrap();
        m.entries.insert(f, entry(f, f, 1));
        m.entries.insert(f + 1, entry(f + 1, f, 2));
        aborted(
            transaction(store, |tx| {
                Box::pin(async move {
                    entry(f + 2, f, 9).insert(tx).await?;
                    abort::<()>()
                })
            })
            .await,
        );
    });
    let f = feed();
    cell!("orphans (the parent deleted)", async {
        new_feed(f).insert(store).await.unwrap();
        new_feed(f + 1).insert(store).await.unwrap();
        m.feeds.extend([f, f + 1]);
        for (i, d) in [5, 9].into_iter().enumerate() {
            entry(f + i as i64, f, d).insert(store).await.unwrap();
            m.entries.insert(f + i as i64, entry(f + i as i64, f, d));
        }
        assert!(Feed::delete(store, &f).await.unwrap());
        m.feeds.remove(&f);
        entry(f, f, 6).save(store).await.unwrap();
        m.entries.insert(f, entry(f, f, 6));
        let moved = Update::new().set(Entry::FEED, f + 1);
        assert!(Entry::update_one(store, Entry::ID.eq(f + 1), moved)
            .await
            .unwrap());
        m.entries.get_mut(&(f + 1)).unwrap().feed = f + 1;
        assert!(Entry::delete(store, &f).await.unwrap());
        m.entries.remove(&f);
    });
    let f = feed();
    cell!("resubset (after another tool)", async {
        new_feed(f).insert(store).await.unwrap();
        m.feeds.insert(f);
        for (i, d) in [5, 9, 7].into_iter().enumerate() {
            entry(f + i as i64, f, d).insert(store).await.unwrap();
            m.entries.insert(f + i as i64, entry(f + i as i64, f, d));
        }
        store.delete_many("m_entries", &by_id(f + 1)).await.unwrap();
        m.entries.remove(&(f + 1));
        assert!(!Entry::verify_subsets(store).await.unwrap().is_empty());
        Entry::resubset(store, &f).await.unwrap();
    });
}

// ----- The extended reference ---------------------------------------------------------------

#[derive(Clone, Default)]
pub(super) struct Refs {
    pub(super) people: BTreeMap<i64, Person>,
    /// Each film: its title, `n` and its director's `_id` (`None`: `null`).
    pub(super) films: BTreeMap<i64, (String, i64, Option<i64>)>,
}

impl Refs {
    fn film(&self, id: i64) -> BsonDocument {
        let (title, n, d) = &self.films[&id];
        let director = match d {
            Some(d) => Bson::Document(doc! {"_id": *d, "name": self.people[d].name.clone()}),
            None => Bson::Null,
        };
        doc! {"_id": id, "title": title.clone(), "n": *n, "director": director}
    }
}

pub(super) fn person(id: i64, name: &str) -> Person {
    Person {
        id,
        name: name.into(),
        n: 0,
    }
}

/// A film pointing at `director`, its copy holding a name the library must replace.
pub(super) fn film(id: i64, director: Option<i64>) -> Film {
    Film {
        id,
        title: format!("film {id}"),
        n: 0,
        director: director.map(|d| PersonRef {
            id: d,
            name: "a name the caller made up".into(),
        }),
    }
}

pub(super) async fn check_refs(store: &AnyStore, m: &Refs) {
    let people = documents(store, "m_people").await;
    let want: Vec<BsonDocument> = (m.people.values())
        .map(|p| bson::to_document(p).unwrap())
        .collect();
    assert_eq!(people, want, "people");
    let films = documents(store, "m_films").await;
    let want: Vec<BsonDocument> = m.films.keys().map(|f| m.film(*f)).collect();
    assert_eq!(films, want, "films");
    let stale = Film::verify_copies(store).await.unwrap();
    assert!(stale.is_empty(), "verify_copies: {stale:?}");
    let pending = Person::pending_propagations(store).await.unwrap();
    assert!(pending.is_empty(), "pending: {pending:?}");
    validates::<Person>(store, "m_people", &people).await;
    validates::<Film>(store, "m_films", &films).await;
}

/// The reference rows: `holder` false runs the source's paths, true the holder's.
async fn reference(store: &AnyStore, cells: &mut Cells, holder: bool) {
    let row = if holder {
        "extended reference, holder"
    } else {
        "extended reference, source"
    };
    Person::ensure_validator(store).await.unwrap();
    Film::ensure_validator(store).await.unwrap();
    empty(store, &["m_people", "m_films"]).await;
    let mut m = Refs::default();
    macro_rules! cell {
        ($path:expr, async $body:block) => {
            let ok = cells
                .cell(row, $path, async {
                    async $body.await;
                    check_refs(store, &m).await;
                })
                .await;
            if !ok {
                empty(store, &["m_people", "m_films", "pattern_references"]).await;
                m = Refs::default();
                let _ = &m;
            }
        };
    }
    let mut next = 0;
    let mut fresh = || {
        next += 100;
        next
    };
    // Two people, each copied into two films (past the fan-out of 1).
    async fn cast(store: &AnyStore, m: &mut Refs, p: i64) {
        for (id, name) in [(p, "Ann Lee"), (p + 1, "Bo Wu")] {
            person(id, name).insert(store).await.unwrap();
            m.people.insert(id, person(id, name));
        }
        for (f, d) in [(p, p), (p + 1, p), (p + 2, p + 1), (p + 3, p + 1)] {
            film(f, Some(d)).insert(store).await.unwrap();
            m.films.insert(f, (format!("film {f}"), 0, Some(d)));
        }
    }
    if !holder {
        let p = fresh();
        cell!("insert", async {
            cast(store, &mut m, p).await;
            let dup = person(p, "Other").insert(store).await;
            assert!(
                matches!(dup, Err(Error::Store(store::Error::DuplicateKey { .. }))),
                "{dup:?}"
            );
        });
        let p = fresh();
        cell!("save (new and existing)", async {
            cast(store, &mut m, p).await;
            person(p + 5, "Cy Do").save(store).await.unwrap();
            m.people.insert(p + 5, person(p + 5, "Cy Do"));
            person(p, "Ann Lee-Wu").save(store).await.unwrap();
            m.people.insert(p, person(p, "Ann Lee-Wu"));
        });
        let p = fresh();
        cell!(
            "update_one (typed, conditional, a field not copied)",
            async {
                cast(store, &mut m, p).await;
                let rename = Update::new().set(Person::NAME, "Bo Wu-Lee");
                assert!(Person::update_one(store, Person::ID.eq(p + 1), rename)
                    .await
                    .unwrap());
                m.people.get_mut(&(p + 1)).unwrap().name = "Bo Wu-Lee".into();
                let no = Person::ID.eq(p).and(Person::N.gt(5));
                let inc = || Update::new().inc(Person::N, 1);
                assert!(!Person::update_one(store, no, inc()).await.unwrap());
                assert!(Person::update_one(store, Person::ID.eq(p), inc())
                    .await
                    .unwrap());
                m.people.get_mut(&p).unwrap().n = 1;
            }
        );
        let p = fresh();
        cell!("delete", async {
            cast(store, &mut m, p).await;
            assert!(Person::delete(store, &p).await.unwrap());
            m.people.remove(&p);
            for f in [p, p + 1] {
                m.films.get_mut(&f).unwrap().2 = None;
            }
        });
        let p = fresh();
        cell!("transaction (committed and aborted)", async {
            cast(store, &mut m, p).await;
            transaction(store, |tx| {
                Box::pin(async move {
                    let rename = Update::new().set(Person::NAME, "Ann Wu");
                    Person::update_one(tx, Person::ID.eq(p), rename).await?;
                    person(p + 1, "Bo Lee").save(tx).await?;
                    Ok(())
                })
            })
            .await
            .unwrap();
            m.people.get_mut(&p).unwrap().name = "Ann Wu".into();
            m.people.get_mut(&(p + 1)).unwrap().name = "Bo Lee".into();
            aborted(
                transaction(store, |tx| {
                    Box::pin(async move {
                        person(p, "Nobody").save(tx).await?;
                        Person::delete(tx, &(p + 1)).await?;
                        abort::<()>()
                    })
                })
                .await,
            );
        });
        let p = fresh();
        cell!("repair_copies (after another tool)", async {
            cast(store, &mut m, p).await;
            let mut rename = query::Update {
                set: vec![("name".into(), Bson::String("Renamed".into()))],
                ..query::Update::default()
            };
            store
                .update_one("m_people", &by_id(p), &mut rename, false)
                .await
                .unwrap();
            m.people.get_mut(&p).unwrap().name = "Renamed".into();
            assert!(!Film::verify_copies(store).await.unwrap().is_empty());
            Film::repair_copies(store, &Options::default())
                .await
                .unwrap();
        });
    } else {
        let p = fresh();
        cell!("insert", async {
            cast(store, &mut m, p).await;
            let missing = film(p + 9, Some(p + 50)).insert(store).await;
            assert!(
                matches!(missing, Err(Error::NotFound { .. })),
                "{missing:?}"
            );
            film(p + 8, None).insert(store).await.unwrap();
            m.films.insert(p + 8, (format!("film {}", p + 8), 0, None));
        });
        let p = fresh();
        cell!("save (new and existing, repointed)", async {
            cast(store, &mut m, p).await;
            film(p + 6, Some(p)).save(store).await.unwrap();
            m.films
                .insert(p + 6, (format!("film {}", p + 6), 0, Some(p)));
            film(p, Some(p + 1)).save(store).await.unwrap();
            m.films.get_mut(&p).unwrap().2 = Some(p + 1);
        });
        let p = fresh();
        cell!("update_one (typed, conditional, repointing)", async {
            cast(store, &mut m, p).await;
            let retitle = Update::new().set(Film::TITLE, "Retitled");
            assert!(Film::update_one(store, Film::ID.eq(p), retitle)
                .await
                .unwrap());
            m.films.get_mut(&p).unwrap().0 = "Retitled".into();
            let no = Film::ID.eq(p).and(Film::N.gt(5));
            let inc = || Update::new().inc(Film::N, 1);
            assert!(!Film::update_one(store, no, inc()).await.unwrap());
            assert!(Film::update_one(store, Film::ID.eq(p), inc())
                .await
                .unwrap());
            m.films.get_mut(&p).unwrap().1 = 1;
            let repoint = Update::new().set(Film::DIRECTOR, film(0, Some(p + 1)).director);
            assert!(Film::update_one(store, Film::ID.eq(p + 1), repoint)
                .await
                .unwrap());
            m.films.get_mut(&(p + 1)).unwrap().2 = Some(p + 1);
        });
        let p = fresh();
        cell!("delete", async {
            cast(store, &mut m, p).await;
            assert!(Film::delete(store, &p).await.unwrap());
            m.films.remove(&p);
            // The source, no longer copied by that film, renamed: the other copy follows.
            let rename = Update::new().set(Person::NAME, "Ann Lee-Wu");
            assert!(Person::update_one(store, Person::ID.eq(p), rename)
                .await
                .unwrap());
            m.people.get_mut(&p).unwrap().name = "Ann Lee-Wu".into();
        });
        let p = fresh();
        cell!("transaction (committed and aborted)", async {
            cast(store, &mut m, p).await;
            transaction(store, |tx| {
                Box::pin(async move {
                    film(p + 7, Some(p)).insert(tx).await?;
                    let repoint = Update::new().set(Film::DIRECTOR, film(0, Some(p + 1)).director);
                    Film::update_one(tx, Film::ID.eq(p), repoint).await?;
                    Ok(())
                })
            })
            .await
            .unwrap();
            m.films
                .insert(p + 7, (format!("film {}", p + 7), 0, Some(p)));
            m.films.get_mut(&p).unwrap().2 = Some(p + 1);
            aborted(
                transaction(store, |tx| {
                    Box::pin(async move {
                        film(p + 8, Some(p)).insert(tx).await?;
                        Film::delete(tx, &(p + 1)).await?;
                        abort::<()>()
                    })
                })
                .await,
            );
        });
        let p = fresh();
        cell!("repair_copies (after another tool)", async {
            cast(store, &mut m, p).await;
            let wrong = doc! {"_id": p + 1, "name": "Wrong"};
            let mut edit = query::Update {
                set: vec![("director".into(), Bson::Document(wrong))],
                ..query::Update::default()
            };
            store
                .update_one("m_films", &by_id(p + 2), &mut edit, false)
                .await
                .unwrap();
            assert!(!Film::verify_copies(store).await.unwrap().is_empty());
            Film::repair_copies(store, &Options::default())
                .await
                .unwrap();
        });
    }
}

pub(super) async fn source(store: &AnyStore, cells: &mut Cells) {
    reference(store, cells, false).await;
}

pub(super) async fn holder(store: &AnyStore, cells: &mut Cells) {
    reference(store, cells, true).await;
}
