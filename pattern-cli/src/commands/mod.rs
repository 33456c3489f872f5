//! The subcommands, one module each: each builds the specs from its arguments and calls
//! [`pattern_core::adopt`], then renders the report ([`crate::render`]).

mod advise;
mod analyze;
mod archive;
mod attributes;
mod convert;
mod follow;
mod indexes;
mod migrate;
mod verify;

use pattern_core::adopt::{self, Options, Progress};
use pattern_core::store::MongoStore;

pub(crate) use archive::Archived;

use crate::args::{Cli, Command, RunArgs};
use crate::exit::{Failure, Outcome};
use crate::progress::Bars;

/// What every command runs with.
pub(crate) struct Context<'a> {
    pub store: &'a MongoStore,
    /// The options of every call: the progress bars, unless `--quiet` or `--json`.
    pub base: Options<'a>,
    /// The bars, finished (left on their own lines) once the library is done.
    pub bars: &'a Bars,
}

/// How long the command waits for the driver's shutdown once it is done.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Connects to the server and runs the command.
pub(crate) async fn run(cli: Cli) -> Result<Outcome, Failure> {
    let Some(uri) = cli.uri.filter(|u| !u.trim().is_empty()) else {
        return Err(Failure::usage(
            "no server given: pass --uri <connection string> or set MONGODB_URI",
        ));
    };
    let Some(db) = cli.db.filter(|d| !d.is_empty()) else {
        return Err(Failure::usage("the database is required: pass --db <name>"));
    };
    let store = MongoStore::connect(&uri, &db)
        .await
        .map_err(|e| Failure::reading(e.into()))?;
    let bars = Bars::new(!cli.quiet && !cli.json);
    let on_progress = |p: &Progress<'_>| bars.update(p);
    let progress: Option<adopt::OnProgress<'_>> = if bars.enabled {
        Some(&on_progress)
    } else {
        None
    };
    let cx = Context {
        store: &store,
        base: Options {
            progress,
            ..Options::default()
        },
        bars: &bars,
    };
    let out = match cli.command {
        Command::Advise(a) => advise::run(&a, &cx).await,
        Command::Analyze(a) => analyze::run(a, &cx).await,
        Command::Migrate(a) => migrate::run(a, &cx).await,
        Command::Verify(a) => verify::run(a, &cx).await,
        Command::Indexes(a) => indexes::run(a, &cx).await,
        Command::Convert(a) => convert::run(a, &cx).await,
        Command::Archive(a) => archive::run(a, &cx).await,
        Command::Follow(a) => follow::run(&a, &cx, cli.json).await,
    };
    // Let the driver finish what it still has under way (the abort of a transaction that an
    // error dropped, the sessions to end) before the runtime goes: its tasks cut off at exit
    // panic, on stderr, before the command's own `error:` line. Bounded: the driver's shutdown
    // can wait forever on a task that never ends (against an unreachable server, about one run
    // in 360 under load: the process idle, no timer set), and then the command ends without it.
    let client = store.database().client().clone();
    let _ = tokio::time::timeout(SHUTDOWN_WAIT, client.shutdown()).await;
    let out = out?;
    bars.finish();
    Ok(out)
}

/// The options of a migration run: `base` with the run's arguments.
fn run_options<'a>(run: &RunArgs, base: Options<'a>, remove_source: bool) -> Options<'a> {
    Options {
        dry_run: run.dry_run,
        batch_items: run.batch,
        remove_source,
        verify: !run.no_verify,
        ..base
    }
}
