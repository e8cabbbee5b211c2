"""Records CPython 3.11's urllib.parse.urljoin on bases and relative references built
to exercise path merging and dot-segment removal (RFC 3986 §5.2 as CPython does it:
the middle empty segments dropped, '.' and '..' resolved, a trailing '.'/'..' leaving
a trailing '/'), for tests/url_reference.rs.

    /work/venv-ref/bin/python tests/data/urls/gen_urljoin_paths.py > tests/data/urls/urljoin_paths.json
"""

import itertools
import json
import sys
from urllib.parse import urljoin

BASES = [
    "http://a.com",
    "http://a.com/",
    "http://a.com/x",
    "http://a.com/x/",
    "http://a.com/x/y/z.html",
    "http://a.com/x//y/",
    "http://a.com//",
    "http://a.com/x/y;p=1?q=2#f",
    "https://a.com:8443/d/e/f/",
    "http://a.com/./x/../y",
]
SEGMENTS = ["", ".", "..", "s", "..."]
REFS = set()
for n in range(1, 4):
    for combo in itertools.product(SEGMENTS, repeat=n):
        path = "/".join(combo)
        REFS.add(path)
        REFS.add("/" + path)
        REFS.add(path + "?q")
REFS = sorted(r for r in REFS if r)

cases = [
    {"base": b, "ref": r, "urljoin": urljoin(b, r)} for b in BASES for r in REFS
]
json.dump(
    {"python": sys.version.split()[0], "count": len(cases), "cases": cases},
    sys.stdout,
    ensure_ascii=False,
    separators=(",", ":"),
)
sys.stdout.write("\n")
