//! `pattern`: adopt the outlier and bucket patterns on existing MongoDB data from the command
//! line. It analyzes a collection (how its arrays or series are distributed, with a suggested
//! threshold or bucket size), migrates it into the pattern's layout (in batches, each one
//! transaction that also moves a checkpoint: a run killed at any moment resumes where it
//! stopped when run again), and verifies what the layout promises.
//!
//! The layouts are given as arguments, not types: the command builds the same
//! [`OutlierSpec`] and [`BucketSpec`] the derives would, with the derives' default names, and
//! calls [`pattern_core::adopt`].
//!
//! # Exit codes
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success: the verification found the layout clean, the migration is done and verified clean, or the analysis ran |
//! | 1 | an internal or unexpected error |
//! | 2 | a usage error: a bad or missing argument (clap's), settings the library refused, a run with other settings than its checkpoint's (part-way or finished), or a collection or field that is not there; nothing is written |
//! | 3 | the data has layout defects: `verify` found some, or the migration's final verification did; or `indexes` found a needed index missing or a stale one of the library's |
//! | 4 | the server cannot be reached (or did not answer in time) |
//! | 5 | the migration stopped on a data or server error (a document it cannot migrate, contention with another writer...): the message names the cause; running the same command again resumes after the last committed batch |
//!
//! Errors go to stderr as `error: <message>`; with `--json`, stdout also gets one JSON document
//! `{"error": "<message>", "code": N}`. Otherwise, with `--json`, stdout holds exactly one JSON
//! document: the report.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use pattern_core::adopt::{
    self, BucketAnalysis, Distribution, Finish, LayoutDefect, MigrateReport, MoneyConversion,
    MoneyDefect, MoneyReport, MoneyVerified, Options, OutlierAnalysis, Progress, Source, Verified,
    DEFAULT_BATCH_ITEMS,
};
use pattern_core::money::Form;
use pattern_core::{
    spec::{Aggregate, AggregateOp, BucketSpec, Keeps, OutlierSpec, SeriesOrder, SeriesSpec},
    Error, MongoStore,
};
use serde::Serialize;

/// Defects listed in the human report at most.
const MAX_DEFECTS_SHOWN: usize = 50;

const EXIT_CODES: &str = "\
Exit codes:
  0  success: verify found the layout clean; the migration is done and verified clean
  1  internal or unexpected error
  2  usage error: a bad or missing argument, settings the library refused, a run with
     other settings than its checkpoint's (part-way or finished: the message says how to
     start over), or a collection or field that is not there (nothing is written)
  3  the data has layout defects (verify found some, or the migration's final verify did),
     or `indexes` found needed indexes missing or the library's stale ones, or `convert
     money` refused a value or `verify money` found a defect
  4  cannot reach the server (or it did not answer in time)
  5  the migration stopped on a data or server error (the message names the cause);
     running the same command again resumes after the last committed batch

With --json, stdout holds exactly one JSON document: the report, or {\"error\": ..., \"code\": N}.
Progress bars go to stderr, only when it is a terminal (not with --quiet or --json).";

/// Analyze, migrate and verify MongoDB collections in the outlier and bucket layouts; convert
/// money fields to Decimal128.
#[derive(Parser, Debug)]
#[command(name = "pattern", version, after_help = EXIT_CODES)]
struct Cli {
    /// The server's connection string (default: $MONGODB_URI).
    #[arg(
        long,
        env = "MONGODB_URI",
        global = true,
        hide_env_values = true,
        help_heading = "Global options"
    )]
    uri: Option<String>,
    /// The database (required).
    #[arg(long, global = true, help_heading = "Global options")]
    db: Option<String>,
    /// Print the report as one JSON document on stdout, and nothing else there.
    #[arg(long, global = true, help_heading = "Global options")]
    json: bool,
    /// No progress bars.
    #[arg(long, short, global = true, help_heading = "Global options")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Read a collection once and report how its arrays or series are distributed, with a
    /// suggested threshold or bucket size. Writes nothing.
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
}

#[derive(Subcommand, Debug)]
enum Convert {
    /// Amounts stored as scaled integers (1999 at scale 2) or display strings ("24.95") into a
    /// Decimal128 field, exactly or not at all; then, after a clean verification, optionally
    /// drop the old field or move the decimal into it.
    Money(ConvertMoney),
}

/// A money field and its old form.
#[derive(Args, Debug)]
struct MoneyFields {
    /// The collection, converted in place.
    #[arg(long)]
    collection: String,
    /// The old field (top level).
    #[arg(long)]
    from: String,
    /// The old field holds integers scaled by 10^SCALE (1999 at scale 2 = 19.99).
    #[arg(long, value_name = "SCALE", required_unless_present = "text", conflicts_with = "text",
          value_parser = clap::value_parser!(u32).range(0..=28))]
    scaled: Option<u32>,
    /// The old field holds display strings ("24.95").
    #[arg(long)]
    text: bool,
    /// The new field, a Decimal128 (top level).
    #[arg(long)]
    to: String,
}

#[derive(Args, Debug)]
struct ConvertMoney {
    #[command(flatten)]
    fields: MoneyFields,
    /// What happens to the old field once every document verified clean.
    #[arg(long, value_enum, default_value = "keep-both")]
    finish: FinishArg,
    /// Documents written per transaction at most (one checkpoint each; at most 100).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..).map(|n| n as usize))]
    batch: usize,
    /// Read everything, write nothing (no checkpoint), report what would change.
    #[arg(long)]
    dry_run: bool,
}

/// The last step of a money conversion.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum FinishArg {
    /// Keep the old field beside the new one.
    KeepBoth,
    /// Remove the old field.
    DropOld,
    /// Move the decimal into the old field's name (the new field goes).
    IntoOld,
}

#[derive(Subcommand, Debug)]
enum Indexes {
    /// The main collection (the layout needs no index there) and the overflow collection.
    Outlier(VerifyOutlier),
    /// The bucket collection.
    Bucket(IndexesBucket),
}

#[derive(Args, Debug)]
struct IndexesBucket {
    /// The bucket collection.
    #[arg(long)]
    collection: String,
    #[command(flatten)]
    fields: BucketFields,
    /// The item's time field, when the buckets keep time bounds (`<time>_min`/`<time>_max`):
    /// they need one more index.
    #[arg(long)]
    time: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Analyze {
    /// The arrays of a collection: items per document, sizes, a suggested threshold.
    Outlier(AnalyzeOutlier),
    /// A flat collection (one document per item), or with --buckets a bucket collection:
    /// items per key, sizes, a suggested bucket size.
    Bucket(AnalyzeBucket),
}

#[derive(Subcommand, Debug)]
enum Migrate {
    /// Move each array's items beyond the threshold into numbered overflow chunks, in place.
    Outlier(MigrateOutlier),
    /// Move a flat collection (one document per item) into buckets of `size` items per key.
    Bucket(MigrateBucket),
}

#[derive(Subcommand, Debug)]
enum Verify {
    /// Main arrays within the threshold, flags exactly on documents with overflow, chunks
    /// numbered 1, 2, 3... with counts matching, no orphans.
    Outlier(VerifyOutlier),
    /// Counts matching the arrays, at most `size` items, pages 1, 2, 3..., one open bucket per key.
    Bucket(VerifyBucket),
    /// Every amount a Decimal128 exactly equal to the old field's value (where it remains).
    Money(MoneyFields),
}

/// The outlier layout (the derive's attributes, with its defaults).
#[derive(Args, Debug)]
struct OutlierLayout {
    /// The main collection.
    #[arg(long)]
    collection: String,
    /// The array field.
    #[arg(long)]
    array: String,
    /// The field flagging a document that has overflow.
    #[arg(long, default_value = "has_extras")]
    flag: String,
    /// The field of an overflow chunk referencing its main document [default: <collection>_id].
    #[arg(long)]
    reference: Option<String>,
    /// The array field of an overflow chunk [default: <array>_extra].
    #[arg(long)]
    extra: Option<String>,
    /// Items per overflow chunk.
    #[arg(long, default_value_t = pattern_core::outlier::DEFAULT_CHUNK, value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    chunk: u32,
    /// The field counting a chunk's items.
    #[arg(long = "chunk-count", default_value = "count")]
    chunk_count: String,
    /// The field numbering a parent's chunks.
    #[arg(long, default_value = "seq")]
    seq: String,
}

#[derive(Args, Debug)]
struct AnalyzeOutlier {
    #[command(flatten)]
    layout: OutlierLayout,
    /// The threshold to count the documents over.
    #[arg(long, default_value_t = 50, value_parser = threshold_parser())]
    threshold: u32,
    /// The overflow collection, to count the overflow of documents flagged already (without
    /// it, only the main arrays are counted).
    #[arg(long)]
    overflow: Option<String>,
}

#[derive(Args, Debug)]
struct MigrateOutlier {
    #[command(flatten)]
    layout: OutlierLayout,
    /// Items kept in the main document at most.
    #[arg(long, value_parser = threshold_parser())]
    threshold: u32,
    /// The overflow collection.
    #[arg(long)]
    overflow: String,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args, Debug)]
struct VerifyOutlier {
    #[command(flatten)]
    layout: OutlierLayout,
    /// Items kept in the main document at most.
    #[arg(long, value_parser = threshold_parser())]
    threshold: u32,
    /// The overflow collection.
    #[arg(long)]
    overflow: String,
}

/// How a migration runs.
#[derive(Args, Debug)]
struct RunArgs {
    /// Items written per transaction at most (one checkpoint each).
    #[arg(long, default_value_t = DEFAULT_BATCH_ITEMS, value_parser = clap::value_parser!(u64).range(1..).map(|n| n as usize))]
    batch: usize,
    /// Read everything, write nothing (no checkpoint, no index), report what would change.
    #[arg(long)]
    dry_run: bool,
    /// Skip the verification at the end.
    #[arg(long)]
    no_verify: bool,
}

/// The bucket layout's fields (the derive's attributes, with its defaults).
#[derive(Args, Debug)]
struct BucketFields {
    /// The key field (in the buckets, and in a flat source).
    #[arg(long)]
    key: String,
    /// The array field of a bucket.
    #[arg(long, default_value = "history")]
    items: String,
    /// Items per bucket.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    size: u32,
    /// The field counting a bucket's items.
    #[arg(long, default_value = "count")]
    count: String,
    /// The field numbering a key's buckets 1, 2, 3...
    #[arg(long, default_value = "page")]
    page: String,
}

#[derive(Args, Debug)]
struct AnalyzeBucket {
    /// The collection: flat (one document per item) unless --buckets.
    #[arg(long)]
    collection: String,
    /// The key field.
    #[arg(long)]
    key: String,
    /// The collection is in the bucket layout already: count each document's array.
    #[arg(long)]
    buckets: bool,
    /// The array field of a bucket (with --buckets).
    #[arg(long, default_value = "history")]
    items: String,
    /// The bucket size to count the buckets at.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    size: u32,
}

#[derive(Args, Debug)]
struct MigrateBucket {
    /// The flat source collection (one document per item).
    #[arg(long)]
    from: String,
    /// The bucket collection to write.
    #[arg(long)]
    to: String,
    /// The field holding each item's time (a date, or epoch seconds): the items' order, and
    /// the prefix of the buckets' time bounds (`<time>_min`, `<time>_max`).
    #[arg(long)]
    time: String,
    #[command(flatten)]
    fields: BucketFields,
    /// Keep the sum of this item field in each bucket (`<field>_sum`). Repeatable.
    #[arg(long, value_name = "FIELD")]
    sum: Vec<String>,
    /// Keep the smallest value of this item field in each bucket (`<field>_min`). Repeatable.
    #[arg(long, value_name = "FIELD")]
    min: Vec<String>,
    /// Keep the largest value of this item field in each bucket (`<field>_max`). Repeatable.
    #[arg(long, value_name = "FIELD")]
    max: Vec<String>,
    /// Delete the migrated source documents, in the transaction that writes their buckets.
    #[arg(long)]
    remove_source: bool,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args, Debug)]
struct VerifyBucket {
    /// The bucket collection.
    #[arg(long)]
    collection: String,
    #[command(flatten)]
    fields: BucketFields,
}

fn threshold_parser() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=i32::MAX as i64)
}

/// How the command ends when it does not succeed.
#[derive(Debug)]
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: 2,
            message: message.into(),
        }
    }

    /// A library error: unreachable server 4, refused settings 2, else `otherwise`.
    fn from_core(e: Error, otherwise: u8) -> Self {
        let code = if e.is_unavailable() {
            4
        } else if matches!(
            e,
            Error::InvalidInput(_) | Error::SettingsChanged { .. } | Error::SourceNotFound { .. }
        ) {
            2
        } else {
            otherwise
        };
        let message = if code == 4 {
            format!("cannot reach the server (--uri or MONGODB_URI): {e}")
        } else if code == 5 {
            format!(
                "the migration stopped: {e}. Every batch committed before is kept (with its checkpoint); \
                 running the same command again resumes after the last one"
            )
        } else {
            e.to_string()
        };
        Failure { code, message }
    }
}

/// What a command produced: its report, and whether the data had defects (exit 3).
struct Outcome {
    json: serde_json::Value,
    human: String,
    defects: bool,
}

fn main() -> ExitCode {
    let json_asked = std::env::args_os().any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            if json_asked && e.use_stderr() {
                let text = e.to_string();
                let first = text.lines().next().unwrap_or_default();
                print_json(&ErrorReport {
                    error: first.strip_prefix("error: ").unwrap_or(first).to_owned(),
                    code: 2,
                });
            }
            e.exit();
        }
    };
    let json = cli.json;
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure {
            code: 1,
            message: format!("cannot start the async runtime: {e}"),
        })
        .and_then(|rt| {
            // A panic (a bug) is an internal error too: exit 1, not Rust's 101.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(run(cli))))
                .unwrap_or_else(|_| {
                    Err(Failure {
                        code: 1,
                        message: "internal error (a bug: the panic above says where)".into(),
                    })
                })
        });
    match result {
        Ok(out) => {
            if json {
                print_json(&out.json);
            } else {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(out.human.as_bytes());
                let _ = stdout.flush();
            }
            ExitCode::from(if out.defects { 3 } else { 0 })
        }
        Err(f) => {
            eprintln!("error: {}", f.message);
            if json {
                print_json(&ErrorReport {
                    error: f.message,
                    code: f.code,
                });
            }
            ExitCode::from(f.code)
        }
    }
}

#[derive(Serialize)]
struct ErrorReport {
    error: String,
    code: u8,
}

fn print_json<T: Serialize>(v: &T) {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|e| {
        format!("{{\"error\": \"the report does not serialize: {e}\", \"code\": 1}}")
    });
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
    let _ = stdout.flush();
}

fn leak(s: impl Into<String>) -> &'static str {
    Box::leak(s.into().into_boxed_str())
}

async fn run(cli: Cli) -> Result<Outcome, Failure> {
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
        .map_err(|e| Failure::from_core(e, 1))?;
    let bars = Bars::new(!cli.quiet && !cli.json);
    let on_progress = |p: &Progress<'_>| bars.update(p);
    let progress: Option<adopt::OnProgress<'_>> = if bars.enabled {
        Some(&on_progress)
    } else {
        None
    };
    let base = Options {
        progress,
        ..Options::default()
    };
    let out = match cli.command {
        Command::Analyze(Analyze::Outlier(a)) => {
            let overflow = a.overflow.clone().unwrap_or_else(|| {
                // No overflow collection named: one that cannot exist (reads find nothing).
                format!("{}.pattern_cli_no_overflow", a.layout.collection)
            });
            let spec = outlier_spec(&a.layout, a.threshold, &overflow)?;
            let r = adopt::analyze_outlier(&store, &spec, &base)
                .await
                .map_err(|e| Failure::from_core(e, 1))?;
            outcome(&r, render_outlier_analysis(&r, a.overflow.is_some()), false)?
        }
        Command::Analyze(Analyze::Bucket(a)) => {
            let spec = BucketSpec {
                collection: leak(a.collection.as_str()),
                key_field: leak(a.key.as_str()),
                items_field: leak(a.items.as_str()),
                count_field: "count",
                page_field: "page",
                size: a.size,
                keeps: Keeps::NONE,
            };
            let source = Source {
                collection: spec.collection,
                key_field: spec.key_field,
                time_field: "",
            };
            let from = (!a.buckets).then_some(&source);
            let r = adopt::analyze_bucket(&store, &spec, from, &base)
                .await
                .map_err(|e| Failure::from_core(e, 1))?;
            outcome(&r, render_bucket_analysis(&r, a.buckets), false)?
        }
        Command::Migrate(Migrate::Outlier(a)) => {
            let spec = outlier_spec(&a.layout, a.threshold, &a.overflow)?;
            let opts = run_options(&a.run, base, false);
            let r = adopt::migrate_outlier(&store, &spec, &opts)
                .await
                .map_err(|e| Failure::from_core(e, 5))?;
            bars.finish();
            let defects = r.verified.as_ref().is_some_and(|v| !v.is_clean());
            outcome(&r, render_migration(&r, "documents"), defects)?
        }
        Command::Migrate(Migrate::Bucket(a)) => {
            let keeps = bucket_keeps(&a)?;
            let spec = bucket_spec(&a.to, &a.fields, keeps)?;
            let source = Source {
                collection: leak(a.from.as_str()),
                key_field: spec.key_field,
                time_field: leak(a.time.as_str()),
            };
            let opts = run_options(&a.run, base, a.remove_source);
            let r = adopt::migrate_bucket(&store, &spec, &source, &opts)
                .await
                .map_err(|e| Failure::from_core(e, 5))?;
            bars.finish();
            let defects = r.verified.as_ref().is_some_and(|v| !v.is_clean());
            outcome(&r, render_migration(&r, "keys"), defects)?
        }
        Command::Verify(Verify::Outlier(a)) => {
            let spec = outlier_spec(&a.layout, a.threshold, &a.overflow)?;
            let r = adopt::verify_outlier(&store, &spec, &base)
                .await
                .map_err(|e| Failure::from_core(e, 1))?;
            bars.finish();
            let what = format!(
                "Verified `{}` and its overflow `{}`",
                spec.collection, spec.overflow.collection
            );
            outcome(&r, render_verified(&r, &what), !r.is_clean())?
        }
        Command::Verify(Verify::Bucket(a)) => {
            let spec = bucket_spec(&a.collection, &a.fields, Keeps::NONE)?;
            let r = adopt::verify_bucket(&store, &spec, &base)
                .await
                .map_err(|e| Failure::from_core(e, 1))?;
            bars.finish();
            let what = format!("Verified the buckets of `{}`", spec.collection);
            outcome(&r, render_verified(&r, &what), !r.is_clean())?
        }
        Command::Convert(Convert::Money(a)) => {
            let conv = money_conversion(&a.fields, a.finish);
            let opts = Options {
                dry_run: a.dry_run,
                batch_items: a.batch,
                ..base
            };
            let r = adopt::convert_money(&store, &conv, &opts)
                .await
                .map_err(|e| Failure::from_core(e, 5))?;
            bars.finish();
            let defects =
                !r.refused.is_empty() || r.verified.as_ref().is_some_and(|v| !v.is_clean());
            outcome(&r, render_money(&r), defects)?
        }
        Command::Verify(Verify::Money(a)) => {
            let conv = money_conversion(&a, FinishArg::KeepBoth);
            let r = adopt::verify_money(&store, &conv, &base)
                .await
                .map_err(|e| Failure::from_core(e, 1))?;
            bars.finish();
            let what = format!("Verified `{}`.{} -> {}", a.collection, a.from, a.to);
            outcome(&r, render_money_verified(&r, &what), !r.is_clean())?
        }
        Command::Indexes(Indexes::Outlier(a)) => {
            let spec = outlier_spec(&a.layout, a.threshold, &a.overflow)?;
            let r = adopt::index_report_outlier(&store, &spec)
                .await
                .map_err(|e| Failure::from_core(e, 1))?;
            let drift = r.iter().any(|x| !x.is_complete());
            outcome(&r, render_indexes(&r), drift)?
        }
        Command::Indexes(Indexes::Bucket(a)) => {
            let keeps = Keeps {
                bounds: a
                    .time
                    .as_ref()
                    .map(|t| (leak(format!("{t}_min")), leak(format!("{t}_max")))),
                summary: &[],
            };
            let spec = bucket_spec(&a.collection, &a.fields, keeps)?;
            let r = adopt::index_report_bucket(&store, &spec)
                .await
                .map_err(|e| Failure::from_core(e, 1))?;
            let drift = r.iter().any(|x| !x.is_complete());
            outcome(&r, render_indexes(&r), drift)?
        }
    };
    bars.finish();
    Ok(out)
}

/// Each collection's indexes, sorted as [`adopt::IndexReport`] sorts them.
fn render_indexes(reports: &[adopt::IndexReport]) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&format!("Indexes of `{}`", r.collection));
        out.push_str(if r.exists {
            "\n"
        } else {
            " (no such collection yet)\n"
        });
        for (what, names) in [
            ("needed, present", &r.present),
            (
                "needed, MISSING (created by ensure_indexes or first use)",
                &r.missing,
            ),
            ("the library's, STALE (not used by this layout)", &r.stale),
            ("yours (never dropped)", &r.users),
        ] {
            if !names.is_empty() {
                out.push_str(&format!("  {what}: {}\n", names.join(", ")));
            }
        }
    }
    out
}

fn outcome<T: Serialize>(report: &T, human: String, defects: bool) -> Result<Outcome, Failure> {
    let json = serde_json::to_value(report).map_err(|e| Failure {
        code: 1,
        message: format!("the report does not serialize: {e}"),
    })?;
    Ok(Outcome {
        json,
        human,
        defects,
    })
}

fn run_options<'a>(run: &RunArgs, base: Options<'a>, remove_source: bool) -> Options<'a> {
    Options {
        dry_run: run.dry_run,
        batch_items: run.batch,
        remove_source,
        verify: !run.no_verify,
        ..base
    }
}

/// The outlier spec the derive would build from the same attributes; `--reference` defaults to
/// `<collection>_id` (the derive's is `<struct name in snake case>_id`, and there is no struct).
fn outlier_spec(
    l: &OutlierLayout,
    threshold: u32,
    overflow: &str,
) -> Result<OutlierSpec<'static>, Failure> {
    let reference = l
        .reference
        .clone()
        .unwrap_or_else(|| format!("{}_id", l.collection));
    let extra = l
        .extra
        .clone()
        .unwrap_or_else(|| format!("{}_extra", l.array));
    let main = [("the array", &l.array), ("the flag", &l.flag)];
    distinct(
        &[("_id", &"_id".to_owned()), main[0], main[1]],
        "main document",
    )?;
    distinct(
        &[
            ("_id", &"_id".to_owned()),
            ("the reference", &reference),
            ("the extra array", &extra),
            ("the chunk count", &l.chunk_count),
            ("the chunk number", &l.seq),
        ],
        "overflow chunk",
    )?;
    Ok(OutlierSpec {
        collection: leak(l.collection.as_str()),
        items_field: leak(l.array.as_str()),
        threshold,
        flag_field: leak(l.flag.as_str()),
        overflow: SeriesSpec {
            collection: leak(overflow),
            key_field: leak(reference),
            items_field: leak(extra),
            count_field: leak(l.chunk_count.as_str()),
            size: l.chunk,
            order: SeriesOrder::Seq(leak(l.seq.as_str())),
            keeps: Keeps::NONE,
        },
    })
}

fn bucket_spec(
    collection: &str,
    f: &BucketFields,
    keeps: Keeps<'static>,
) -> Result<BucketSpec<'static>, Failure> {
    let spec = BucketSpec {
        collection: leak(collection),
        key_field: leak(f.key.as_str()),
        items_field: leak(f.items.as_str()),
        count_field: leak(f.count.as_str()),
        page_field: leak(f.page.as_str()),
        size: f.size,
        keeps,
    };
    // Every field a bucket stores, by role: no two may share a name.
    let mut names: Vec<(String, String)> = vec![
        ("_id".into(), "_id".into()),
        ("the key (--key)".into(), f.key.clone()),
        ("the items (--items)".into(), f.items.clone()),
        ("the count (--count)".into(), f.count.clone()),
        ("the page (--page)".into(), f.page.clone()),
    ];
    if let Some((min, max)) = keeps.bounds {
        names.push(("the time bounds' min".into(), min.into()));
        names.push(("the time bounds' max".into(), max.into()));
        names.push((
            "the time bounds' mark".into(),
            pattern_core::spec::BOUNDED_FIELD.into(),
        ));
    }
    if !keeps.summary.is_empty() {
        names.push((
            "the summary's mark".into(),
            pattern_core::spec::SUMMARIZED_FIELD.into(),
        ));
    }
    for a in keeps.summary {
        names.push((
            format!("--{} {}", a.op.name(), a.item_field),
            a.field.into(),
        ));
    }
    let refs: Vec<(&str, &String)> = names.iter().map(|(r, n)| (r.as_str(), n)).collect();
    distinct(&refs, "bucket")?;
    Ok(spec)
}

/// Refuses two roles stored under one field name.
fn distinct(names: &[(&str, &String)], what: &str) -> Result<(), Failure> {
    for (i, (role, name)) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(Failure::usage(format!(
                "{role} of a {what} needs a field name, got an empty one"
            )));
        }
        if let Some((other, _)) = names[..i].iter().find(|(_, n)| n == name) {
            return Err(Failure::usage(format!(
                "{other} and {role} would both be stored in the {what}'s field {name:?}: name one differently"
            )));
        }
    }
    Ok(())
}

/// The time bounds and summary a migrated bucket keeps, named as the derive names them:
/// `<time>_min`/`<time>_max`, `<field>_<op>`.
fn bucket_keeps(a: &MigrateBucket) -> Result<Keeps<'static>, Failure> {
    let bounds = (
        leak(format!("{}_min", a.time)),
        leak(format!("{}_max", a.time)),
    );
    let mut summary: Vec<Aggregate<'static>> = Vec::new();
    let ops = [
        (AggregateOp::Sum, &a.sum),
        (AggregateOp::Min, &a.min),
        (AggregateOp::Max, &a.max),
    ];
    for (op, fields) in ops {
        for item in fields {
            let field = format!("{item}_{}", op.name());
            if op != AggregateOp::Sum && item == &a.time {
                return Err(Failure::usage(format!(
                    "`--{} {item}` would be stored as {field:?}, where the time bounds (--time {}) already keep \
                     the time's {}; remove it",
                    op.name(),
                    a.time,
                    op.name()
                )));
            }
            if summary.iter().any(|s| s.field == field) {
                return Err(Failure::usage(format!(
                    "`--{} {item}` is given twice",
                    op.name()
                )));
            }
            summary.push(Aggregate {
                op,
                item_field: leak(item.as_str()),
                field: leak(field),
            });
        }
    }
    Ok(Keeps {
        bounds: Some(bounds),
        summary: Box::leak(summary.into_boxed_slice()),
    })
}

/// One progress bar per phase on stderr (indicatif hides them when stderr is not a terminal).
struct Bars {
    enabled: bool,
    current: Mutex<Option<(String, u64, ProgressBar)>>,
}

impl Bars {
    fn new(enabled: bool) -> Self {
        Bars {
            enabled: enabled && std::io::stderr().is_terminal(),
            current: Mutex::new(None),
        }
    }

    fn update(&self, p: &Progress<'_>) {
        let Ok(mut current) = self.current.lock() else {
            return;
        };
        let same =
            matches!(&*current, Some((phase, done, _)) if phase == p.phase && *done <= p.done);
        if !same {
            if let Some((_, _, bar)) = current.take() {
                close(&bar);
            }
            let bar = match p.total {
                Some(total) => {
                    let bar = ProgressBar::new(total);
                    bar.set_style(style(
                        "{prefix:>14} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} {rate} ETA {eta}",
                    ));
                    bar
                }
                None => {
                    let bar = ProgressBar::new_spinner();
                    bar.set_style(style(
                        "{prefix:>14} {spinner} [{elapsed_precise}] {human_pos} {rate}",
                    ));
                    bar.enable_steady_tick(Duration::from_millis(120));
                    bar
                }
            };
            bar.set_prefix(p.phase.to_owned());
            *current = Some((p.phase.to_owned(), 0, bar));
        }
        if let Some((_, done, bar)) = current.as_mut() {
            if let Some(total) = p.total {
                bar.set_length(total.max(p.done));
            }
            bar.set_position(p.done);
            *done = p.done;
        }
    }

    fn finish(&self) {
        if let Ok(mut current) = self.current.lock() {
            if let Some((_, _, bar)) = current.take() {
                close(&bar);
            }
        }
    }
}

/// Leaves a phase's bar as it ended, on its own line (indicatif leaves the cursor after it).
fn close(bar: &ProgressBar) {
    bar.finish();
    if !bar.is_hidden() {
        eprintln!();
    }
}

/// A bar's style: `template` with `{rate}`, the items per second as a whole number.
fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("a valid template")
        .with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}/s", n(state.per_sec().round() as u64));
            },
        )
}

// ---- The human reports ----

/// `1234567` as `1,234,567`.
fn n(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn distribution(out: &mut String, title: &str, d: &Distribution) {
    out.push_str(&format!(
        "{title}:\n  count {}  min {}  p50 {}  p90 {}  p99 {}  max {}  mean {:.1}\n",
        n(d.count),
        n(d.min),
        n(d.p50),
        n(d.p90),
        n(d.p99),
        n(d.max),
        d.mean
    ));
    out.push_str(&d.render(40));
}

fn largest(out: &mut String, l: &Option<adopt::Largest>) {
    if let Some(l) = l {
        out.push_str(&format!(
            "Largest document: _id {}, {} bytes ({:.2}% of the 16 MiB limit)\n",
            l.id,
            n(l.bytes),
            l.share_of_limit * 100.0
        ));
    }
}

fn render_outlier_analysis(r: &OutlierAnalysis, with_overflow: bool) -> String {
    let mut out = format!(
        "Collection `{}`, array `{}`: {} documents\n\n",
        r.collection,
        r.array,
        n(r.documents)
    );
    let title = if with_overflow {
        "Items per document (array + overflow of flagged documents)"
    } else {
        "Items per document"
    };
    distribution(&mut out, title, &r.lengths);
    out.push('\n');
    distribution(&mut out, "Document sizes (bytes)", &r.sizes);
    out.push('\n');
    largest(&mut out, &r.largest);
    out.push_str(&format!(
        "Over the threshold of {}: {} documents\nFlagged already: {}\nWithout the array: {}\n\n",
        r.threshold,
        n(r.over_threshold),
        n(r.flagged),
        n(r.without_array)
    ));
    out.push_str(&format!(
        "Suggested threshold: {}\n  {}\n",
        r.suggestion.value, r.suggestion.reason
    ));
    out
}

fn render_bucket_analysis(r: &BucketAnalysis, buckets: bool) -> String {
    let layout = if buckets {
        "bucket collection"
    } else {
        "flat collection"
    };
    let mut out = format!(
        "Collection `{}` ({layout}), key `{}`: {} documents, {} keys, {} items\n\n",
        r.collection,
        r.key,
        n(r.documents),
        n(r.keys),
        n(r.items)
    );
    distribution(&mut out, "Items per key", &r.per_key);
    out.push('\n');
    distribution(&mut out, "Item sizes (bytes)", &r.item_sizes);
    out.push('\n');
    distribution(&mut out, "Document sizes (bytes)", &r.sizes);
    out.push('\n');
    largest(&mut out, &r.largest);
    out.push_str(&format!(
        "Buckets at size {}: {}\nDocuments without the key: {}\n\n",
        r.size,
        n(r.buckets_at_size),
        n(r.without_key)
    ));
    out.push_str(&format!(
        "Suggested bucket size: {}\n  {}\n",
        r.suggestion.value, r.suggestion.reason
    ));
    out
}

fn render_migration(r: &MigrateReport, changed_unit: &str) -> String {
    let mut out = if r.kind == "bucket" {
        format!("Migration of `{}` into buckets in `{}`", r.source, r.target)
    } else {
        format!("Migration of `{}` into the outlier layout", r.source)
    };
    if r.dry_run {
        out.push_str(" (dry run: nothing written; what it would do)");
    }
    out.push('\n');
    if r.already_finished {
        out.push_str("  already finished before this run: nothing to do\n");
    } else if let Some(from) = &r.resumed_from {
        out.push_str(&format!(
            "  resumed after {from} (the last committed batch)\n"
        ));
    }
    let written = if r.kind == "bucket" {
        "buckets written"
    } else {
        "chunks written"
    };
    let rows = [
        ("documents read", r.scanned),
        (changed_unit, r.changed),
        ("items moved", r.moved_items),
        (written, r.written),
        ("batches", r.batches),
        ("retries", r.retries),
        ("sessions ended", r.ended_sessions),
    ];
    for (label, v) in rows {
        out.push_str(&format!("  {label:<16} {:>12}\n", n(v)));
    }
    match &r.verified {
        Some(v) => {
            out.push('\n');
            out.push_str(&render_verified(v, "Verification"));
        }
        None if !r.dry_run => out.push_str("\nVerification: skipped (--no-verify)\n"),
        None => {}
    }
    out
}

fn money_conversion(f: &MoneyFields, finish: FinishArg) -> MoneyConversion<'static> {
    MoneyConversion {
        collection: leak(f.collection.as_str()),
        from: leak(f.from.as_str()),
        form: f.scaled.map_or(Form::Text, Form::Scaled),
        to: leak(f.to.as_str()),
        finish: match finish {
            FinishArg::KeepBoth => Finish::KeepBoth,
            FinishArg::DropOld => Finish::DropOld,
            FinishArg::IntoOld => Finish::IntoOld,
        },
    }
}

fn render_money(r: &MoneyReport) -> String {
    let mut out = format!(
        "Conversion of `{}`.{} ({}) into {}",
        r.collection, r.from, r.form, r.to
    );
    if r.dry_run {
        out.push_str(" (dry run: nothing written; what it would do)");
    }
    out.push('\n');
    if r.already_finished {
        out.push_str("  finished before this run: converting what was written since\n");
    } else if let Some(from) = &r.resumed_from {
        out.push_str(&format!(
            "  resumed after _id {from} (the last committed batch)\n"
        ));
    }
    let rows = [
        ("documents read", r.scanned),
        ("converted", r.converted),
        ("refused (left as they were)", r.refused.len() as u64),
        ("rewritten by the finish step", r.replaced),
        ("transactions", r.batches),
        ("retried after a conflict", r.retries),
    ];
    for (label, v) in rows {
        out.push_str(&format!("  {label:<30} {}\n", n(v)));
    }
    for d in r.refused.iter().take(MAX_DEFECTS_SHOWN) {
        out.push_str(&format!("  {}\n", describe_money(d)));
    }
    if let Some(why) = &r.finish_skipped {
        out.push_str(&format!("  finish step not run: {why}\n"));
    }
    if let Some(v) = &r.verified {
        out.push_str(&render_money_verified(v, "Verified"));
    }
    out
}

fn render_money_verified(v: &MoneyVerified, what: &str) -> String {
    let mut out = format!(
        "{what}: {} documents read, {} converted, {} without an amount, ",
        n(v.documents),
        n(v.converted),
        n(v.without_amount)
    );
    push_defects(&mut out, &v.defects, describe_money);
    out
}

fn describe_money(d: &MoneyDefect) -> String {
    match d {
        MoneyDefect::Unconvertible { id, value, reason } => {
            format!("_id {id}: {value} does not convert exactly: {reason}")
        }
        MoneyDefect::NotConverted { id, expected } => {
            format!("_id {id}: not converted yet (should hold {expected})")
        }
        MoneyDefect::Mismatch {
            id,
            old,
            new,
            expected,
        } => {
            format!("_id {id}: the new field holds {new}, the old {old} converts to {expected}")
        }
        MoneyDefect::NotDecimal { id, field, value } => {
            format!("_id {id}: `{field}` holds {value}, not a finite Decimal128")
        }
        other => format!("{other:?}"),
    }
}

fn render_verified(v: &Verified, what: &str) -> String {
    let mut out = format!("{what}: {} documents read, ", n(v.documents));
    push_defects(&mut out, &v.defects, describe);
    out
}

/// "no defects", or how many and the first [`MAX_DEFECTS_SHOWN`], one per line.
fn push_defects<T>(out: &mut String, defects: &[T], describe: fn(&T) -> String) {
    if defects.is_empty() {
        out.push_str("no defects\n");
        return;
    }
    out.push_str(&format!("{} defects\n", n(defects.len() as u64)));
    for d in defects.iter().take(MAX_DEFECTS_SHOWN) {
        out.push_str(&format!("  {}\n", describe(d)));
    }
    if defects.len() > MAX_DEFECTS_SHOWN {
        out.push_str(&format!(
            "  ... and {} more\n",
            n((defects.len() - MAX_DEFECTS_SHOWN) as u64)
        ));
    }
}

fn describe(d: &LayoutDefect) -> String {
    match d {
        LayoutDefect::Malformed {
            collection,
            id,
            reason,
        } => {
            format!("{collection} _id {id}: malformed: {reason}")
        }
        LayoutDefect::CountMismatch {
            collection,
            id,
            count,
            items,
        } => {
            format!("{collection} _id {id}: count is {count} but the array holds {items} items")
        }
        LayoutDefect::OverSize {
            collection,
            id,
            items,
            size,
        } => {
            format!("{collection} _id {id}: {items} items, over the size of {size}")
        }
        LayoutDefect::SeveralOpen {
            collection,
            key,
            numbers,
        } => {
            format!(
                "{collection} key {key}: several open (not full) documents, numbers {numbers:?}"
            )
        }
        LayoutDefect::NotDense {
            collection,
            key,
            expected,
            found,
        } => {
            format!("{collection} key {key}: not numbered 1, 2, 3...: expected {expected}, found {found}")
        }
        LayoutDefect::WrongBounds {
            collection,
            id,
            reason,
        } => {
            format!("{collection} _id {id}: wrong time bounds: {reason}")
        }
        LayoutDefect::OverThreshold {
            collection,
            id,
            items,
            threshold,
        } => {
            format!("{collection} _id {id}: {items} items in the main array, over the threshold of {threshold}")
        }
        LayoutDefect::FlagWithoutOverflow { collection, id } => {
            format!("{collection} _id {id}: flagged, but has no overflow document")
        }
        LayoutDefect::OverflowWithoutFlag { collection, id } => {
            format!("{collection} _id {id}: has overflow documents but is not flagged (reads miss them)")
        }
        LayoutDefect::OrphanOverflow { collection, parent } => {
            format!("{collection}: overflow documents of parent {parent}, which does not exist")
        }
        other => serde_json::to_string(other).unwrap_or_else(|_| format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn thousands() {
        assert_eq!(n(0), "0");
        assert_eq!(n(999), "999");
        assert_eq!(n(1000), "1,000");
        assert_eq!(n(1234567), "1,234,567");
    }

    #[test]
    fn keeps_are_named_as_the_derive_names_them() {
        let cli = Cli::try_parse_from([
            "pattern",
            "--db",
            "d",
            "migrate",
            "bucket",
            "--from",
            "trades",
            "--to",
            "h",
            "--key",
            "customerId",
            "--time",
            "date",
            "--sum",
            "qty",
            "--max",
            "price",
            "--min",
            "price",
        ])
        .unwrap();
        let Command::Migrate(Migrate::Bucket(a)) = cli.command else {
            panic!("parsed as another command")
        };
        let keeps = bucket_keeps(&a).unwrap();
        assert_eq!(keeps.bounds, Some(("date_min", "date_max")));
        let fields: Vec<_> = keeps
            .summary
            .iter()
            .map(|a| (a.op, a.item_field, a.field))
            .collect();
        assert_eq!(
            fields,
            [
                (AggregateOp::Sum, "qty", "qty_sum"),
                (AggregateOp::Min, "price", "price_min"),
                (AggregateOp::Max, "price", "price_max"),
            ]
        );
        assert!(bucket_spec(&a.to, &a.fields, keeps).is_ok());
    }

    #[test]
    fn refuses_a_min_of_the_time_and_colliding_fields() {
        let parse = |extra: &[&str]| {
            let mut args = vec![
                "pattern", "migrate", "bucket", "--from", "t", "--to", "h", "--key", "k", "--time",
                "date",
            ];
            args.extend_from_slice(extra);
            let Command::Migrate(Migrate::Bucket(a)) = Cli::try_parse_from(args).unwrap().command
            else {
                panic!("parsed as another command")
            };
            bucket_keeps(&a).and_then(|k| bucket_spec(&a.to, &a.fields, k))
        };
        assert_eq!(parse(&["--min", "date"]).unwrap_err().code, 2);
        assert_eq!(
            parse(&["--sum", "qty", "--sum", "qty"]).unwrap_err().code,
            2
        );
        let e = parse(&["--count", "date_min"]).unwrap_err();
        assert!(e.message.contains("date_min"), "{}", e.message);
        assert!(parse(&["--sum", "date"]).is_ok());
    }

    #[test]
    fn outlier_defaults_follow_the_derive() {
        let cli = Cli::try_parse_from([
            "pattern",
            "verify",
            "outlier",
            "--collection",
            "books",
            "--array",
            "customers_purchased",
            "--threshold",
            "50",
            "--overflow",
            "extra_books",
        ])
        .unwrap();
        let Command::Verify(Verify::Outlier(a)) = cli.command else {
            panic!("parsed as another command")
        };
        let spec = outlier_spec(&a.layout, a.threshold, &a.overflow).unwrap();
        assert_eq!(spec.flag_field, "has_extras");
        assert_eq!(spec.overflow.key_field, "books_id");
        assert_eq!(spec.overflow.items_field, "customers_purchased_extra");
        assert_eq!(spec.overflow.size, pattern_core::outlier::DEFAULT_CHUNK);
        assert_eq!(spec.overflow.count_field, "count");
        assert_eq!(spec.overflow.order, SeriesOrder::Seq("seq"));
    }
}
