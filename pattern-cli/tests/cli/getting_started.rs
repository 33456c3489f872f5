//! The getting-started chapter's `pattern` commands (`pattern-core/docs/getting-started.md`,
//! section 5), read from the chapter itself and run in its order against the test server, on
//! the `sales` it describes: the first `advise` finds the outlier, every command succeeds, the
//! migration keeps every buyer, `verify` finds no defect, and the last `advise` is quiet.

use serde_json::Value;

use crate::support::{show, Db};

const CHAPTER: &str = include_str!("../../../pattern-core/docs/getting-started.md");

/// The `pattern --db shop ...` commands of the chapter's `sh` blocks (a line ending in `\`
/// goes on on the next), in order, as words.
fn commands() -> Vec<Vec<&'static str>> {
    let mut out: Vec<Vec<&'static str>> = Vec::new();
    let (mut in_sh, mut goes_on) = (false, false);
    for line in CHAPTER.lines() {
        let words = line.trim().trim_end_matches('\\');
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            _ if in_sh && goes_on => out
                .last_mut()
                .expect("a command")
                .extend(words.split_whitespace()),
            l if in_sh && l.starts_with("pattern --db shop ") => {
                out.push(words.split_whitespace().skip(3).collect());
            }
            _ => {}
        }
        goes_on = in_sh && line.trim_end().ends_with('\\');
    }
    out
}

/// Whether the report's `sales` has an outlier finding.
fn finds_outlier(r: &Value) -> bool {
    (r["collections"].as_array().unwrap().iter())
        .filter(|c| c["collection"] == "sales")
        .flat_map(|c| c["findings"].as_array().unwrap().iter())
        .any(|f| f["pattern"] == "outlier")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chapters_commands_adopt_the_outlier() {
    let cmds = commands();
    assert_eq!(cmds.len(), 6, "the chapter's commands: {cmds:?}");
    assert_eq!(cmds[0][0], "advise");
    assert_eq!(cmds[5][0], "advise");
    let db = Db::new("cli_getting_started").await;
    let buyers = pattern_tests::advise::sales(&db.store).await;
    let total: u64 = buyers.iter().sum();
    for (i, args) in cmds.iter().enumerate() {
        let out = db.run(&[&["--json"][..], args].concat());
        assert_eq!(out.status.code(), Some(0), "{args:?}\n{}", show(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: stdout is not one JSON document ({e}):\n{}",
                show(&out)
            )
        });
        match (i, args[0]) {
            (0, _) => assert!(finds_outlier(&report), "{report:#}"),
            (5, _) => assert!(!finds_outlier(&report), "quiet after it: {report:#}"),
            (_, "verify") => assert_eq!(report["defects"], Value::Array(vec![]), "{report:#}"),
            _ => {}
        }
    }
    // Every buyer is kept: at most 20 in each book, the rest in `sales_extra`.
    let mut kept = 0;
    for sale in db.docs("sales", &["_id"]).await {
        let n = sale.get_array("customers_purchased").unwrap().len() as u64;
        assert!(n <= 20, "{sale}");
        kept += n;
    }
    for chunk in db.docs("sales_extra", &["_id"]).await {
        kept += chunk.get_array("customers_purchased_extra").unwrap().len() as u64;
    }
    assert_eq!(kept, total);
}
