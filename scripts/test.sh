#!/usr/bin/env bash
# The test command: installs what the tests need on a fresh Debian machine —
# `redis-server` and `redis-cli` (the Redis tests start their own servers, sentinels
# and clusters on free ports in temp dirs) and a Python venv with scrapy-redis 0.9.1
# (the interop test runs a real scrapy-redis worker) — then runs `cargo test` with any
# arguments given.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# redis-cli builds the test clusters (`redis-cli --cluster create`).
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "== installing ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "error: the tests need ${missing[*]}; install them and run again" >&2
    exit 1
  fi
fi

venv="${TRAWL_PY_VENV:-$PWD/target/venv-redis}"
if ! "$venv/bin/python" -c 'import scrapy_redis, moto.server, pyftpdlib, PIL, pproxy' >/dev/null 2>&1; then
  echo "== creating the Python venv for the interop tests in $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r python/requirements.txt
fi
export TRAWL_PYTHON="$venv/bin/python"

# A test that hangs fails the run with a message instead of holding CI until its own
# limit: the whole `cargo test` (build included) gets TRAWL_TEST_TIMEOUT seconds.
limit="${TRAWL_TEST_TIMEOUT:-1800}"
status=0
timeout --kill-after=30 "$limit" cargo test "$@" || status=$?
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
  echo "error: cargo test did not finish within ${limit} s (TRAWL_TEST_TIMEOUT): a test hangs" >&2
fi
exit "$status"
