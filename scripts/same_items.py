#!/usr/bin/env python3
"""Whether two JSON-lines item exports of the same fixture crawl hold the same items.

    python3 scripts/same_items.py A.jl B.jl

Exits 0 when they do, 1 (with the first differences) when not. Two crawls of the
in-process fixture site differ in ways that are not the crawler's output: the server's
port, and which of two query orders of one page (`?b=2&a=1`, `?a=1&b=2`: one
fingerprint) was fetched first. Each item is compared with its URLs' host and port
replaced and their query arguments sorted; the items are compared as a multiset.
"""
import collections
import json
import sys
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


def normal(value):
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        parts = urlsplit(value)
        query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
        return urlunsplit((parts.scheme, "HOST", parts.path, query, parts.fragment))
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def items(path):
    out = collections.Counter()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out[json.dumps(normal(json.loads(line)), sort_keys=True)] += 1
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = items(sys.argv[1]), items(sys.argv[2])
    if not a:
        sys.exit(f"{sys.argv[1]}: no items")
    if a == b:
        print(f"same items: {sum(a.values())}")
        return
    only_a, only_b = a - b, b - a
    print(f"items differ: {sum(a.values())} against {sum(b.values())}; "
          f"{sum(only_a.values())} only in the first, {sum(only_b.values())} only in the second")
    for item in list(only_a)[:5]:
        print("  first only: ", item)
    for item in list(only_b)[:5]:
        print("  second only:", item)
    sys.exit(1)


if __name__ == "__main__":
    main()
