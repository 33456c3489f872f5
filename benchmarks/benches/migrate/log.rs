//! Measuring: commands, memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::event::command::CommandEvent;
use pattern_bench::scale;
use pattern_core::adopt::Verified;
use pattern_core::store::MongoStore;

use crate::exact::Exact;

/// A `VmXXX` figure of `/proc/self/status`, in KiB (0 where there is none).
fn vm_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resets the process's peak resident size (`VmHWM`) to its current one (Linux).
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

pub(crate) fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The commands a client sent (the driver's handshakes and monitoring aside), by name: how
/// many, and the time they took on the server and the wire; and those that took over a second.
#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Logged>>);

#[derive(Default)]
struct Logged {
    by_name: Commands,
    /// Started, not finished: request id -> ("name collection", when).
    open: HashMap<i32, (String, Instant)>,
    slow: Vec<String>,
}

pub(crate) type Commands = BTreeMap<String, (usize, Duration)>;

impl Log {
    fn event(&self, ev: CommandEvent) {
        let mut l = self.0.lock().unwrap();
        let (id, name, took) = match ev {
            CommandEvent::Started(e) => {
                let target = e.command.get_str(&e.command_name).unwrap_or("");
                l.open.insert(
                    e.request_id,
                    (format!("{} {target}", e.command_name), Instant::now()),
                );
                return;
            }
            CommandEvent::Succeeded(e) => (e.request_id, e.command_name, e.duration),
            CommandEvent::Failed(e) => (e.request_id, e.command_name, e.duration),
            _ => return,
        };
        let what = l.open.remove(&id).map_or_else(|| name.clone(), |o| o.0);
        if took > Duration::from_secs(1) {
            l.slow.push(format!("{what} {:.1} s", took.as_secs_f64()));
        }
        let e = l.by_name.entry(name).or_default();
        e.0 += 1;
        e.1 += took;
    }
    fn clear(&self) {
        let mut l = self.0.lock().unwrap();
        l.by_name.clear();
        l.slow.clear();
    }
    /// The commands sent and not answered yet, with how long ago they were sent.
    fn pending(&self) -> Vec<String> {
        let l = self.0.lock().unwrap();
        l.open
            .values()
            .map(|(what, at)| format!("{what} (sent {:.0} s ago)", at.elapsed().as_secs_f64()))
            .collect()
    }
    fn take(&self) -> (Commands, Vec<String>) {
        let mut l = self.0.lock().unwrap();
        (std::mem::take(&mut l.by_name), std::mem::take(&mut l.slow))
    }
}

/// A store on a fresh database whose client logs its commands (the shared command monitor:
/// handshakes and monitoring aside).
pub(crate) async fn counted_store(name: &str) -> (MongoStore, Log) {
    let log = Log::default();
    let sink = log.clone();
    let store = pattern_tests::monitored_mongo_store(name, move |ev| sink.event(ev)).await;
    (store, log)
}

/// What one run of a migration measured.
pub(crate) struct Run {
    pub(crate) who: &'static str,
    /// Items moved (bucket: every trade; outlier: the buyers beyond the threshold).
    pub(crate) items: u64,
    pub(crate) read: u64,
    pub(crate) written: u64,
    /// Documents in the source collection (the round trips' denominator).
    pub(crate) source_docs: u64,
    pub(crate) seed: Duration,
    pub(crate) took: Duration,
    pub(crate) commands: Commands,
    pub(crate) slow: Vec<String>,
    pub(crate) rss_before: u64,
    pub(crate) peak: u64,
    pub(crate) peak_reset: bool,
    pub(crate) verify: Option<(Duration, Verified)>,
    pub(crate) exact: Exact,
    pub(crate) check: Duration,
}

impl Run {
    pub(crate) fn rate(&self) -> f64 {
        self.items as f64 / self.took.as_secs_f64()
    }
    /// Time in commands that create or drop collections and indexes: on a shared server they
    /// wait for the storage engine's schema lock (other clients' creates and drops,
    /// checkpoints), whatever the migration does.
    pub(crate) fn ddl(&self) -> Duration {
        [
            "create",
            "createIndexes",
            "drop",
            "dropIndexes",
            "listIndexes",
        ]
        .iter()
        .filter_map(|n| self.commands.get(*n))
        .map(|c| c.1)
        .sum()
    }
    pub(crate) fn total_commands(&self) -> usize {
        self.commands.values().map(|c| c.0).sum()
    }
}

/// Timed, with its commands and the process's peak memory.
pub(crate) struct Measured<T> {
    pub(crate) value: T,
    pub(crate) took: Duration,
    pub(crate) commands: Commands,
    /// Commands that took over a second.
    pub(crate) slow: Vec<String>,
    pub(crate) rss_before: u64,
    pub(crate) peak: u64,
    pub(crate) peak_reset: bool,
}

pub(crate) async fn measure<T>(
    log: &Log,
    work: impl std::future::Future<Output = T>,
) -> Measured<T> {
    let rss_before = vm_kib("VmRSS");
    let peak_reset = reset_peak();
    log.clear();
    let started = Instant::now();
    // A server that never answers (SecantusDB livelocks building an index over a large
    // collection: see the module's doc) fails the run instead of hanging it.
    let limit = Duration::from_secs(scale(1_800, 120));
    let Ok(value) = tokio::time::timeout(limit, work).await else {
        panic!(
            "no answer after {} s; commands waiting: {:?} (a SecantusDB server logs \
             `create_index retrying on write conflicts` while it livelocks on an index build)",
            limit.as_secs(),
            log.pending()
        );
    };
    let took = started.elapsed();
    let (commands, slow) = log.take();
    Measured {
        value,
        took,
        commands,
        slow,
        rss_before,
        peak: vm_kib("VmHWM"),
        peak_reset,
    }
}
