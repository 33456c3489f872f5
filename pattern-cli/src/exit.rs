//! How the command ends: its report on stdout (human or JSON) and exit 0 or 3, or a
//! [`Failure`]: `error: <message>` on stderr (and with `--json` the JSON error report on
//! stdout) and its exit code. The codes are listed in the crate's documentation.

use pattern_core::store;
use std::io::Write;
use std::process::ExitCode;

use pattern_core::Error;
use serde::Serialize;

/// How the command ends when it does not succeed.
#[derive(Debug)]
pub(crate) struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// An internal or unexpected error: exit 1.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Failure {
            code: 1,
            message: message.into(),
        }
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: 2,
            message: message.into(),
        }
    }

    /// A library error: unreachable server 4, refused settings 2, else `otherwise`.
    pub(crate) fn from_core(e: Error, otherwise: u8) -> Self {
        let code = if e.is_unavailable() {
            4
        } else if matches!(
            e,
            Error::Store(store::Error::InvalidInput(_))
                | Error::SettingsChanged { .. }
                | Error::SourceNotFound { .. }
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

    /// A library error of a command that only reads: exit 1 unless [`Failure::from_core`]
    /// maps it to 2 or 4.
    pub(crate) fn reading(e: Error) -> Self {
        Failure::from_core(e, 1)
    }

    /// A library error of a command that writes: exit 5 (the run stopped; running it again
    /// resumes) unless [`Failure::from_core`] maps it to 2 or 4.
    pub(crate) fn stopped(e: Error) -> Self {
        Failure::from_core(e, 5)
    }

    /// An error that stopped `pattern follow`: exit 6 when another follower of the name holds
    /// its lease ([`Error::LeaseHeld`]: nothing was applied, run it again once that one stops or
    /// its lease expires), 2 or 4 as [`Failure::from_core`] says, else 5 (every change applied
    /// before is kept with its position: running it again goes on from there).
    pub(crate) fn follower_stopped(e: Error) -> Self {
        match e {
            Error::LeaseHeld { .. } => Failure {
                code: 6,
                message: e.to_string(),
            },
            e if e.is_unavailable() || matches!(e, Error::Store(store::Error::InvalidInput(_))) => {
                Failure::from_core(e, 5)
            }
            e => Failure {
                code: 5,
                message: format!(
                    "the follower stopped: {e}. Every change applied before is kept with its \
                     position: running it again goes on from there"
                ),
            },
        }
    }
}

/// What a command produced: its report, and whether the data had defects (exit 3).
pub(crate) struct Outcome {
    pub json: serde_json::Value,
    pub human: String,
    pub defects: bool,
}

/// The outcome of `report`, rendered for people as `human`.
pub(crate) fn outcome<T: Serialize>(
    report: &T,
    human: String,
    defects: bool,
) -> Result<Outcome, Failure> {
    let json = serde_json::to_value(report)
        .map_err(|e| Failure::internal(format!("the report does not serialize: {e}")))?;
    Ok(Outcome {
        json,
        human,
        defects,
    })
}

/// Clap's usage error (or `--help`, `--version`): with `--json` asked, an error also goes to
/// stdout as the JSON error report; then clap prints and exits as it does.
pub(crate) fn refuse_arguments(e: clap::Error, json_asked: bool) -> ! {
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

/// Prints the result (the report as JSON or for people, or the failure) and returns the exit
/// code.
pub(crate) fn finish(result: Result<Outcome, Failure>, json: bool) -> ExitCode {
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
