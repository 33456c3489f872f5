#!/usr/bin/env bash
# The test command: installs what the tests need, starts the MongoDB test server, runs every test
# (see scripts/server.sh).
#
# Runs `cargo test --workspace`: unit, integration, conformance, compile-fail, doc tests, the
# examples' tests, and a smoke run of every benchmark (each once, small). Extra arguments go to
# cargo test. Then the libraries' documentation (pattern-core, pattern-derive and the store
# crates; docs.rs documents no binary), a broken intra-doc link an error.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/server.sh

# No incremental compilation state: the test command mostly builds from scratch (CI starts from a
# clean clone), where writing that state cost about a third of the workspace's compile time
# (fresh `cargo test --workspace --no-run`: the suite's crate 254 s incremental, 159 s without).
# Set CARGO_INCREMENTAL=1 to keep it for repeated runs after small edits.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

log "cargo test --workspace $*"
cargo test --workspace "$@"

# The observability example over OTLP (the feature `otlp`: an HTTP client and protobuf code
# that the default build leaves out) is built with the full runs only.
if [[ "${PATTERN_FULL:-}" == "1" ]]; then
  log "cargo build -p examples --features otlp"
  cargo build -p examples --features otlp --bin observe
fi

log "cargo doc (broken intra-doc links are errors)"
RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" \
  cargo doc --no-deps --all-features -p pattern-core -p pattern-derive \
    -p pattern-store -p pattern-memory -p pattern-mongo
