//! `-v` and `--log-format json`: the library's spans and progress events on stderr, as text
//! or as JSON lines; stdout keeps exactly the report (`--json`: one JSON document).

use serde_json::Value;

use crate::support::data::{trades_10_customers, MIGRATE_TRADES as MIGRATE};
use crate::support::{show, Db, Rng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_logs_go_to_stderr_as_json_lines() {
    let db = Db::new("cli_logs").await;
    let mut rng = Rng::seeded();
    db.insert("trades", trades_10_customers(&mut rng)).await;
    let mut args = vec!["--quiet", "--json", "-v", "--log-format", "json"];
    args.extend_from_slice(&MIGRATE);
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // stdout: the report alone.
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", show(&out)));
    assert_eq!(report["moved_items"], 550, "{report:#}");
    // stderr: JSON lines, among them the migration's span closing with its attributes, and
    // its progress events.
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let closed = lines.iter().find(|l| {
        l.pointer("/span/name").and_then(Value::as_str) == Some("bucket.migrate")
            && l.pointer("/fields/message").and_then(Value::as_str) == Some("close")
    });
    let closed = closed.unwrap_or_else(|| panic!("no closed bucket.migrate span:\n{}", show(&out)));
    let span = closed.get("span").unwrap();
    assert_eq!(span["db.system.name"], "mongodb", "{closed}");
    assert_eq!(span["db.collection.name"], "trade_history", "{closed}");
    assert_eq!(span["db.operation.name"], "migrate", "{closed}");
    assert!(
        span["pattern.commands"].as_u64().unwrap_or(0) > 0,
        "{closed}"
    );
    let progress = lines
        .iter()
        .filter(|l| l.get("target").and_then(Value::as_str) == Some("pattern_core::progress"))
        .count();
    assert!(progress > 0, "{}", show(&out));
    db.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_v_stderr_has_no_logs() {
    let db = Db::new("cli_logs_quiet").await;
    let mut rng = Rng::seeded();
    db.insert("trades", trades_10_customers(&mut rng)).await;
    let mut args = vec!["--quiet"];
    args.extend_from_slice(&MIGRATE);
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("bucket.migrate"), "{}", show(&out));
    // With `-v`, text lines name the span.
    let db2 = Db::new("cli_logs_text").await;
    db2.insert("trades", trades_10_customers(&mut rng)).await;
    let mut args = vec!["--quiet", "-v"];
    args.extend_from_slice(&MIGRATE);
    let out = db2.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bucket.migrate"), "{}", show(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("bucket.migrate"));
    db.drop().await;
    db2.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_text_only_with_its_switch() {
    let mut rng = Rng::seeded();
    let query_lines = |out: &std::process::Output| {
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("pattern_core::query"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // `-vv` alone: DEBUG logs, but no query text.
    let db = Db::new("cli_logs_no_query").await;
    db.insert("trades", trades_10_customers(&mut rng)).await;
    let mut args = vec!["--quiet", "-vv", "--log-format", "json"];
    args.extend_from_slice(&MIGRATE);
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(query_lines(&out).is_empty(), "{}", show(&out));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("db.query.text"));
    // With `--log-query-text`: each command's filter, on stderr only.
    let db2 = Db::new("cli_logs_query").await;
    db2.insert("trades", trades_10_customers(&mut rng)).await;
    let mut args = vec!["--quiet", "-vv", "--log-format", "json", "--log-query-text"];
    args.extend_from_slice(&MIGRATE);
    let out = db2.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let queries = query_lines(&out);
    assert!(!queries.is_empty(), "{}", show(&out));
    let q: Value = serde_json::from_str(&queries[0]).unwrap();
    assert!(q.pointer("/fields/db.query.text").is_some(), "{q}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("db.query.text"));
    db.drop().await;
    db2.drop().await;
}
