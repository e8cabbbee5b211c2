#!/usr/bin/env bash
# Interleaved A/B rounds of two fixture_crawl binaries against the peer harness's nginx
# (../shared/bench/run_peers.sh): round r runs A then B at concurrency 16 and B then A
# at 64 (the order alternates with the round), so drift of the shared host hits both
# alike. Prints, per binary and concurrency, the medians of pages/s, CPU seconds, CPU /
# nginx's CPU and peak RSS, and the URLs fetched and items written in every run.
#
#   scripts/ab_bench.sh OLD_FIXTURE_CRAWL NEW_FIXTURE_CRAWL [ROUNDS]   # default 10
#
# Build each binary with `cargo build --release --example fixture_crawl` at the commit
# to compare (target/release/examples/fixture_crawl) and copy it aside first.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 2 ] || { echo "usage: $0 OLD_BIN NEW_BIN [ROUNDS]" >&2; exit 2; }
old=$(realpath "$1"); new=$(realpath "$2"); rounds=${3:-10}
harness=../shared/bench/run_peers.sh
[ -x "$harness" ] || { echo "error: $harness not found (the peer harness)" >&2; exit 1; }

work=$(mktemp -d /tmp/trawl-ab.XXXXXX)
cat > "$work/ab.sh" <<EOF
#!/usr/bin/env bash
# Call n of the harness: round n/2, concurrency index n%2; binary (round + index) % 2.
n=\$(cat "$work/count" 2>/dev/null || echo 0)
echo \$((n + 1)) > "$work/count"
if [ \$(((n / 2 + n % 2) % 2)) = 0 ]; then bin=$old; label=old; else bin=$new; label=new; fi
out=\$("\$bin" "\$1" "\$2" "\$3"); rc=\$?
printf '%s\n' "\$out" | head -n -1
last=\$(printf '%s\n' "\$out" | tail -1)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]) if sys.argv[1].startswith("{") else {}; d["binary"]=sys.argv[2]; print(json.dumps(d))' "\$last" "\$label"
exit \$rc
EOF
chmod +x "$work/ab.sh"

RESULTS_DIR="$work/results" "$harness" -r "$rounds" --only wrk,ours \
  --ours "$work/ab.sh {url} {conc} {items}" --ours-name trawl >"$work/harness.log" 2>&1 \
  || { tail -20 "$work/harness.log"; exit 1; }

python3 - "$work/results/results.jsonl" <<'EOF'
import json, statistics as st, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
wrk = [r["rps"] for r in recs if r.get("tool") == "wrk"]
print(f"wrk: median {st.median(wrk):.0f} req/s over {len(wrk)} runs")
rows = {}
for r in recs:
    if r.get("tool") == "trawl":
        rows.setdefault((r["config"], r["self_report"]["binary"]), []).append(r)
for (conc, binary), rs in sorted(rows.items()):
    med = lambda k: st.median(x[k] for x in rs)
    ratio = st.median(x["cpu_s"] / x["nginx_cpu_s"] for x in rs)
    print(f"{conc} {binary}: {len(rs)} runs, {med('pages_per_s'):.0f} pages/s, "
          f"CPU {med('cpu_s'):.2f} s, CPU/nginx {ratio:.2f}, "
          f"peak RSS {med('max_rss_kb') / 1024:.1f} MB, "
          f"URLs {sorted({x['log_html_requests'] for x in rs})}, "
          f"items {sorted({x['items'] for x in rs})}")
for conc in sorted({c for c, _ in rows}):
    o, n = rows[(conc, "old")], rows[(conc, "new")]
    cpu = st.median(x["cpu_s"] for x in n) / st.median(x["cpu_s"] for x in o)
    pps = st.median(x["pages_per_s"] for x in n) / st.median(x["pages_per_s"] for x in o)
    print(f"{conc}: new / old CPU {cpu:.3f}, pages/s {pps:.3f}")
EOF
echo "(raw records: $work/results)"
