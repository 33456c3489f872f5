//! `pattern`: adopt the patterns on existing MongoDB data from the command line. It advises
//! which pattern a database needs and where (a sample of each collection, each finding with
//! its code and commands), analyzes a collection (how its arrays or series are distributed, with a suggested
//! threshold or bucket size), migrates it into the pattern's layout (in batches, each one
//! transaction that also moves a checkpoint: a run killed at any moment resumes where it
//! stopped when run again), and verifies what the layout promises.
//!
//! The layouts are given as arguments, not types: the command builds the same
//! [`OutlierSpec`](pattern_core::spec::OutlierSpec) and [`BucketSpec`](pattern_core::spec::BucketSpec) the derives would, with the derives' default names, and
//! calls [`pattern_core::adopt`].
//!
//! # Exit codes
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success: the verification found the layout clean, the migration is done and verified clean, or the analysis or the advice ran (with findings or without) |
//! | 1 | an internal or unexpected error |
//! | 2 | a usage error: a bad or missing argument (clap's), settings the library refused, a run with other settings than its checkpoint's (part-way or finished), or a collection or field that is not there; nothing is written |
//! | 3 | the data has layout defects: `verify` found some, or the migration's final verification did; or `indexes` found a needed index missing or a stale one of the library's; or `migrate attributes` left a document it could not rewrite |
//! | 4 | the server cannot be reached (or did not answer in time) |
//! | 5 | the migration (or the follower) stopped on a data or server error (a document it cannot migrate, contention with another writer...): the message names the cause; running the same command again resumes after the last committed batch |
//! | 6 | `pattern follow`: another follower of that name holds the lease; nothing was applied |
//!
//! `pattern follow` runs until Ctrl-C (exit 0), or with `--once` until it has applied what is
//! there; it exits 2 when no follower of that name ever ran on the database, 6 when another
//! follower of that name holds its lease (runs elsewhere, or died less than its lease ago:
//! `--lease` sets this one's), 5 when the follower stops on another error (a change whose
//! writes kept conflicting past every retry, a rule the data refuses): what it applied before
//! is kept, and running it again goes on from there. With `--json` (or stdout not a terminal) it prints one JSON
//! status a line every second before its report.
//!
//! Errors go to stderr as `error: <message>`; with `--json`, stdout also gets one JSON document
//! `{"error": "<message>", "code": N}`. Otherwise, with `--json`, stdout holds exactly one JSON
//! document: the report.

mod args;
mod commands;
mod exit;
mod progress;
mod render;
mod specs;

use std::process::ExitCode;

use clap::Parser;

use args::Cli;
use exit::{Failure, Outcome};

fn main() -> ExitCode {
    let json_asked = std::env::args_os().any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => exit::refuse_arguments(e, json_asked),
    };
    let json = cli.json;
    logs(cli.verbose, cli.log_format);
    pattern_core::observe::record_query_text(cli.log_query_text);
    exit::finish(run(cli), json)
}

/// With `-v` (INFO) or `-vv` (DEBUG), the library's spans (each operation, when it closes,
/// with its fields) and events (progress) go to stderr as text or JSON lines; stdout keeps
/// only the report.
fn logs(verbose: u8, format: args::LogFormat) {
    use tracing_subscriber::fmt::format::FmtSpan;
    let level = match verbose {
        0 => return,
        1 => tracing::Level::INFO,
        _ => tracing::Level::DEBUG,
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_span_events(FmtSpan::CLOSE)
        .with_ansi(false);
    let _ = match format {
        args::LogFormat::Text => builder.try_init(),
        args::LogFormat::Json => builder.json().try_init(),
    };
}

/// Runs the command on an async runtime; a panic (a bug) is an internal error too: exit 1, not
/// Rust's 101.
fn run(cli: Cli) -> Result<Outcome, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::internal(format!("cannot start the async runtime: {e}")))
        .and_then(|rt| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rt.block_on(commands::run(cli))
            }))
            .unwrap_or_else(|_| {
                Err(Failure::internal(
                    "internal error (a bug: the panic above says where)",
                ))
            })
        })
}
