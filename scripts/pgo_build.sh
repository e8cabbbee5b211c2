#!/usr/bin/env bash
# The release build the benchmark numbers come from: a profile-guided (PGO) build of the
# `trawl` binary and `examples/fixture_crawl` (DESIGN.md §14d).
#
#   scripts/pgo_build.sh     # → target/pgo/release/trawl, target/pgo/release/examples/fixture_crawl
#
# 1. builds both instrumented (`-Cprofile-generate`, in target/pgo-gen);
# 2. trains: crawls a generated blog site (scripts/pgo_blog_site.py, served by Python on a
#    free port) shaped unlike the benchmark's fixture, so the profile is not the
#    benchmark's own pages;
# 3. merges the counts with rustup's `llvm-profdata` (component `llvm-tools`, added if
#    missing) and builds both again with `-Cprofile-use`, in target/pgo;
# 4. checks the result: the optimised and the instrumented `fixture_crawl` crawl the
#    in-process fixture site and must export the same items (scripts/same_items.py).
#
# Needs python3. Any RUSTFLAGS already set are kept. About two release builds' time.
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "== adding rustup's llvm-tools component (llvm-profdata)"
  rustup component add llvm-tools
fi
if [ ! -x "$profdata" ]; then
  echo "error: $profdata is missing (rustup component add llvm-tools)" >&2
  exit 1
fi

work="$PWD/target/pgo-train"
rm -rf "$work"
mkdir -p "$work"
raw="$work/raw"
# The flags go to cargo as CARGO_ENCODED_RUSTFLAGS (one 0x1f between flags), so a
# checkout path with spaces stays one flag; RUSTFLAGS already set are split as cargo
# splits them and kept.
user_flags=()
read -r -a user_flags <<<"${RUSTFLAGS:-}"
unset RUSTFLAGS
rustflags() {
  local IFS=$'\x1f'
  printf '%s' "${user_flags[*]}${user_flags[*]:+$IFS}$*"
}

echo "== instrumented build (target/pgo-gen)"
CARGO_ENCODED_RUSTFLAGS="$(rustflags "-Cprofile-generate=$raw")" \
  cargo build --release --target-dir target/pgo-gen --bin trawl --example fixture_crawl
# Build scripts ran instrumented too: only the training crawl's counts are kept.
rm -rf "$raw"

echo "== training crawl: scripts/pgo_blog_site.py"
python3 scripts/pgo_blog_site.py "$work/site" 0 >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
url=""
for _ in $(seq 600); do
  url=$(sed -n 's/.*serving \(http[^ ]*\).*/\1/p' "$work/server.log")
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "error: the training site did not start:" >&2
  cat "$work/server.log" >&2
  exit 1
fi
summary=$(target/pgo-gen/release/examples/fixture_crawl "$url" 16 "$work/train_items.jl" 2>"$work/train.log" | tail -n 1)
kill "$server" 2>/dev/null || true
# A training crawl that fetched little would leave a profile of start-up code: refuse it.
pages=$(printf '%s' "$summary" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pages"])')
if [ "$pages" -lt 3000 ]; then
  echo "error: the training crawl fetched $pages pages, not the site's ~19,500 (see $work/train.log)" >&2
  exit 1
fi
echo "trained on $pages pages"
"$profdata" merge -o "$work/trawl.profdata" "$raw"

echo "== optimised build (target/pgo)"
CARGO_ENCODED_RUSTFLAGS="$(rustflags "-Cprofile-use=$work/trawl.profdata" -Cllvm-args=-pgo-warn-missing-function=false)" \
  cargo build --release --target-dir target/pgo --bin trawl --example fixture_crawl

echo "== check: the same items as the instrumented build, in-process fixture site"
target/pgo-gen/release/examples/fixture_crawl - 16 "$work/items_plain.jl" >/dev/null 2>"$work/plain.log"
target/pgo/release/examples/fixture_crawl - 16 "$work/items_pgo.jl" >/dev/null 2>"$work/pgo.log"
python3 scripts/same_items.py "$work/items_plain.jl" "$work/items_pgo.jl"
rm -rf "$raw"

echo "== built target/pgo/release/trawl and target/pgo/release/examples/fixture_crawl"
