//! Shared pieces of the benchmarks (see BENCHMARKS.md at the workspace root).
//!
//! Every bench target runs at full scale under `cargo bench` (cargo passes `--bench`) and at a
//! smoke scale under `cargo test` (the README's test command), so the benchmarks never rot.

/// True under `cargo bench`; false under `cargo test`, which runs each bench once, small.
pub fn full_scale() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// `full` under `cargo bench`, `smoke` under `cargo test`.
pub fn scale<T>(full: T, smoke: T) -> T {
    if full_scale() {
        full
    } else {
        smoke
    }
}
