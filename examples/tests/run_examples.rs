//! Runs the example binaries as a user would: in memory (no MONGODB_URI) and on MongoDB.

use std::process::Command;

fn run(bin: &str, mongo: bool) -> String {
    let mut cmd = Command::new(bin);
    if mongo {
        cmd.env("MONGODB_URI", pattern_tests_uri());
    } else {
        cmd.env_remove("MONGODB_URI");
    }
    let out = cmd.output().expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{bin} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// `$MONGODB_URI`, or a panic that says how to get a server.
fn pattern_tests_uri() -> String {
    std::env::var("MONGODB_URI").ok().filter(|u| !u.trim().is_empty()).unwrap_or_else(|| {
        panic!(
            "this test needs a MongoDB server and MONGODB_URI is not set: run scripts/test.sh, which installs and \
             starts the SecantusDB test server, or point MONGODB_URI at a mongod or Atlas cluster"
        )
    })
}

fn check_stock_trades(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    assert!(out.contains("\"_id\": \"123_1698335223\""), "{out}");
    assert!(out.contains("\"_id\": \"456_1698750962\""), "{out}");
    assert!(out.contains("customer 123: 3 trades in 1 bucket(s)"), "{out}");
    assert!(out.contains("the collection holds the page's final documents"), "{out}");
}

#[test]
fn stock_trades_in_memory() {
    check_stock_trades(&run(env!("CARGO_BIN_EXE_stock_trades"), false), "in-memory");
}

#[test]
fn stock_trades_on_mongodb() {
    check_stock_trades(&run(env!("CARGO_BIN_EXE_stock_trades"), true), "MongoDB");
}
