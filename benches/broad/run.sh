#!/usr/bin/env bash
# The broad-crawl comparison: trawl, Scrapy 2.19 and spider-rs crawl the broad fixture
# (`trawl serve --hosts N`: N sites on N loopback addresses, host names resolved from its
# hosts file) — trawl and Scrapy with the settings of Scrapy's "Broad Crawls" guide
# (`trawl crawl --broad`), spider-rs with one `Website` per host, 100 at a time
# (benches/broad/spider_rs) — over HTTP or HTTPS, in the same run, rounds interleaved.
# Prints one markdown row per crawl: pages/s, CPU per page of the crawler and of the
# fixture server, peak RSS, and the TLS handshakes and resumptions trawl counted.
#
#   benches/broad/run.sh [--hosts N] [--pages K] [--tls] [--rounds R] [--tools trawl,scrapy,spider]
#
# Needs a release build (`cargo build --release`), a Python with Scrapy 2.19
# (SCRAPY_VENV, default target/venv-scrapy: created on first use) and, for spider-rs,
# crates.io (built in SPIDER_BROAD_BUILD, default /tmp/spider_broad, on first use).
set -euo pipefail
cd "$(dirname "$0")/../.."
hosts=1000 pages=10 tls="" rounds=1 tools="trawl,scrapy"
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --pages) pages=$2; shift 2 ;;
    --tls) tls=--tls; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
trawl=target/release/trawl
[ -x "$trawl" ] || { echo "build first: cargo build --release" >&2; exit 1; }
venv="${SCRAPY_VENV:-$PWD/target/venv-scrapy}"
if [[ ",$tools," == *",scrapy,"* ]] && ! "$venv/bin/python" -c 'import scrapy' 2>/dev/null; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q scrapy==2.19.0
fi
spider_dir="${SPIDER_BROAD_BUILD:-/tmp/spider_broad}"
if [[ ",$tools," == *",spider,"* ]]; then
  mkdir -p "$spider_dir/src"
  cp benches/broad/spider_rs/Cargo.toml "$spider_dir/"
  cp benches/broad/spider_rs/src/main.rs "$spider_dir/src/"
  (cd "$spider_dir" && cargo build --release -q) >&2
fi
# The fixture holds a socket per host plus every connection a crawler keeps open
# (Scrapy keeps all of them): 10,000 hosts need more than the usual 20,000 descriptors.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d /tmp/trawl-broad.XXXXXX)
"$trawl" serve --hosts "$hosts" --pages-per-host "$pages" --names $tls \
  --urls-file "$work/urls.txt" --hosts-file "$work/hosts.txt" >"$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$work/hosts.txt" ] && break; sleep 0.1; done
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # clock ticks, user + system
tick=$(getconf CLK_TCK)
expected=$((hosts * pages))
echo "| tool | hosts | scheme | pages | wall s | pages/s | CPU ms/page | server CPU ms/page | client/server CPU | peak RSS MB | TLS handshakes | resumed |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for round in $(seq "$rounds"); do
  for tool in ${tools//,/ }; do
    out="$work/$tool-$round.jl" log="$work/$tool-$round.log" t="$work/$tool-$round.time"
    before=$(cpu $server)
    case "$tool" in
      trawl)
        extra=()
        [ -n "$tls" ] && extra=(-s "DOWNLOAD_TLS_CA_FILE=$work/ca.pem")
        /usr/bin/time -o "$t" -f "%e %U %S %M" "$trawl" crawl --broad --urls-file "$work/urls.txt" \
          -s "DNS_RESOLVE=$work/hosts.txt" "${extra[@]}" -O "$out" 2>"$log" ;;
      scrapy)
        (cd benches/broad && /usr/bin/time -o "$t" -f "%e %U %S %M" "$venv/bin/scrapy" runspider \
          broad_spider.py -a "urls=$work/urls.txt" -s "BROAD_HOSTS_FILE=$work/hosts.txt" \
          -s TWISTED_DNS_RESOLVER=broad_spider.HostsResolver -s REACTOR_THREADPOOL_MAXSIZE=20 \
          -O "$out" 2>"$log") ;;
      spider)
        /usr/bin/time -o "$t" -f "%e %U %S %M" "$spider_dir/target/release/spider_broad" \
          "$work/urls.txt" "$work/hosts.txt" 100 "$out" >"$log" 2>&1 ;;
      *) echo "unknown tool $tool" >&2; exit 2 ;;
    esac
    after=$(cpu $server)
    read -r wall user sys rss <"$t"
    got=$(wc -l <"$out")
    unique=$(python3 -c 'import json,sys; print(len({json.loads(l)["url"] for l in open(sys.argv[1])}))' "$out")
    [ "$unique" = "$expected" ] || echo "warning: $tool fetched $unique distinct pages of $expected" >&2
    hs=$(grep -o "'downloader/tls/handshakes': [0-9]*" "$log" | grep -o '[0-9]*$' || echo "-")
    rs=$(grep -o "'downloader/tls/resumed': [0-9]*" "$log" | grep -o '[0-9]*$' || echo "-")
    python3 - "$tool" "$hosts" "${tls:+https}" "$got" "$wall" "$user" "$sys" "$rss" "$before" "$after" "$tick" "$hs" "$rs" <<'PY'
import sys
tool, hosts, scheme, got, wall, user, sys_, rss, before, after, tick, hs, rs = sys.argv[1:]
got, wall, cpu = int(got), float(wall), float(user) + float(sys_)
server = (int(after) - int(before)) / int(tick)
print(f"| {tool} | {hosts} | {scheme or 'http'} | {got} | {wall:.2f} | {got / wall:,.0f} | "
      f"{cpu * 1000 / got:.2f} | {server * 1000 / got:.2f} | {cpu / server if server else 0:.2f} | "
      f"{int(rss) / 1024:.0f} | {hs} | {rs} |")
PY
  done
done
