//! One key's in-memory push, timed, after its history was written by `push_many` (1,000 items a
//! call, as the growth benchmark preloads it) or by single pushes (`1` as the third argument):
//! the median of `<pushes>` single pushes after `<items>` items (BENCHMARKS.md, section 5).
//!
//! Run: `cargo run --release -p pattern-bench --example memory_one_key_probe -- <items> <pushes>
//! [1]`.

use pattern_bench::{now, trade, Trade, TradeHistory};
use pattern_core::MemoryStore;
use std::time::Instant;
fn main() {
    let args: Vec<i64> = (std::env::args().skip(1))
        .map(|a| a.parse().expect("<items> <pushes> [1]: numbers"))
        .collect();
    let (items, pushes, single) = (args[0], args[1], args.get(2).copied().unwrap_or(0));
    let store = MemoryStore::new();
    let all: Vec<Trade> = (0..items).map(|i| trade(1_700_000_000, i)).collect();
    if single == 1 {
        for t in &all {
            now(TradeHistory::push(&store, &0, t.clone())).unwrap();
        }
    } else {
        for c in all.chunks(1000) {
            now(TradeHistory::push_many(&store, &0, c)).unwrap();
        }
    }
    let mut times = Vec::new();
    for i in 0..pushes {
        let t = Instant::now();
        now(TradeHistory::push(
            &store,
            &0,
            trade(1_700_000_000, items + i),
        ))
        .unwrap();
        times.push(t.elapsed().as_nanos());
    }
    times.sort();
    if pushes > 0 {
        let by = if single == 1 {
            "single pushes"
        } else {
            "push_many"
        };
        println!(
            "{items} items written by {by}, then {pushes} pushes: median {} ns",
            times[times.len() / 2]
        );
    }
}
