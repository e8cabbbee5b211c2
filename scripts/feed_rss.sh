#!/usr/bin/env bash
# Peak RSS of a crawl whose feed goes to S3 against the same crawl writing the same
# batches to local files (issue: "a 100,000-item crawl with batches to S3 keeps peak
# RSS within 5 MB of the same crawl to a local file"). The S3 side is moto's server
# (python/s3_server.py --open) on 127.0.0.1; the site is `trawl serve`; each crawl
# runs RUNS times, alternating, under /usr/bin/time. Needs the test venv
# (scripts/test.sh makes target/venv-redis).
#
#   scripts/feed_rss.sh [PAGES] [BATCH] [RUNS]    # defaults: 100000 10000 2
set -euo pipefail
cd "$(dirname "$0")/.."
pages="${1:-100000}"; batch="${2:-10000}"; runs="${3:-2}"
python="${TRAWL_PYTHON:-$PWD/target/venv-redis/bin/python}"
[ -n "${TRAWL_BIN:-}" ] || cargo build --release --bin trawl >/dev/null 2>&1
bin="${TRAWL_BIN:-$PWD/target/release/trawl}"
work="$(mktemp -d)"
cleanup() { kill "${serve_pid:-}" "${s3_pid:-}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

mkfifo "$work/s3.in"
"$python" python/s3_server.py --open feeds <"$work/s3.in" >"$work/s3.out" 2>/dev/null &
s3_pid=$!
exec 9>"$work/s3.in"   # keeps the server's stdin open
for _ in $(seq 100); do [ -s "$work/s3.out" ] && break; sleep 0.1; done
s3_port="$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$work/s3.out")"

"$bin" serve --pages "$pages" >"$work/serve.out" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do grep -q "http://" "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
url="$(grep -o 'http://[0-9.:]*' "$work/serve.out" | head -1)/index.html"

crawl() { # $1: feed URI; prints peak RSS in KiB and the items written
  /usr/bin/time -f "%M" -o "$work/time" "$bin" crawl "$url" --same-domain \
    -s LOG_LEVEL=INFO -s FEED_EXPORT_BATCH_ITEM_COUNT="$batch" \
    -s FEED_TEMPDIR="$work" -s AWS_ENDPOINT_URL="http://127.0.0.1:$s3_port" \
    -s AWS_ACCESS_KEY_ID=bench -s AWS_SECRET_ACCESS_KEY=bench \
    -s STATS_DUMP=True -o "$1" 2>"$work/log"
  local items
  items="$(grep -o "'item_scraped_count': [0-9]*" "$work/log" | grep -o '[0-9]*$')"
  echo "$(cat "$work/time") $items"
}

echo "pages=$pages batch=$batch runs=$runs"
for i in $(seq "$runs"); do
  rm -rf "$work/out"; mkdir -p "$work/out"
  read -r file_rss file_items < <(crawl "$work/out/items-%(batch_id)05d.jl")
  read -r s3_rss s3_items < <(crawl "s3://feeds/run$i/items-%(batch_id)05d.jl")
  echo "run $i: file ${file_rss} KiB ($file_items items)  s3 ${s3_rss} KiB ($s3_items items)  s3-file $(( (s3_rss - file_rss) / 1024 )) MiB"
done
