//! The command line as clap parses it: the global options and the subcommands, one module per
//! subcommand, and the layouts' arguments several of them share ([`layout`]). The arguments
//! are kept as parsed (owned `String`s): the specs the commands build borrow from them.

mod advise;
mod analyze;
mod archive;
mod attributes;
mod convert;
mod follow;
mod indexes;
mod layout;
mod migrate;
mod verify;

use clap::{Parser, Subcommand};

pub(crate) use advise::Advise;
pub(crate) use analyze::{Analyze, AnalyzeBucket, AnalyzeOutlier};
pub(crate) use archive::{Archive, ArchiveBucket, ArchiveDocument};
pub(crate) use attributes::MigrateAttributes;
pub(crate) use convert::{Convert, ConvertMoney, FinishArg};
pub(crate) use follow::Follow;
pub(crate) use indexes::{Indexes, IndexesBucket};
pub(crate) use layout::{BucketFields, MoneyFields, OutlierArgs, OutlierLayout, RunArgs};
pub(crate) use migrate::{Migrate, MigrateBucket, MigrateOutlier};
pub(crate) use verify::{Verify, VerifyBucket};

const EXIT_CODES: &str = "\
Exit codes:
  0  success: verify found the layout clean; the migration is done and verified clean;
     the analysis or the advice ran (with findings or without)
  1  internal or unexpected error
  2  usage error: a bad or missing argument, settings the library refused, a run with
     other settings than its checkpoint's (part-way or finished: the message says how to
     start over), or a collection or field that is not there (nothing is written)
  3  the data has layout defects (verify found some, or the migration's final verify did),
     or `indexes` found needed indexes missing or the library's stale ones, or `convert
     money` refused a value or `verify money` found a defect, or `migrate attributes` left
     a document it could not rewrite
  4  cannot reach the server (or it did not answer in time)
  5  the migration stopped on a data or server error (the message names the cause);
     running the same command again resumes after the last committed batch

With --json, stdout holds exactly one JSON document: the report, or {\"error\": ..., \"code\": N}.
Progress bars go to stderr, only when it is a terminal (not with --quiet or --json).";

/// Find which pattern a MongoDB database needs; analyze, migrate and verify collections in the
/// outlier, bucket and attribute layouts; convert money fields to Decimal128.
#[derive(Parser, Debug)]
#[command(name = "pattern", version, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// The server's connection string (default: $MONGODB_URI).
    #[arg(
        long,
        env = "MONGODB_URI",
        global = true,
        hide_env_values = true,
        help_heading = "Global options"
    )]
    pub uri: Option<String>,
    /// The database (required).
    #[arg(long, global = true, help_heading = "Global options")]
    pub db: Option<String>,
    /// Print the report as one JSON document on stdout, and nothing else there.
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
    /// No progress bars.
    #[arg(long, short, global = true, help_heading = "Global options")]
    pub quiet: bool,
    /// Log what the library does to stderr: `-v` each operation's span and progress (INFO),
    /// `-vv` more (DEBUG). Never on stdout.
    #[arg(short, long = "verbose", action = clap::ArgAction::Count, global = true, help_heading = "Global options")]
    pub verbose: u8,
    /// The logs' format on stderr (with `-v`): one line of text, or one JSON object, each.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true, help_heading = "Global options")]
    pub log_format: LogFormat,
    /// Log each command's filter too (`db.query.text`, as Extended JSON: the values it
    /// compares with included), a DEBUG event: with `-vv`. Off by default.
    #[arg(long, global = true, help_heading = "Global options")]
    pub log_query_text: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// How `-v` logs are written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line.
    Json,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Read a sample of each collection and report which pattern fits where, with the
    /// evidence, the Rust code to paste and the commands that move the data. Writes nothing.
    Advise(Advise),
    /// Read a collection once and report how its arrays or series are distributed, with a
    /// suggested threshold or bucket size, or its documents' schema versions. Writes nothing.
    #[command(subcommand)]
    Analyze(Analyze),
    /// Move a collection's data into the pattern's layout, in resumable batches, then verify.
    #[command(subcommand)]
    Migrate(Migrate),
    /// Check every promise of the layout over the stored documents.
    #[command(subcommand)]
    Verify(Verify),
    /// Compare the collections' indexes with those the layout needs: present, missing, the
    /// library's stale ones, the user's own (never dropped). Writes nothing.
    #[command(subcommand)]
    Indexes(Indexes),
    /// Convert a field's representation in place, in resumable batches, then verify.
    #[command(subcommand)]
    Convert(Convert),
    /// Move old data into an archive collection, exactly once, beside live writes.
    #[command(subcommand)]
    Archive(Archive),
    /// Keep derived data (copies, computed values, subsets) exact under writes by other
    /// programs: the application's follower, from the rules it recorded, until Ctrl-C. A
    /// status line on a terminal; otherwise (and with --json) one JSON status a line, every
    /// second, the last when it stops.
    Follow(Follow),
}

#[cfg(test)]
mod tests;
