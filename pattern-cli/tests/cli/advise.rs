//! `pattern advise` over the seeds of `pattern_tests::advise` (one collection per finding
//! kind, one that fits none): the report as JSON and for people, nothing written by the advice,
//! then every command a finding gives run on the data it was generated from, in order (the
//! dry run writing nothing, the migration verified clean), after which the advice on the
//! migrated collection is quiet; `--collection`, `--sample`, and the exit codes.

use std::process::Command;

use pattern_core::store::Store;
use serde_json::Value;

use crate::support::{show, stdout, u, Db, BIN};

/// Every finding's `(collection, pattern)`, in the report's order.
fn findings(r: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in r["collections"].as_array().expect("collections") {
        for f in c["findings"].as_array().expect("findings") {
            out.push((
                c["collection"].as_str().unwrap().to_owned(),
                f["pattern"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

/// Runs one command as the report prints it (`pattern --db <db> ...`, no word that needs
/// quoting), against the test's server.
fn run_printed(db: &Db, command: &str) -> std::process::Output {
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[0], "pattern", "{command}");
    assert!(!command.contains('\''), "a quoted word: {command}");
    assert_eq!(&words[1..3], ["--db", db.name.as_str()], "{command}");
    Command::new(BIN)
        .env("MONGODB_URI", &db.uri)
        .args(&words[1..])
        .args(["--quiet"])
        .output()
        .expect("the command runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advise_reports_and_its_commands_move_the_data() {
    let db = Db::new("cli_advise").await;
    pattern_tests::advise::seed_all(&db.store).await;
    let names = |r: &Value| -> Vec<String> {
        (r["collections"].as_array().unwrap().iter())
            .map(|c| c["collection"].as_str().unwrap().to_owned())
            .collect()
    };

    let r = db.json(&["advise"], 0);
    assert_eq!(r["database"], Value::from(db.name.as_str()));
    assert_eq!(u(&r, "/sample"), 1_000);
    let want = [
        ("categories", "tree"),
        ("customers", "schema_versioning"),
        ("parts", "attribute"),
        ("people", "schema_versioning"),
        ("products", "polymorphic"),
        ("sales", "outlier"),
        ("sales", "index"),
        ("trades", "bucket"),
    ];
    let got = findings(&r);
    assert_eq!(
        got.iter()
            .map(|(c, p)| (c.as_str(), p.as_str()))
            .collect::<Vec<_>>(),
        want,
        "{r:#}"
    );
    assert_eq!(
        names(&r),
        [
            "categories",
            "customers",
            "parts",
            "people",
            "products",
            "sales",
            "trades",
            "users"
        ]
    );
    // The figures, as the suite asserts them on both stores.
    let sales = &r["collections"][5];
    assert_eq!(u(sales, "/findings/0/evidence/threshold"), 20);
    assert_eq!(u(sales, "/findings/0/evidence/lengths/max"), 4_000);
    assert_eq!(u(sales, "/sampled"), 500);
    // The advice wrote nothing.
    let collections = db.store.collection_names().await.expect("names");
    assert_eq!(collections.len(), 8, "{collections:?}");

    // For people: one section per collection, findings first, histograms, code, commands.
    let out = db.run(&["advise"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    let header = format!(
        "Database `{}`: 8 collection(s), up to 1,000 documents sampled from each",
        db.name
    );
    for want in [
        header.as_str(),
        "== `sales`: 500 documents (the whole collection) ==",
        "  [high] outlier",
        "1. outlier (high confidence)",
        "Items per document: count 500  min 3  p50 8",
        "#[derive(Outlier, Serialize, Deserialize)]",
        "Commands (the dry run before the migration):",
        "--dry-run",
        "== `users`: 200 documents (the whole collection) ==",
        "No pattern fits",
        "Reads: count (the collection's documents): 200; listIndexes",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
    let sales_at = text.find("== `sales`").unwrap();
    let finding_at = sales_at + text[sales_at..].find("1. outlier").unwrap();
    let sizes_at = sales_at + text[sales_at..].find("Document sizes").unwrap();
    assert!(finding_at < sizes_at, "the findings come first");

    // Every command of every finding, in order, on the data it was generated from.
    let mut ran = 0;
    for c in r["collections"].as_array().unwrap() {
        for f in c["findings"].as_array().unwrap() {
            for command in f["commands"].as_array().unwrap() {
                let command = command.as_str().unwrap();
                let before = db.store.collection_names().await.unwrap();
                let out = run_printed(&db, command);
                assert_eq!(out.status.code(), Some(0), "{command}\n{}", show(&out));
                if command.contains("--dry-run") {
                    let after = db.store.collection_names().await.unwrap();
                    assert_eq!(after, before, "the dry run wrote");
                } else if command.contains(" migrate ") {
                    let text = stdout(&out);
                    assert!(text.contains("no defects"), "{command}\n{text}");
                }
                ran += 1;
            }
        }
    }
    // Analyze, dry run and migration for the outlier and the bucket; dry run, migration and
    // analyze shapes for the attributes; analyze shapes; analyze versions for both versioned
    // collections.
    assert_eq!(ran, 12);
    // The outlier layout: no main array over 20, every item kept (the migration verified it).
    let v = db.json(
        &[
            "verify",
            "outlier",
            "--collection",
            "sales",
            "--array",
            "customers_purchased",
            "--threshold",
            "20",
            "--overflow",
            "sales_extra",
            "--owner",
            "sale_id",
        ],
        0,
    );
    assert_eq!(v["defects"].as_array().unwrap().len(), 0);
    // The buckets (verified by the migration, with their span: `verify bucket` takes none):
    // every trade, at most 20 a bucket.
    let items: u64 = (db.docs("trades_buckets", &["_id"]).await.iter())
        .map(|b| {
            let n = b.get_array("history").map_or(0, |h| h.len() as u64);
            assert!(n <= 20, "{b}");
            n
        })
        .sum();
    assert_eq!(items, 810);
    // The attributes: every spec a pair of `attributes`, none left at the top level.
    let mut pairs = 0;
    for d in db.docs("parts", &["_id"]).await {
        for f in pattern_tests::advise::PART_SPECS {
            assert!(!d.contains_key(f), "{d}");
        }
        pairs += d.get_array("attributes").map_or(0, |a| a.len());
    }
    let held: usize = (0..300_i64)
        .map(|i| {
            (0..12)
                .filter(|s| pattern_tests::advise::part_holds(i, *s))
                .count()
        })
        .sum();
    assert_eq!(pairs, held);
    // The advice on the migrated collections: no outlier, no sparse fields left.
    let r = db.json(
        &["advise", "--collection", "sales", "--collection", "parts"],
        0,
    );
    assert_eq!(findings(&r), Vec::<(String, String)>::new(), "{r:#}");

    // A sample smaller than the collection.
    let r = db.json(&["advise", "--collection", "trades", "--sample", "100"], 0);
    assert_eq!(names(&r), ["trades"]);
    assert_eq!(u(&r, "/collections/0/sampled"), 100);
    assert_eq!(r["collections"][0]["whole"], Value::Bool(false));

    // Exit codes: a collection that is not there (2, naming those that are), a sample out of
    // range (2).
    let out = db.run(&["advise", "--collection", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
    let e = db.json(&["advise", "--sample", "0"], 2);
    assert_eq!(u(&e, "/code"), 2);
    db.drop().await;
}

/// `pattern advise` on four collections of MongoDB's sample datasets, loaded as `mongoimport`
/// loads them (`pattern_tests::advise::mongodb_sample`): no schema versioning finding, in
/// `sample_mflix.users` (one test user of 185 holds `preferences`) or elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advise_finds_no_versions_in_mongodb_s_samples() {
    let db = Db::new("cli_advise_samples").await;
    for (database, coll) in pattern_tests::advise::MONGODB_SAMPLES {
        pattern_tests::advise::mongodb_sample(&db.store, database, coll).await;
    }
    let r = db.json(&["advise"], 0);
    let sampled: Vec<(String, u64)> = (r["collections"].as_array().unwrap().iter())
        .map(|c| {
            (
                c["collection"].as_str().unwrap().to_owned(),
                u(c, "/documents"),
            )
        })
        .collect();
    let want = [
        ("accounts", 1_746),
        ("customers", 500),
        ("theaters", 1_564),
        ("users", 185),
    ]
    .map(|(c, n)| (c.to_owned(), n));
    assert_eq!(sampled, want);
    let versions: Vec<(String, String)> = (findings(&r).into_iter())
        .filter(|(_, p)| p == "schema_versioning")
        .collect();
    assert!(versions.is_empty(), "{r:#}");
    db.drop().await;
}

/// An unreachable server: exit 4, and with `--json` the error as one JSON document; a sample
/// past 100,000: exit 2 before anything is sent.
#[test]
fn advise_exit_codes_without_a_server() {
    let unreachable = "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500";
    let run = |args: &[&str]| {
        Command::new(BIN)
            .env_remove("MONGODB_URI")
            .args(["--uri", unreachable, "--db", "x"])
            .args(args)
            .output()
            .expect("the command runs")
    };
    let out = run(&["advise"]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("error: cannot reach the server"),
        "{}",
        show(&out)
    );
    let out = run(&["--json", "advise", "--collection", "c"]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(r["code"], 4);
    let out = run(&["advise", "--sample", "100001"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("100001"),
        "{}",
        show(&out)
    );
}
