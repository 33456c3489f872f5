#!/usr/bin/env bash
# Sourced by scripts/test.sh and scripts/bench.sh: installs what the MongoDB tests need and starts
# the test server, unless MONGODB_URI is set.
#
# - Installs cmake (Debian package) and the SecantusDB test server (crate secantus-mdb, a
#   MongoDB-wire-compatible server, GPL-2.0, run as a separate process) when missing.
# - Unless MONGODB_URI is set, starts it on a free loopback port with a temporary storage
#   directory, exports MONGODB_URI, and stops it on exit. With MONGODB_URI set, the same tests
#   run against that server (a real mongod or Atlas) and nothing is installed or started.

SECANTUS_CRATE=secantus-mdb
SECANTUS_VERSION=0.5.3-beta.196
export PATH="$HOME/.cargo/bin:$PATH"

log() { printf '== %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_server() {
  if cargo install --list 2>/dev/null | grep -q "^$SECANTUS_CRATE v$SECANTUS_VERSION:"; then
    return
  fi
  if ! command -v cmake >/dev/null 2>&1; then
    log "installing cmake"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake >/dev/null
  fi
  # Built for tests, not as published: optimized at level 1, no LTO, 16 codegen units, no
  # debug information. The same source and the same server; on 2 cores it installs in about 3
  # minutes instead of 8.5 to 9.5 (thin LTO, one codegen unit), and the suite's 526 tests run
  # against it in 58 s instead of 53 to 56 (CONTRIBUTING.md, "Test command timings").
  log "installing the test server: cargo install $SECANTUS_CRATE $SECANTUS_VERSION, built for tests (about 3 minutes on 2 cores)"
  CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_LTO=off \
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=0 \
    cargo install "$SECANTUS_CRATE" --version "$SECANTUS_VERSION" --ignore-rust-version --locked
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_server() {
  SECANTUS_PORT=$(free_port)
  SECANTUS_STORAGE=$(mktemp -d -t pattern-secantus.XXXXXX)
  SECANTUS_LOG="$SECANTUS_STORAGE.log"
  export SECANTUS_BIN SECANTUS_PORT SECANTUS_STORAGE
  SECANTUS_BIN=$(command -v secantusd-rs)
  log "starting $SECANTUS_BIN on 127.0.0.1:$SECANTUS_PORT (storage $SECANTUS_STORAGE, log $SECANTUS_LOG)"
  "$SECANTUS_BIN" --host 127.0.0.1 --port "$SECANTUS_PORT" --storage-path "$SECANTUS_STORAGE" \
    --log-file-max 16MB --cache-size 256M >"$SECANTUS_LOG" 2>&1 &
  SERVER_PID=$!
  trap stop_server EXIT
  for _ in $(seq 1 120); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$SECANTUS_PORT") 2>/dev/null; then
      export MONGODB_URI="mongodb://127.0.0.1:$SECANTUS_PORT/?directConnection=true"
      return
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      log "the test server exited at start; its log:"; tail -n 50 "$SECANTUS_LOG" >&2; exit 1
    fi
    sleep 0.5
  done
  log "the test server did not listen within 60 s; its log:"; tail -n 50 "$SECANTUS_LOG" >&2; exit 1
}

stop_server() {
  # The fault tests may have restarted the server: stop whatever listens in our storage dir.
  kill "$SERVER_PID" 2>/dev/null || true
  pkill -f -- "--storage-path $SECANTUS_STORAGE" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  rm -rf "$SECANTUS_STORAGE" "$SECANTUS_LOG"
}

if [ -n "${MONGODB_URI:-}" ]; then
  log "MONGODB_URI is set: testing against that server"
else
  install_server
  start_server
fi

