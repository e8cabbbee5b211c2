#!/usr/bin/env bash
# A libFuzzer campaign over the fuzz targets in tests/fuzz (run by hand; NOT from CI).
#
#   scripts/fuzz.sh [RUNS [SECONDS [TARGET...]]]
#
# RUNS (default $FUZZ_RUNS or 1000000) and SECONDS (default $FUZZ_TIME or 300) are the
# per-target limits: libFuzzer stops at whichever comes first. With no TARGET every
# target in tests/fuzz/fuzz_targets/ runs, one after the other. Each input gets
# -timeout=2 (so a slow input, e.g. super-linear HTML parsing, is a failure) and the
# process -rss_limit_mb=2048. Corpora grow in tests/fuzz/corpus/<target>/ and crash,
# timeout and OOM inputs land in tests/fuzz/artifacts/<target>/ (both are git-ignored;
# the minimised corpora are kept in tests/fuzz/corpus.tar.xz, unpacked on first use).
# Needs the nightly toolchain; installs cargo-fuzz if it is missing.
set -uo pipefail
cd "$(dirname "$0")/.."

runs="${1:-${FUZZ_RUNS:-1000000}}"
secs="${2:-${FUZZ_TIME:-300}}"
shift $(( $# < 2 ? $# : 2 ))
fuzz_dir=tests/fuzz

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked || exit 1
fi

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in "$fuzz_dir"/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi

# The kept corpora (minimised with `cargo fuzz cmin`) seed a fresh checkout. To keep a
# campaign's corpora: cmin each target, then
#   tar -C tests/fuzz -cJf tests/fuzz/corpus.tar.xz corpus
if [ ! -d "$fuzz_dir/corpus" ] && [ -f "$fuzz_dir/corpus.tar.xz" ]; then
  echo "== unpacking the kept corpora"
  tar -C "$fuzz_dir" -xJf "$fuzz_dir/corpus.tar.xz" || exit 1
fi

logs="$fuzz_dir/target/fuzz-logs"
mkdir -p "$logs"
failed=()
summary=()
for t in "${targets[@]}"; do
  corpus="$fuzz_dir/corpus/$t"
  artifacts="$fuzz_dir/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  log="$logs/$t.log"
  echo "== $t: -runs=$runs -max_total_time=$secs (log: $log)"
  cargo +nightly fuzz run --fuzz-dir "$fuzz_dir" "$t" "$corpus" -- \
    -runs="$runs" -max_total_time="$secs" -timeout=2 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" >"$log" 2>&1
  rc=$?
  # The final stats line: libFuzzer's "Done N runs in S second(s)", or the last
  # status line (#N ... cov: ft: corp: exec/s:) if the run stopped on a failure.
  stats="$(grep -E '^#[0-9]+' "$log" | tail -n 1)"
  done_line="$(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1)"
  files="$(find "$corpus" -type f | wc -l)"
  bytes="$(find "$corpus" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')"
  line="$t: rc=$rc | $stats | ${done_line:-no Done line} | corpus: $files files, $bytes bytes"
  echo "$line"
  summary+=("$line")
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    grep -E 'panicked at|SUMMARY|ERROR: libFuzzer|Test unit written to|artifact_prefix' "$log" | head -n 8
  fi
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "== failing targets: ${failed[*]} (inputs under $fuzz_dir/artifacts/)"
  exit 1
fi
