//! The in-memory store against a minimal baseline, in the same run.
//!
//! The library side is a `#[derive(Bucket)]` trade history (size 10, `i64` key) on
//! [`MemoryStore`]. The baseline does the least work that still stores the same thing: it
//! serializes each trade to BSON with `bson::to_document` and appends it to a `Vec` in a
//! `HashMap<i64, Vec<Document>>` under a `std::sync::Mutex`; a page read takes, under the lock,
//! the slice of page `n` (10 items) and deserializes those items back into trades.
//!
//! Groups:
//! - `memory/push`: one push, rotating over [`KEYS`] keys that each already hold `history`
//!   items (10,000 at full scale), so a push never lands in an empty series. After every
//!   criterion sample the items it pushed are removed again (untimed), so the series stay at
//!   their starting length however long criterion runs.
//! - `memory/page`: page 1, a middle page and the last page of a key's history.
//!
//! The library's async methods are polled once with a no-op waker (`now_or_never`): the
//! in-memory store never waits, so this is the cost of an `.await` inside a caller's task
//! without any executor overhead, which the synchronous baseline does not pay either.
//!
//! After criterion's report it prints a table of median ns/op and the ratio library / baseline,
//! twice: from criterion's own samples, and from a round-robin pass that times batches of the
//! same routines library, baseline, library... so that whatever else the machine is doing falls
//! on both sides alike (criterion measures one benchmark after the other). Target: within 2x.
//!
//! Run: `cargo bench -p pattern-bench --bench memory_store` (full scale). `cargo test -p
//! pattern-bench --bench memory_store` runs each benchmark once, at a smoke scale.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bson::{Bson, Document};
use criterion::{BenchmarkId, Criterion};

use pattern_bench::{now, Samples, Trade, TradeHistory};
use pattern_core::store::query::Filter;
use pattern_core::{store::Store, MemoryStore};

/// Keys the pushes rotate over; each starts with `history` items.
const KEYS: i64 = 4;
/// Epoch seconds of the first stored trade; trade `i` of a key is `i` seconds later, so every
/// bucket starts in its own second (no suffixed `_id`s) and all `_id`s have 10-digit seconds.
const T0: i64 = 1_700_000_000;

/// Trade number `i` of a series, `i` seconds after [`T0`].
fn trade(i: i64) -> Trade {
    pattern_bench::trade(T0, i)
}

/// The minimal equivalent: BSON documents appended to a vector per key, under one lock.
#[derive(Default)]
struct Baseline(Mutex<HashMap<i64, Vec<Document>>>);

impl Baseline {
    fn push(&self, key: i64, item: &Trade) {
        let doc = bson::to_document(item).expect("a trade serializes");
        self.0.lock().unwrap().entry(key).or_default().push(doc);
    }

    /// Page `n` (from 1) of 10 items, deserialized; `None` past the last page.
    fn page(&self, key: i64, n: usize) -> Option<Vec<Trade>> {
        let map = self.0.lock().unwrap();
        let items = map.get(&key)?;
        let start = (n - 1) * 10;
        if start >= items.len() {
            return None;
        }
        let page = &items[start..items.len().min(start + 10)];
        Some(
            page.iter()
                .map(|d| bson::from_document(d.clone()).expect("a trade deserializes"))
                .collect(),
        )
    }

    /// Drops every item past the first `len` of `key`.
    fn truncate(&self, key: i64, len: usize) {
        if let Some(v) = self.0.lock().unwrap().get_mut(&key) {
            v.truncate(len);
        }
    }
}

const SAMPLE_SIZE: usize = 100;

/// A timed routine: runs `iters` operations and returns the time they took (any clean-up it
/// does afterwards is not timed).
type Routine<'a> = Box<dyn Fn(u64) -> Duration + 'a>;

/// One comparison: the same operation on the library and on the baseline.
struct Pair<'a> {
    /// `push`, `page 1`...
    name: String,
    group: &'static str,
    /// The benchmark's parameter within the group (`None` for push).
    param: Option<u64>,
    library: Routine<'a>,
    baseline: Routine<'a>,
}

/// Median ns/op of each routine, timed in batches of `batch` operations, one routine after the
/// other, round after round, for `budget` (at least `min_rounds`): the load the machine is
/// under at a given moment falls on both sides alike.
fn round_robin(
    routines: [&Routine; 2],
    batch: u64,
    budget: Duration,
    min_rounds: usize,
) -> [f64; 2] {
    let mut per_op: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let start = Instant::now();
    while per_op[0].len() < min_rounds || start.elapsed() < budget {
        for (i, r) in routines.iter().enumerate() {
            per_op[i].push(r(batch).as_nanos() as f64 / batch as f64);
        }
    }
    per_op.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    })
}

fn main() {
    // `MEMORY_STORE_SUBSCRIBER=noop`: tracing's no-op subscriber (`NoSubscriber`, interested in
    // nothing); `=registry`: one that takes every span and does nothing with it (a bare
    // `tracing_subscriber` registry); unset, no subscriber at all. To measure what the library's
    // spans cost in each case (BENCHMARKS.md, section 12).
    match std::env::var("MEMORY_STORE_SUBSCRIBER").as_deref() {
        Ok("noop") => {
            tracing::subscriber::set_global_default(tracing::subscriber::NoSubscriber::default())
                .expect("one subscriber")
        }
        Ok("registry") => tracing::subscriber::set_global_default(tracing_subscriber::registry())
            .expect("one subscriber"),
        Ok(other) => panic!("MEMORY_STORE_SUBSCRIBER: noop or registry, not {other}"),
        Err(_) => {}
    }
    let history: i64 = pattern_bench::scale(10_000, 100);
    let last_page = (history / 10) as u64;
    let pages: Vec<u64> = if last_page >= 100 {
        vec![1, last_page / 10, last_page]
    } else {
        vec![1, last_page]
    };

    // Both sides start with the same `history` trades per key.
    let store = MemoryStore::new();
    let baseline = Baseline::default();
    let start = Instant::now();
    let items: Vec<Trade> = (0..history).map(trade).collect();
    for key in 0..KEYS {
        now(TradeHistory::push_many(&store, &key, &items)).expect("load the store");
        for item in &items {
            baseline.push(key, item);
        }
    }
    let counts = now(TradeHistory::counts(&store, &0)).unwrap();
    assert_eq!(counts.items, history as u64);
    for &n in &pages {
        let lib = now(TradeHistory::page(&store, &0, n))
            .unwrap()
            .expect("page");
        assert_eq!(Some(lib.items), baseline.page(0, n as usize), "page {n}");
    }
    println!(
        "memory_store: {KEYS} keys x {history} trades loaded on both sides in {:.1?}",
        start.elapsed()
    );

    // Instruction counts: `MEMORY_STORE_PROFILE=<library|baseline>:<pushes>` runs that many
    // pushes on one side and exits, for `valgrind --tool=callgrind` (instructions per push =
    // difference between two counts / difference in pushes). See BENCHMARKS.md.
    if let Ok(profile) = std::env::var("MEMORY_STORE_PROFILE") {
        let (side, n) = profile
            .split_once(':')
            .and_then(|(s, n)| Some((s.to_owned(), n.parse::<i64>().ok()?)))
            .expect("MEMORY_STORE_PROFILE=<library|baseline>:<pushes>");
        for i in 0..n {
            let (key, item) = (i % KEYS, trade(history + i / KEYS));
            match side.as_str() {
                "library" => now(TradeHistory::push(&store, &key, black_box(item))).unwrap(),
                "baseline" => baseline.push(key, black_box(&item)),
                other => panic!("MEMORY_STORE_PROFILE: unknown side {other}"),
            }
        }
        println!("memory_store: {n} {side} pushes");
        return;
    }

    // The `_id` of a key's last loaded bucket: every bucket after it was opened by a push
    // benchmark, and is removed (untimed) after each batch.
    let last_loaded = |key: i64| {
        let t = T0 + (last_page as i64 - 1) * 10;
        Bson::String(format!("{key}_{t}"))
    };
    let (store, baseline) = (&store, &baseline);
    let mut pairs = vec![Pair {
        name: "push".into(),
        group: "memory/push",
        param: None,
        library: Box::new(move |iters| {
            let t = Instant::now();
            for i in 0..iters as i64 {
                let key = i % KEYS;
                let item = trade(history + i / KEYS);
                now(TradeHistory::push(store, &key, black_box(item))).unwrap();
            }
            let took = t.elapsed();
            for key in 0..KEYS {
                let pushed = Filter::and([
                    Filter::eq("customerId", key),
                    Filter::Gt("_id".into(), last_loaded(key)),
                ]);
                now(store.delete_many("trades", &pushed)).unwrap();
            }
            took
        }),
        baseline: Box::new(move |iters| {
            let t = Instant::now();
            for i in 0..iters as i64 {
                let key = i % KEYS;
                let item = trade(history + i / KEYS);
                baseline.push(key, black_box(&item));
            }
            let took = t.elapsed();
            for key in 0..KEYS {
                baseline.truncate(key, history as usize);
            }
            took
        }),
    }];
    for &n in &pages {
        pairs.push(Pair {
            name: format!("page {n}"),
            group: "memory/page",
            param: Some(n),
            library: Box::new(move |iters| {
                let t = Instant::now();
                for _ in 0..iters {
                    black_box(now(TradeHistory::page(store, &0, black_box(n))).unwrap());
                }
                t.elapsed()
            }),
            baseline: Box::new(move |iters| {
                let t = Instant::now();
                for _ in 0..iters {
                    black_box(baseline.page(0, black_box(n as usize)));
                }
                t.elapsed()
            }),
        });
    }

    let samples = Samples::default();
    let mut c = Criterion::default()
        .sample_size(SAMPLE_SIZE)
        .configure_from_args();
    for group_name in ["memory/push", "memory/page"] {
        let mut group = c.benchmark_group(group_name);
        for p in pairs.iter().filter(|p| p.group == group_name) {
            for (side, routine) in [("library", &p.library), ("baseline", &p.baseline)] {
                let key = format!("{}/{side}", p.name);
                let samples = &samples;
                let mut bench = |b: &mut criterion::Bencher| {
                    b.iter_custom(|iters| {
                        let took = routine(iters);
                        samples.record(&key, iters, took);
                        took
                    })
                };
                match p.param {
                    Some(n) => group.bench_function(BenchmarkId::new(side, n), &mut bench),
                    None => group.bench_function(side, &mut bench),
                };
            }
        }
        group.finish();
    }
    c.final_summary();

    // The same routines once more, library and baseline in turn (only those criterion ran).
    let budget = Duration::from_millis(pattern_bench::scale(3_000, 0));
    let (batch, min_rounds) = pattern_bench::scale((1_000, 20), (1, 1));
    let mut table = Vec::new();
    for p in &pairs {
        let medians = ["library", "baseline"].map(|side| {
            samples
                .median(&format!("{}/{side}", p.name), SAMPLE_SIZE)
                .map(|d| d.as_nanos() as f64)
        });
        if medians.iter().all(Option::is_none) {
            continue;
        }
        let rr = round_robin([&p.library, &p.baseline], batch, budget, min_rounds);
        table.push((p.name.clone(), medians, rr));
    }

    // The push routines removed what they pushed: both sides hold what they were loaded with.
    assert_eq!(
        now(TradeHistory::counts(store, &1)).unwrap().items,
        history as u64
    );
    assert_eq!(baseline.0.lock().unwrap()[&1].len(), history as usize);

    println!(
        "\nmemory_store: median ns/op, {KEYS} keys x {history} trades stored, bucket size 10{}",
        if pattern_bench::full_scale() {
            ""
        } else {
            "\n(smoke scale: one unoptimized run each, not a measurement)"
        }
    );
    println!(
        "criterion = median of criterion's samples; round-robin = median of batches of {batch} \
         timed library, baseline, library... (same load on both); ratio = library / baseline"
    );
    println!(
        "{:<10} {:-^29}   {:-^29}",
        "", " criterion ", " round-robin "
    );
    println!(
        "{:<10} {:>10} {:>10} {:>7}   {:>10} {:>10} {:>7}",
        "operation", "library", "baseline", "ratio", "library", "baseline", "ratio"
    );
    let cell = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.0}"));
    for (name, [lib, base], [rr_lib, rr_base]) in table {
        let ratio = match (lib, base) {
            (Some(l), Some(b)) => format!("{:.2}x", l / b),
            _ => "-".to_owned(),
        };
        println!(
            "{name:<10} {:>10} {:>10} {ratio:>7}   {rr_lib:>10.0} {rr_base:>10.0} {:>6.2}x",
            cell(lib),
            cell(base),
            rr_lib / rr_base
        );
    }
}
