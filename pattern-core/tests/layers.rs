//! The layers of ARCHITECTURE.md, checked: every `crate::...` path in a module of
//! `pattern-core/src` (comments and unit tests aside) names a module of its own layer or of a
//! layer below it. A new import that points up fails here, with the file and the path.

use std::path::{Path, PathBuf};

/// The layer of a source file (by its path under `src/`), as ARCHITECTURE.md lists them.
fn layer_of_file(rel: &str) -> &'static str {
    let rel = rel.trim_end_matches(".rs");
    match rel.split('/').collect::<Vec<_>>().as_slice() {
        ["lib"] => "lib",
        ["bucket", ..]
        | ["outlier", ..]
        | ["tree", ..]
        | ["adopt", ..]
        | ["document", ..]
        | ["testing"]
        | ["validator"] => "patterns",
        ["series", ..] => "series",
        ["store", "query", ..] => "query",
        ["store", "memory", ..] | ["store", "mongo" | "mongo_txn" | "any" | "any_txn"] => {
            "store implementations"
        }
        ["store", ..] => "store contract",
        ["spec"] => "specs",
        ["query", ..] => "query",
        ["codec", ..] | ["key"] | ["error"] | ["money", ..] | ["local_time"] => "foundation",
        other => panic!("no layer for src/{}", other.join("/")),
    }
}

/// The layer a path `crate::<first>::<second>` points into.
fn layer_of_path(first: &str, second: &str) -> &'static str {
    match (first, second) {
        (
            "bucket" | "outlier" | "tree" | "adopt" | "document" | "testing" | "validator"
            | "Bucket" | "Outlier" | "Tree" | "Document" | "Page" | "Counts" | "Typical",
            _,
        ) => "patterns",
        ("series", _) => "series",
        ("store", "query") => "query",
        ("store", "memory" | "mongo" | "mongo_txn" | "any" | "any_txn")
        | (
            "MemoryStore" | "MongoStore" | "AnyStore" | "MemoryTxn" | "MongoTxn" | "AnyTxn"
            | "MemoryPlan",
            _,
        ) => "store implementations",
        (
            "store"
            | "Store"
            | "StoreMemo"
            | "UpdateOutcome"
            | "ArrayStats"
            | "Transaction"
            | "transaction"
            | "BoxFuture"
            | "TRANSACTION_ATTEMPTS"
            | "WriteOp"
            | "BatchOutcome"
            | "Kept",
            _,
        ) => "store contract",
        (
            "spec" | "BucketSpec" | "OutlierSpec" | "SeriesSpec" | "SeriesOrder" | "TreeSpec"
            | "TreeModel" | "TreeFields" | "Keeps" | "Aggregate" | "AggregateOp" | "ShardKey"
            | "Keywords" | "Normalize",
            _,
        ) => "specs",
        ("query", _) => "query",
        (
            "codec" | "key" | "error" | "KeyPart" | "EpochSeconds" | "BsonType" | "money"
            | "local_time" | "LocalTime" | "LocalTimeError",
            _,
        ) => "foundation",
        ("Error" | "Result" | "BoxError" | "Missing" | "MAX_DOCUMENT_BYTES", _) => "foundation",
        (other, _) => panic!("unknown crate path `crate::{other}`: add it to this test"),
    }
}

/// What each layer may import besides itself.
fn allowed(from: &str) -> &'static [&'static str] {
    match from {
        "lib" => &[
            "patterns",
            "series",
            "store contract",
            "store implementations",
            "specs",
            "query",
            "foundation",
        ],
        "patterns" => &["series", "store contract", "specs", "query", "foundation"],
        "series" => &["store contract", "specs", "query", "foundation"],
        "store implementations" => &["store contract", "specs", "query", "foundation"],
        "store contract" => &["specs", "query", "foundation"],
        "specs" => &["foundation"],
        "query" => &["foundation"],
        "foundation" => &[],
        other => panic!("unknown layer {other}"),
    }
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `crate::a::b` paths of a file's code (not its comments, nor its unit tests).
fn crate_paths(code: &str) -> Vec<(String, String)> {
    let code = code.split("#[cfg(test)]\nmod tests {").next().unwrap_or("");
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut paths = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (i, _) in line.match_indices("crate::") {
            let rest = &line[i + "crate::".len()..];
            let first = ident(rest);
            let second = rest[first.len()..]
                .strip_prefix("::")
                .map(ident)
                .unwrap_or_default();
            if !first.is_empty() && !line[..i].ends_with("pattern_") && !line[..i].ends_with('$') {
                paths.push((first, second));
            }
        }
    }
    paths
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(
        files.len() > 20,
        "sources not found under {}",
        src.display()
    );
    let mut wrong = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.ends_with("tests.rs") {
            continue; // unit tests may reach anything
        }
        let from = layer_of_file(&rel);
        let code = std::fs::read_to_string(&file).unwrap();
        for (first, second) in crate_paths(&code) {
            let to = layer_of_path(&first, &second);
            if to != from && !allowed(from).contains(&to) {
                wrong.push(format!(
                    "src/{rel} ({from}) imports crate::{first}::{second} ({to})"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers of ARCHITECTURE.md:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checker_sees_an_import_upwards() {
    let code =
        "use crate::series::push;\n// crate::bucket in a comment\nfn f() { crate::Store::x() }";
    assert_eq!(
        crate_paths(code),
        [
            ("series".into(), "push".into()),
            ("Store".into(), "x".into())
        ]
    );
    assert!(!allowed(layer_of_file("store/mod.rs")).contains(&layer_of_path("series", "push")));
}
