#!/usr/bin/env bash
# Screenshots of pattern-core's documentation as a browser shows it (headless Chromium): the
# front page, the guide's list, getting started, a derive's page and a chapter, each at a
# laptop's width and a phone's. Writes target/screenshots/*.png and prints their paths.
#
# Needs Chromium (`apt-get install -y chromium`; CHROMIUM names another binary). Not part of
# the test command: a person looks at the images (nothing cut off, tables readable).
set -euo pipefail
cd "$(dirname "$0")/.."

browser="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
if [[ -z "$browser" ]]; then
  echo "no Chromium found: apt-get install -y chromium, or set CHROMIUM" >&2
  exit 2
fi

RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" \
  cargo doc --no-deps --all-features -p pattern-core -p pattern-derive -p pattern-store \
    -p pattern-memory -p pattern-mongo

doc="$(pwd)/target/doc/pattern_core"
out="target/screenshots"
mkdir -p "$out"
pages=(
  "front:index.html"
  "guide:guide/index.html"
  "getting-started:guide/getting_started/index.html"
  "derive-bucket:derive.Bucket.html"
  "time-series:guide/time_series/index.html"
  "observability:guide/observability/index.html"
)
for page in "${pages[@]}"; do
  name="${page%%:*}"
  path="${page#*:}"
  for size in "1280,2400:wide" "420,2400:narrow"; do
    window="${size%%:*}"
    label="${size#*:}"
    "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
      --window-size="$window" --screenshot="$out/$name-$label.png" "file://$doc/$path" \
      >/dev/null 2>&1
    echo "$out/$name-$label.png"
  done
done
