//! `pattern follow`: the application's follower run as a service, from the rules it recorded
//! (`Follower::from_stored`), until Ctrl-C: a status line on a terminal, a JSON status a line
//! otherwise (and with `--json`), every second and when it stops.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use pattern_core::follow::{Follower, Status};
use pattern_core::store::MongoStore;

use super::Context;
use crate::args::Follow;
use crate::exit::{outcome, Failure, Outcome};

pub(crate) async fn run(a: &Follow, cx: &Context<'_>, json: bool) -> Result<Outcome, Failure> {
    let name =
        match &a.name {
            Some(name) => name.clone(),
            None => {
                let names =
                    (Follower::<MongoStore>::names(cx.store).await).map_err(Failure::reading)?;
                match names.as_slice() {
                    [one] => one.clone(),
                    [] => return Err(Failure::usage(
                        "no follower has run on this database (pattern_follow is empty): run the \
                         application's follower once, which records the rules it keeps",
                    )),
                    many => {
                        return Err(Failure::usage(format!(
                            "several followers ran on this database: pass --name (one of {})",
                            many.join(", ")
                        )))
                    }
                }
            }
        };
    let follower = Follower::from_stored(cx.store.clone(), &name)
        .await
        .map_err(Failure::reading)?
        .lease(Duration::from_secs(a.lease));
    let follower = Arc::new(follower);
    let lines = json || !std::io::stdout().is_terminal();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let ctrl_c = tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        let _ = stop.send(());
    });
    let printer = {
        let follower = follower.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                print_status(&follower.status(), lines);
            }
        })
    };
    let out = if a.once {
        follower.catch_up().await
    } else {
        follower
            .run(async move {
                let _ = stopped.await;
            })
            .await
    };
    printer.abort();
    ctrl_c.abort();
    if !lines {
        eprintln!();
    }
    out.map_err(Failure::follower_stopped)?;
    let status = follower.status();
    outcome(&view(&status), human(&status), false)
}

/// The status as a JSON object: times in milliseconds, the cluster time as `{t, i}`.
fn view(s: &Status) -> serde_json::Value {
    serde_json::json!({
        "name": s.name,
        "running": s.running,
        "last_applied": s.last_applied.map(|t| serde_json::json!({"t": t.time, "i": t.increment})),
        "applied": s.applied,
        "skipped": s.skipped,
        "older": s.older,
        "passes": s.passes,
        "repaired": s.repaired,
        "history_lost": s.history_lost,
        "lag_ms": s.lag.map(|l| l.as_millis() as u64),
    })
}

fn human(s: &Status) -> String {
    let lag = s
        .lag
        .map_or("-".to_owned(), |l| format!("{} ms", l.as_millis()));
    format!(
        "follower `{}`: {} applied, {} skipped (in line already), {} older versions, {} whole \
         passes ({} repaired), lag {lag}",
        s.name, s.applied, s.skipped, s.older, s.passes, s.repaired
    )
}

fn print_status(s: &Status, lines: bool) {
    if lines {
        println!("{}", view(s));
    } else {
        let mut err = std::io::stderr();
        let _ = write!(err, "\r{}", human(s));
        let _ = err.flush();
    }
}
