#!/usr/bin/env bash
# The benchmarks at full scale (BENCHMARKS.md): installs and starts the MongoDB test server as the
# test command does (see scripts/server.sh), then runs `cargo bench -p pattern-bench`. Extra
# arguments go to cargo bench, e.g. `scripts/bench.sh --bench round_trips`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/server.sh

log "cargo bench -p pattern-bench $*"
cargo bench -p pattern-bench "$@"
