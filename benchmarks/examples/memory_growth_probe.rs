//! The in-memory push's work as the history grows, in instructions rather than time: 1,000
//! keys grown with `push_many` to `<items>` items in all, then `<pushes>` single pushes
//! rotating over the keys (2 a key at most, as the growth benchmark does). Run under
//! `valgrind --tool=callgrind` at two push counts; the difference divided by the pushes is the
//! work a push does at that size, free of the machine's noise and of cache misses (which
//! callgrind does not count). Cited in BENCHMARKS.md, section 5.
//!
//! Run: `cargo build --release -p pattern-bench --example memory_growth_probe`, then
//! `valgrind --tool=callgrind target/release/examples/memory_growth_probe <items> <pushes>`.

use pattern_bench::{now, trade, TradeHistory};
use pattern_core::MemoryStore;

const KEYS: i64 = 1000;

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<i64>().expect("a number"));
    let (items, pushes) = (args.next().unwrap_or(10_000), args.next().unwrap_or(0));
    let store = MemoryStore::new();
    let per_key = items / KEYS;
    let t0 = 1_600_000_000;
    for key in 0..KEYS {
        let batch: Vec<_> = (0..per_key).map(|i| trade(t0, i)).collect();
        now(TradeHistory::push_many(&store, &key, &batch)).unwrap();
    }
    for i in 0..pushes {
        let key = (i * 7919) % KEYS; // scattered over the keys
        let item = trade(t0, per_key + i / KEYS);
        now(TradeHistory::push(&store, &key, item)).unwrap();
    }
    println!("memory_growth_probe: {items} items over {KEYS} keys, then {pushes} pushes");
}
