//! The integration and conformance tests of pattern-core: one test binary (the
//! MongoDB driver is linked once), one module per topic.
//!
//! ```text
//! cargo test -p pattern-tests                               # all (the README's test command)
//! cargo test -p pattern-tests --test suite bucket::         # one topic
//! cargo test -p pattern-tests --test suite keys_never_leak  # one test, on both stores
//! ```
//!
//! Most tests run on both stores: `on_both_stores!` makes `<topic>::...::memory::<test>` (a new
//! in-memory store) and `<topic>::...::mongo::<test>` (a fresh database on `$MONGODB_URI`). A test
//! that needs a server fails without one, saying how to get one (`scripts/test.sh` starts the
//! SecantusDB test server); none is skipped.
//!
//! # Scale: `PATTERN_FULL=1`
//!
//! The soak tests run short by default (the README's test command); `PATTERN_FULL=1` runs them
//! at full scale ([`pattern_tests::scale`]). Default, then full:
//!
//! - `bucket::concurrency::*::concurrent_pushes_to_one_key`: 16 tasks × 30 pushes; × 500.
//! - `bucket::concurrency::*::concurrent_pushes_same_second`: 16 tasks × 25 pushes; × 100.
//! - `outlier::*::concurrent_pushes_to_one_document`: 16 tasks × 30 pushes; × 500.
//! - `documents::history::*::sixteen_read_modify_write_tasks_lose_nothing`: 16 tasks × 8
//!   increments; × 200.
//! - `timeseries::on_mongo::a_day_of_a_long_history_reads_only_its_buckets`: 100,000 items;
//!   1,000,000. `PATTERN_TS_HISTORY` sets another number.
//! - `load::sixty_four_tasks_over_a_thousand_keys`: 4,000 pushes; 100,000.
//!   `PATTERN_LOAD_PUSHES` sets another number.
//! - `validators::corpus::differential_corpus`: 100 random documents per schema; 300.
//!
//! Other knobs: `PROPTEST_CASES` (the differential test), `PATTERN_TS_CASES` (time-series
//! ranges), `PATTERN_TREE_CASES` and `PATTERN_TREE_SEED` (the tree oracle), `SECANTUS_BIN` (the
//! server the fault test starts and kills). RELIABILITY.md says what each test found.

mod adopt;
mod advise;
mod bucket;
mod by_value;
mod differential;
mod documents;
mod faults;
mod follow;
mod hostile;
mod limits;
mod load;
mod local_time;
mod money;
mod observe;
mod outlier;
mod recovery;
mod sharding;
mod third_party;
mod timeseries;
mod transactions;
mod tree;
mod tree_oracle;
mod validators;
