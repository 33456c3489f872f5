//! The integration, conformance and compile-fail tests of pattern-core: one test binary (the
//! MongoDB driver is linked once), one module per topic.
//!
//! ```text
//! cargo test -p pattern-tests                               # everything (the README's test command)
//! cargo test -p pattern-tests --test suite bucket::         # one topic
//! cargo test -p pattern-tests --test suite keys_never_leak  # one test, on both stores
//! ```
//!
//! Most tests run on both stores: `on_both_stores!` makes `<topic>::...::memory::<test>` (a new
//! in-memory store) and `<topic>::...::mongo::<test>` (a fresh database on `$MONGODB_URI`). A test
//! that needs a server fails without one, saying how to get one (`scripts/test.sh` starts the
//! SecantusDB test server); none is skipped.
//!
//! Knobs: `PROPTEST_CASES` (the differential test), `PATTERN_TS_CASES` (time-series
//! ranges), `PATTERN_TS_HISTORY` (the long time-series history), `PATTERN_LOAD_PUSHES` (the load
//! test), `PATTERN_TREE_CASES` and `PATTERN_TREE_SEED` (the tree oracle), `SECANTUS_BIN` (the
//! server the fault test starts and kills). RELIABILITY.md says what each test found.

mod adopt;
mod bucket;
mod differential;
mod documents;
mod faults;
mod hostile;
mod limits;
mod load;
mod local_time;
mod money;
mod outlier;
mod recovery;
mod sharding;
mod timeseries;
mod transactions;
mod tree;
mod tree_oracle;
mod ui;
mod validators;
