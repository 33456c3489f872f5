#!/usr/bin/env bash
# The test command: installs what the tests need, starts the MongoDB test server, runs every test
# (see scripts/server.sh).
#
# Runs `cargo test --workspace`: unit, integration, conformance, compile-fail, doc tests, the
# examples' tests, and a smoke run of every benchmark (each once, small). Extra arguments go to
# cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/server.sh

log "cargo test --workspace $*"
cargo test --workspace "$@"
