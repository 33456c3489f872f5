//! What every test uses: the binary, a test's database, a seeded generator, the output's
//! pieces, the arguments rewritten.

pub(crate) mod data;
pub(crate) mod kill;

use std::process::Output;

use assert_cmd::Command;
use bson::{Document, RawDocumentBuf};
use futures::StreamExt;
use pattern_core::store::query::{Filter, FindOptions};
use pattern_core::store::MongoStore;
use pattern_core::store::Store;
use pattern_tests::{mongo_uri, unique_db};
use serde_json::Value;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_pattern");
/// A small deterministic generator (splitmix64): no dependency, reproducible from its seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn seeded() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(7);
        eprintln!("rng seed {seed}");
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high`.
    pub(crate) fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
}

/// A test's database: the store, and the command's arguments that name it.
pub(crate) struct Db {
    pub name: String,
    pub uri: String,
    pub store: MongoStore,
}

impl Db {
    pub(crate) async fn new(test: &str) -> Self {
        let uri = mongo_uri();
        let name = unique_db(test);
        let store = MongoStore::connect(&uri, &name).await.expect("connect");
        Db { name, uri, store }
    }

    /// `pattern --db <db> <args>` with the server's URI in the environment.
    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.env("MONGODB_URI", &self.uri)
            .args(["--db", &self.name])
            .args(args);
        c
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("the command runs")
    }

    /// Runs with `--json`, expects `code`, returns the parsed report.
    pub(crate) fn json(&self, args: &[&str], code: i32) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert_eq!(out.status.code(), Some(code), "{args:?}\n{}", show(&out));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", show(&out)))
    }

    pub(crate) async fn count(&self, coll: &str) -> u64 {
        self.store
            .array_stats(coll, &Filter::and([]), "_id")
            .await
            .expect("count")
            .documents
    }

    /// Every document of `coll` in `sort` order, as stored (bytes).
    pub(crate) async fn raw(&self, coll: &str, sort: &[&str]) -> Vec<RawDocumentBuf> {
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

    pub(crate) async fn docs(&self, coll: &str, sort: &[&str]) -> Vec<Document> {
        self.raw(coll, sort)
            .await
            .into_iter()
            .map(|r| r.to_document().expect("decodes"))
            .collect()
    }

    pub(crate) async fn insert(&self, coll: &str, docs: Vec<Document>) {
        for chunk in docs.chunks(10_000) {
            self.store
                .insert_many(coll, chunk.to_vec())
                .await
                .expect("insert");
        }
    }

    pub(crate) async fn drop(self) {
        self.store
            .database()
            .drop()
            .await
            .expect("drop the database");
    }
}

pub(crate) fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
pub(crate) fn u(v: &Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no integer at {path} in {v:#}"))
}

/// `args` with `flag`'s value replaced by `value` (or `flag value` added), or, with `value`
/// `None`, `flag` and its value (or the bare flag) removed; `Some("")` adds a bare flag.
pub(crate) fn with_arg<'a>(
    args: &[&'a str],
    flag: &'a str,
    value: Option<&'a str>,
) -> Vec<&'a str> {
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
