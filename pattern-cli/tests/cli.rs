//! The `pattern` command end to end, against the server in `MONGODB_URI` (a test that needs
//! one fails, saying how to get one, when it is unset): each test on its own database, dropped
//! at the end.

use std::collections::HashMap;
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use bson::{doc, oid::ObjectId, Bson, DateTime, Document, RawDocumentBuf};
use futures::StreamExt;
use pattern_core::store::query::{Filter, FindOptions, Update};
use pattern_core::{store::Store, MongoStore};
use pattern_tests::{mongo_uri, unique_db};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_pattern");

/// A small deterministic generator (splitmix64): no dependency, reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn seeded() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(7);
        eprintln!("rng seed {seed}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high`.
    fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
}

/// A test's database: the store, and the command's arguments that name it.
struct Db {
    name: String,
    uri: String,
    store: MongoStore,
}

impl Db {
    async fn new(test: &str) -> Self {
        let uri = mongo_uri();
        let name = unique_db(test);
        let store = MongoStore::connect(&uri, &name).await.expect("connect");
        Db { name, uri, store }
    }

    /// `pattern --db <db> <args>` with the server's URI in the environment.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.env("MONGODB_URI", &self.uri)
            .args(["--db", &self.name])
            .args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("the command runs")
    }

    /// Runs with `--json`, expects `code`, returns the parsed report.
    fn json(&self, args: &[&str], code: i32) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert_eq!(out.status.code(), Some(code), "{args:?}\n{}", show(&out));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", show(&out)))
    }

    async fn count(&self, coll: &str) -> u64 {
        self.store
            .array_stats(coll, &Filter::and([]), "_id")
            .await
            .expect("count")
            .documents
    }

    /// Every document of `coll` in `sort` order, as stored (bytes).
    async fn raw(&self, coll: &str, sort: &[&str]) -> Vec<RawDocumentBuf> {
        let find = FindOptions {
            sort: sort.iter().map(|f| (f.to_string().into(), 1)).collect(),
            ..FindOptions::default()
        };
        let all = Filter::and([]);
        let mut docs = self.store.scan(coll, &all, &find, 1000);
        let mut out = Vec::new();
        while let Some(d) = docs.next().await {
            out.push(d.expect("scan"));
        }
        out
    }

    async fn docs(&self, coll: &str, sort: &[&str]) -> Vec<Document> {
        self.raw(coll, sort)
            .await
            .into_iter()
            .map(|r| r.to_document().expect("decodes"))
            .collect()
    }

    async fn insert(&self, coll: &str, docs: Vec<Document>) {
        for chunk in docs.chunks(10_000) {
            self.store
                .insert_many(coll, chunk.to_vec())
                .await
                .expect("insert");
        }
    }

    async fn drop(self) {
        self.store
            .database()
            .drop()
            .await
            .expect("drop the database");
    }
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `books`: document `i` (1..=100) holds `i` customers: lengths 1..=100.
fn books_1_to_100() -> Vec<Document> {
    (1..=100i32)
        .map(|i| doc! {"_id": i, "title": format!("book {i}"), "customers_purchased": (0..i).collect::<Vec<i32>>()})
        .collect()
}

/// `trades`: customer `c` (0..10) has `10 (c + 1)` trades, 550 in all, in shuffled order.
fn trades_10_customers(rng: &mut Rng) -> Vec<Document> {
    let base = DateTime::parse_rfc3339_str("2024-01-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    let mut docs: Vec<Document> = (0..10i32)
        .flat_map(|c| (0..10 * (c + 1)).map(move |j| (c, j)))
        .map(|(c, j)| {
            doc! {
                "_id": ObjectId::new(), "ticker": "MDB", "customerId": c, "type": "buy", "qty": j,
                "date": DateTime::from_millis(base + i64::from(j) * 60_000),
            }
        })
        .collect();
    shuffle(&mut docs, rng);
    docs
}

fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        let j = rng.range(0, i as u64) as usize;
        v.swap(i, j);
    }
}

fn u(v: &Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no integer at {path} in {v:#}"))
}

/// `args` with `flag`'s value replaced by `value` (or `flag value` added), or, with `value`
/// `None`, `flag` and its value (or the bare flag) removed; `Some("")` adds a bare flag.
fn with_arg<'a>(args: &[&'a str], flag: &'a str, value: Option<&'a str>) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut found = false;
    while i < args.len() {
        if args[i] == flag {
            found = true;
            let has_value = args.get(i + 1).is_some_and(|a| !a.starts_with("--"));
            i += if has_value { 2 } else { 1 };
            match value {
                Some("") => out.push(flag),
                Some(v) => out.extend([flag, v]),
                None => {}
            }
            continue;
        }
        out.push(args[i]);
        i += 1;
    }
    match value {
        Some("") if !found => out.push(flag),
        Some(v) if !found && !v.is_empty() => out.extend([flag, v]),
        _ => {}
    }
    out
}

/// Runs `args` with each of `changes` applied in turn: each is refused with exit 2 and the
/// words of a changed setting (`part_way` or finished), and leaves `colls` and the checkpoints
/// byte-identical.
async fn refused_with_other_settings(
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_reports_distributions_and_suggestions() {
    let db = Db::new("cli_analyze").await;
    let mut rng = Rng::seeded();
    db.insert("books", books_1_to_100()).await;
    db.insert("trades", trades_10_customers(&mut rng)).await;

    // Outlier, JSON.
    let args = [
        "analyze",
        "outlier",
        "--collection",
        "books",
        "--array",
        "customers_purchased",
        "--threshold",
        "50",
    ];
    let r = db.json(&args, 0);
    assert_eq!(u(&r, "/documents"), 100);
    assert_eq!(u(&r, "/lengths/p50"), 50);
    assert_eq!(u(&r, "/lengths/max"), 100);
    assert_eq!(u(&r, "/over_threshold"), 50);
    assert_eq!(u(&r, "/flagged"), 0);
    // The 99th percentile, 99 items, rounded up.
    assert_eq!(u(&r, "/suggestion/value"), 100, "{r:#}");
    assert_eq!(r["largest"]["id"], Value::from(100));
    // Human.
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    for want in [
        "Collection `books`, array `customers_purchased`: 100 documents",
        "Items per document:",
        "p50 50",
        "max 100",
        "Over the threshold of 50: 50 documents",
        "Suggested threshold: 100",
        "#",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }

    // Bucket over the flat collection.
    let args = [
        "analyze",
        "bucket",
        "--collection",
        "trades",
        "--key",
        "customerId",
        "--size",
        "20",
    ];
    let r = db.json(&args, 0);
    assert_eq!(u(&r, "/documents"), 550);
    assert_eq!(u(&r, "/keys"), 10);
    assert_eq!(u(&r, "/items"), 550);
    assert_eq!(u(&r, "/per_key/p50"), 50);
    assert_eq!(u(&r, "/per_key/max"), 100);
    assert_eq!(u(&r, "/buckets_at_size"), 30);
    assert_eq!(u(&r, "/suggestion/value"), 50, "{r:#}");
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    for want in [
        "550 documents, 10 keys, 550 items",
        "Items per key:",
        "p50 50",
        "Buckets at size 20: 30",
        "Suggested bucket size: 50",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }

    // Migrated, then analyzed as a bucket collection.
    let migrate = [
        "--quiet",
        "migrate",
        "bucket",
        "--from",
        "trades",
        "--to",
        "trade_history",
        "--key",
        "customerId",
        "--time",
        "date",
        "--size",
        "20",
    ];
    let out = db.run(&migrate);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r = db.json(
        &[
            "analyze",
            "bucket",
            "--collection",
            "trade_history",
            "--key",
            "customerId",
            "--buckets",
            "--size",
            "20",
        ],
        0,
    );
    assert_eq!(u(&r, "/documents"), 30);
    assert_eq!(u(&r, "/keys"), 10);
    assert_eq!(u(&r, "/items"), 550);
    assert_eq!(u(&r, "/per_key/p50"), 50);
    assert_eq!(u(&r, "/per_key/max"), 100);
    assert_eq!(u(&r, "/buckets_at_size"), 30);
    db.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_runs_write_nothing_and_report_the_counts() {
    let db = Db::new("cli_dry_run").await;
    let mut rng = Rng::seeded();
    db.insert("books", books_1_to_100()).await;
    db.insert("trades", trades_10_customers(&mut rng)).await;
    let books_before = db.raw("books", &["_id"]).await;
    let trades_before = db.raw("trades", &["_id"]).await;
    let trade_indexes = db.store.index_names("trades").await.unwrap();

    let r = db.json(
        &[
            "migrate",
            "bucket",
            "--from",
            "trades",
            "--to",
            "trade_history",
            "--key",
            "customerId",
            "--time",
            "date",
            "--size",
            "20",
            "--sum",
            "qty",
            "--dry-run",
        ],
        0,
    );
    assert_eq!(r["dry_run"], Value::Bool(true));
    assert_eq!(u(&r, "/scanned"), 550);
    assert_eq!(u(&r, "/moved_items"), 550);
    assert_eq!(u(&r, "/changed"), 10);
    assert_eq!(u(&r, "/written"), 30);
    assert_eq!(u(&r, "/batches"), 0);
    assert_eq!(r["verified"], Value::Null);

    let r = db.json(
        &[
            "migrate",
            "outlier",
            "--collection",
            "books",
            "--array",
            "customers_purchased",
            "--threshold",
            "50",
            "--overflow",
            "extra_books",
            "--reference",
            "book_id",
            "--chunk",
            "20",
            "--dry-run",
        ],
        0,
    );
    assert_eq!(r["dry_run"], Value::Bool(true));
    assert_eq!(u(&r, "/changed"), 50);
    assert_eq!(
        u(&r, "/moved_items"),
        (51..=100u64).map(|i| i - 50).sum::<u64>()
    );
    assert_eq!(
        u(&r, "/written"),
        (51..=100u64).map(|i| (i - 50).div_ceil(20)).sum::<u64>()
    );

    // The human report says it is a dry run.
    let out = db.run(&[
        "migrate",
        "bucket",
        "--from",
        "trades",
        "--to",
        "trade_history",
        "--key",
        "customerId",
        "--time",
        "date",
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).contains("dry run: nothing written"),
        "{}",
        show(&out)
    );

    assert_eq!(db.count("trade_history").await, 0);
    assert_eq!(db.count("extra_books").await, 0);
    assert_eq!(db.count(pattern_core::adopt::CHECKPOINTS).await, 0);
    assert_eq!(db.raw("books", &["_id"]).await, books_before);
    assert_eq!(db.raw("trades", &["_id"]).await, trades_before);
    assert_eq!(db.store.index_names("trades").await.unwrap(), trade_indexes);
    db.drop().await;
}

/// How long past its kill time a run that has committed no batch yet may go on: on a loaded
/// machine a run's start (connecting, ending the sessions of the killed run, the indexes, the
/// first reads) can take longer than the kill window, and a kill there would test nothing of
/// the resume. (A run killed while the server builds an index leaves the build running; on
/// SecantusDB a second build of the same index then conflicted with it for minutes.)
const KILL_WAIT: Duration = Duration::from_secs(120);

/// What the kills of [`kill_repeatedly`] hit.
struct Kills {
    /// Runs killed before they ended.
    mid_run: usize,
    /// Of those, runs that had committed a batch (moved the checkpoint) when killed.
    mid_migration: usize,
}

/// The version of checkpoint `name` (0: none yet) and whether it says finished.
async fn checkpoint(db: &Db, name: &str) -> (i64, bool) {
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
async fn kill_repeatedly(
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

fn run_timed(db: &Db, args: &[&str], what: &str) -> Output {
    let started = Instant::now();
    let out = db.run(args);
    eprintln!(
        "{what}: exit {:?} after {:?}",
        out.status.code(),
        started.elapsed()
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_bucket_survives_kills_and_resumes() {
    const DOCS: usize = 150_000;
    const CUSTOMERS: u64 = 300;
    let db = Db::new("cli_kill_bucket").await;
    let mut rng = Rng::seeded();
    let base = DateTime::parse_rfc3339_str("2024-01-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    let tickers = ["MDB", "AAPL", "GOOG", "MSFT"];
    // Dates drawn at random (whole seconds among 20,000: some items of a customer share one,
    // ordered then by _id), inserted in _id order: the time order is not the insertion order.
    let docs: Vec<Document> = (0..DOCS)
        .map(|_| {
            doc! {
                "_id": ObjectId::new(),
                "ticker": tickers[rng.range(0, 3) as usize],
                "customerId": rng.range(0, CUSTOMERS - 1) as i32,
                "type": if rng.next().is_multiple_of(2) { "buy" } else { "sell" },
                "qty": rng.range(1, 1000) as i32,
                "date": DateTime::from_millis(base + rng.range(0, 19_999) as i64 * 1000),
            }
        })
        .collect();
    let seeded = Instant::now();
    db.insert("trades", docs.clone()).await;
    eprintln!("seeded {DOCS} trades in {:?}", seeded.elapsed());

    // What each customer's history must be: its items by (date, _id), each once.
    let mut expected: HashMap<i32, Vec<(i64, ObjectId, Document)>> = HashMap::new();
    for d in &docs {
        let mut item = d.clone();
        let id = item.remove("_id").and_then(|b| b.as_object_id()).unwrap();
        let c = item.remove("customerId").and_then(|b| b.as_i32()).unwrap();
        let t = item.get_datetime("date").unwrap().timestamp_millis();
        expected.entry(c).or_default().push((t, id, item));
    }
    for items in expected.values_mut() {
        items.sort_by_key(|a| (a.0, a.1));
    }

    let args = [
        "--quiet",
        "migrate",
        "bucket",
        "--from",
        "trades",
        "--to",
        "trade_history",
        "--key",
        "customerId",
        "--time",
        "date",
        "--size",
        "100",
        "--batch",
        "2000",
        "--sum",
        "qty",
    ];
    let started = Instant::now();
    let kills = kill_repeatedly(&db, &args, "bucket:trades->trade_history", 3, 10, &mut rng).await;
    eprintln!("killed runs: {:?}", started.elapsed());
    assert!(
        kills.mid_migration >= 1,
        "no kill landed after a committed batch: nothing resumed"
    );
    // Part-way (or finished by a run killed in its verification): each setting that shapes the
    // buckets changed in turn is refused, and changes nothing.
    let (_, finished) = checkpoint(&db, "bucket:trades->trade_history").await;
    let changes = [
        ("--size", Some("50")),
        ("--items", Some("trades")),
        ("--count", Some("n")),
        ("--page", Some("number")),
        ("--time", Some("when")),
        ("--key", Some("customer")),
        ("--sum", None),
        ("--min", Some("qty")),
        ("--remove-source", Some("")),
    ];
    let colls = ["trades", "trade_history"];
    refused_with_other_settings(&db, &args, &changes, &colls, !finished).await;
    let mut last = vec!["--json"];
    last.extend_from_slice(&args);
    let out = run_timed(&db, &last, "the run to completion");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!(
        "the last run resumed after {}, ended {} session(s), moved {} items in {} batches",
        r["resumed_from"], r["ended_sessions"], r["moved_items"], r["batches"]
    );
    // It resumed (or a killed run had finished: killed during its final verification).
    assert!(
        r["resumed_from"] != Value::Null || r["already_finished"] == Value::Bool(true),
        "{r:#}"
    );
    assert_eq!(r["verified"]["defects"], serde_json::json!([]), "{r:#}");

    // Every bucket, by customer and page.
    let buckets = db.docs("trade_history", &["customerId", "page"]).await;
    let mut by_customer: HashMap<i32, Vec<Document>> = HashMap::new();
    for b in buckets {
        by_customer
            .entry(b.get_i32("customerId").unwrap())
            .or_default()
            .push(b);
    }
    assert_eq!(by_customer.len(), expected.len());
    for (c, items) in &expected {
        let buckets = &by_customer[c];
        assert_eq!(
            buckets.len(),
            items.len().div_ceil(100),
            "customer {c}: buckets"
        );
        let mut history = Vec::new();
        for (i, b) in buckets.iter().enumerate() {
            let page = b
                .get("page")
                .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)))
                .unwrap();
            assert_eq!(page, i as i64 + 1, "customer {c}: pages 1..n");
            let h = b.get_array("history").unwrap();
            let count = b
                .get("count")
                .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)))
                .unwrap();
            assert_eq!(count as usize, h.len(), "customer {c} page {page}: count");
            let full = if i + 1 < buckets.len() {
                100
            } else {
                items.len() - 100 * i
            };
            assert_eq!(h.len(), full, "customer {c} page {page}: items");
            let times: Vec<DateTime> = h
                .iter()
                .map(|i| *i.as_document().unwrap().get_datetime("date").unwrap())
                .collect();
            assert_eq!(
                b.get_datetime("date_min").unwrap(),
                times.iter().min().unwrap(),
                "customer {c} page {page}"
            );
            assert_eq!(
                b.get_datetime("date_max").unwrap(),
                times.iter().max().unwrap(),
                "customer {c} page {page}"
            );
            let qty: i64 = h
                .iter()
                .map(|i| i64::from(i.as_document().unwrap().get_i32("qty").unwrap()))
                .sum();
            let kept = b
                .get("qty_sum")
                .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)))
                .unwrap();
            assert_eq!(kept, qty, "customer {c} page {page}: qty_sum");
            history.extend(h.iter().cloned());
        }
        let want: Vec<Bson> = items
            .iter()
            .map(|(_, _, d)| Bson::Document(d.clone()))
            .collect();
        assert_eq!(
            history.len(),
            want.len(),
            "customer {c}: each item exactly once"
        );
        assert!(
            history == want,
            "customer {c}: the history is not the source's items by (date, _id)"
        );
    }

    let verify = [
        "verify",
        "bucket",
        "--collection",
        "trade_history",
        "--key",
        "customerId",
        "--size",
        "100",
    ];
    let out = db.run(&verify);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("no defects"), "{}", show(&out));

    // Once more: finished already, nothing changes.
    let before = db.raw("trade_history", &["_id"]).await;
    let mut again = vec!["--json"];
    again.extend_from_slice(&args);
    let out = run_timed(&db, &again, "the run after completion");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["already_finished"], Value::Bool(true), "{r:#}");
    assert_eq!(u(&r, "/moved_items"), 0);
    assert_eq!(
        db.raw("trade_history", &["_id"]).await,
        before,
        "the buckets changed"
    );
    assert_eq!(
        db.count("trades").await,
        DOCS as u64,
        "the source is left as it was"
    );
    // Finished: another layout is refused (exit 2), not reported as done.
    let changes = [("--size", Some("50")), ("--sum", None)];
    refused_with_other_settings(&db, &args, &changes, &["trades", "trade_history"], false).await;
    db.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_outlier_survives_kills_and_resumes() {
    const DOCS: i32 = 2_000;
    let db = Db::new("cli_kill_outlier").await;
    let mut rng = Rng::seeded();
    // 65% of the documents within the threshold, the rest up to 2,000 customers.
    let docs: Vec<Document> = (0..DOCS)
        .map(|i| {
            let n = if rng.next() % 100 < 65 {
                rng.range(0, 50)
            } else {
                rng.range(51, 2000)
            };
            let customers: Vec<i32> = (0..n).map(|_| rng.range(0, 1_000_000) as i32).collect();
            doc! {"_id": i, "title": format!("book {i}"), "customers_purchased": customers}
        })
        .collect();
    db.insert("books", docs.clone()).await;
    let args = [
        "--quiet",
        "migrate",
        "outlier",
        "--collection",
        "books",
        "--array",
        "customers_purchased",
        "--threshold",
        "50",
        "--overflow",
        "extra_books",
        "--reference",
        "book_id",
        "--chunk",
        "100",
        "--batch",
        "2000",
    ];
    let started = Instant::now();
    let kills = kill_repeatedly(&db, &args, "outlier:books", 3, 10, &mut rng).await;
    eprintln!("killed runs: {:?}", started.elapsed());
    let (_, finished) = checkpoint(&db, "outlier:books").await;
    let changes = [
        ("--threshold", Some("100")),
        ("--array", Some("customers")),
        ("--flag", Some("has_more")),
        ("--overflow", Some("extra_more")),
        ("--reference", Some("sale_id")),
        ("--extra", Some("more")),
        ("--chunk", Some("7")),
        ("--chunk-count", Some("n")),
        ("--seq", Some("number")),
    ];
    let colls = ["books", "extra_books"];
    refused_with_other_settings(&db, &args, &changes, &colls, !finished).await;
    let out = run_timed(&db, &args, "the run to completion");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        kills.mid_migration >= 1,
        "no kill landed after a committed batch: nothing resumed"
    );
    assert!(
        stdout(&out).contains("resumed after") || stdout(&out).contains("already finished"),
        "{}",
        show(&out)
    );

    let mains = db.docs("books", &["_id"]).await;
    let chunks = db.docs("extra_books", &["book_id", "seq"]).await;
    let mut overflow: HashMap<i32, Vec<Document>> = HashMap::new();
    for c in chunks {
        overflow
            .entry(c.get_i32("book_id").unwrap())
            .or_default()
            .push(c);
    }
    assert_eq!(mains.len(), docs.len());
    for (main, original) in mains.iter().zip(&docs) {
        let id = main.get_i32("_id").unwrap();
        assert_eq!(id, original.get_i32("_id").unwrap());
        let want = original.get_array("customers_purchased").unwrap();
        let mut got = main.get_array("customers_purchased").unwrap().clone();
        assert!(
            got.len() <= 50,
            "book {id}: {} items in the main array",
            got.len()
        );
        let flagged = main.get_bool("has_extras").unwrap_or(false);
        assert_eq!(flagged, want.len() > 50, "book {id}: flag");
        for (i, c) in overflow.remove(&id).unwrap_or_default().iter().enumerate() {
            let seq = c
                .get("seq")
                .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)))
                .unwrap();
            assert_eq!(seq, i as i64 + 1, "book {id}: chunks numbered 1..n");
            let items = c.get_array("customers_purchased_extra").unwrap();
            assert!(items.len() <= 100, "book {id}: chunk {seq} over 100");
            got.extend(items.iter().cloned());
        }
        assert!(
            &got == want,
            "book {id}: main array + chunks differ from the original ({} vs {} items)",
            got.len(),
            want.len()
        );
    }
    assert!(overflow.is_empty(), "orphan chunks: {:?}", overflow.keys());

    let verify = [
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
        "--reference",
        "book_id",
        "--chunk",
        "100",
    ];
    let out = db.run(&verify);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let before = (
        db.raw("books", &["_id"]).await,
        db.raw("extra_books", &["_id"]).await,
    );
    let out = run_timed(&db, &args, "the run after completion");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("already finished"), "{}", show(&out));
    assert_eq!(
        (
            db.raw("books", &["_id"]).await,
            db.raw("extra_books", &["_id"]).await
        ),
        before
    );
    // Finished: another layout is refused (exit 2), not reported as done.
    let changes = [("--threshold", Some("100")), ("--chunk", Some("50"))];
    refused_with_other_settings(&db, &args, &changes, &["books", "extra_books"], false).await;
    db.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_finds_an_injected_defect_and_exits_3() {
    let db = Db::new("cli_defect").await;
    let mut rng = Rng::seeded();
    db.insert("trades", trades_10_customers(&mut rng)).await;
    let out = db.run(&[
        "--quiet",
        "migrate",
        "bucket",
        "--from",
        "trades",
        "--to",
        "trade_history",
        "--key",
        "customerId",
        "--time",
        "date",
        "--size",
        "20",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let verify = [
        "verify",
        "bucket",
        "--collection",
        "trade_history",
        "--key",
        "customerId",
        "--size",
        "20",
    ];
    assert_eq!(db.run(&verify).status.code(), Some(0));

    // Customer 3's second bucket says it holds one item more than its array.
    let target = Filter::and([Filter::eq("customerId", 3), Filter::eq("page", 2i64)]);
    let mut inc = Update {
        inc: vec![("count".into(), 1)],
        ..Update::default()
    };
    let o = db
        .store
        .update_one("trade_history", &target, &mut inc, false)
        .await
        .unwrap();
    assert!(o.matched);
    let id = db
        .store
        .find("trade_history", &target, &FindOptions::default())
        .await
        .unwrap()[0]
        .get_str("_id")
        .unwrap()
        .to_owned();

    let out = db.run(&verify);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let text = stdout(&out);
    assert!(text.contains("1 defects"), "{text}");
    assert!(
        text.contains(&format!(
            "trade_history _id \"{id}\": count is 21 but the array holds 20 items"
        )),
        "{text}"
    );

    let r = db.json(&verify, 3);
    let defects = r["defects"].as_array().unwrap();
    assert_eq!(defects.len(), 1, "{r:#}");
    assert_eq!(defects[0]["defect"], "count_mismatch");
    assert_eq!(defects[0]["id"], Value::from(id.as_str()));
    assert_eq!(defects[0]["count"], 21);
    assert_eq!(defects[0]["items"], 20);
    db.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_money_is_exact_refuses_what_is_not_and_finishes_after_a_clean_verify() {
    let db = Db::new("cli_money").await;
    // The seed's clothes, prices as scaled longs (1999 = 19.99), one with a third decimal place.
    let prices = [1999_i64, 3999, 2999, 2495, 8000];
    let mut clothes: Vec<Document> = (1..=5)
        .zip(prices)
        .map(|(id, p)| doc! {"_id": id, "price": p})
        .collect();
    clothes.push(doc! {"_id": 6, "price": 4.995});
    db.insert("clothes", clothes).await;
    const FIELDS: [&str; 8] = [
        "--collection",
        "clothes",
        "--from",
        "price",
        "--scaled",
        "2",
        "--to",
        "priceDec",
    ];
    let args: Vec<&str> = ["convert", "money"]
        .into_iter()
        .chain(FIELDS)
        .chain(["--finish", "into-old"])
        .collect();

    // The dry run writes nothing.
    let dry: Vec<&str> = args.iter().copied().chain(["--dry-run"]).collect();
    let r = db.json(&dry, 3);
    assert_eq!(r["dry_run"], true, "{r:#}");
    let stored = db
        .store
        .find("clothes", &Filter::and([]), &FindOptions::default())
        .await
        .unwrap();
    assert!(
        stored.iter().all(|d| !d.contains_key("priceDec")),
        "{stored:?}"
    );

    // 4.995 is refused (a fraction in a scaled field), the rest converted; the finish step
    // waits for a clean verification: exit 3.
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let text = stdout(&out);
    assert!(text.contains("converted                      5"), "{text}");
    assert!(
        text.contains("_id 6: 4.995 does not convert exactly"),
        "{text}"
    );
    assert!(text.contains("finish step not run"), "{text}");
    let one = db
        .store
        .find("clothes", &Filter::eq("_id", 1), &FindOptions::default())
        .await
        .unwrap();
    assert_eq!(
        one[0].get("priceDec"),
        Some(&Bson::Decimal128("19.99".parse().unwrap()))
    );
    assert_eq!(one[0].get("price"), Some(&Bson::Int64(1999)));

    // Fixed by hand, the same command finishes: every price a Decimal128 in `price`.
    let mut fix = Update {
        set: vec![("price".into(), Bson::Int64(499))],
        ..Update::default()
    };
    assert!(
        db.store
            .update_one("clothes", &Filter::eq("_id", 6), &mut fix, false)
            .await
            .unwrap()
            .matched
    );
    let r = db.json(&args, 0);
    assert_eq!(
        r["verified"]["defects"].as_array().map(Vec::len),
        Some(0),
        "{r:#}"
    );
    let stored = db
        .store
        .find("clothes", &Filter::and([]), &FindOptions::default())
        .await
        .unwrap();
    let expected = ["19.99", "39.99", "29.99", "24.95", "80.00", "4.99"];
    for (d, e) in stored.iter().zip(expected) {
        assert_eq!(
            d.get("price"),
            Some(&Bson::Decimal128(e.parse().unwrap())),
            "{d}"
        );
        assert!(!d.contains_key("priceDec"), "{d}");
    }
    // `verify money` on the finished collection: clean.
    let verify: Vec<&str> = ["verify", "money"].into_iter().chain(FIELDS).collect();
    let out = db.run(&verify);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).contains("6 documents read, 6 converted"),
        "{}",
        show(&out)
    );
    // The same field on both sides, or no form: usage errors.
    let same = [
        "verify",
        "money",
        "--collection",
        "clothes",
        "--from",
        "price",
        "--text",
        "--to",
        "price",
    ];
    assert_eq!(db.run(&same).status.code(), Some(2));
    let no_form = [
        "convert",
        "money",
        "--collection",
        "clothes",
        "--from",
        "price",
        "--to",
        "p2",
    ];
    assert_eq!(db.run(&no_form).status.code(), Some(2));
    db.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_reports_missing_stale_and_users_and_exits_3_on_drift() {
    let db = Db::new("cli_indexes").await;
    let mut rng = Rng::seeded();
    db.insert("trades", trades_10_customers(&mut rng)).await;
    let args = [
        "indexes",
        "bucket",
        "--collection",
        "trade_history",
        "--key",
        "customerId",
        "--size",
        "20",
        "--time",
        "date",
    ];
    // Before the migration: no collection, every needed index missing.
    let r = db.json(&args, 3);
    assert_eq!(r[0]["exists"], false, "{r:#}");
    assert_eq!(r[0]["missing"].as_array().unwrap().len(), 4, "{r:#}");
    let out = db.run(&[
        "--quiet",
        "migrate",
        "bucket",
        "--from",
        "trades",
        "--to",
        "trade_history",
        "--key",
        "customerId",
        "--time",
        "date",
        "--size",
        "20",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("needed, present"), "{}", show(&out));
    // Without --time, the bounds index is the library's, stale for that layout.
    let plain = &args[..args.len() - 2];
    let out = db.run(plain);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(stdout(&out).contains("STALE"), "{}", show(&out));
    // The trades collection's own index is the user's.
    let r = db.json(
        &[
            "indexes",
            "bucket",
            "--collection",
            "trades",
            "--key",
            "customerId",
        ],
        3,
    );
    assert_eq!(r[0]["users"], serde_json::json!(["_id_"]), "{r:#}");
    db.drop().await;
}

/// The defect of a typo: a first run pointed at an array the documents lack (and the default
/// reference) is refused before it writes anything, naming what it found; the indexes such a
/// run of an earlier version left on the overflow collection (the library's, for another
/// reference) are dropped by the next run instead of failing it; the same for the bucket
/// migration's source, key and time, and the money conversion's collection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typo_is_refused_before_anything_is_written() {
    let db = Db::new("cli_typo").await;
    let sales: Vec<Document> = (0..40)
        .map(|i| {
            let buyers: Vec<i32> = (0..(i * 5)).collect();
            doc! {"_id": i, "title": format!("book {i}"), "customers_purchased": buyers}
        })
        .collect();
    db.insert("sales", sales.clone()).await;
    let collections = db.store.collection_names().await.unwrap();
    let typo = [
        "migrate",
        "outlier",
        "--collection",
        "sales",
        "--array",
        "customers",
        "--threshold",
        "50",
        "--overflow",
        "extra_sales",
    ];
    let out = db.run(&typo);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no document of `sales` has `customers`")
            && err.contains("customers_purchased")
            && err.contains("nothing was written"),
        "{err}"
    );
    let out = db.run(&with_arg(&typo, "--collection", Some("sale")));
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no collection `sale`") && err.contains("sales"),
        "{err}"
    );
    assert_eq!(
        db.store.collection_names().await.unwrap(),
        collections,
        "something was created"
    );

    // The indexes an earlier version's run with the default reference (`sales_id`) left.
    let stale = pattern_core::spec::SeriesSpec {
        collection: "extra_sales",
        key_field: "sales_id",
        items_field: "customers_purchased_extra",
        count_field: "count",
        size: pattern_core::outlier::DEFAULT_CHUNK,
        order: pattern_core::spec::SeriesOrder::Seq("seq"),
        keeps: pattern_core::spec::Keeps::NONE,
    };
    for index in stale.indexes() {
        db.store.create_index("extra_sales", &index).await.unwrap();
    }
    let right = with_arg(
        &with_arg(&typo, "--array", Some("customers_purchased")),
        "--reference",
        Some("book_id"),
    );
    let out = db.run(&right);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let names = db.store.index_names("extra_sales").await.unwrap();
    assert!(!names.iter().any(|n| n.contains("sales_id")), "{names:?}");
    let indexes: Vec<&str> = ["indexes"]
        .into_iter()
        .chain(
            right[1..]
                .iter()
                .copied()
                .filter(|a| !a.starts_with("--batch")),
        )
        .collect();
    let out = db.run(&indexes);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for (main, original) in db.docs("sales", &["_id"]).await.iter().zip(&sales) {
        let n = original.get_array("customers_purchased").unwrap().len();
        assert_eq!(
            main.get_array("customers_purchased").unwrap().len(),
            n.min(50)
        );
    }

    // Bucket: the source, its key, its time; money: the collection.
    let bucket = [
        "migrate",
        "bucket",
        "--from",
        "sales",
        "--to",
        "sale_buckets",
        "--key",
        "title",
        "--time",
        "date",
    ];
    let out = db.run(&bucket);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`date` holding the item's time") && err.contains("title"),
        "{err}"
    );
    let out = db.run(&with_arg(&bucket, "--key", Some("customer")));
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = db.run(&with_arg(&bucket, "--from", Some("trade")));
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let money = [
        "convert",
        "money",
        "--collection",
        "cloths",
        "--from",
        "price",
        "--scaled",
        "2",
        "--to",
        "priceDec",
    ];
    let r = db.json(&money, 2);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("no collection `cloths`"),
        "{r:#}"
    );
    let after = db.store.collection_names().await.unwrap();
    assert!(
        !after.iter().any(|c| c == "sale_buckets" || c == "cloths"),
        "{after:?}"
    );
    db.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_stopped_by_the_data_exits_5() {
    let db = Db::new("cli_stopped").await;
    // 100 items of 200 KB: their bucket of 100 would be 20 MB, over the 16 MiB limit.
    let base = DateTime::parse_rfc3339_str("2024-01-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    let docs = (0..100i64)
        .map(|i| doc! {"customerId": 1, "date": DateTime::from_millis(base + i * 1000), "blob": "x".repeat(200_000)})
        .collect();
    db.insert("trades", docs).await;
    let args = [
        "migrate",
        "bucket",
        "--from",
        "trades",
        "--to",
        "trade_history",
        "--key",
        "customerId",
        "--time",
        "date",
        "--size",
        "100",
    ];
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: the migration stopped: "), "{err}");
    assert!(err.contains("would exceed 16 MiB"), "{err}");
    assert!(
        err.contains("running the same command again resumes"),
        "{err}"
    );
    let r = db.json(&args, 5);
    assert_eq!(r["code"], 5);
    assert_eq!(db.count("trade_history").await, 0);
    db.drop().await;
}

#[test]
fn unreachable_server_exits_4_and_usage_errors_exit_2() {
    let unreachable = "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500";
    let args = [
        "--uri",
        unreachable,
        "--db",
        "x",
        "verify",
        "bucket",
        "--collection",
        "c",
        "--key",
        "k",
    ];
    let out = Command::new(BIN)
        .env_remove("MONGODB_URI")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: cannot reach the server"), "{err}");
    assert!(out.stdout.is_empty(), "{}", show(&out));
    // With --json, also one JSON document on stdout.
    let out = Command::new(BIN)
        .env_remove("MONGODB_URI")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(r["code"], 4);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("cannot reach the server"),
        "{r:#}"
    );

    // A missing required argument: clap's usage error.
    let out = Command::new(BIN)
        .args([
            "--uri",
            unreachable,
            "--db",
            "x",
            "verify",
            "bucket",
            "--collection",
            "c",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--key"),
        "{}",
        show(&out)
    );
    // No database, no server: usage errors too.
    let out = Command::new(BIN)
        .args([
            "--uri",
            unreachable,
            "verify",
            "bucket",
            "--collection",
            "c",
            "--key",
            "k",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = Command::new(BIN)
        .env_remove("MONGODB_URI")
        .args([
            "--db",
            "x",
            "verify",
            "bucket",
            "--collection",
            "c",
            "--key",
            "k",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("MONGODB_URI"),
        "{}",
        show(&out)
    );
    // Refused settings: the time's min kept twice.
    let out = Command::new(BIN)
        .args([
            "--uri",
            unreachable,
            "--db",
            "x",
            "migrate",
            "bucket",
            "--from",
            "t",
            "--to",
            "h",
            "--key",
            "k",
        ])
        .args(["--time", "date", "--min", "date"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    // --json on a usage error: the error as JSON on stdout.
    let out = Command::new(BIN)
        .args([
            "--json",
            "--uri",
            unreachable,
            "--db",
            "x",
            "verify",
            "bucket",
            "--collection",
            "c",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(r["code"], 2);
}

#[test]
fn help_documents_the_exit_codes() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    for want in [
        "Exit codes:",
        "  3  the data has layout defects",
        "  4  cannot reach the server",
        "  5  the migration stopped",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
}
