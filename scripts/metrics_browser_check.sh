#!/usr/bin/env bash
# The status page of `--metrics` in a real browser (headless Chromium, Debian's
# `chromium` package): a crawl runs slowly against the fixture site; Chromium loads
# http://ADDR/?token=..., runs its script, and the DOM it leaves must show the chart
# drawn (data-points > 1) and the page count that /metrics reports. Also writes a
# screenshot. Run by hand (not in CI: installing and starting Chromium is slow):
#
#   scripts/metrics_browser_check.sh          # builds target/release/trawl first
set -euo pipefail
cd "$(dirname "$0")/.."
browser="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$browser" ] || { echo "needs Chromium (apt-get install -y chromium)" >&2; exit 1; }
cargo build --release --bin trawl >&2
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
target/release/trawl serve --pages 400 --port 0 > "$work/serve.log" 2>&1 &
for _ in $(seq 50); do grep -q "http://" "$work/serve.log" && break; sleep 0.1; done
site="$(grep -o 'http://127.0.0.1:[0-9]*' "$work/serve.log" | head -n 1)"
[ -n "$site" ] || { cat "$work/serve.log" >&2; exit 1; }
# About 20 s of crawling: one request at a time, 0.25 s apart.
target/release/trawl crawl "$site/index.html" --same-domain --metrics 127.0.0.1:0 \
  --metrics-token t0k -s METRICS_INTERVAL=1 -s DOWNLOAD_DELAY=0.25 \
  -s CONCURRENT_REQUESTS=1 -s CLOSESPIDER_TIMEOUT=25 -o "$work/pages.jl" \
  2> "$work/crawl.log" &
for _ in $(seq 100); do grep -q "Metrics on" "$work/crawl.log" && break; sleep 0.1; done
addr="$(grep -o 'Metrics on http://[0-9.:]*' "$work/crawl.log" | head -n 1 | sed 's/Metrics on //')"
[ -n "$addr" ] || { cat "$work/crawl.log" >&2; exit 1; }
sleep 6
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,900
       --virtual-time-budget=3000)
"$browser" "${flags[@]}" --dump-dom "$addr/?token=t0k" > "$work/dom.html" 2>/dev/null
"$browser" "${flags[@]}" --screenshot="$PWD/target/metrics-page.png" "$addr/?token=t0k" \
  >/dev/null 2>&1 || true
prom="$(curl -s -H 'Authorization: Bearer t0k' "$addr/metrics")"
points="$(grep -o 'data-points="[0-9]*"' "$work/dom.html" | grep -o '[0-9]*' || echo 0)"
shown="$(grep -o 'id="pages">[0-9,]*<' "$work/dom.html" | grep -o '[0-9,]*' | tr -d ,)"
served="$(printf '%s\n' "$prom" | awk '/^trawl_response_received_count_total/ {print $2}')"
echo "chart points drawn: $points; pages on the page: $shown; /metrics: $served"
[ "${points:-0}" -gt 1 ] || { echo "FAIL: the chart was not drawn" >&2; exit 1; }
[ -n "$shown" ] && [ "$shown" -gt 0 ] || { echo "FAIL: no page count on the page" >&2; exit 1; }
# The page and /metrics were read a moment apart: within a few responses.
diff=$(( served - shown )); diff=${diff#-}
[ "$diff" -le 8 ] || { echo "FAIL: the page shows $shown pages, /metrics $served" >&2; exit 1; }
echo "OK: the status page draws its chart and shows /metrics' numbers (screenshot: target/metrics-page.png)"
