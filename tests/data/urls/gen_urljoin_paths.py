"""Records CPython 3.11's urllib.parse.urljoin on bases and relative references built
to exercise path merging and dot-segment removal (RFC 3986 §5.2 as CPython does it:
the middle empty segments dropped, '.' and '..' resolved, a trailing '.'/'..' leaving
a trailing '/'), and on references that urlparse + urlunparse may not write back as
they were (bare '?' and '#', params, brackets, case, control bytes, non-ASCII), for
tests/url_reference.rs.

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

# Where urlparse + urlunparse may not write a reference back as it was: empty or
# doubled query and fragment markers, params, brackets, case, spaces, non-ASCII, dot
# segments in absolute paths and in absolute URLs (left alone), empty netlocs.
BASES2 = [
    "http://a.com/x/y",
    "https://a.com:8443/d/",
    "http://a.com",
    "http://u@a.com/x;p?q#f",
    "ftp://a.com/x/",
    "http:///x/y",
]
HEADS = [
    "/", "/p", "/p/q.html", "/./p", "/p/.", "/p/..", "/.p", "/p/.q", "/p;x", "/p;",
    "/a//b", "//h/p", "http://b.com", "http://b.com/", "http://b.com/p", "https://b.com/p",
    "HTTP://b.com/p", "http://", "http:///p", "http://b.com:80/p", "http://[::1]/p",
    "http://[::1/p", "http://u@b.com/p", "http://b.com/a/./b/../c", "http://b.com/p;x",
    "http://b.com/p;", "http://b.com;x/p", "http://b.com/p q", "/p\tq", "http://b.com/\u00e9",
    " /p", "/p\x7f", "ftp://b.com/p",
]
TAILS = ["", "?", "?q", "?#", "?#f", "#", "#f", "?q#f", "?q#", "#f?x", "#f#g", "?a/./b", "??", "?q?r"]
for b in BASES2:
    for h in HEADS:
        for t in TAILS:
            r = h + t
            try:
                cases.append({"base": b, "ref": r, "urljoin": urljoin(b, r)})
            except ValueError as e:
                cases.append({"base": b, "ref": r, "urljoin": None, "error": f"ValueError: {e}"})
json.dump(
    {"python": sys.version.split()[0], "count": len(cases), "cases": cases},
    sys.stdout,
    ensure_ascii=False,
    separators=(",", ":"),
)
sys.stdout.write("\n")
