//! The kill-and-resume harness of the migrations: runs killed mid-migration, and runs with
//! other settings than the checkpoint's, refused.

use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use pattern_core::store::query::{Filter, FindOptions};
use pattern_core::store::Store;

use super::{show, with_arg, Db, Rng, BIN};

/// Runs `args` with each of `changes` applied in turn: each is refused with exit 2 and the
/// words of a changed setting (`part_way` or finished), and leaves `colls` and the checkpoints
/// byte-identical.
pub(crate) async fn refused_with_other_settings(
    db: &Db,
    args: &[&str],
    changes: &[(&str, Option<&str>)],
    colls: &[&str],
    part_way: bool,
) {
    let snapshot = || async {
        let mut all = Vec::new();
        for c in colls.iter().chain(&["pattern_migrations"]) {
            all.push(db.raw(c, &["_id"]).await);
        }
        (all, db.store.collection_names().await.unwrap())
    };
    // A killed run's last request (a transaction's commit, a recorded session) reaches the
    // server before the kill and may still be applied after it: the runs below are judged
    // against the data once it has stopped moving.
    let mut before = snapshot().await;
    let waited = Instant::now();
    loop {
        tokio::time::sleep(QUIET).await;
        let now = snapshot().await;
        if now == before {
            break;
        }
        assert!(
            waited.elapsed() < KILL_WAIT,
            "the data still moves {:?} after the last run",
            waited.elapsed()
        );
        eprintln!("the data moved after the last run: waiting for it to settle");
        before = now;
    }
    for (flag, value) in changes {
        let changed = with_arg(args, flag, *value);
        let out = db.run(&changed);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag} {value:?}: {}",
            show(&out)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        let words = if part_way {
            "is part-way with other settings"
        } else {
            "finished with other settings"
        };
        assert!(err.contains(words), "{flag}: {err}");
        assert!(
            err.contains("db.pattern_migrations.deleteOne({_id: "),
            "{flag}: {err}"
        );
        assert!(
            snapshot().await == before,
            "{flag} {value:?}: the data changed"
        );
    }
    eprintln!(
        "{} runs with other settings refused, data unchanged",
        changes.len()
    );
}
/// How long the data must stay unchanged after the last killed run before runs are judged
/// against it.
const QUIET: Duration = Duration::from_millis(500);

/// How long a run that has committed no batch yet may go on before it is killed anyway: on a
/// loaded machine a run's start (connecting, ending the sessions of the killed run, the indexes,
/// the first reads) takes a while, and a kill there would test nothing of the resume. (A run killed while the server builds an index leaves the build running; on
/// SecantusDB a second build of the same index then conflicted with it for minutes.)
pub(crate) const KILL_WAIT: Duration = Duration::from_secs(120);

/// What the kills of [`kill_repeatedly`] hit.
pub(crate) struct Kills {
    /// Runs killed before they ended.
    pub mid_run: usize,
    /// Of those, runs that had committed a batch (moved the checkpoint) when killed.
    pub mid_migration: usize,
}

/// The version of checkpoint `name` (0: none yet) and whether it says finished.
pub(crate) async fn checkpoint(db: &Db, name: &str) -> (i64, bool) {
    let found = db
        .store
        .find(
            pattern_core::adopt::CHECKPOINTS,
            &Filter::eq("_id", name),
            &FindOptions::default(),
        )
        .await
        .expect("read the checkpoint");
    match found.first() {
        Some(d) => (
            d.get("version")
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
                .unwrap_or(0),
            d.get_str("state") == Ok("finished"),
        ),
        None => (0, false),
    }
}

/// Runs `args` as a child process, each run killed (SIGKILL) a random 0 to 100 ms after it
/// committed its first batch (moved the checkpoint) unless it ended first (a whole run of 40,000
/// items takes about half a second here: a later kill often found it finished), until `want` kills
/// landed after the run had committed a batch (or `max_runs` runs, or the migration
/// finished). The kill follows the run's progress, not the clock, so that it lands in the
/// middle of the migration on a fast build (a whole run can take about a second) as on a
/// loaded machine (where a run's start, the source index, the scan take longer); a run that
/// commits nothing is killed after [`KILL_WAIT`].
pub(crate) async fn kill_repeatedly(
    db: &Db,
    args: &[&str],
    ckpt: &str,
    want: usize,
    max_runs: usize,
    rng: &mut Rng,
) -> Kills {
    let mut kills = Kills {
        mid_run: 0,
        mid_migration: 0,
    };
    for attempt in 1..=max_runs {
        let (before, finished) = checkpoint(db, ckpt).await;
        if finished || kills.mid_migration >= want {
            break;
        }
        let delay = Duration::from_millis(rng.range(0, 100));
        let started = Instant::now();
        let mut committed: Option<Instant> = None;
        let mut child = StdCommand::new(BIN)
            .env("MONGODB_URI", &db.uri)
            .args(["--db", &db.name])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        // Poll, so that a run ending before its kill is seen as such.
        let status = loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                break Some(status);
            }
            if started.elapsed() >= KILL_WAIT {
                break None;
            }
            match committed {
                Some(at) if at.elapsed() >= delay => break None,
                Some(_) => {}
                None if checkpoint(db, ckpt).await.0 > before => committed = Some(Instant::now()),
                None => {}
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        let killed = status.is_none();
        if killed {
            child.kill().expect("kill");
            child.wait().expect("wait");
        }
        let (after, finished) = checkpoint(db, ckpt).await;
        let batches = after - before;
        match status {
            Some(status) => eprintln!(
                "run {attempt}: ended by itself ({status}) after {:?}, before its kill ({delay:?} after its first batch); checkpoint {before} -> {after}",
                started.elapsed()
            ),
            None => {
                kills.mid_run += 1;
                if batches > 0 && !finished {
                    kills.mid_migration += 1;
                }
                eprintln!(
                    "run {attempt}: killed after {:?}, {batches} batch(es) committed by then (checkpoint {before} -> {after}{})",
                    started.elapsed(),
                    if finished { ", finished" } else { "" }
                );
            }
        }
    }
    eprintln!(
        "{} kills landed mid-run, {} after committing a batch",
        kills.mid_run, kills.mid_migration
    );
    kills
}

pub(crate) fn run_timed(db: &Db, args: &[&str], what: &str) -> Output {
    let started = Instant::now();
    let out = db.run(args);
    eprintln!(
        "{what}: exit {:?} after {:?}",
        out.status.code(),
        started.elapsed()
    );
    out
}

/// How long a run started right after a kill may take to record a batch: well under the 60 s
/// after which the server expires a transaction the killed run left open, so that a run that
/// waits it out fails the test rather than passing late.
pub(crate) const NEXT_BATCH_WITHIN: Duration = Duration::from_secs(45);

/// The position an archive's checkpoint `name` records (null: none yet) and whether it says
/// finished.
async fn archive_position(db: &Db, name: &str) -> (bson::Bson, bool) {
    match pattern_tests::checkpoint(&db.store, name).await {
        Some(d) => (
            d.get("position").cloned().unwrap_or(bson::Bson::Null),
            d.get_str("state") == Ok("finished"),
        ),
        None => (bson::Bson::Null, false),
    }
}

/// Runs the archive `args` as a child process `kills` times (or until it finishes), each run
/// started as soon as the one before was killed, and killed (SIGKILL) a random 0 to 400 ms
/// after it recorded a batch: mostly inside a move, the killed run's last batch part-way. Each
/// run must record a batch within [`NEXT_BATCH_WITHIN`] (so get past what the killed run left,
/// an open transaction included) and a run that ends by itself must exit 0: a run that gives
/// up (exit 5, the write conflicts of an open transaction) fails the test with its stderr.
/// Returns how many runs were killed.
pub(crate) async fn kill_after_batches(
    db: &Db,
    args: &[&str],
    ckpt: &str,
    kills: usize,
    rng: &mut Rng,
) -> usize {
    let mut killed = 0;
    for run in 1..=kills {
        let (from, finished) = archive_position(db, ckpt).await;
        if finished {
            break;
        }
        let delay = Duration::from_millis(rng.range(0, 400));
        let started = Instant::now();
        let mut child = StdCommand::new(BIN)
            .env("MONGODB_URI", &db.uri)
            .args(["--db", &db.name])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut recorded: Option<Instant> = None;
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                let out = child.wait_with_output().expect("wait");
                assert!(
                    status.success(),
                    "run {run} after {killed} kill(s) ended by itself after {:?}: {}",
                    started.elapsed(),
                    show(&out)
                );
                eprintln!(
                    "run {run}: finished by itself after {:?}",
                    started.elapsed()
                );
                return killed;
            }
            if recorded.is_none() && archive_position(db, ckpt).await.0 != from {
                recorded = Some(Instant::now());
                eprintln!(
                    "run {run}: recorded a batch {:?} after its start",
                    started.elapsed()
                );
            }
            if recorded.is_some_and(|at| at.elapsed() >= delay) {
                child.kill().expect("kill");
                child.wait().expect("wait");
                killed += 1;
                eprintln!("run {run}: killed {delay:?} after it recorded a batch");
                break;
            }
            if recorded.is_none() && started.elapsed() > NEXT_BATCH_WITHIN {
                child.kill().expect("kill");
                let out = child.wait_with_output().expect("wait");
                panic!(
                    "run {run} after {killed} kill(s) recorded no batch in {NEXT_BATCH_WITHIN:?}: {}",
                    show(&out)
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    killed
}
