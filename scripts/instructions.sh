#!/usr/bin/env bash
# Instructions per page of the fixed workload (the fixture crawl of an in-process
# 2,000-page site, `examples/fixture_crawl`), counted by callgrind on the crawl's own
# thread (the fixture server's threads are counted apart and left out). Hardware
# counters are not available in these VMs; callgrind's count does not move with the
# machine's load. Pairs with `cargo bench --bench per_page` (allocations per page).
# Built on the system allocator (`--no-default-features`, its own target directory), so
# the count (benches/RESULTS.md) is the code's own work, not the allocator's; mimalloc,
# the binaries' default allocator, is measured apart.
# Valgrind hides the CPU's SHA extensions, so under it the fingerprints' SHA-1 runs
# the `sha1` crate's software rounds (~1,400 instructions a block), where a native
# run on a CPU with SHA-NI takes under a hundred: the second line gives the count without
# SHA-1's block function, nearer what the native binary executes.
#
#   scripts/instructions.sh            # builds the example in release mode first
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
command -v callgrind_annotate >/dev/null || { echo "callgrind_annotate (valgrind's) is not installed" >&2; exit 1; }
target_dir="target/sysalloc"
cargo build --release --no-default-features --example fixture_crawl --target-dir "$target_dir" >&2
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
summary="$(valgrind --tool=callgrind --separate-threads=yes \
  --callgrind-out-file="$out/cg.out" \
  "$target_dir"/release/examples/fixture_crawl - 16 "$out/items.jl" 2>"$out/valgrind.log" | tail -n 1)"
# Thread 1 is the crawl (main) thread: its file ends in -01.
main="$(ls "$out"/cg.out*-01 2>/dev/null | head -n 1)"
[ -n "$main" ] || { echo "no callgrind output for thread 1" >&2; cat "$out/valgrind.log" >&2; exit 1; }
ir="$(grep -E '^(summary|totals):' "$main" | head -n 1 | awk '{print $2}')"
pages="$(printf '%s' "$summary" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pages"])')"
# SHA-1's block function, inclusive (its line in the per-function list: "N (P%) file:name [binary]").
sha="$(callgrind_annotate --inclusive=yes "$main" \
  | awk '!found && /:sha1::block_api::compress \[/ { gsub(",", "", $1); print $1; found = 1 }')"
python3 - "$ir" "$pages" "${sha:-0}" <<'PY'
import sys
ir, pages, sha = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print(f"crawl thread: {ir:,} instructions for {pages:,} pages = {ir / pages:,.0f} instructions/page")
if sha:
    print(f"  of which SHA-1 blocks (software under valgrind): {sha / pages:,.0f}/page; without them: {(ir - sha) / pages:,.0f}/page")
else:
    print("  (SHA-1's block function, sha1::block_api::compress, is not in the profile: no count without it)")
PY
