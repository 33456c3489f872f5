//! Server faults: the MongoDB test server is killed (SIGKILL) while writers push to buckets
//! and to an outlier, then restarted on the same storage directory.
//!
//! - During the outage every call returns a typed error (`Unavailable`) within a bounded time
//!   (`serverSelectionTimeoutMS`, here 1 s): no hang, no panic.
//! - After the restart every push that was acknowledged is present exactly once, and every
//!   invariant holds: no bucket over `size`, the outlier's main array within its threshold, its
//!   flag set exactly when it has an overflow.
//!
//! Writes use write concern `w: "majority", j: true` (journaled before acknowledged): with the
//! default `w: 1` a server may acknowledge a write it has not yet made durable, and lose it in a
//! crash (MongoDB flushes its journal every 100 ms).
//!
//! This test starts its own SecantusDB server (it cannot kill one it does not own), so it needs
//! `secantusd-rs` (from `scripts/test.sh`, or `$SECANTUS_BIN`) even when `MONGODB_URI` points
//! elsewhere.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use pattern_core::{Bucket, Error, MongoStore, Outlier};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Mark {
    writer: u32,
    n: u32,
}

#[derive(Bucket)]
#[bucket(collection = "marks", size = 5)]
#[allow(dead_code)]
struct Marks {
    #[bucket(key)]
    writer: i64,
    #[bucket(items)]
    marks: Vec<Mark>,
}

#[derive(Outlier, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[outlier(
    collection = "logs",
    threshold = 10,
    overflow = "logs_extra",
    chunk = 7
)]
struct Log {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i64,
    #[outlier(items)]
    marks: Vec<Mark>,
}

/// Bound on any one call during the outage: server selection (1 s) plus slack.
const CALL_BOUND: Duration = Duration::from_secs(5);

struct Server {
    bin: PathBuf,
    port: u16,
    storage: PathBuf,
    child: Option<Child>,
}

impl Server {
    fn binary() -> PathBuf {
        if let Ok(bin) = std::env::var("SECANTUS_BIN") {
            return bin.into();
        }
        let home = std::env::var("HOME").unwrap_or_default();
        let candidates = [PathBuf::from(format!("{home}/.cargo/bin/secantusd-rs"))];
        for c in candidates {
            if c.exists() {
                return c;
            }
        }
        panic!(
            "this test kills and restarts its own SecantusDB server and needs the `secantusd-rs` binary: \
             run scripts/test.sh (which installs it: cargo install secantus-mdb --version 0.5.3-beta.196 \
             --ignore-rust-version --locked), or set SECANTUS_BIN"
        );
    }

    fn start() -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let storage =
            std::env::temp_dir().join(format!("pattern-faults-{port}-{}", std::process::id()));
        std::fs::create_dir_all(&storage).unwrap();
        let mut s = Server {
            bin: Self::binary(),
            port,
            storage,
            child: None,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let child = Command::new(&self.bin)
                .args([
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &self.port.to_string(),
                    "--storage-path",
                ])
                .arg(&self.storage)
                .args(["--log-file-max", "16MB", "--cache-size", "256M"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start secantusd-rs");
            self.child = Some(child);
            while Instant::now() < deadline {
                if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                    return;
                }
                if let Some(Ok(Some(_))) = self.child.as_mut().map(|c| c.try_wait()) {
                    break; // exited (the port may still be held): start it again
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            assert!(
                Instant::now() < deadline,
                "the test server did not start within 60 s"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap(); // SIGKILL
            c.wait().unwrap();
        }
    }

    fn uri(&self) -> String {
        format!(
            "mongodb://127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=1000&connectTimeoutMS=1000&w=majority&journal=true",
            self.port
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.storage);
    }
}

#[derive(Default)]
struct Outcomes {
    /// (writer, n) of every acknowledged push, bucket and outlier.
    acked_bucket: Vec<Mark>,
    acked_log: Vec<Mark>,
    errors: HashMap<String, usize>,
    slowest_error: Duration,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "open (issue 4): on SecantusDB 0.5.3-beta.196 one of the last bucket pushes acknowledged \
            before the SIGKILL (findAndModify, w: majority, j: true) is missing after the restart in \
            about 2 runs of 3; run with `cargo test -p pattern-tests --test faults -- --ignored`"]
async fn kill_and_restart_while_pushing() {
    let mut server = Server::start();
    let store = MongoStore::connect(&server.uri(), "faults").await.unwrap();
    Log {
        id: 1,
        marks: vec![],
    }
    .save(&store)
    .await
    .unwrap();
    Marks::ensure_indexes(&store).await.unwrap();

    let outcomes = Arc::new(Mutex::new(Outcomes::default()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..6u32)
        .map(|w| {
            let (store, outcomes, stop) = (store.clone(), outcomes.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let mark = Mark { writer: w, n };
                    let t = Instant::now();
                    let r = if w % 2 == 0 {
                        Marks::push(&store, &(w as i64 % 3), mark.clone()).await
                    } else {
                        Log::push_marks(&store, &1, mark.clone()).await
                    };
                    let took = t.elapsed();
                    let failed = {
                        let mut o = outcomes.lock().unwrap();
                        match r {
                            Ok(()) if w % 2 == 0 => o.acked_bucket.push(mark),
                            Ok(()) => o.acked_log.push(mark),
                            Err(ref e) => {
                                assert!(
                                    matches!(e, Error::Unavailable { .. } | Error::Server { .. }),
                                    "untyped failure: {e:?}"
                                );
                                let kind = format!("{e:?}")
                                    .split([' ', '{'])
                                    .next()
                                    .unwrap_or_default()
                                    .to_owned();
                                *o.errors.entry(kind).or_default() += 1;
                                o.slowest_error = o.slowest_error.max(took);
                            }
                        }
                        r.is_err()
                    };
                    if failed {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    n += 1;
                }
            })
        })
        .collect();

    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before_kill = {
        let o = outcomes.lock().unwrap();
        o.acked_bucket.len() + o.acked_log.len()
    };
    tokio::task::block_in_place(|| server.kill());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let outage_errors: usize = outcomes.lock().unwrap().errors.values().sum();
    tokio::task::block_in_place(|| server.spawn());
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }

    let o = std::mem::take(&mut *outcomes.lock().unwrap());
    let after = o.acked_bucket.len() + o.acked_log.len();
    println!(
        "acknowledged: {before_kill} before the kill, {after} in all; errors {:?}; slowest failed call {:?}",
        o.errors, o.slowest_error
    );
    assert!(before_kill > 0, "no push went through before the kill");
    assert!(
        outage_errors > 0,
        "the outage produced no error: was the server killed?"
    );
    assert!(
        after > before_kill,
        "no push went through after the restart"
    );
    assert!(
        o.slowest_error < CALL_BOUND,
        "a failing call took {:?}",
        o.slowest_error
    );

    // Every acknowledged push is present exactly once; the invariants hold.
    let verify = MongoStore::connect(&server.uri(), "faults").await.unwrap();
    let mut stored: HashMap<Mark, usize> = HashMap::new();
    for key in 0..3i64 {
        let pages: Vec<_> = Marks::pages(&verify, &key).try_collect().await.unwrap();
        for p in pages {
            assert!(
                p.items.len() <= 5,
                "bucket {} holds {}",
                p.id,
                p.items.len()
            );
            for m in p.items {
                *stored.entry(m).or_default() += 1;
            }
        }
    }
    for m in &o.acked_bucket {
        assert_eq!(
            stored.get(m),
            Some(&1),
            "acknowledged bucket push {m:?} stored {:?} times",
            stored.get(m)
        );
    }
    let typical = Log::typical(&verify, &1).await.unwrap().unwrap();
    assert!(typical.doc.marks.len() <= 10);
    let extra = verify
        .database()
        .collection::<bson::Document>("logs_extra")
        .count_documents(bson::doc! {})
        .await
        .unwrap();
    assert_eq!(
        typical.has_extras,
        extra > 0,
        "flag disagrees with the overflow"
    );
    let all = Log::all_marks(&verify, &1).await.unwrap().unwrap();
    let mut in_log: HashMap<&Mark, usize> = HashMap::new();
    for m in &all {
        *in_log.entry(m).or_default() += 1;
    }
    for m in &o.acked_log {
        assert_eq!(
            in_log.get(m),
            Some(&1),
            "acknowledged outlier push {m:?} stored {:?} times",
            in_log.get(m)
        );
    }
    let _ = verify.database().drop().await;
}
