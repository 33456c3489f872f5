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
    let before = snapshot().await;
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
/// How long past its kill time a run that has committed no batch yet may go on: on a loaded
/// machine a run's start (connecting, ending the sessions of the killed run, the indexes, the
/// first reads) can take longer than the kill window, and a kill there would test nothing of
/// the resume. (A run killed while the server builds an index leaves the build running; on
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

/// Runs `args` as a child process, each run killed (SIGKILL) after a random 300 to 1,500 ms
/// unless it ended first, until `want` kills landed after the run had committed a batch (or
/// `max_runs` runs, or the migration finished). A run that has committed no batch at its kill
/// time (a loaded machine: its start, the source index, the scan take longer) is killed as
/// soon as it commits one instead (at most [`KILL_WAIT`] later), so that every kill lands in
/// the middle of the migration rather than before it.
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
        let delay = Duration::from_millis(rng.range(300, 1500));
        let started = Instant::now();
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
            let elapsed = started.elapsed();
            if elapsed >= delay
                && (elapsed >= delay + KILL_WAIT || checkpoint(db, ckpt).await.0 > before)
            {
                break None;
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
                "run {attempt}: ended by itself ({status}) after {:?}, before its kill at {delay:?}; checkpoint {before} -> {after}",
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
